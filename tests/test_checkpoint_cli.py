"""keygen -> checkpoint -> prove -> verify-proof, as real subprocesses, over real logs (SPEC §14).

Every checkpoint and proof ract writes is also checked by ``independent_tlog``
(written from the C2SP specs and RFC 9162, importing nothing from ract).
``verify --checkpoint`` is checked through the library function it calls
(``check_checkpoints``) and, once the option is wired into ``verify``, end to
end (skipped until then).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import independent_tlog as ind
import pytest
from independent_jcs import T0, chain, jcs
from independent_jcs import line as canonical_line

from ract_cli import EventWriter
from ract_cli.proofs import check_checkpoints

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
COMPLETED = "120d7eae7ee0c9c181816e553722e2fe"  # 156 events, verifies clean
ABORTED = "410d1cc7be160683b49c268f18a6ff49"  # 37 events, verifies clean
INTERRUPTED = "9ae2021ae4d2af95ab864b9bac116475"  # torn tail: exit 4
TAMPERED = "8686994841309902af40ce3e190711e7"  # HASH_MISMATCH at line 31: exit 1
FOREIGN = "450e154f62c2d870c077f0b9edeee9d7"  # CRLF, \u escapes, reversed keys: exit 0
ORIGIN = "example.com/ract/test"


def ract(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def copy_run(tmp_path: Path, run_id: str) -> Path:
    shutil.copytree(RUNS / run_id, tmp_path / run_id)
    return tmp_path / run_id / "events.jsonl"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    d = tmp_path_factory.mktemp("keys")
    proc = ract("keygen", ORIGIN, "--output", d / "ci")
    assert proc.returncode == 0, proc.stderr
    vkey_text = (d / "ci.vkey").read_text().strip()
    return d / "ci.skey", d / "ci.vkey", vkey_text


def make_checkpoint(log: Path, skey: Path, out: Path) -> Path:
    proc = ract("checkpoint", log, "--key", skey, "--origin", ORIGIN, "--output", out)
    assert proc.returncode == 0, proc.stderr
    return out


# --- keygen -------------------------------------------------------------------------------


def test_keygen_writes_a_secret_skey_and_a_vkey(tmp_path: Path) -> None:
    proc = ract("keygen", "example.com/log", "--output", tmp_path / "k")
    assert proc.returncode == 0, proc.stderr
    skey, vkey = tmp_path / "k.skey", tmp_path / "k.vkey"
    assert stat.S_IMODE(skey.stat().st_mode) == 0o600
    assert skey.read_text().startswith("PRIVATE+KEY+example.com/log+")
    name, _kid, pub = ind.parse_vkey(vkey.read_text())  # the key id is the spec's
    assert name == "example.com/log" and len(pub) == 32
    assert proc.stdout.strip() == vkey.read_text().strip()  # the vkey is the data, on stdout
    assert "mode 0600" in proc.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_keygen_never_replaces_a_key_without_force(tmp_path: Path) -> None:
    assert ract("keygen", "a.example/x", "--output", tmp_path / "k").returncode == 0
    before = (tmp_path / "k.skey").read_bytes()
    proc = ract("keygen", "a.example/x", "--output", tmp_path / "k")
    assert proc.returncode == 2 and "already exists" in proc.stderr and "--force" in proc.stderr
    assert (tmp_path / "k.skey").read_bytes() == before
    (tmp_path / "k.skey").unlink()  # only the vkey left: still refused, and no lone new skey is left
    proc = ract("keygen", "a.example/x", "--output", tmp_path / "k")
    assert proc.returncode == 2 and not (tmp_path / "k.skey").exists()
    proc = ract("keygen", "a.example/x", "--output", tmp_path / "k", "--force")
    assert proc.returncode == 0 and (tmp_path / "k.skey").read_bytes() != before
    assert stat.S_IMODE((tmp_path / "k.skey").stat().st_mode) == 0o600


@pytest.mark.parametrize("name", ["has space", "has+plus", "", "tab\there"])
def test_keygen_refuses_a_bad_name(tmp_path: Path, name: str) -> None:
    proc = ract("keygen", name, "--output", tmp_path / "k")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "k.skey").exists()


# --- checkpoint ----------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", [COMPLETED, ABORTED, FOREIGN])
def test_checkpoint_is_checked_by_an_independent_verifier(tmp_path: Path, keys, run_id: str) -> None:
    skey, _, vkey_text = keys
    log = copy_run(tmp_path, run_id)
    proc = ract("checkpoint", log, "--key", skey, "--origin", ORIGIN)
    assert proc.returncode == 0, proc.stderr
    tree = ind.open_checkpoint(proc.stdout.encode(), vkey_text)
    lines = lines_of(log)
    assert (tree.origin, tree.size) == (ORIGIN, len(lines))
    assert tree.root == ind.log_root(lines)
    assert f"{len(lines)} events" in proc.stderr and tree.root.hex() in proc.stderr
    # exactly origin, size, root, blank line, one signature line
    text = proc.stdout.split("\n")
    assert text[3] == "" and text[4].startswith("\u2014 " + ORIGIN + " ") and text[5:] == [""]


def test_checkpoint_to_a_file_is_written_atomically(tmp_path: Path, keys) -> None:
    skey, _, vkey_text = keys
    log = copy_run(tmp_path, COMPLETED)
    out = make_checkpoint(log, skey, tmp_path / "cp")
    assert ind.open_checkpoint(out.read_bytes(), vkey_text).size == 156
    assert sorted(p.name for p in tmp_path.iterdir()) == [COMPLETED, "cp"]
    # an existing FILE is replaced (docs/checkpoints.md, "Outputs"): the newest checkpoint replaces the last
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:100]))
    assert ind.open_checkpoint(make_checkpoint(log, skey, out).read_bytes(), vkey_text).size == 100
    assert sorted(p.name for p in tmp_path.iterdir()) == [COMPLETED, "cp"]


# SPEC §14: refused with exit 1 whatever the log's own verdict (a torn tail is verify's 4), named in the message
@pytest.mark.parametrize(
    "run_id,code,needle", [(TAMPERED, 1, "HASH_MISMATCH"), (INTERRUPTED, 1, "TORN_TAIL"), (INTERRUPTED, 1, "exit 4")]
)
def test_checkpoint_refuses_a_log_that_does_not_verify(tmp_path: Path, keys, run_id, code, needle) -> None:
    skey, _, _ = keys
    log = copy_run(tmp_path, run_id)
    proc = ract("checkpoint", log, "--key", skey, "--origin", ORIGIN, "--output", tmp_path / "cp")
    assert proc.returncode == code, proc.stderr
    assert "refused" in proc.stderr and needle in proc.stderr and "nothing was written" in proc.stderr
    assert not (tmp_path / "cp").exists() and proc.stdout == ""


@pytest.mark.parametrize(
    "what", ["not a log", "a Raxol journal cut short", "missing", "an archive unreadable past 1,000 warnings"]
)
def test_checkpoint_of_what_is_no_run_log_is_exit_5(tmp_path: Path, keys, what: str) -> None:
    """SPEC §3's 5 is "missing, unreadable, or not a log": no run log to verify, so nothing to refuse as
    tampered (a journal cut short is verify's 4, but it is no run log whatever its verdict)."""
    skey, _, _ = keys
    log = tmp_path / "r" / "events.jsonl"
    log.parent.mkdir()
    if what == "not a log":
        log.write_bytes(b"hello world\nfoo\n")
    elif what == "a Raxol journal cut short":
        journal = (RUNS.parent / "journals" / "accepted.jsonl").read_bytes()
        log.write_bytes(journal[:-20])
    elif what == "an archive unreadable past 1,000 warnings":  # (its IO_ERROR only counted, not kept)
        events = [json.loads(raw) for _ in range(16) for raw in lines_of(RUNS / COMPLETED / "events.jsonl")]
        for i, e in enumerate(events):
            e["id"] = f"{i:032x}"
            e["timestamp_ns"] = T0 + (i if i % 2 else i + 10)  # every other one goes back: CLOCK_REGRESSION
        log = log.with_suffix(".jsonl.gz")
        log.write_bytes(gzip.compress(b"".join(canonical_line(e) for e in chain(events))) + b"garbage!")
    proc = ract("checkpoint", log, "--key", skey, "--origin", ORIGIN, "--output", tmp_path / "cp")
    assert proc.returncode == 5, proc.stderr
    assert "refused" in proc.stderr and not (tmp_path / "cp").exists()


@pytest.mark.parametrize(
    "args,code",
    [
        (["--key", "KEY", "--origin", "has space"], 2),
        (["--key", "KEY", "--origin", ""], 2),
        (["--key", "VKEY", "--origin", ORIGIN], 2),  # a verifier key is not a signer key
        (["--key", "MISSING", "--origin", ORIGIN], 5),
        (["--origin", ORIGIN], 2),
    ],
)
def test_checkpoint_usage_errors(tmp_path: Path, keys, args: list[str], code: int) -> None:
    skey, vkey, _ = keys
    subst = {"KEY": str(skey), "VKEY": str(vkey), "MISSING": str(tmp_path / "nope.skey")}
    log = copy_run(tmp_path, ABORTED)
    proc = ract("checkpoint", log, *[subst.get(a, a) for a in args])
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_checkpoint_of_a_missing_log_is_io(tmp_path: Path, keys) -> None:
    proc = ract("checkpoint", tmp_path / "nope.jsonl", "--key", keys[0], "--origin", ORIGIN)
    assert proc.returncode == 5 and "Traceback" not in proc.stderr


# --- verify --checkpoint (library) ----------------------------------------------------------


def grow(log: Path, n: int) -> None:
    """Append ``n`` events through the real writer (it resumes from the head)."""
    with EventWriter(log, fsync="never", redaction=None) as w:
        for i in range(n):
            w.append("state.budget_capped", {"function": "plan", "cap_tokens": 100 + i, "seated_tokens": 100 + i})


def test_same_log_holds(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, COMPLETED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    report = check_checkpoints(log, [str(cp)], [str(vkey)])
    assert report.ok and report.findings == [] and report.covered == 156 == report.events
    assert report.summary() == "checkpoint holds: covers 156 of 156 events"


def test_a_log_that_only_grew_still_holds(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, ABORTED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    grow(log, 5)
    assert ract("verify", log).returncode == 0
    report = check_checkpoints(log, [str(cp)], [str(vkey)])
    assert report.ok and (report.covered, report.events) == (37, 42)
    assert "covers 37 of 42 events (the log grew by 5 since)" in report.summary()


def test_truncation_is_caught(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, COMPLETED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    log.write_bytes(b"".join(lines_of(log)[:-3]))  # whole lines dropped: the chain alone still verifies
    assert ract("verify", log).returncode == 0
    report = check_checkpoints(log, [str(cp)], [str(vkey)])
    assert [f.code for f in report.findings] == ["CHECKPOINT_TRUNCATED"] and int(report.exit_code) == 1
    assert "153" in report.findings[0].message


def test_a_rewrite_with_recomputed_hashes_is_caught(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, COMPLETED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    events = [json.loads(line) for line in lines_of(log)]
    edited = next(e for e in events if e["kind"] == "tool.result")
    edited["payload"]["ok"] = not edited["payload"].get("ok", True)
    log.write_bytes(b"".join((jcs(e) + "\n").encode() for e in chain(events)))
    assert ract("verify", log).returncode == 0  # the chain was recomputed: only the checkpoint can tell
    report = check_checkpoints(log, [str(cp)], [str(vkey)])
    assert [f.code for f in report.findings] == ["CHECKPOINT_MISMATCH"]
    finding = report.findings[0]
    assert finding.expected == ind.open_checkpoint(cp.read_bytes(), keys[2]).root.hex()


@pytest.mark.parametrize(
    "edit",
    [
        lambda b: b.replace(b"\n156\n", b"\n155\n"),
        lambda b: b.replace(b"example.com/ract/test\n1", b"example.com/ract/tesu\n1", 1),
        lambda b: b[:-10] + b"AAAAAAAAA\n",
        lambda b: b.replace(b"\n\n", b"\n"),
        lambda b: b"",
        lambda b: b.replace(b"\n", b"\r\n"),
    ],
    ids=["size", "origin", "signature", "blank-line", "empty", "crlf"],
)
def test_an_edited_checkpoint_is_a_signature_failure(tmp_path: Path, keys, edit) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, COMPLETED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    cp.write_bytes(edit(cp.read_bytes()))
    report = check_checkpoints(log, [str(cp)], [str(vkey)])
    assert [f.code for f in report.findings] == ["CHECKPOINT_SIGNATURE"] and report.covered is None


def test_a_checkpoint_by_another_key_does_not_verify(tmp_path: Path, keys) -> None:
    skey, _, _ = keys
    assert ract("keygen", ORIGIN, "--output", tmp_path / "other").returncode == 0
    log = copy_run(tmp_path, ABORTED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    report = check_checkpoints(log, [str(cp)], [str(tmp_path / "other.vkey")])
    assert [f.code for f in report.findings] == ["CHECKPOINT_SIGNATURE"]
    assert "no signature by a trusted key" in report.findings[0].message


def test_several_checkpoints_all_must_hold_and_the_newest_covers(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, ABORTED)
    old = make_checkpoint(log, skey, tmp_path / "old")
    grow(log, 3)
    new = make_checkpoint(log, skey, tmp_path / "new")
    grow(log, 2)
    report = check_checkpoints(log, [str(old), str(new)], [str(vkey)])
    assert report.ok and (report.covered, report.events) == (40, 42)
    log.write_bytes(b"".join(lines_of(log)[:38]))  # under the newer one only
    report = check_checkpoints(log, [str(old), str(new)], [str(vkey)])
    assert [(c.source, c.ok) for c in report.checks] == [(str(old), True), (str(new), False)]
    assert [f.code for f in report.findings] == ["CHECKPOINT_TRUNCATED"] and report.covered == 37


def test_unreadable_checkpoint_and_bad_vkeys(tmp_path: Path, keys) -> None:
    from ract_cli.errors import LogIOError, UsageError

    _, vkey, _ = keys
    log = copy_run(tmp_path, ABORTED)
    report = check_checkpoints(log, [str(tmp_path / "missing")], [str(vkey)])
    assert [f.code for f in report.findings] == ["IO_ERROR"] and int(report.exit_code) == 5
    (tmp_path / "bad.vkey").write_text("not a key\n")
    with pytest.raises(UsageError):
        check_checkpoints(log, [str(tmp_path / "missing")], [str(tmp_path / "bad.vkey")])
    with pytest.raises(LogIOError):
        check_checkpoints(log, [str(tmp_path / "missing")], [str(tmp_path / "no.vkey")])


def _verify_has_checkpoint_option() -> bool:
    return "--checkpoint" in ract("verify", "--help").stdout


@pytest.mark.skipif(not _verify_has_checkpoint_option(), reason="verify --checkpoint is not wired into verify yet")
def test_verify_with_checkpoint_end_to_end(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, COMPLETED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    assert ract("verify", log, "--checkpoint", cp, "--vkey", vkey).returncode == 0
    grow(log, 2)
    proc = ract("verify", log, "--checkpoint", cp, "--vkey", vkey)
    assert proc.returncode == 0 and "156" in proc.stderr
    log.write_bytes(b"".join(lines_of(log)[:100]))
    proc = ract("verify", log, "--checkpoint", cp, "--vkey", vkey)
    assert proc.returncode == 1 and "CHECKPOINT_TRUNCATED" in proc.stderr
    cp.write_bytes(cp.read_bytes().replace(b"\n156\n", b"\n100\n"))
    proc = ract("verify", log, "--checkpoint", cp, "--vkey", vkey)
    assert proc.returncode == 1 and "CHECKPOINT_SIGNATURE" in proc.stderr


# --- prove / verify-proof --------------------------------------------------------------------


@pytest.fixture
def proved(tmp_path: Path, keys) -> tuple[Path, Path, Path]:
    skey, _, _ = keys
    log = copy_run(tmp_path, COMPLETED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    out = tmp_path / "p.tlog-proof"
    proc = ract("prove", log, "--line", 42, "--checkpoint", cp, "--output", out)
    assert proc.returncode == 0, proc.stderr
    return log, cp, out


def test_a_true_proof_verifies_offline_and_prints_the_event(proved, keys) -> None:
    log, cp, out = proved
    _, vkey, vkey_text = keys
    data = out.read_bytes()
    assert data.endswith(cp.read_bytes())  # the checkpoint, verbatim
    line42 = lines_of(log)[41]
    assert data.split(b"\n")[1] == b"extra " + base64.b64encode(line42)
    proven = ind.verify_tlog_proof(data, vkey_text)
    assert proven.index == 41 and proven.tree.size == 156 and proven.event == json.loads(line42)
    proc = ract("verify-proof", out, "--vkey", vkey)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(line42)
    assert proc.stderr.startswith("PASS ") and "event 41 of example.com/ract/test's checkpoint of 156" in proc.stderr


def test_every_event_of_a_log_has_a_proof_the_independent_verifier_accepts(tmp_path: Path, keys) -> None:
    from ract_cli.proofs import make_proof

    skey, _, vkey_text = keys
    log = copy_run(tmp_path, ABORTED)
    cp = make_checkpoint(log, skey, tmp_path / "cp").read_bytes()
    lines = lines_of(log)
    for n, line in enumerate(lines, 1):
        by_line = make_proof(log, cp, line=n).to_bytes()
        by_id = make_proof(log, cp, event_id=json.loads(line)["id"]).to_bytes()
        assert by_line == by_id
        assert ind.verify_tlog_proof(by_line, vkey_text).index == n - 1


def test_an_edited_event_line_is_refused(proved, keys) -> None:
    _, _, out = proved
    _, vkey, _ = keys
    lines = out.read_bytes().split(b"\n")
    event = base64.b64decode(lines[1][6:])
    edited = event.replace(b'"kind":"tool.invocation.pre"', b'"kind":"tool.invocation.post"')
    assert edited != event
    lines[1] = b"extra " + base64.b64encode(edited)
    out.write_bytes(b"\n".join(lines))
    proc = ract("verify-proof", out, "--vkey", vkey)
    assert proc.returncode == 1 and "PROOF_EVENT" in proc.stderr and "HASH_MISMATCH" in proc.stderr
    assert proc.stdout == ""


def test_an_edited_event_with_its_hash_recomputed_is_refused(proved, keys) -> None:
    from independent_jcs import rhash

    _, _, out = proved
    _, vkey, vkey_text = keys
    lines = out.read_bytes().split(b"\n")
    event = json.loads(base64.b64decode(lines[1][6:]))
    event["payload"]["budget_used"] = 99
    event["hash"] = rhash(event)
    lines[1] = b"extra " + base64.b64encode((jcs(event) + "\n").encode())
    out.write_bytes(b"\n".join(lines))
    proc = ract("verify-proof", out, "--vkey", vkey)
    assert proc.returncode == 1 and "PROOF_INCLUSION" in proc.stderr
    with pytest.raises(ind.Invalid):
        ind.verify_tlog_proof(out.read_bytes(), vkey_text)


@pytest.mark.parametrize(
    "field,edit,code",
    [
        ("index", lambda ls: ls.__setitem__(2, b"index 40"), "PROOF_INCLUSION"),
        ("index-past-size", lambda ls: ls.__setitem__(2, b"index 156"), "PROOF_INCLUSION"),
        ("hash", lambda ls: ls.__setitem__(3, base64.b64encode(bytes(32))), "PROOF_INCLUSION"),
        ("hash-dropped", lambda ls: ls.pop(3), "PROOF_INCLUSION"),
        ("hash-added", lambda ls: ls.insert(3, base64.b64encode(bytes(32))), "PROOF_INCLUSION"),
        ("hash-not-base64", lambda ls: ls.__setitem__(3, b"not base64!"), "PROOF_MALFORMED"),
        ("header", lambda ls: ls.__setitem__(0, b"c2sp.org/tlog-proof@v2"), "PROOF_MALFORMED"),
        ("index-leading-zero", lambda ls: ls.__setitem__(2, b"index 041"), "PROOF_MALFORMED"),
        ("extra-dropped", lambda ls: ls.pop(1), "PROOF_EVENT"),
        ("extra-not-base64", lambda ls: ls.__setitem__(1, b"extra ???"), "PROOF_MALFORMED"),
        ("extra-not-an-event", lambda ls: ls.__setitem__(1, b"extra " + base64.b64encode(b"[1]\n")), "PROOF_EVENT"),
        ("checkpoint-size", lambda ls: ls.__setitem__(ls.index(b"156"), b"157"), "CHECKPOINT_SIGNATURE"),
        (
            "checkpoint-root",
            lambda ls: ls.__setitem__(ls.index(b"156") + 1, base64.b64encode(bytes(32))),
            "CHECKPOINT_SIGNATURE",
        ),
        ("signature", lambda ls: ls.__setitem__(-2, ls[-2][:-6] + b"AAAAA="), "CHECKPOINT_SIGNATURE"),
        ("checkpoint-cut", lambda ls: ls.__delitem__(slice(-3, None)), "CHECKPOINT_SIGNATURE"),
    ],
)
def test_tampering_with_any_field_of_a_proof_is_caught(proved, keys, field, edit, code) -> None:
    _, _, out = proved
    _, vkey, vkey_text = keys
    lines = out.read_bytes().split(b"\n")
    edit(lines)
    out.write_bytes(b"\n".join(lines))
    proc = ract("verify-proof", out, "--vkey", vkey)
    assert proc.returncode == 1, (field, proc.stderr)
    assert code in proc.stderr and proc.stderr.startswith("FAIL "), (field, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    with pytest.raises((ind.Invalid, ValueError, KeyError, IndexError)):
        ind.verify_tlog_proof(out.read_bytes(), vkey_text)


def test_verify_proof_json_report_and_origin_pinning(proved, keys) -> None:
    _, _, out = proved
    _, vkey, _ = keys
    proc = ract("verify-proof", out, "--vkey", vkey, "--format", "json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"] and report["index"] == 41 and report["size"] == 156
    proc = ract("verify-proof", out, "--vkey", vkey, "--origin", "example.com/other")
    assert proc.returncode == 1 and "CHECKPOINT_ORIGIN" in proc.stderr
    assert ract("verify-proof", out, "--vkey", vkey, "--origin", ORIGIN).returncode == 0


def test_verify_proof_usage_and_io(proved, keys, tmp_path: Path) -> None:
    _, cp, out = proved
    skey, vkey, _ = keys
    assert ract("verify-proof", out).returncode == 2  # --vkey is required
    assert ract("verify-proof", out, "--vkey", skey).returncode == 2  # a signer key is not a verifier key
    assert ract("verify-proof", tmp_path / "missing", "--vkey", vkey).returncode == 5
    proc = ract("verify-proof", cp, "--vkey", vkey)  # a checkpoint is not a proof
    assert proc.returncode == 1 and "PROOF_MALFORMED" in proc.stderr


def test_prove_refuses_what_it_cannot_prove(tmp_path: Path, keys) -> None:
    skey, _, _ = keys
    log = copy_run(tmp_path, ABORTED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    grow(log, 2)
    proc = ract("prove", log, "--line", 38, "--checkpoint", cp)
    assert proc.returncode == 2 and "after the 37 events the checkpoint covers" in proc.stderr
    proc = ract("prove", log, "--event", "0" * 32, "--checkpoint", cp)
    assert proc.returncode == 2 and "no event" in proc.stderr
    assert ract("prove", log, "--checkpoint", cp).returncode == 2  # neither --event nor --line
    assert ract("prove", log, "--line", 1, "--event", "x", "--checkpoint", cp).returncode == 2
    assert ract("prove", log, "--line", 37, "--checkpoint", cp).returncode == 0  # the grown log still proves
    log.write_bytes(b"".join(lines_of(log)[:30]))
    proc = ract("prove", log, "--line", 3, "--checkpoint", cp)
    assert proc.returncode == 1 and "CHECKPOINT_TRUNCATED" in proc.stderr and proc.stdout == ""


def test_prove_refuses_a_rewritten_log(tmp_path: Path, keys) -> None:
    skey, _, _ = keys
    log = copy_run(tmp_path, ABORTED)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    events = [json.loads(line) for line in lines_of(log)]
    events[5]["timestamp_ns"] += 1
    log.write_bytes(b"".join((jcs(e) + "\n").encode() for e in chain(events)))
    proc = ract("prove", log, "--line", 3, "--checkpoint", cp, "--output", tmp_path / "p")
    assert proc.returncode == 1 and "CHECKPOINT_MISMATCH" in proc.stderr and not (tmp_path / "p").exists()


def test_proof_of_a_crlf_log_line(tmp_path: Path, keys) -> None:
    skey, _, vkey_text = keys
    log = copy_run(tmp_path, FOREIGN)
    cp = make_checkpoint(log, skey, tmp_path / "cp")
    proc = ract("prove", log, "--line", 2, "--checkpoint", cp)
    assert proc.returncode == 0, proc.stderr
    data = proc.stdout.encode()
    assert base64.b64decode(data.split(b"\n")[1][6:]).endswith(b"\r\n")  # the line's bytes, verbatim
    assert ind.verify_tlog_proof(data, vkey_text).index == 1


# --- consistency ------------------------------------------------------------------------------


def test_consistency_proof_between_two_checkpoints(tmp_path: Path, keys) -> None:
    skey, vkey, _ = keys
    log = copy_run(tmp_path, ABORTED)
    old = make_checkpoint(log, skey, tmp_path / "old")
    grow(log, 9)
    new = make_checkpoint(log, skey, tmp_path / "new")
    proof = tmp_path / "grew.proof"
    proc = ract("prove", log, "--from-checkpoint", old, "--checkpoint", new, "--output", proof)
    assert proc.returncode == 0, proc.stderr
    assert proof.read_bytes().startswith(b"old 37\n") and proof.read_bytes().endswith(new.read_bytes())
    proc = ract("verify-proof", proof, "--vkey", vkey, "--from-checkpoint", old)
    assert proc.returncode == 0 and "extends the one of 37 events" in proc.stderr, proc.stderr
    assert ract("verify-proof", proof, "--vkey", vkey).returncode == 2  # the older checkpoint is needed
    # an "older" checkpoint of a rewritten history does not fit
    other = copy_run(tmp_path / "o", ABORTED)
    events = [json.loads(line) for line in lines_of(other)]
    events[0]["timestamp_ns"] += 1
    other.write_bytes(b"".join((jcs(e) + "\n").encode() for e in chain(events)))
    forged_old = make_checkpoint(other, skey, tmp_path / "forged-old")
    proc = ract("verify-proof", proof, "--vkey", vkey, "--from-checkpoint", forged_old)
    assert proc.returncode == 1 and "PROOF_CONSISTENCY" in proc.stderr
