"""Sealing while writing (SPEC §14, last bullet): ``SealingWriter`` and the ``<log>.checkpoints`` sidecar."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import independent_tlog as ind
import pytest

from ract_cli import EventWriter
from ract_cli.proofs import SealingWriter, SignerKey, check_checkpoints, find_sidecar, seal, sidecar_path
from ract_cli.proofs.checkpoint import CheckpointRefused
from ract_cli.proofs.sidecar import split_notes

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = "5eal5eal5eal5eal5eal5eal5eal5eal".replace("l", "1")
KEY = SignerKey.from_seed("example.com/ract/seal", bytes(range(32)))
VKEY_TEXT = KEY.verifier().text()


@pytest.fixture
def vkey(tmp_path: Path) -> Path:
    p = tmp_path / "seal.vkey"
    p.write_text(VKEY_TEXT + "\n")
    return p


def writer(path: Path) -> EventWriter:
    ids = iter(f"e{i:031x}" for i in range(1, 10_000))
    clock = iter(range(1_764_000_000_000_000_000, 1_764_000_000_000_000_000 + 10**12, 1000))
    return EventWriter(
        path, run_id=RUN_ID, fsync="never", redaction=None, new_id=lambda: next(ids), clock=lambda: next(clock)
    )


def write(w, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        w.append("state.budget_capped", {"function": "plan", "cap_tokens": 10 + i, "seated_tokens": i})


def log_path(tmp_path: Path) -> Path:
    d = tmp_path / RUN_ID
    d.mkdir(exist_ok=True)
    return d / "events.jsonl"


def entries(log: Path) -> list[ind.Tree]:
    return [ind.open_checkpoint(e, VKEY_TEXT) for e in split_notes(sidecar_path(log).read_bytes())]


def test_a_seal_every_n_events_and_at_close(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=3) as w:
        write(w, 10)
    assert sidecar_path(log).name == "events.jsonl.checkpoints" and find_sidecar(log) == sidecar_path(log)
    trees = entries(log)
    lines = log.read_bytes().splitlines(keepends=True)
    assert [t.size for t in trees] == [3, 6, 9, 10]
    assert all(t.origin == "example.com/ract/seal" and t.root == ind.log_root(lines[: t.size]) for t in trees)
    report = check_checkpoints(log, [str(sidecar_path(log))], [str(vkey)])
    assert report.ok and report.covered == 10 and len(report.checks) == 4


def test_a_truncated_log_is_caught_by_its_own_seals(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=4) as w:
        write(w, 12)
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:9]))
    report = check_checkpoints(log, [str(sidecar_path(log))], [str(vkey)])
    assert [f.code for f in report.findings] == ["CHECKPOINT_TRUNCATED"]  # the seal at 12 (4 and 8 still hold)
    assert report.covered == 8 and int(report.exit_code) == 1


def test_resuming_a_sealed_log_continues_its_tree(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=5) as w:
        write(w, 5)
    w2 = writer(log)
    w2.new_id = iter(f"f{i:031x}" for i in range(1, 100)).__next__
    with SealingWriter(w2, KEY, every=5) as w:
        write(w, 7, start=5)
    assert [t.size for t in entries(log)] == [5, 10, 12]
    assert check_checkpoints(log, [str(sidecar_path(log))], [str(vkey)]).ok


def test_a_torn_last_seal_is_a_warning(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=2) as w:
        write(w, 4)
    side = sidecar_path(log)
    data = side.read_bytes()
    side.write_bytes(data + data.split(b"\n\n")[0][:15])  # a writer killed in the middle of its next seal
    report = check_checkpoints(log, [str(side)], [str(vkey)])
    assert report.ok and [(f.code, f.severity) for f in report.findings] == [("CHECKPOINT_TORN", "warning")]
    assert report.covered == 4
    proc = _plain_verify(log)  # (no key: the same warning, and the seals' sizes still hold)
    assert proc.returncode == 0 and "CHECKPOINT_TORN" in proc.stderr and "covers 4 of 4" in proc.stderr, proc.stderr


def test_an_edited_seal_is_a_signature_failure(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=2) as w:
        write(w, 4)
    side = sidecar_path(log)
    side.write_bytes(side.read_bytes().replace(b"\n4\n", b"\n3\n"))
    report = check_checkpoints(log, [str(side)], [str(vkey)])
    assert [f.code for f in report.findings] == ["CHECKPOINT_SIGNATURE"]


def test_repair_after_a_killed_sealing_writer_keeps_the_seals_valid(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    w = SealingWriter(writer(log), KEY, every=2)
    w.append("run.started", {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6"})
    w.append("step.started", {"timeout_seconds": 60}, step_id="5e7e9f00aa11bb22cc33dd44ee55ff66")
    w.append("tool.called", {"tool": "pytest"}, step_id="5e7e9f00aa11bb22cc33dd44ee55ff66")
    w.writer.close()  # killed: no final seal, handles left open
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "repair", str(log)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert len(log.read_bytes().splitlines()) == 6  # three synthesized closes, appended after the seal at 2
    report = check_checkpoints(log, [str(sidecar_path(log))], [str(vkey)])
    assert report.ok and (report.covered, report.events) == (2, 6)


def test_sealing_refuses_a_log_that_does_not_verify(tmp_path: Path) -> None:
    log = log_path(tmp_path)
    with writer(log) as w:
        write(w, 3)
    lines = log.read_bytes().splitlines(keepends=True)
    event = json.loads(lines[1])
    event["payload"]["cap_tokens"] = 999  # edited in place, hash left as it was
    lines[1] = json.dumps(event, separators=(",", ":"), sort_keys=True).encode() + b"\n"
    log.write_bytes(b"".join(lines))
    with pytest.raises(CheckpointRefused) as exc:
        SealingWriter(writer(log), KEY)
    assert int(exc.value.exit_code) == 1 and not sidecar_path(log).exists()


def test_seal_appends_one_checkpoint_of_the_log_as_it_is(tmp_path: Path, vkey: Path) -> None:
    src = ROOT / "fixtures" / "runs" / "410d1cc7be160683b49c268f18a6ff49"
    shutil.copytree(src, tmp_path / src.name)
    log = tmp_path / src.name / "events.jsonl"
    seal(log, KEY)
    seal(log, KEY)
    assert [t.size for t in entries(log)] == [37, 37]
    assert check_checkpoints(log, [str(sidecar_path(log))], [str(vkey)]).ok


def _sealed_writer(path: Path, key: SignerKey | Path, every: int, first_id: int = 1) -> EventWriter:
    ids = iter(f"e{i:031x}" for i in range(first_id, 10_000))
    clock = iter(range(1_764_000_000_000_000_000, 1_764_000_000_000_000_000 + 10**12, 1000))
    return EventWriter(
        path,
        run_id=RUN_ID,
        fsync="never",
        redaction=None,
        new_id=lambda: next(ids),
        clock=lambda: next(clock),
        seal_key=key,
        seal_every=every,
    )


def test_the_writer_seals_by_itself_every_n_events_and_at_close(tmp_path: Path, vkey: Path) -> None:
    """Issue 17 item 7: ``EventWriter(..., seal_key=KEY, seal_every=N)``, the same sidecar as SealingWriter's."""
    log = log_path(tmp_path)
    with _sealed_writer(log, KEY, every=4) as w:
        write(w, 10)
    sizes = [tree.size for tree in entries(log)]
    assert sizes == [4, 8, 10]  # every 4, then what was left at close
    proc = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "verify", str(log), "--vkey", str(vkey)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "covers 10 of 10 events" in proc.stderr, proc.stderr
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:7]))  # cut back: the seal says 10
    proc = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "verify", str(log), "--vkey", str(vkey)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "CHECKPOINT_TRUNCATED" in proc.stderr


