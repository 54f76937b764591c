"""``ract trace sql``: the auditor questions over logs and over their export, on real DuckDB (SPEC §13).

The same query must give the same answer whether the PATH is a tree of logs
(read and verified on the fly) or the directory ``export --format parquet``
wrote from it; the answers are also checked against what the fleet was built
to contain (fleet_support.py) and, for the gate question, against
``project``'s own flag. Output formats, exit codes, read-only enforcement
and terminal escaping are checked through the real command.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_support import run_id, write_fleet
from hardening_support import on_pty
from independent_jcs import chain, event, line
from kind_examples import VALID

from ract_cli.cli.app import main

RACT = [sys.executable, "-m", "ract_cli"]

#: "which runs were reaped for dispose_unsuccessful more than twice"
REAPED_MORE_THAN_TWICE = """
SELECT run_id, count(*) AS reaps
FROM events
WHERE kind = 'process.reaped' AND payload->>'reason' = 'dispose_unsuccessful' AND trusted
GROUP BY run_id
HAVING count(*) > 2
ORDER BY run_id
"""
#: "p99 tool latency per tool this week" (this week: the week of 2025-11-26, when the fleet ran)
P99_PER_TOOL = """
SELECT payload->>'tool' AS tool,
       count(*) AS results,
       quantile_disc(CAST(payload->>'duration_ns' AS BIGINT), 0.99) / 1e6 AS p99_ms
FROM events
WHERE kind = 'tool.result' AND trusted
  AND ts >= date_trunc('week', TIMESTAMPTZ '2025-11-26 12:00:00+00')
  AND ts <  date_trunc('week', TIMESTAMPTZ '2025-11-26 12:00:00+00') + INTERVAL 7 DAY
