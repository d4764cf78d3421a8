"""``parity minimize``: a divergent pipeline run shrunk to the smallest part of its replayed
slice on which the candidate still diverges, with a regression test. ``runner``: the
search; ``ddmin``: delta debugging; ``trials``: one subset run and judged; ``workspace``:
the run's plan, spec and slice; ``slices``: a slice taken apart and written back;
``regression``: the test file."""
