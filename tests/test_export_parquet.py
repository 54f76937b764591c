"""``ract trace export --format parquet``: the tables read back by DuckDB itself (SPEC §12.1).

Real DuckDB, real Parquet files, nothing mocked: every check reads what the
command wrote with ``read_parquet`` and compares it with the logs (plain
JSON parsing, the independent JCS of ``independent_jcs``) or with what the
chain reader and ``project`` say about the same bytes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from fleet_support import TAMPERED_LINE, event_count, run_id, write_fleet
from independent_jcs import jcs

from ract_cli import ChainReader, ProjectOptions, project_file
from ract_cli.cli.app import main
from ract_cli.export import MARKER, TABLES, TABLES_BY_NAME, schema_markdown
from ract_cli.export.parquet import WriteLimits, batches, export_parquet
from ract_cli.export.rows import StagedFile
from ract_cli.testing.synth import write_benchmark_log

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUNS = ROOT / "fixtures" / "runs"
TAMPERED_FIXTURE = "8686994841309902af40ce3e190711e7"


def export(*args: str) -> int:
    return main(["trace", "export", "--format", "parquet", *args])


def connect(out: Path) -> duckdb.DuckDBPyConnection:
    """DuckDB with one view per table directory of ``out``, read as any engine would: ``OUT/<table>/**``."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for t in TABLES:
        con.execute(f"CREATE VIEW {t.name} AS SELECT * FROM read_parquet('{out}/{t.name}/**/*.parquet')")
    return con


def table(out: Path, name: str) -> duckdb.DuckDBPyRelation:
    return connect(out).sql(f"SELECT * FROM {name}")


def rows(out: Path, name: str, where: str = "true") -> list[dict]:
    rel = connect(out).sql(f"SELECT * FROM {name} WHERE {where}")
    return [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(directory.rglob("*"))
    }


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> dict[str, Path]:
    """The fleet of fleet_support plus a copy of every bundled fixture run, in one tree."""
    root = tmp_path_factory.mktemp("fleet") / "runs"
    root.mkdir()
    paths = write_fleet(root)
    for run in sorted(os.listdir(FIXTURE_RUNS)):
        shutil.copytree(FIXTURE_RUNS / run, root / run)
        paths[f"fixture-{run}"] = root / run / "events.jsonl"
    return paths


@pytest.fixture(scope="module")
def exported(fleet, tmp_path_factory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("export") / "out"
    root = next(iter(fleet.values())).parents[1]
    code = export("-q", "--output", str(out), str(root))
    return out, code


# --- layout and types ---------------------------------------------------------


def test_each_table_is_a_directory_of_parquet_files_and_events_are_partitioned_by_day(exported):
    out, _ = exported
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "events", "runs", "findings"])
    days = sorted(p.name for p in (out / "events").iterdir())
    assert days == ["date=2025-11-24", "date=2025-11-25", "date=2025-11-26", "date=2025-11-27"]
    for name in ("runs", "findings"):
        assert [p.name for p in (out / name).iterdir()] == ["data_0.parquet"]
    marker = json.loads((out / MARKER).read_text())
    assert marker["format"] == "parquet" and marker["tables"]["events"]["partition_by"] == ["date"]
    assert (out / MARKER).stat().st_mode & 0o777 == 0o644  # as readable as the tables (not mkstemp's 0600)


def test_columns_and_types_are_those_of_the_one_definition(exported):
    out, _ = exported
    for t in TABLES:
        got = connect(out).sql(f"DESCRIBE {t.name}").fetchall()
        assert [(name, typ) for name, typ, *_ in got] == [
            (c.name, "TIMESTAMP WITH TIME ZONE" if c.type == "TIMESTAMPTZ" else c.type) for c in t.columns
        ]


def test_spec_columns_are_all_there(exported):
    out, _ = exported
    spec = {
        "events": "run_id path line byte_offset id step_id parent_id timestamp_ns ts kind payload prev_hash hash "
        "trusted synthesized",
        "runs": "run_id path dialect status exit_code events first_ts_ns last_ts_ns head verified "
        "untrusted_from_line final_decision termination_cause steps tool_calls reaps audit_flags",
        "findings": "path run_id line byte_offset event_id code severity exit_code message",
    }
    for name, columns in spec.items():
        assert set(columns.split()) <= set(table(out, name).columns), name