GROUP BY tool
ORDER BY tool
"""
#: "every run that completed while a required predicate failed" -- from the events alone
COMPLETED_WHILE_REQUIRED_FAILED = """
WITH completed AS (
    SELECT path, run_id, min(line) AS line FROM events
    WHERE kind = 'run.completed' AND trusted GROUP BY path, run_id
), latest AS (
    SELECT c.run_id, e.payload->>'predicate_id' AS predicate,
           arg_max(CAST(e.payload->>'ok' AS BOOLEAN), e.line) AS ok
    FROM events e JOIN completed c ON e.path = c.path AND e.line < c.line
    WHERE e.kind = 'predicate.evaluated' AND CAST(e.payload->>'required' AS BOOLEAN) AND e.trusted
    GROUP BY c.run_id, predicate
)
SELECT DISTINCT run_id FROM latest WHERE NOT ok ORDER BY run_id
"""
AUDITOR_QUERIES = {
    "reaped more than twice": REAPED_MORE_THAN_TWICE,
    "p99 per tool": P99_PER_TOOL,
    "completed while a required predicate failed": COMPLETED_WHILE_REQUIRED_FAILED,
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sql") / "runs"
    root.mkdir()
    write_fleet(root)
    return root


@pytest.fixture(scope="module")
def export_dir(tree, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sql-export") / "out"
    assert main(["trace", "export", "--format", "parquet", "-q", "-o", str(out), str(tree)]) == 1
    return out


def sql(capfdbinary, *args: str) -> tuple[int, bytes, str]:
    code = main(["trace", "sql", *args])
    captured = capfdbinary.readouterr()
    return code, captured.out, captured.err.decode()


def jsonl(data: bytes) -> list[dict]:
    return [json.loads(raw) for raw in data.splitlines()]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# --- the auditor questions ------------------------------------------------------------


@pytest.mark.parametrize("name", AUDITOR_QUERIES)
def test_auditor_questions_give_the_same_answer_over_logs_and_over_their_export(capfdbinary, tree, export_dir, name):
    query = AUDITOR_QUERIES[name]
    code_logs, out_logs, _ = sql(capfdbinary, "--format", "jsonl", query, str(tree))
    code_export, out_export, _ = sql(capfdbinary, "--format", "jsonl", query, str(export_dir))
    assert out_logs == out_export and out_logs
    assert code_logs == code_export == 1  # the tampered run: the query still answers, the exit code says


def test_the_answers_are_the_ones_the_fleet_was_built_to_give(capfdbinary, tree):
    _, out, _ = sql(capfdbinary, REAPED_MORE_THAN_TWICE, str(tree))
    assert jsonl(out) == [{"run_id": run_id("reaped"), "reaps": 3}]
    _, out, _ = sql(capfdbinary, P99_PER_TOOL, str(tree))
    # pytest: 100, 200, 300, 400, 500, 50 ms -> nearest-rank p99 of 6 samples is the largest
    assert jsonl(out) == [
        {"tool": "pytest", "results": 6, "p99_ms": 500.0},
        {"tool": "ruff", "results": 3, "p99_ms": 30.0},
    ]
    _, out, _ = sql(capfdbinary, COMPLETED_WHILE_REQUIRED_FAILED, str(tree))
    assert jsonl(out) == [{"run_id": run_id("gate")}]


def test_the_gate_question_agrees_with_projects_flag(capfdbinary, export_dir):
    _, from_events, _ = sql(capfdbinary, COMPLETED_WHILE_REQUIRED_FAILED, str(export_dir))
    _, flagged, _ = sql(capfdbinary, "SELECT run_id FROM runs WHERE gate_inconsistent ORDER BY run_id", str(export_dir))
    assert from_events == flagged


def test_logs_and_an_export_together_are_one_set_of_tables(capfdbinary, tree, export_dir):
    one = str(tree / run_id("gate") / "events.jsonl")
    _, out, _ = sql(
        capfdbinary, "SELECT count(*) AS runs, count(DISTINCT path) AS paths FROM runs", str(export_dir), one
    )
    assert jsonl(out) == [{"runs": 6, "paths": 5}]  # the gate log twice: once exported, once read now


# --- exit codes -----------------------------------------------------------------------


def test_exit_code_is_the_lowest_non_zero_verification_code_of_the_inputs(capfdbinary, tree):
    clean = [str(tree / run_id(n) / "events.jsonl") for n in ("reaped", "gate", "open")]
    code, out, err = sql(capfdbinary, "SELECT count(*) AS n FROM runs", *clean)
    assert (code, jsonl(out), err) == (0, [{"n": 3}], "")
    code, _, err = sql(capfdbinary, "SELECT 1 AS one", str(tree))
    assert code == 1 and "exit 1 (TAMPERED)" in err
    code, out, _ = sql(capfdbinary, "SELECT count(*) AS n FROM findings WHERE code = 'IO_ERROR'", clean[0], "missing/")
    assert (code, jsonl(out)) == (5, [{"n": 1}])


def test_an_export_that_verified_is_exit_0(capfdbinary, tree, tmp_path):
    out = tmp_path / "clean"
    assert main(["trace", "export", "--format", "parquet", "-q", "-o", str(out), str(tree / run_id("gate"))]) == 0
    code, data, _ = sql(capfdbinary, "SELECT status FROM runs", str(out))
    assert (code, jsonl(data)) == (0, [{"status": "completed"}])


def test_a_sql_error_is_exit_2_with_duckdbs_message_and_nothing_else(capfdbinary, tree):
    code, out, err = sql(capfdbinary, "SELECT nope FROM events", str(tree))
    assert code == 2 and out == b""
    assert err.startswith('ract trace sql: Binder Error: Referenced column "nope" not found')
    code, out, err = sql(capfdbinary, "SELEC 1", str(tree))
    assert code == 2 and out == b"" and "Parser Error: syntax error" in err


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT * FROM runs) TO '{out}/stolen.csv'",
        "CREATE TABLE t AS SELECT * FROM runs",
        "ATTACH '{out}/x.duckdb'",
        "SET enable_external_access = true",
        "PRAGMA version",
        "INSTALL httpfs",
        "SELECT 1; SELECT 2",
        "",
    ],
)
def test_only_one_read_only_query_runs_and_the_export_is_never_written(capfdbinary, export_dir, statement):
    before = snapshot(export_dir)
    code, out, err = sql(capfdbinary, statement.format(out=export_dir), str(export_dir))
    assert code == 2 and out == b"" and err.startswith("ract trace sql: ")
    assert snapshot(export_dir) == before


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_csv('{out}/../x')",
    ],
)
def test_no_file_is_read_beyond_the_given_paths(capfdbinary, export_dir, query):
    code, out, err = sql(capfdbinary, query.format(out=export_dir), str(export_dir))
    assert code == 2 and out == b"" and "Permission Error" in err


def test_an_export_whose_path_holds_glob_and_quote_characters_reads_in_place(capfdbinary, tree, tmp_path):
    out = tmp_path / "we[i]rd*dir 'q'"
    assert main(["trace", "export", "--format", "parquet", "-q", "-o", str(out), str(tree)]) == 1
    code, data, _ = sql(capfdbinary, "SELECT count(*) AS n FROM runs", str(out))
    assert (code, jsonl(data)) == (1, [{"n": 5}])


# --- output formats -------------------------------------------------------------------


def test_piped_output_is_json_lines_one_object_per_row(tree):
    proc = subprocess.run(
        [*RACT, "trace", "sql", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind", str(tree)],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 1
    got = jsonl(proc.stdout)
    assert all(set(r) == {"kind", "n"} for r in got) and len(got) == len({r["kind"] for r in got}) > 5
    assert sum(r["n"] for r in got) == sum(1 for p in tree.rglob("events.jsonl") for _ in p.read_bytes().splitlines())


def test_values_are_json_types_timestamps_iso_utc(capfdbinary, tree):
    query = (
        "SELECT ts, date, timestamp_ns, trusted, line, payload::JSON AS payload, NULL AS nothing, 1.5 AS dec "
        f"FROM events WHERE run_id = '{run_id('gate')}' AND line = 1"
    )
    _, out, _ = sql(capfdbinary, query, str(tree))
    (row,) = jsonl(out)
    assert row["ts"] == "2025-11-25T16:00:00.000000Z" and row["date"] == "2025-11-25"
    assert row["timestamp_ns"] == 1_764_086_400_000_000_000 and row["trusted"] is True and row["line"] == 1
    assert row["nothing"] is None and row["dec"] == 1.5
    assert json.loads(row["payload"]) == VALID["run.started"]  # JSON-typed text stays text


def test_repeated_column_names_stay_apart(capfdbinary, tree):
    _, out, _ = sql(capfdbinary, "SELECT 1 AS a, 2 AS a", str(tree))
    assert jsonl(out) == [{"a": 1, "a_1": 2}]


def test_csv_has_a_header_and_one_record_per_row(capfdbinary, tree):
    _, out, _ = sql(
        capfdbinary, "--format", "csv", "SELECT status, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1", str(tree)
    )
    assert list(csv.reader(io.StringIO(out.decode()))) == [["status", "n"], ["completed", "3"], ["open", "2"]]


def test_json_is_one_array(capfdbinary, tree):
    _, out, _ = sql(capfdbinary, "--format", "json", "SELECT status FROM runs WHERE false", str(tree))
    assert json.loads(out) == []
    _, out, _ = sql(capfdbinary, "--format", "json", "SELECT run_id FROM runs ORDER BY 1 LIMIT 2", str(tree))
    assert [r["run_id"] for r in json.loads(out)] == sorted(
        run_id(n) for n in ("reaped", "gate", "recovered", "open", "tampered")
    )[:2]


def test_table_format_when_asked_even_when_piped(capfdbinary, tree):
    _, out, _ = sql(
        capfdbinary, "--format", "table", "SELECT status, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1", str(tree)
    )
    text = out.decode()
    assert "status" in text and "completed" in text and "2 row(s)" in text


# --- terminal safety --------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A verified log whose strings try to paint the terminal: ANSI colour, a bidi override, a newline."""
    run = run_id("hostile")
    evs = chain(
        [
            event("run.started", VALID["run.started"], run=run),
            event("tool.called", {"tool": "\x1b[32mPASS\x1b[0m\u202egnp.exe\nFORGED", "arguments": {}}, run=run),
        ]
    )
    path = tmp_path_factory.mktemp("hostile") / run / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(line(e) for e in evs))
    return path


