"""SPEC §9 the writer library, called the way a user calls it (issue 2).

Its output is re-hashed with ``tests/independent_jcs.py`` and verified by
the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from independent_jcs import ZERO, chain, line, rhash

from ract_cli.format.sanitize import sanitize_payload
from ract_cli.writer.event_writer import EventWriter, encode_line

from .builders import (
    RUN,
    ev,
    logpath,
    ract,
    read,
    sub,
)

# --- §9 lock, resume, flush -----------------------------------------------------------------------


def test_writer_lock_resume_and_verify(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter, is_locked

    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {"intent_id": "x", "weird": object()})
        assert is_locked(p)
    assert not is_locked(p)
    with EventWriter(p, run_id=RUN) as w:  # resume
        w.append("run.completed", {})
    evs = read(p)
    assert evs[0]["prev_hash"] == ZERO
    assert evs[1]["prev_hash"] == evs[0]["hash"]
    for e in evs:
        assert e["hash"] == rhash(e)  # independent hash
    assert isinstance(evs[0]["payload"]["weird"], str)
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_writer_second_writer_refused_and_flush_per_event(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter

    p = logpath(tmp_path)
    for policy in ("every", "close", "never"):
        with EventWriter(p, run_id=RUN, fsync=policy) as w:
            w.append("tool.called" if p.exists() else "run.started", {"tool": "t"} if p.exists() else {})
            assert p.read_bytes().endswith(b"\n")  # flushed per event, before close
            with pytest.raises(Exception):  # noqa: B017 -- SPEC names no error type: any refusal will do
                EventWriter(p, run_id=RUN)
    assert ract(capsys, "verify", "-q", p)[0] == 0
    evs = read(p)
    assert len(evs) == 3 and all(e["hash"] == rhash(e) for e in evs)


@pytest.mark.parametrize("policy", ["every", "close", "never"])
def test_writer_fsync_policies(tmp_path, capsys, policy):
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN, fsync=policy) as w:
        w.append("run.started", {})
        assert p.read_bytes().endswith(b"\n")  # flushed per event
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_writer_resumes_foreign_formatted_crlf_log(tmp_path, capsys):
    evs = chain([ev("run.started", {"note": "é"})])
    p = logpath(tmp_path)
    p.write_bytes(json.dumps(evs[0], indent=None, ensure_ascii=True).encode() + b"\r\n")
    with EventWriter(p) as w:
        assert w.run_id == RUN
        w.append("run.completed", {})
    got = read(p)
    assert got[1]["prev_hash"] == evs[0]["hash"] and got[1]["hash"] == rhash(got[1])
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_writer_refuses_to_chain_onto_a_torn_tail_or_a_foreign_run(tmp_path):
    evs = chain([ev("run.started")])
    p = logpath(tmp_path)
    p.write_bytes(line(evs[0]) + b'{"id":')
    before = p.read_bytes()
    with pytest.raises(Exception):  # noqa: B017 -- SPEC names no error type: any refusal will do
        EventWriter(p)
    assert p.read_bytes() == before
    p.write_bytes(line(evs[0]))
    with pytest.raises(Exception):  # noqa: B017 -- SPEC names no error type: any refusal will do
        EventWriter(p, run_id="ef" * 16)
    assert p.read_bytes() == line(evs[0])


def test_writer_lock_seen_by_other_processes(tmp_path):
    p = logpath(tmp_path)
    probe = "import fcntl,sys\nf=open(sys.argv[1],'rb')\ntry:\n fcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB); print('free')\nexcept OSError: print('held')\n"
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {})
        assert (
            subprocess.run([sys.executable, "-c", probe, str(p)], capture_output=True, text=True).stdout.strip()
            == "held"
        )
        assert sub("repair", "--check", p).returncode == 5
    assert (
        subprocess.run([sys.executable, "-c", probe, str(p)], capture_output=True, text=True).stdout.strip() == "free"
    )


# --- §9 sanitizing what the encoder cannot take ---------------------------------------------------


def test_writer_sanitizes_unencodable_values(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter

    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {"big": 2**70, "nan": float("nan"), "s": "\ud800", "b": b"xx", "set": {1}, 3: "k"})
    e = read(p)[0]
    assert isinstance(e["payload"]["big"], str) and isinstance(e["payload"]["nan"], str)
    assert e["hash"] == rhash(e)
    assert ract(capsys, "verify", "-q", p)[0] == 0


class _BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


_self_ref: dict = {}
_self_ref["self"] = _self_ref
_deep: list = []
_cur = _deep
for _ in range(3000):
    _cur.append([])
    _cur = _cur[0]


SANITIZE = [
    ("raising repr", _BadRepr()),
    ("self-referencing dict", _self_ref),
    ("3000 levels deep", _deep),
    ("bytes", b"\xff\x00"),
    ("float beyond int64 as integer token", 9.5e18),
    ("infinity", float("inf")),
    ("nan", float("nan")),
    ("negative zero", -0.0),
    ("tuple key", {(1, 2): 3}),
    ("None key", {None: 1}),
    ("lone surrogate", "\udc80"),
    ("big int", -(2**64)),
    ("set", {1, 2}),
    ("object", object()),
]


@pytest.mark.parametrize("name,value", SANITIZE, ids=[s[0] for s in SANITIZE])
def test_writer_sanitizes_and_log_verifies(tmp_path, capsys, name, value):
    clean = sanitize_payload({"v": value})
    json.dumps(clean, allow_nan=False)  # encodable
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN, redaction=None) as w:
        w.append("run.started", {"v": value})
    e = read(p)[0]
    assert e["hash"] == rhash(e) and e["prev_hash"] == ZERO
    assert ract(capsys, "verify", "-q", p)[0] == 0
    assert encode_line(e) == line(e)


# --- §9 the redaction profile from ract.yaml ------------------------------------------------------


def test_writer_redaction_from_yaml(tmp_path, capsys, monkeypatch):
    from ract_cli.writer.event_writer import EventWriter, RedactionProfile

    (tmp_path / "ract.yaml").write_text(
        "trace:\n  redaction:\n    patterns: ['sk-[A-Za-z0-9]{16,}']\n    fields: [password]\n"
    )
    profile = RedactionProfile.load(tmp_path / "ract.yaml")
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN, redaction=profile) as w:
        w.append("run.started", {"note": "key sk-ABCDEFGHIJKLMNOPQRST here", "nested": {"password": {"x": 1}}})
    data = p.read_bytes()
    assert b"sk-ABCDEFGHIJKLMNOPQRST" not in data
    e = read(p)[0]
    assert "here" in e["payload"]["note"]
    assert e["payload"]["nested"]["password"] != {"x": 1}
    assert e["hash"] == rhash(e)
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_writer_redaction_enabled_by_ract_yaml_in_cwd(tmp_path, capsys, monkeypatch):
    """Reference: the profile 'is off by default; enable it in ract.yaml' (SPEC §9: configured from ract.yaml)."""
    from ract_cli.writer.event_writer import EventWriter

    monkeypatch.chdir(tmp_path)
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:  # no ract.yaml: off
        w.append("run.started", {"api_key": "k1"})
    assert read(p)[0]["payload"]["api_key"] == "k1"
    (tmp_path / "ract.yaml").write_text(
        "trace:\n  redaction:\n    patterns: ['sk-[A-Za-z0-9]{20,}']\n    fields: [api_key]\n    replacement: '[REDACTED]'\n"
    )
    with EventWriter(p, run_id=RUN) as w:  # resume; the profile comes from ./ract.yaml
        w.append("tool.called", {"tool": "t", "arguments": {"api_key": "k2", "note": "sk-" + "A" * 24}})
    e = read(p)[1]
    assert e["payload"]["arguments"] == {"api_key": "[REDACTED]", "note": "[REDACTED]"}
    assert e["hash"] == rhash(e)
    with EventWriter(p, run_id=RUN, redaction=None) as w:  # explicitly off
        w.append("tool.called", {"tool": "t", "arguments": {"api_key": "k3"}})
    assert read(p)[2]["payload"]["arguments"]["api_key"] == "k3"
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_writer_redaction_patterns_and_fields_from_yaml(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ract.yaml").write_text(
        "trace:\n  redaction:\n    patterns: ['secret[0-9]+']\n    fields: [api_key]\n    replacement: '<X>'\n"
    )
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {"note": "a secret123 b", "list": ["secret9", {"api_key": {"deep": 1}}]})
        w.append("tool.refused", {"tool": "t", "reason": "secret42", "refused_by": "policy"})
    e0, e1 = read(p)
    assert e0["payload"] == {"note": "a <X> b", "list": ["<X>", {"api_key": "<X>"}]}
    assert e1["payload"]["reason"] == "<X>"
    assert b"secret" not in p.read_bytes()
    assert all(e["hash"] == rhash(e) for e in (e0, e1))
    assert ract(capsys, "verify", "-q", p)[0] == 0
