"""matcher.files.readers: every format, directories in name order, and one-line errors."""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from matcher.errors import InputError
from matcher.files import readers
from matcher.files.readers import data_files, read_columns, read_events


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def error_of(path: Path | str, fmt: str | None = None) -> str:
    with pytest.raises(InputError) as info:
        list(read_events(path, fmt))
    return str(info.value)


# --- JSON lines ---------------------------------------------------------------------------


def test_json_lines_in_file_order_with_blank_lines_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", '{"a": 1, "b": "x"}\n\n{"a": 2, "b": null}\n  \n')
    assert list(read_events(path)) == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]


def test_json_extension_is_json_lines_as_spark_writes_it(tmp_path: Path) -> None:
    path = write(tmp_path / "part-00000.json", '{"a": 1}\n{"a": 2}')
    assert list(read_events(path)) == [{"a": 1}, {"a": 2}]


def test_json_keeps_nan_and_strips_a_byte_order_mark(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", b'\xef\xbb\xbf{"a": NaN}\n')
    [event] = list(read_events(path))
    assert list(event) == ["a"]
    assert event["a"] != event["a"]


def test_gzipped_json_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "part-00000.json.gz", gzip.compress(b'{"a": 1}\n{"a": 2}\n'))
    assert list(read_events(path)) == [{"a": 1}, {"a": 2}]


