"""Memory over many runs: ``project`` (issue 15 item 11) and ``export`` / ``sql`` (issue 16).

``ProjectResult`` spills each report to an anonymous temporary file as it is
made (``SpilledReports``) and counts the totals as they come; ``json_chunks``
writes the documented fleet JSON a run at a time, byte for byte what
``dumps(to_dict())`` writes.

``export --format parquet`` of 10,000 runs failed with DuckDB out of memory:
its partitioned COPY, once a partition (here: one day) reaches
``partitioned_write_flush_threshold`` rows, flushes them with memory the
limit does not bound. The writer now sends ``events`` one batch of rows
(below that threshold) per COPY. The test below meets the same bounds at a
size CI affords: the threshold, the batch and the memory limit scaled down
together through ``WriteLimits``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import duckdb
import orjson
import pytest

from ract_cli.cli.project_output import json_report_chunks, to_json
from ract_cli.cli.render import dumps_json
from ract_cli.export.parquet import WriteLimits, export_parquet
from ract_cli.project.options import ProjectOptions
from ract_cli.project.report import ProjectResult, project_file, project_paths
from ract_cli.project.result import SpilledReports
from ract_cli.sql import SqlSession
from ract_cli.testing.synth import write_aborted, write_completed

ROOT = Path(__file__).resolve().parent.parent


def _indented(data: object) -> str:
    return dumps_json(data, indent=True, sort_keys=True)


def _compact(data: object) -> str:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()


def test_json_chunks_are_exactly_the_documented_json(tmp_path: Path) -> None:
    fleet = project_paths([str(ROOT / "fixtures" / "runs"), str(tmp_path / "missing")])
    assert len(fleet.runs) > 1 and fleet.findings
    for dumps, indent in ((_indented, True), (_compact, False)):
        assert "".join(fleet.json_chunks(dumps, indent=indent)) == dumps(fleet.to_dict())
    empty = project_paths([str(tmp_path / "missing")])
    assert "".join(empty.json_chunks(_indented)) == _indented(empty.to_dict())
    one = next(iter(sorted((ROOT / "fixtures" / "runs").glob("*/events.jsonl"))))
    single = ProjectResult(runs=[project_file(one)], detailed=True)
    assert "".join(single.json_chunks(_indented)) == _indented(single.to_dict()) == _indented(project_file(one))


def test_totals_and_exit_code_are_counted_as_reports_arrive() -> None:
    fleet = project_paths([str(ROOT / "fixtures" / "runs")])
    runs = list(fleet.runs)
    assert fleet.totals()["runs"] == len(runs)
    assert fleet.totals()["events"] == sum(r["chain"]["events"] for r in runs)
    assert fleet.totals()["untrusted"] == sum(1 for r in runs if not r["trusted"])
    assert int(fleet.exit_code) == min(r["exit_code"] for r in runs if r["exit_code"])
    # the verdicts read back only these (in order): every run that failed or is not trusted, and none else
    unclean = [r for r in runs if r["exit_code"] != 0 or not r["trusted"]]
    assert list(fleet.unclean_runs()) == unclean and 0 < len(unclean) < len(runs)


def test_spilled_reports_behave_as_a_list() -> None:
    reports = [{"n": i, "path": f"p{i}"} for i in range(5)] + [{"n": 5, "path": "bad\udc80name"}]
    spilled = SpilledReports(reports)
    assert len(spilled) == 6 and spilled == reports and list(spilled) == reports
    assert spilled[0] == reports[0] and spilled[-1] == reports[-1] and spilled[1:3] == reports[1:3]
    assert spilled != reports[:-1] and SpilledReports() == []
    spilled.close()
    # one report is kept as given, as a list keeps it; a second spills both, each read back equal
    one = SpilledReports([reports[0]])
    assert one[0] is reports[0]
    one.append(reports[1])
    assert one[0] == reports[0] and one[0] is not reports[0] and list(one) == reports[:2]
    one.close()


def test_peak_memory_does_not_grow_with_the_number_of_runs(tmp_path: Path) -> None:
    """2,000 more runs cost under 12 MB (before: every report kept, ~25 MB per 1,000 small runs)."""
    child = textwrap.dedent(
        """
        import resource, sys
        from pathlib import Path
        from ract_cli.cli.render import dumps_json
        from ract_cli.project import project_paths
        root = Path(sys.argv[1])
        for i in range(int(sys.argv[2])):
            d = root / f"{i:032x}"
            d.mkdir(parents=True)
            (d / "events.jsonl").write_bytes(b"")
        result = project_paths([str(root)])
        with open("/dev/null", "w") as out:
            for chunk in result.json_chunks(lambda d: dumps_json(d, indent=True, sort_keys=True)):
                out.write(chunk)
        for run in result.runs:  # what the text and Markdown tables do: one report at a time
            pass
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )

    def peak_kib(runs: int) -> int:
        done = subprocess.run(
            [sys.executable, "-c", child, str(tmp_path / str(runs)), str(runs)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return int(done.stdout.split()[-1])

    small, large = peak_kib(200), peak_kib(2200)
    assert large - small < 12 * 1024, (small, large)


@pytest.mark.parametrize("as_written", [False, True])
def test_a_report_with_a_non_utf8_path_round_trips(tmp_path: Path, as_written: bool) -> None:
    report = {"path": "run-\udcff/events.jsonl", "exit_code": 0}
    spilled = SpilledReports([report, {"n": 1}, report], as_written=as_written)  # (the first is kept as given)
    assert spilled[0] == spilled[2] == report and spilled[2] is not report
    assert json.loads(json.dumps(spilled[2])) == report
    assert (spilled.written(2) is not None) == as_written


def _fleet_with_hostile_names(root: Path) -> Path:
    """The fixture runs, and two more under names a report must escape: a workflow command's ``##[``, and a
    byte that is not UTF-8 (a lone surrogate in the path: orjson refuses it, json writes it)."""
    for i, log in enumerate(sorted((ROOT / "fixtures" / "runs").glob("*/events.jsonl"))):
        (root / f"run{i}").mkdir(parents=True)
        (root / f"run{i}" / "events.jsonl").write_bytes(log.read_bytes())
    (root / "a##[b").mkdir()
    (root / "a##[b" / "events.jsonl").write_bytes((root / "run0" / "events.jsonl").read_bytes())
    bad = os.path.join(os.fsencode(root), b"bad\xffname")
    os.mkdir(bad)
    with open(os.path.join(bad, b"events.jsonl"), "wb") as f:
        f.write((root / "run1" / "events.jsonl").read_bytes())
    return root


@pytest.mark.parametrize("jobs", [1, 2])
def test_reports_kept_as_written_give_the_json_of_reports_kept_compact(tmp_path: Path, jobs: int) -> None:
    """``project_paths(as_written=True)`` (the CLI's JSON): each report is written as its worker kept it, and
    the JSON is byte for byte what the reports kept compact give, workflow commands neutralized alike."""
    fleet = _fleet_with_hostile_names(tmp_path / "fleet")
    paths = [str(fleet), str(tmp_path / "missing")]
    options = ProjectOptions(jobs=jobs)
    written, compact = project_paths(paths, options, as_written=True), project_paths(paths, options)
    assert sum(written.runs.written(i) is not None for i in range(len(written.runs))) == len(written.runs) > 5
    text = "".join(json_report_chunks(written)) + "\n"
    assert text == to_json(compact) == to_json(written)
    assert "##\\u005b" in text and "##[" not in text and "\\udcff" in text
    assert list(written.runs) == list(compact.runs)


def test_without_a_temporary_directory_reports_stay_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    reports = [{"n": i} for i in range(3)]
    spilled = SpilledReports(reports)
    assert spilled == reports and spilled[-1] == {"n": 2} and len(spilled) == 3


# --- export and sql (issue 16) ---------------------------------------------------------

#: DuckDB's flush threshold, the batch and the memory scaled down together: one COPY of the 46,000 events
#: below (one day) failed under these limits exactly as 766,746 did under the defaults ("Out of Memory
#: Error: failed to allocate data of size 6.2 MiB (58.1 MiB/61.0 MiB used)"); one thread, as a CI machine
#: with many cores would otherwise buffer more per COPY
SMALL = WriteLimits(memory_limit="64MB", threads=1, batch_rows=5_000, flush_rows=20_000)


def test_a_day_of_more_events_than_duckdbs_flush_threshold_is_written_under_a_small_memory_limit(tmp_path: Path):
    root = tmp_path / "runs"
    for i in range(600):  # 46,000 events, all on 2025-11-24
        run = hashlib.sha256(f"ract.test.fleet-memory:{i}".encode()).hexdigest()[:32]
        path = root / run / "events.jsonl"
        path.parent.mkdir(parents=True)
        (write_completed if i % 3 == 0 else write_aborted)(path, run, seed=i)
    out = tmp_path / "out"
    result = export_parquet([root], out, limits=SMALL)
    assert int(result.exit_code) == 0 and result.counts["runs"] == 600
    events = result.counts["events"]
    assert events > 2 * SMALL.flush_rows  # what one COPY could not write
    con = duckdb.connect()
    glob = f"{out}/events/**/*.parquet"
    assert con.sql(f"SELECT count(*), count(DISTINCT run_id) FROM read_parquet('{glob}')").fetchall() == [(events, 600)]
    per_file = con.sql(f"SELECT sum(num_rows) FROM parquet_file_metadata('{glob}') GROUP BY file_name").fetchall()
    assert len(per_file) >= events // SMALL.batch_rows and max(n for (n,) in per_file) <= SMALL.batch_rows
    assert [p.name for p in (out / "events").iterdir()] == ["date=2025-11-24"]
    # sql over the logs writes the same tables the same way
    with SqlSession([root], limits=SMALL) as session:
        assert list(session.query("SELECT count(*) FROM events").rows()) == [(events,)]
        assert session.exit_code == 0
