# Parity — developer and CI entry points (GNU make).
#
#   make test    install from uv.lock into .venv and Chromium if missing (apt-get), then run the tests
#   make demo    install, then run a handful of bundled validations through Airflow (ALL=1: all)
#   make check   lint, format check, type check, import contracts, the docs site, then the tests (what CI runs)
#   make docs    the documentation site from docs/ into site/ (mkdocs --strict: a warning fails)
#   make scale   the Spark engine at millions of rows on every file layout (minutes; not in CI)
#   make cluster a bundled validation's DAG on a standalone Spark cluster with shipped code (minutes; not in CI)
#   make release-e2e  the release loop on a real Airflow (api-server, scheduler, dag-processor) with artifacts in S3 (minutes; not in CI)
#   make crashes every variant of the detector's crash-and-restart runs, and on a standalone cluster (minutes; CI runs two of them)
#   make recovery-figures  the detector and its buggy variants over 10 seeded crash runs each (1.5 hours)
#   make properties-figures  property-testing recall per technique on the bundled operators (minutes)
#   make newcomer  a fresh clone of HEAD through make demo and the tutorial's commands (minutes; not in CI)
#   make minimize  parity minimize on each bundled divergent run, with its regression test (about an hour; not in CI)
#   make fmt     format and auto-fix
#   make lock    re-resolve uv.lock after editing dependencies in pyproject.toml
#   make clean   remove the venv and every cache

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

# The interpreter the venv is built from (Python 3.11, see requires-python).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Written after a successful install; newer than pyproject.toml and uv.lock means up to date.
STAMP := $(VENV)/.installed

# uv as a module of $(PYTHON), so a stale shim or a PATH without ~/.local/bin does not
# matter; `install` pip-installs it into the user site when it is missing.
UV ?= $(PYTHON) -m uv
# Never let uv download a Python build: use the machine's interpreter or fail clearly.
export UV_PYTHON_DOWNLOADS := never

.PHONY: help install docs test scale cluster release-e2e crashes minimize newcomer recovery-figures properties-figures lint check demo fmt lock clean

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

install: $(STAMP)

$(STAMP): pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || { \
	  echo "uv not found: installing it into $(PYTHON)'s user site"; \
	  $(PYTHON) -m pip install --user --quiet uv \
	    || $(PYTHON) -m pip install --user --quiet --break-system-packages uv; \
	}
	$(UV) sync --frozen --python $(PYTHON)
	@touch $@

# The browser tests drive Debian's Chromium (/usr/bin/chromium): installed with apt-get as
# root or with passwordless sudo, else one line saying what to run (tools/ensure_chromium.sh).
# The tests run in one process per core (at most four; TEST_WORKERS=0: in this process), a
# test file to a process: its module fixtures (outputs, sessions) are made once. Files are
# handed out in collection order, the long ones first (tests/conftest.py LONG_FILES).
TEST_WORKERS ?= auto
test: install
	bash tools/ensure_chromium.sh
	$(BIN)/pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile --no-loadscope-reorder

# Differential tests of the Spark engine at PARITY_SCALE_ROWS rows per output (default
# 3,000,000) on every layout Spark writes, with and without order_by (tests/test_scale.py),
# and of the core's proof on texts on local JSON lines (tests/test_scale_core_files.py).
scale: install
	$(BIN)/pytest --scale -m scale --timeout 7200 -p no:cacheprovider tests/test_scale.py \
		tests/test_scale_core_files.py

# A bundled validation through its DAG on a real standalone cluster (a master and two workers
# from pyspark's distribution, executors that cannot import the project but from the shipped
# zip): tests/test_cluster_validation.py, docs/how-to/cluster.md.
cluster: install
	$(BIN)/pytest --cluster -m cluster --timeout 1800 -p no:cacheprovider tests/test_cluster_validation.py

# A newcomer's first hour as a test (issue 33): clone HEAD, make demo, then the tutorial's
# commands on the bundled example pipeline, with the verdicts it shows
# (tests/test_newcomer.py).
newcomer: install
	$(BIN)/pytest --newcomer -m newcomer --timeout 3600 -p no:cacheprovider tests/test_newcomer.py

# parity minimize on each bundled divergent validation's run: at most a few rows left, and
# the generated regression test fails, then passes with the reference as the candidate
# (tests/test_minimize_runs.py; figures in minimize-figures.jsonl).
minimize: install
	rm -f minimize-figures.jsonl
	PARITY_MINIMIZE_FIGURES=$(CURDIR)/minimize-figures.jsonl $(BIN)/pytest --minimize -m minimize \
		--timeout 3600 -p no:cacheprovider -s tests/test_minimize_runs.py

# The release loop end to end (issue 30): a real `airflow api-server`, scheduler and DAG
# processor on loopback, candidate builds in a loopback S3 server, `parity run`, `gate`,
# `approve` as a release pipeline runs them, and the deploy DAG on the gate's Asset event
# (tests/test_release_e2e.py; CI runs the short path, tests/test_release_services.py), the
# CI script blocking a divergent build, and the release example DAG with Spark.
release-e2e: install
	$(BIN)/pytest --release-e2e -m release_e2e --timeout 1800 -p no:cacheprovider tests/test_release_e2e.py \
		tests/test_ci_recipes.py tests/test_airflow_release.py

# The sequence-window detector's runs with and without a crash, every variant (the default
# run keeps one run through a crash and one kill after the sink wrote:
# tests/test_sequence_window_app.py, IN_CI), and recovery validations that detect a bug
# through a crash and kill executors on a standalone cluster (tests/test_recovery.py).
crashes: install
	$(BIN)/pytest --crashes -m crashes --timeout 1800 -p no:cacheprovider tests/test_sequence_window_app.py \
		tests/test_recovery.py

# The recovery figures (docs/how-to/recovery.md): the sequence-window detector and each buggy variant, 10 seeded
# runs of 5 driver SIGKILLs each, checked by the Wallaroo validator (bench/recovery_figures.py).
recovery-figures: install
	$(BIN)/python bench/recovery_figures.py

# `uv lock --check` first: install uses --frozen, which would silently ignore a
# dependency added to pyproject.toml without re-running `make lock`.
lint: install
	$(UV) lock --check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy matcher parity jobs expectations dags tools
	MYPYPATH=plugins $(BIN)/mypy --strict --explicit-package-bases plugins/parity_ui plugins/parity_plugin.py
	PYTHONPATH=.:plugins $(BIN)/lint-imports

check: lint docs test

# The documentation site (mkdocs.yml, docs/) into site/. --strict turns every warning into a
# failure: a link to a missing page or anchor, a page left out of the nav. The generated
# reference pages are checked against the code by tests/test_gen_reference.py.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# A handful of the bundled validations (ALL=1: every one in dags/validations/) through
# Airflow's dag.test(): the captures, a local Airflow home and SQLite under ~/.parity/demo,
# real spark-submit on local[*]. Exits
# 0 only when every verdict is the one its spec's comment expects (tools/demo.py).
demo: install
	$(BIN)/python -m tools.demo $(if $(ALL),--all)

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

lock:
	$(UV) lock

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache \
	  .hypothesis .import_linter_cache spark-warehouse metastore_db derby.log
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# The paper's experiment (Xu & Hirzel, Tables II/III): every property-testing technique 10
# times on each bundled operator (jobs/examples/operators), recall and time to evidence.
properties-figures: install
	$(BIN)/python bench/properties.py --runs 10