def test_parquet_types_are_portable_no_unsigned_no_nanoseconds(exported):
    out, _ = exported
    con = duckdb.connect()
    schema = con.sql(
        f"SELECT name, type, logical_type FROM parquet_schema('{out}/*/**/*.parquet') WHERE name <> 'duckdb_schema'"
    ).fetchall()
    assert schema
    for name, physical, logical in schema:
        text = f"{physical} {logical}".upper()
        assert "UINT" not in text and "NANOS=NANO" not in text and "UNSIGNED" not in text, (name, text)
    ts = {(p, str(lt)) for n, p, lt in schema if n == "ts"}
    assert len(ts) == 1
    physical, logical = ts.pop()
    assert physical == "INT64" and "isAdjustedToUTC=1" in logical and "MICROS=MicroSeconds()" in logical


# --- rows against the logs -------------------------------------------------------


def test_one_events_row_per_event_the_reader_yields_and_one_runs_row_per_log(exported, fleet):
    out, _ = exported
    counts = dict(connect(out).sql("SELECT path, count(*) FROM events GROUP BY path").fetchall())
    for path in fleet.values():
        reader = ChainReader(path)
        yielded = sum(1 for _ in reader)
        assert counts[str(path)] == yielded, path
    assert len(rows(out, "runs")) == len(fleet)
    by_path = {r["path"]: r for r in rows(out, "runs")}
    for path in fleet.values():
        assert by_path[str(path)]["events"] == counts[str(path)]


def test_event_rows_carry_the_log_values_and_the_payload_as_jcs_text(exported, fleet):
    out, _ = exported
    path = fleet["reaped"]  # the foreign layout: keys reversed, \\u escapes, CRLF
    logged = [json.loads(raw) for raw in path.read_bytes().splitlines()]
    got = rows(out, "events", f"path = '{path}'")
    got.sort(key=lambda r: r["line"])
    offset = 0
    for n, (want, row, raw) in enumerate(
        zip(logged, got, path.read_bytes().splitlines(keepends=True), strict=True), start=1
    ):
        assert row["line"] == n and row["byte_offset"] == offset
        offset += len(raw)
        for key in ("run_id", "id", "step_id", "parent_id", "timestamp_ns", "kind", "prev_hash", "hash"):
            assert row[key] == want[key], key
        assert row["payload"] == jcs(want["payload"])
        assert row["trusted"] is True and row["synthesized"] is False
        # ts: the same instant, microseconds, UTC
        assert int(row["ts"].timestamp()) * 1_000_000 + row["ts"].microsecond == want["timestamp_ns"] // 1000
        assert row["ts"].utcoffset().total_seconds() == 0
        assert str(row["date"]) == row["ts"].strftime("%Y-%m-%d")


def test_payload_is_queryable_as_json(exported):
    out, _ = exported
    con = connect(out)
    got = con.sql(
        "SELECT run_id, count(*) FROM events "
        "WHERE kind = 'process.reaped' AND payload->>'reason' = 'dispose_unsuccessful' GROUP BY run_id"
    ).fetchall()
    assert dict(got)[run_id("reaped")] == 3
    assert con.sql(
        "SELECT max(CAST(json_extract(payload, '$.duration_ns') AS BIGINT)) FROM events "
        f"WHERE kind = 'tool.result' AND run_id = '{run_id('gate')}'"
    ).fetchall() == [(500_000_000,)]


def test_a_rehashed_edit_makes_its_own_line_and_every_later_one_untrusted(exported, fleet):
    out, _ = exported
    path = fleet["tampered"]
    got = {r["line"]: r["trusted"] for r in rows(out, "events", f"path = '{path}'")}
    assert len(got) == event_count(path)
    assert {line for line, trusted in got.items() if not trusted} == set(range(TAMPERED_LINE, len(got) + 1))
    (run,) = rows(out, "runs", f"path = '{path}'")
    assert run["verified"] is False and run["untrusted_from_line"] == TAMPERED_LINE and run["exit_code"] == 1
    codes = [(f["code"], f["line"]) for f in rows(out, "findings", f"path = '{path}'")]
    assert ("CHAIN_BREAK", TAMPERED_LINE + 1) in codes