def test_reading_is_lazy_so_rows_before_a_bad_line_are_streamed(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n{"a": 2}\n{"a": \n')
    events = read_events(path)
    assert list(itertools.islice(events, 2)) == [{"a": 1}, {"a": 2}]
    with pytest.raises(InputError, match="line 3"):
        next(events)


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n{"a": 2}\n{"a": }\n')
    assert error_of(path) == f"{path}: line 3: malformed JSON: Expecting value (column 7)"


def test_json_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n[1, 2]\n')
    assert error_of(path) == f"{path}: line 2: expected a JSON object, got list"


def test_non_utf8_bytes_name_the_line_and_byte(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", b'{"a": 1}\n{"a": "caf\xe9"}\n')
    assert error_of(path) == f"{path}: line 2: not UTF-8 (byte 0xe9 at column 11)"


def test_corrupt_gzip(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl.gz", b"not gzip at all\n")
    assert error_of(path) == f"{path}: cannot read: Not a gzipped file (b'no')"


# --- CSV ----------------------------------------------------------------------------------


def test_csv_values_are_typed_and_empty_fields_follow_their_quotes(tmp_path: Path) -> None:
    # an unquoted empty field is null, a quoted one "" (in a string column; null elsewhere)
    path = write(
        tmp_path / "out.csv",
        'id,n,note\n1,2.5,\n2,,"a, ""quoted""\nnewline"\n3,"",""\n',
    )
    assert list(read_events(path)) == [
        {"id": 1, "n": 2.5, "note": None},
        {"id": 2, "n": None, "note": 'a, "quoted"\nnewline'},
        {"id": 3, "n": None, "note": ""},
    ]


def test_csv_crlf_line_endings(tmp_path: Path) -> None:
    path = write(tmp_path / "out.csv", "a,b\r\n1,x\r\n,\r\n")
    assert list(read_events(path)) == [{"a": 1, "b": "x"}, {"a": None, "b": None}]


def test_zero_byte_and_header_only_csv_are_empty_streams(tmp_path: Path) -> None:
    assert list(read_events(write(tmp_path / "empty.csv", ""))) == []
    assert list(read_events(write(tmp_path / "header.csv", "a,b\n"))) == []
    assert read_columns(tmp_path / "empty.csv") is None
    assert read_columns(tmp_path / "header.csv") == ("a", "b")


def test_csv_row_with_the_wrong_number_of_fields(tmp_path: Path) -> None:
    path = write(tmp_path / "out.csv", "a,b\n1,2\n3\n")
    assert error_of(path) == f"{path}: line 3: expected 2 fields as in the header, got 1"


def test_csv_duplicate_header(tmp_path: Path) -> None:
    path = write(tmp_path / "out.csv", "a,b,a\n1,2,3\n")
    assert error_of(path) == f"{path}: line 1: duplicate columns in the header: ['a']"


def test_csv_non_utf8(tmp_path: Path) -> None:
    path = write(tmp_path / "out.csv", b"a\nok\n\xff\n")
    assert error_of(path) == f"{path}: line 3: not UTF-8 (byte 0xff at column 1)"


def test_csv_unterminated_quote(tmp_path: Path) -> None:
    path = write(tmp_path / "out.csv", 'a,b\n1,"2\n')
    assert error_of(path) == f"{path}: line 2: malformed CSV: unexpected end of data"


# --- Parquet ------------------------------------------------------------------------------


def test_parquet_rows_with_types_and_nulls(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    moment = dt.datetime(2024, 5, 1, 8, 0, tzinfo=dt.UTC)
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "x": pa.array([0.5, None], pa.float64()),
            "at": pa.array([moment, moment], pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, path)
    assert list(read_events(path)) == [
        {"id": 1, "x": 0.5, "at": moment},
        {"id": 2, "x": None, "at": moment},
    ]
    assert read_columns(path) == ("id", "x", "at")


def test_parquet_is_read_in_batches_across_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "PARQUET_BATCH_ROWS", 3)
    path = tmp_path / "out.parquet"
    pq.write_table(pa.table({"n": list(range(10))}), path, row_group_size=4)
    assert [e["n"] for e in read_events(path)] == list(range(10))


def test_parquet_with_no_rows_still_has_columns(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    pq.write_table(pa.table({"a": pa.array([], pa.string())}), path)
    assert list(read_events(path)) == []
    assert read_columns(path) == ("a",)


def test_not_a_parquet_file(tmp_path: Path) -> None:
    path = write(tmp_path / "out.parquet", b"PAR1 but not really")
    message = error_of(path)
    assert message.startswith(f"{path}: not a readable Parquet file: ")
    assert "\n" not in message


# --- directories, formats and paths -------------------------------------------------------


def test_directory_reads_part_files_in_name_order_and_skips_spark_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out / "part-00002.jsonl", '{"n": 4}\n')
    write(out / "part-00000.jsonl", '{"n": 1}\n{"n": 2}\n')
    write(out / "part-00001.jsonl", '{"n": 3}\n')
    write(out / "_SUCCESS", "")
    write(out / ".part-00000.jsonl.crc", b"\x00\x01")
    write(out / "_temporary" / "0" / "junk.jsonl", "not json\n")
    assert [e["n"] for e in read_events(out)] == [1, 2, 3, 4]
    assert [p.name for p, _ in data_files(out)] == [
        "part-00000.jsonl",
        "part-00001.jsonl",
        "part-00002.jsonl",
    ]


def test_directory_of_csv_parts_each_with_its_header(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out / "part-00000.csv", "a,b\n1,2\n")
    write(out / "part-00001.csv", "")
    write(out / "part-00002.csv", "a,b\n3,4\n")
    assert list(read_events(out)) == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_directory_of_parquet_parts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(pa.table({"n": [3]}), out / "part-00001-x.snappy.parquet")
    pq.write_table(pa.table({"n": [1, 2]}), out / "part-00000-x.snappy.parquet")
    assert [e["n"] for e in read_events(out)] == [1, 2, 3]
    assert read_columns(out) == ("n",)


def test_empty_directory_is_an_empty_stream(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    assert list(read_events(tmp_path / "out")) == []
    assert read_columns(tmp_path / "out") is None


def test_directory_mixing_formats(tmp_path: Path) -> None:
    write(tmp_path / "out" / "a.csv", "a\n1\n")
    write(tmp_path / "out" / "b.jsonl", '{"a": 1}\n')
    assert error_of(tmp_path / "out") == f"{tmp_path / 'out'}: mixes formats (csv, json)"


def test_directory_of_json_and_jsonl_parts_is_one_format(tmp_path: Path) -> None:
    write(tmp_path / "out" / "a.json", '{"a": 1}\n')
    write(tmp_path / "out" / "b.jsonl", '{"a": 2}\n')
    assert list(read_events(tmp_path / "out")) == [{"a": 1}, {"a": 2}]


def test_partitioned_directory_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "out" / "day=1" / "part-0.jsonl", '{"a": 1}\n')
    assert error_of(tmp_path / "out") == (
        f"{tmp_path / 'out' / 'day=1'}: a subdirectory in an output (a partitioned output?) "
        "is not supported: point at a directory of data files"
    )


def test_explicit_format_overrides_the_extension(tmp_path: Path) -> None:
    path = write(tmp_path / "out.txt", "a\n1\n")
    assert list(read_events(path, "csv")) == [{"a": 1}]


def test_unknown_extension_asks_for_a_format(tmp_path: Path) -> None:
    path = write(tmp_path / "out.txt", "a\n1\n")
    assert error_of(path) == (
        f"{path}: cannot tell the format from the name: set output.format in the spec "
        "(parquet, json, jsonl, csv)"
    )


def test_unknown_explicit_format(tmp_path: Path) -> None:
    path = write(tmp_path / "out.csv", "a\n")
    assert error_of(path, "xml") == (
        f"{path}: unknown format 'xml' (known: parquet, json, jsonl, csv)"
    )


def test_missing_path_and_empty_path(tmp_path: Path) -> None:
    assert (
        error_of(tmp_path / "nope.jsonl") == f"{tmp_path / 'nope.jsonl'}: no such file or directory"
    )
    assert error_of("") == "an output path is empty"


# --- columns ------------------------------------------------------------------------------


def test_json_columns_are_the_union_of_keys_in_first_seen_order(tmp_path: Path) -> None:
    # Spark's JSON writer drops null fields, so the first row may lack a column.
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n{"b": 2, "a": 3}\n{"c": 1}\n')
    assert read_columns(path) == ("a", "b", "c")


def test_json_columns_look_at_a_bounded_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "COLUMN_SAMPLE", 2)
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n{"b": 2}\n{"c": 3}\n')
    assert read_columns(path) == ("a", "b")


def test_columns_of_an_empty_json_output_are_unknown(tmp_path: Path) -> None:
    assert read_columns(write(tmp_path / "out.jsonl", "")) is None


def test_parity_reader_lines_forces_the_per_line_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n{"a": 2}\n')
    [columnar] = list(readers.json_event_batches(path))
    assert (columnar.events, columnar.decoded) == ([{"a": 1}, {"a": 2}], ())
    monkeypatch.setenv(readers.READER_VARIABLE, "lines")
    [per_line] = list(readers.json_event_batches(path))
    assert (per_line.events, per_line.decoded) == ([{"a": 1}, {"a": 2}], (0, 1))