def test_the_writer_takes_a_key_file_and_resumes_the_tree_of_an_existing_log(tmp_path: Path, vkey: Path) -> None:
    log = log_path(tmp_path)
    skey = tmp_path / "seal.skey"
    skey.write_text(KEY.text() + "\n")
    with writer(log) as w:
        write(w, 5)  # written unsealed
    with _sealed_writer(log, skey, every=100, first_id=6) as w:  # ids go on after the first writer's
        write(w, 2, start=5)
    (tree,) = entries(log)
    assert tree.size == 7 and check_checkpoints(log, [str(sidecar_path(log))], [str(vkey)]).ok


def test_the_writer_refuses_to_seal_onto_a_log_that_does_not_verify(tmp_path: Path) -> None:
    log = log_path(tmp_path)
    with writer(log) as w:
        write(w, 3)
    data = log.read_bytes()
    log.write_bytes(data.replace(b'"seated_tokens":1', b'"seated_tokens":2', 1))
    with pytest.raises(CheckpointRefused):
        _sealed_writer(log, KEY, every=2)
    assert not sidecar_path(log).exists()
    with writer(log):  # the refused writer let go of the log's lock
        pass


# --- a plain verify (no --checkpoint, no --vkey) still reads the seals ---------------------------------


def _plain_verify(log: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "verify", *options, str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_a_plain_verify_catches_a_truncated_sealed_log_without_a_key(tmp_path: Path) -> None:
    """SPEC §14: a sealed log cut back later is caught with no head kept elsewhere, and no key at hand: the
    seals' sizes are checked against the events just counted (signatures and roots need --vkey)."""
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=4) as w:
        write(w, 12)
    proc = _plain_verify(log)
    assert proc.returncode == 0 and "covers 12 of 12 events" in proc.stderr, proc.stderr
    assert "sizes only: signatures and roots are checked with --vkey" in proc.stderr
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:9]))  # a clean chain of 9 events
    proc = _plain_verify(log)
    assert proc.returncode == 1 and "CHECKPOINT_TRUNCATED" in proc.stderr, proc.stderr
    report = json.loads(_plain_verify(log, "--format", "json").stdout)["files"][0]
    assert report["checkpoints"]["signatures_checked"] is False and report["checkpoints"]["covered"] == 8
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["CHECKPOINT_TRUNCATED"]