def test_the_tampered_fixture_is_untrusted_where_the_reader_says_and_only_there(exported, fleet):
    out, _ = exported
    path = fleet[f"fixture-{TAMPERED_FIXTURE}"]
    expected = {ev.line: ev.trusted for ev in ChainReader(path)}
    got = {r["line"]: r["trusted"] for r in rows(out, "events", f"path = '{path}'")}
    assert got == expected and not all(got.values()) and any(got.values())
    assert [f["code"] for f in rows(out, "findings", f"path = '{path}' AND severity = 'error'")] == ["HASH_MISMATCH"]


def test_runs_agree_with_project(exported, fleet):
    out, _ = exported
    by_path = {r["path"]: r for r in rows(out, "runs")}
    for path in fleet.values():
        report = project_file(path, ProjectOptions())
        run = by_path[str(path)]
        assert run["status"] == report["status"], path
        assert run["verified"] == report["trusted"]
        assert run["untrusted_from_line"] == report["untrusted_from_line"]
        assert run["head"] == report["chain"]["head"]
        assert run["exit_code"] == report["exit_code"]
        assert run["run_id"] == report["run_id"]
        assert run["audit_flags"] == report["audit_flags"]["count"]
        assert run["steps"] == report["steps"]["started"]
        assert run["tool_calls"] == report["tools"]["totals"]["called"]
        assert run["reaps"] == report["process_reaps"]["count"]
        assert run["gate_inconsistent"] == report["predicates"]["gate_inconsistent"]
        assert run["final_decision"] == report["outcome"]["final_decision"]
        assert run["dialect"] == "ract"
    statuses = {name: by_path[str(p)]["status"] for name, p in fleet.items() if not name.startswith("fixture")}
    assert statuses == {
        "reaped": "completed",
        "gate": "completed",
        "recovered": "completed",
        "open": "open",
        "tampered": "open",
    }


def test_findings_are_the_readers_findings(exported, fleet):
    out, _ = exported
    got = sorted(
        (f["path"], f["line"], f["code"], f["severity"], f["exit_code"], f["message"]) for f in rows(out, "findings")
    )
    expected = []
    for path in fleet.values():
        reader = ChainReader(path)
        reader.read_all()
        expected += [(str(path), f.line, f.code, f.severity, int(f.exit_code), f.message) for f in reader.findings]
    assert got == sorted(expected)
    assert {"CHAIN_BREAK", "HASH_MISMATCH", "TORN_TAIL", "OPEN_RUN", "MISSING_FINAL_NEWLINE"} <= {g[2] for g in got}


# --- exit codes -----------------------------------------------------------------


def test_exit_code_is_the_lowest_non_zero_verification_code_and_everything_is_still_written(exported, fleet):
    _, code = exported
    assert code == 1  # tampered (1) beats torn tail (4)


@pytest.mark.parametrize(
    ("names", "code"),
    [(["reaped", "open", "recovered"], 0), (["fixture-9ae2021ae4d2af95ab864b9bac116475"], 4)],
)
def test_exit_codes_of_clean_and_torn_inputs(fleet, tmp_path, names, code):
    assert export("-q", "-o", str(tmp_path / "out"), *(str(fleet[n]) for n in names)) == code


def test_a_missing_path_is_exit_5_and_the_logs_that_exist_are_exported(fleet, tmp_path, capfd):
    out = tmp_path / "out"
    missing = tmp_path / "nope" / "events.jsonl"
    assert export("-o", str(out), str(fleet["gate"]), str(missing)) == 5
    assert "no such file or directory" in capfd.readouterr().err
    assert len(rows(out, "runs")) == 1 and len(rows(out, "events")) == event_count(fleet["gate"])
    (finding,) = rows(out, "findings", "exit_code = 5")
    assert finding["code"] == "IO_ERROR" and finding["path"] == str(missing) and finding["run_id"] is None