def on_a_terminal(*args: str) -> tuple[int, bytes]:
    """Run ``ract`` with stdout on a pseudo-terminal; its exit code and everything it showed."""
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    code, _, shown = on_pty([*RACT, *args], stderr=False, size=None, raw=False, env=env)
    return code, shown


def test_a_terminal_gets_a_table_with_every_log_string_escaped(hostile):
    code, shown = on_a_terminal(
        "trace", "sql", "SELECT payload->>'tool' AS tool FROM events WHERE line = 2", str(hostile)
    )
    assert code == 0
    assert b"\x1b[32mPASS" not in shown and "\u202e".encode() not in shown and b"\nFORGED" not in shown
    assert b"\\x1b[32mPASS" in shown and b"\\u202e" in shown and b"1 row(s)" in shown


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_jsonl_and_csv_on_a_terminal_are_escaped_too(hostile, fmt):
    code, shown = on_a_terminal(
        "trace", "sql", "--format", fmt, "SELECT payload->>'tool' AS tool FROM events WHERE line = 2", str(hostile)
    )
    assert code == 0
    assert b"\x1b[" not in shown and "\u202e".encode() not in shown and b"\\u202e" in shown


def test_piped_output_keeps_the_values_exactly(capfdbinary, hostile):
    _, out, _ = sql(capfdbinary, "SELECT payload->>'tool' AS tool FROM events WHERE line = 2", str(hostile))
    assert jsonl(out) == [{"tool": "\x1b[32mPASS\x1b[0m\u202egnp.exe\nFORGED"}]


