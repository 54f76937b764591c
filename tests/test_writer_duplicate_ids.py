"""Issue 15 item 16: ``EventWriter`` refuses an event id the log already holds.

A duplicate would give a log that fails verify with ``DUPLICATE_ID``; the
writer refuses it (``RactError``, exit 2), in this writer's session and across
a resume (the log's ids are read once, the first time an id was chosen).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from ract_cli.errors import ExitCode, RactError
from ract_cli.read.reader import ChainReader
from ract_cli.writer.event_writer import EventWriter

RUN_ID = "ef" * 16


def _codes(path: Path) -> list[str]:
    reader = ChainReader(path)
    for _ in reader:
        pass
    return [f.code for f in reader.findings]


def test_an_id_used_in_this_session_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventWriter(path, run_id=RUN_ID, fsync="never", redaction=None) as w:
        w.append("run.started", {}, event_id="a" * 32)
        with pytest.raises(RactError) as caught:
            w.append("step.started", {}, event_id="a" * 32)
        assert caught.value.exit_code == ExitCode.USAGE and "already used" in caught.value.message
        w.append("step.started", {}, event_id="b" * 32)  # the writer goes on: nothing was written
    assert path.read_bytes().count(b"\n") == 2
    assert "DUPLICATE_ID" not in _codes(path)


def test_an_id_used_before_a_resume_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventWriter(path, run_id=RUN_ID, fsync="never", redaction=None) as w:  # default random ids
        first = w.append("run.started", {})
        w.append("step.started", {}, event_id="c" * 32)
    size = path.stat().st_size
    with EventWriter(path, fsync="never", redaction=None) as w:
        for used in (first["id"], "c" * 32):
            with pytest.raises(RactError) as caught:
                w.append("step.started", {}, event_id=used)
            assert caught.value.exit_code == ExitCode.USAGE
        assert path.stat().st_size == size
        w.append("step.started", {}, event_id="d" * 32)
        w.append("step.started", {})  # once read, random ids are checked too (and are new)
    assert "DUPLICATE_ID" not in _codes(path)


def test_a_callers_id_generator_that_repeats_is_refused_on_resume(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"

    def counter() -> Callable[[], str]:
        c = itertools.count(1)
        return lambda: f"{next(c):032x}"

    with EventWriter(path, run_id=RUN_ID, fsync="never", redaction=None, new_id=counter()) as w:
        w.append("run.started", {})
    with EventWriter(path, fsync="never", redaction=None, new_id=counter()) as w, pytest.raises(RactError):
        w.append("step.started", {})  # the generator starts again at 1: already in the log
    assert path.read_bytes().count(b"\n") == 1