def test_a_schema_violation_is_exit_3(tmp_path):
    from independent_jcs import chain, event, line

    run = run_id("schema")
    evs = chain([event("run.started", {"predicate_count": "three"}, run=run)])
    path = tmp_path / run / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(line(e) for e in evs))
    out = tmp_path / "out"
    assert export("-q", "-o", str(out), str(path)) == 3
    assert [f["code"] for f in rows(out, "findings", "severity = 'error'")] == ["PAYLOAD_INVALID"]
    assert rows(out, "runs")[0]["verified"] is True  # the chain is intact: exit_code says the rest


# --- atomicity ------------------------------------------------------------------


def test_an_existing_output_is_refused_without_overwrite_and_left_untouched(exported, fleet, capfd):
    out, _ = exported
    before = snapshot(out)
    assert export("-o", str(out), str(fleet["gate"])) == 2
    assert "--overwrite" in capfd.readouterr().err
    assert snapshot(out) == before


def test_overwrite_replaces_every_table_whole(fleet, tmp_path):
    out = tmp_path / "out"
    assert export("-q", "-o", str(out), str(fleet["reaped"]), str(fleet["gate"])) == 0
    (out / "notes.txt").write_text("mine")
    assert export("-q", "-o", str(out), "--overwrite", str(fleet["open"])) == 0
    assert [r["path"] for r in rows(out, "runs")] == [str(fleet["open"])]
    assert {r["path"] for r in rows(out, "events")} == {str(fleet["open"])}
    assert (out / "notes.txt").read_text() == "mine"  # only the tables (and the marker) are replaced
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_overwrite_refuses_a_directory_that_is_not_an_export(fleet, tmp_path):
    out = tmp_path / "out"
    (out / "events").mkdir(parents=True)
    (out / "events" / "precious.txt").write_text("keep")
    before = snapshot(out)
    assert export("-q", "-o", str(out), "--overwrite", str(fleet["gate"])) == 2
    assert snapshot(out) == before


def test_a_failure_while_writing_leaves_the_previous_export_whole(fleet, tmp_path, monkeypatch):
    import ract_cli.export.parquet as parquet

    out = tmp_path / "out"
    assert export("-q", "-o", str(out), str(fleet["gate"])) == 0
    before = snapshot(out)
    real = parquet.write_tables

    def write_then_fail(*args, **kwargs):
        real(*args, **kwargs)  # the new tables are complete in the staging directory...
        raise OSError(28, "No space left on device")  # ...when the disk fills

    monkeypatch.setattr(parquet, "write_tables", write_then_fail)
    assert export("-q", "-o", str(out), "--overwrite", str(fleet["reaped"])) == 5
    assert snapshot(out) == before