def test_a_forged_sidecar_can_fail_a_plain_verify_never_pass_it(tmp_path: Path, vkey: Path) -> None:
    """Without a key a seal is read for its size only: one edited to claim more events than the log holds
    fails the log (``CHECKPOINT_TRUNCATED``); one edited to another root passes (roots and signatures are
    --vkey's: whoever could rewrite the log could rewrite an unsigned root), and with the key both edits
    are signature failures."""
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=2) as w:
        write(w, 4)
    side = sidecar_path(log)
    intact = side.read_bytes()
    side.write_bytes(intact.replace(b"\n4\n", b"\n9\n"))  # the last seal now claims 9 events
    proc = _plain_verify(log)
    assert proc.returncode == 1 and "CHECKPOINT_TRUNCATED" in proc.stderr, proc.stderr
    signed = _plain_verify(log, "--vkey", str(vkey))
    assert signed.returncode == 1 and "CHECKPOINT_SIGNATURE" in signed.stderr, signed.stderr
    first, rest = intact.split(b"\n", 1)
    lines = rest.split(b"\n")
    lines[1] = b"A" * 43 + b"="  # the first seal's root: 32 other bytes
    side.write_bytes(first + b"\n" + b"\n".join(lines))
    assert _plain_verify(log).returncode == 0
    signed = _plain_verify(log, "--vkey", str(vkey))
    assert signed.returncode == 1 and "CHECKPOINT_SIGNATURE" in signed.stderr, signed.stderr


def test_a_plain_verify_warns_of_a_sidecar_it_cannot_read(tmp_path: Path) -> None:
    """A seal that does not parse, a sidecar with nothing in it: a warning, exit 0 (only --vkey binds a
    seal); the seals that parse are still checked."""
    log = log_path(tmp_path)
    with SealingWriter(writer(log), KEY, every=2) as w:
        write(w, 4)
    side = sidecar_path(log)
    side.write_bytes(side.read_bytes().replace(b"\n2\n", b"\n02\n", 1))  # the first seal's size, misspelt
    proc = _plain_verify(log)
    assert "covers 4 of 4 events" in proc.stderr, proc.stderr
    assert proc.returncode == 0 and "CHECKPOINT_SIGNATURE" in proc.stderr, proc.stderr
    assert "its seals are not checked" in proc.stderr
    sidecar_path(log).write_bytes(b"")
    proc = _plain_verify(log)
    assert proc.returncode == 0 and "no checkpoint to check" in proc.stderr, proc.stderr


def test_a_plain_verify_looks_for_the_sidecar_the_writer_makes() -> None:
    """verify checks for the sidecar without importing the proofs package (start-up): the same suffix."""
    from ract_cli.proofs.sidecar import SIDECAR_SUFFIX
    from ract_cli.verify.verifier import SEAL_SUFFIX

    assert SEAL_SUFFIX == SIDECAR_SUFFIX