# --- progress -----------------------------------------------------------------------------

#: ``ract`` with every input counted as large (``PROGRESS_MIN_BYTES`` 0) and no redraw delay: the bar's rule,
#: not the size of the logs, decides whether it is drawn
_SMALL_IS_LARGE = (
    "import sys; import ract_cli.cli.render as render; "
    "render.PROGRESS_MIN_BYTES = 0; render.PROGRESS_REDRAW_S = 0; "
    "from ract_cli.cli.app import main; sys.exit(main(sys.argv[1:]))"
)


def stderr_on_a_terminal(*args: str) -> tuple[int, bytes, bytes]:
    """Run ``ract`` with stderr on a pseudo-terminal and stdout piped: exit code, stdout, what stderr showed."""
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    return on_pty([sys.executable, "-c", _SMALL_IS_LARGE, *args], stdout=False, size=None, raw=False, env=env)


def test_a_terminal_sees_progress_while_logs_are_read_but_not_for_json_output(tree):
    query = "SELECT count(*) AS n FROM events"
    code, out, shown = stderr_on_a_terminal("trace", "sql", "--format", "table", query, str(tree))
    assert code == 1 and b"1 row(s)" in out  # the tampered run: exit 1
    assert b"reading logs" in shown and b"\x1b[2K" in shown  # drawn, then erased before the result
    for fmt in ("jsonl", "json"):
        code, out, shown = stderr_on_a_terminal("trace", "sql", "--format", fmt, query, str(tree))
        assert code == 1 and b'"n"' in out
        assert b"reading logs" not in shown and b"not every input verified" in shown