def test_output_that_is_a_file_is_a_usage_error(fleet, tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    assert export("-q", "-o", str(target), str(fleet["gate"])) == 2
    assert target.read_text() == "x"


# --- jobs, empty logs, journals ----------------------------------------------------


def test_jobs_do_not_change_the_tables(fleet, tmp_path):
    root = str(next(iter(fleet.values())).parents[1])
    assert export("-q", "-o", str(tmp_path / "one"), root) == 1
    assert export("-q", "-o", str(tmp_path / "two"), "--jobs", "3", root) == 1
    for t in TABLES:
        assert sorted(table(tmp_path / "one", t.name).fetchall(), key=repr) == sorted(
            table(tmp_path / "two", t.name).fetchall(), key=repr
        ), t.name


@pytest.mark.parametrize("limits", [WriteLimits(batch_rows=50), WriteLimits(batch_bytes=20_000)], ids=["rows", "bytes"])
def test_events_written_in_batches_are_the_same_table(exported, fleet, tmp_path, limits):
    """Each COPY writes one batch (the fix for a fleet too big for one COPY): a file per batch and day, every
    file within the batch, and the directory still one table, row for row the one-batch export's."""
    out, _ = exported
    root = next(iter(fleet.values())).parents[1]
    batched = tmp_path / "batched"
    assert int(export_parquet([root], batched, limits=limits).exit_code) == 1
    for t in TABLES:
        assert sorted(table(batched, t.name).fetchall(), key=repr) == sorted(table(out, t.name).fetchall(), key=repr), (
            t.name
        )
    files = sorted((batched / "events").glob("date=*/*.parquet"))
    assert len(files) > 2 * len(list((batched / "events").iterdir()))  # several batches in a day
    assert all(re.fullmatch(r"data_\d{5}_\d+\.parquet", f.name) for f in files)
    con = duckdb.connect()
    per_file = con.sql(
        f"SELECT file_name, sum(num_rows) FROM parquet_file_metadata('{batched}/events/*/*.parquet') GROUP BY ALL"
    ).fetchall()
    assert len(per_file) == len(files) and all(0 < n <= limits.batch_rows for _, n in per_file)
    # read as any engine reads a hive-partitioned directory: the date column from the directory names
    days = con.sql(
        f"SELECT DISTINCT date FROM read_parquet('{batched}/events/**/*.parquet', hive_partitioning = true) ORDER BY 1"
    ).fetchall()
    assert [str(d) for (d,) in days] == ["2025-11-24", "2025-11-25", "2025-11-26", "2025-11-27"]


def test_batches_are_consecutive_files_within_both_bounds():
    files = [
        StagedFile(f"f{i}", rows, size) for i, (rows, size) in enumerate([(3, 30), (0, 0), (4, 40), (2, 500), (1, 5)])
    ]
    groups = [[f.name for f in g] for g in batches(files, rows=7, size=100)]
    assert groups == [["f0", "f2"], ["f3"], ["f4"]]  # an empty file is no batch; one over the bytes is alone
    assert batches([], rows=1, size=1) == []
    with pytest.raises(ValueError):
        WriteLimits(batch_rows=524_288)  # not below DuckDB's flush threshold: the failure it exists to avoid


def test_an_export_without_events_still_has_every_table_and_column(tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"")
    out = tmp_path / "out"
    assert export("-q", "-o", str(out), str(log)) == 0  # EMPTY_LOG is a warning
    assert table(out, "events").fetchall() == []
    assert tuple(table(out, "events").columns) == TABLES_BY_NAME["events"].names
    (run,) = rows(out, "runs")
    assert run["events"] == 0 and run["status"] == "unknown"


def test_raxol_journals_export_with_their_dialect(tmp_path):
    out = tmp_path / "out"
    journals = ROOT / "fixtures" / "journals"
    code = export("-q", "-o", str(out), "--dialect", "raxol", str(journals))
    runs = rows(out, "runs")
    assert {r["dialect"] for r in runs} == {"raxol"} and len(runs) == len(list(journals.glob("*.jsonl")))
    assert code == min([r["exit_code"] for r in runs if r["exit_code"]] or [0])
    chained = rows(out, "events", "path LIKE '%/chained.jsonl'")
    assert chained and all(r["hash"] and r["kind"] for r in chained)


# --- docs ---------------------------------------------------------------------------


def test_docs_list_exactly_the_defined_tables():
    doc = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    start, end = "<!-- tables: generated by ract_cli.export.tables.schema_markdown -->\n", "<!-- /tables -->"
    assert doc[doc.index(start) + len(start) : doc.index(end)] == schema_markdown()


def test_an_export_is_the_same_bytes_every_time_its_rows_in_the_logs_order(tmp_path):
    """DuckDB's partitioned COPY writes a file per thread: with several, rows landed in whichever thread's
    file first, in whichever order (one export in six of a 40,000-event log differed, its day's file
    starting at line 26,131). Written with one thread (``WriteLimits.threads``), each file holds the
    rows in the logs' order, and two exports of the same logs are the same bytes."""
    log = tmp_path / "runs" / "a" / "events.jsonl"
    log.parent.mkdir(parents=True)
    write_benchmark_log(log, events=30_000)
    outs = [tmp_path / f"out{i}" for i in range(2)]
    for out in outs:
        assert export("-q", "--output", str(out), str(log)) == 0
    first, second = snapshot(outs[0]), snapshot(outs[1])
    markers = [json.loads(snap.pop(MARKER)) for snap in (first, second)]
    assert first == second and len(first) > 3
    for marker in markers:
        del marker["written_at"]  # (the one thing that differs: when)
    assert markers[0] == markers[1]
    for path in sorted((outs[0] / "events").rglob("*.parquet")):
        lines = [line for (line,) in duckdb.sql(f"SELECT line FROM read_parquet('{path}')").fetchall()]
        assert len(lines) > 20_000 and lines == sorted(lines), path
