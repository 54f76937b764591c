"""One answer everywhere to "did ``repair`` write this event?" (SPEC §3's REPAIRED, §4's closes).

A close whose payload says ``"synthesized": true`` is repair's; the same field on an open (or any
other kind) is only a field. verify and project had asked that of closes only, while grep
``--synthesized``, export's ``synthesized`` column, replay's ``[synthesized]`` and the OTLP
attribute asked it of every event, so one log got two answers (a helper's cross-command review).
Here one log holds the flag on an open and on a close; every command must name the close alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ract_cli.cli.app import main
from ract_cli.format.canonical import chain_hash
from ract_cli.otel import export_otlp
from ract_cli.project.report import project_file
from ract_cli.read.handles import CLOSE_KINDS, is_synthesized_close
from ract_cli.read.reader import ChainReader
from ract_cli.replay.summary import summarize
from ract_cli.testing.synth import write_completed


@pytest.fixture
def flagged(tmp_path: Path) -> tuple[Path, int, int]:
    """A valid completed run with ``synthesized: true`` on its first tool.called (an open) and on the
    tool.result after it (a close), the chain recomputed; the two line numbers."""
    log = tmp_path / ("0" * 31 + "1") / "events.jsonl"
    log.parent.mkdir()
    write_completed(log, "0" * 31 + "1")
    events = [json.loads(raw) for raw in log.read_bytes().splitlines()]
    kinds = [e["kind"] for e in events]
    opened = kinds.index("tool.called")
    closed = kinds.index("tool.result", opened)
    for i in (opened, closed):
        events[i]["payload"]["synthesized"] = True
    prev = events[opened - 1]["hash"]
    for e in events[opened:]:
        e["prev_hash"] = prev
        del e["hash"]
        e["hash"] = prev = chain_hash(e)
    log.write_bytes(b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events))
    return log, opened + 1, closed + 1


def test_only_a_close_that_says_so_is_synthesized() -> None:
    for kind in sorted(CLOSE_KINDS):
        assert is_synthesized_close(kind, {"synthesized": True})
        assert not is_synthesized_close(kind, {"synthesized": "true"})
        assert not is_synthesized_close(kind, {})
    for kind in ("tool.called", "step.started", "run.started", "process.reaped", None, 7, ["tool.result"]):
        assert not is_synthesized_close(kind, {"synthesized": True})
    assert not is_synthesized_close("tool.result", None)


def test_every_command_names_the_close_alone(flagged: tuple[Path, int, int], capfdbinary, tmp_path: Path) -> None:
    log, opened, closed = flagged
    reader = ChainReader(log)
    findings = reader.read_all()
    assert reader.exit_code == 0
    assert [(f.code, f.line) for f in findings if f.code == "REPAIRED"] == [("REPAIRED", None)]
    assert reader.handles.synthesized_closes == 1

    report = project_file(log)
    assert report["synthesized_closes"]["count"] == 1
    assert [item["line"] for item in report["synthesized_closes"]["items"]] == [closed]

    raw = log.read_bytes().splitlines(keepends=True)
    assert main(["trace", "grep", "--synthesized", str(log)]) == 0
    assert capfdbinary.readouterr().out == raw[closed - 1]  # (the line as it is in the log)

    assert main(["trace", "sql", "--format", "jsonl", "SELECT line FROM events WHERE synthesized", str(log)]) == 0
    assert [json.loads(row)["line"] for row in capfdbinary.readouterr().out.splitlines()] == [closed]

    events = [json.loads(line) for line in raw]
    assert [i + 1 for i, e in enumerate(events) if summarize(e).startswith("[synthesized]")] == [closed]

    traces = tmp_path / "traces.jsonl"
    assert export_otlp([log], traces).exit_code == 0
    text = traces.read_text()
    assert text.count('"ract.synthesized"') == 1 and opened != closed
