"""Issue 15 item 15: a writer never appends to a file that is no longer the log.

``EventWriter`` opens, then locks. If ``repair`` renames a repaired log into
place in between, the descriptor names the old inode (by then the ``.bak``).
The race is real here: a subclass runs a real ``repair_file`` (or a real
``os.replace``) at the writer's seam between open and lock; no filesystem call
is mocked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ract_cli.errors import ExitCode, LogIOError
from ract_cli.read.reader import ChainReader
from ract_cli.repair.repairer import repair_file
from ract_cli.writer.event_writer import EventWriter

RUN_ID = "ab" * 16


def _interrupted(path: Path) -> None:
    with EventWriter(path, run_id=RUN_ID, fsync="never", redaction=None) as w:
        w.append("run.started", {})
        w.append("step.started", {}, step_id="5" * 32)


def _verify(path: Path) -> tuple[int, list[str]]:
    reader = ChainReader(path)
    events = sum(1 for _ in reader)
    return events, [f.code for f in reader.findings if f.severity == "error"]


class RepairedBetweenOpenAndLock(EventWriter):
    """A writer whose first open races a real repair of the log."""

    raced = 0

    def _opened(self, fd: int) -> None:
        if not type(self).raced:
            type(self).raced += 1
            result = repair_file(self.path)  # renames the repaired log over the path; the old inode is .bak
            assert result.written_to is not None and result.backup is not None


def test_a_repair_between_open_and_lock_is_seen_and_the_writer_appends_to_the_repaired_log(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _interrupted(path)
    with RepairedBetweenOpenAndLock(path, fsync="never", redaction=None) as w:
        late = w.append("step.started", {}, step_id="6" * 32)
    assert RepairedBetweenOpenAndLock.raced == 1
    assert late["id"].encode() in path.read_bytes()  # the acknowledged event is in the log...
    assert late["id"].encode() not in (tmp_path / "events.jsonl.bak").read_bytes()  # ...not in the backup
    events, errors = _verify(path)
    assert events == 5 and errors == []  # 2 + 2 synthesized closes + the late event, one chain


class AlwaysReplaced(EventWriter):
    """Every open loses the race: a new file is renamed into place each time."""

    def _opened(self, fd: int) -> None:
        fresh = self.path.with_name("fresh")
        fresh.write_bytes(self.path.read_bytes())
        os.replace(fresh, self.path)


def test_a_path_replaced_on_every_attempt_fails_clearly_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _interrupted(path)
    before = path.read_bytes()
    with pytest.raises(LogIOError) as caught:
        AlwaysReplaced(path, fsync="never", redaction=None)
    assert caught.value.exit_code == ExitCode.IO
    assert "replaced" in caught.value.message and str(path) in caught.value.message
    assert path.read_bytes() == before
    with EventWriter(path, fsync="never", redaction=None) as w:  # nothing is left locked
        w.append("step.started", {}, step_id="7" * 32)
