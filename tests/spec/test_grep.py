"""SPEC §6 grep (issue 6): filters, output modes, bytes kept, nothing past a break.

Black-box: logs built with the independent oracles; ``--where`` is checked
against an independent filter written here from issue 6's text.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from independent_jcs import T0, chain, line, new_id

from . import scratch_builders as scratch
from .builders import (
    RUN,
    closed_run,
    ev,
    good_lines,
    logpath,
    ract,
    sub,
    write,
)

# --- §6 filters and exit codes --------------------------------------------------------------------


def _grep_log(tmp_path):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("process.reaped", {"reason": "timeout", "reap_latency_ms": 2000}, step=s),
            ev("process.reaped", {"reason": "exit", "reap_latency_ms": 5}, step=s),
            ev("tool.called", {"tool": "bash"}, step=s),
            ev("run.completed", {}),
        ]
    )
    return write(logpath(tmp_path), evs), evs


def test_grep_kind_glob_piped_bytes(tmp_path):
    p, _evs = _grep_log(tmp_path)
    raw = p.read_bytes().splitlines(keepends=True)
    r = sub("grep", "--kind", "process.*", p)
    assert r.returncode == 0
    assert r.stdout == raw[1] + raw[2]
    r = sub("grep", "--kind", "process.reaped", "--where", "payload.reason=timeout", tmp_path)
    assert r.returncode == 0 and r.stdout == raw[1]


def test_grep_where_and_exact(tmp_path, capsys):
    p, _evs = _grep_log(tmp_path)
    raw = p.read_bytes().splitlines(keepends=True)
    rc, out, _err = ract(capsys, "grep", "--format", "jsonl", "--where", "payload.reap_latency_ms>1000", p)
    assert rc == 0 and out.encode() == raw[1]
    rc, out, _err = ract(capsys, "grep", "--format", "jsonl", "--where", "payload.reason~^ex", p)
    assert rc == 0 and out.encode() == raw[2]
    rc, out, _err = ract(capsys, "grep", "--format", "jsonl", "--kind", "process", p)
    assert rc == 7 and out == ""
    rc, out, _err = ract(capsys, "grep", "--count", "--kind", "process.*", p)
    assert rc == 0 and out.strip().endswith("2")


def test_grep_filters(tmp_path, capsys):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("tool.called", {"tool": "a"}, step=s),
            ev("tool.called", {"tool": "b"}),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    raw = p.read_bytes().splitlines(keepends=True)
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--step", s, p)
    assert rc == 0 and out.encode() == raw[1]
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--run", "cd" * 16, p)
    assert rc == 7 and out == ""
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--since", T0 + 1000, "--until", T0 + 2000, p)
    assert rc == 0 and out.encode() == raw[1] + raw[2]
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--where", "payload.tool!=a", "--kind", "tool.*", p)
    assert rc == 0 and out.encode() == raw[2]
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--no-synthesized", "--kind", "run.*", p)
    assert rc == 0 and out.encode() == raw[0] + raw[3]


def test_grep_no_match_exit_7(tmp_path):
    p, _ = _grep_log(tmp_path)
    r = sub("grep", "--kind", "nothing.here", p)
    assert r.returncode == 7 and r.stdout == b""


def test_grep_lowest_nonzero(tmp_path, capsys):
    schema = write(
        tmp_path / "s" / RUN / "events.jsonl",
        chain([ev("run.started", {}), ev("no.such", {}), ev("run.completed", {})]),
    )
    assert ract(capsys, "grep", "-q", "--kind", "tool.called", schema)[0] == 3  # not 7: the chain had a finding
    ok = write(tmp_path / "o" / RUN / "events.jsonl", closed_run())
    good = good_lines()
    torn = write(tmp_path / "t" / RUN / "events.jsonl", None, raw=b"".join(good) + b'{"x')
    assert ract(capsys, "grep", "-q", "--kind", "run.started", ok, tmp_path / "o")[0] == 0
    assert ract(capsys, "grep", "-q", "--kind", "no.such.kind", ok, torn)[0] == 4
    assert ract(capsys, "grep", "-q", "--kind", "run.started", ok, torn)[0] == 4


def test_grep_synthesized(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run()[:-1])
    assert ract(capsys, "repair", "-q", p)[0] == 0
    rc, out, _err = ract(capsys, "grep", "--format", "jsonl", "--synthesized", p)
    assert rc == 0
    assert [json.loads(ln)["kind"] for ln in out.splitlines()] == ["step.rolled_back", "run.aborted"] or [
        json.loads(ln)["kind"] for ln in out.splitlines()
    ] == ["run.aborted"]


# --- §6 the bytes of the log, and nothing at or after a break -------------------------------------


def test_grep_preserves_foreign_bytes(tmp_path, capsys):
    evs = chain([ev("run.started", {"note": "caf\u00e9"}), ev("run.completed", {})])
    raw = b"".join(json.dumps(e, separators=(", ", ": ")).encode() + b"\r\n" for e in evs)
    p = write(logpath(tmp_path), None, raw=raw)
    r = sub("grep", "--kind", "run.started", p)
    assert r.returncode == 0
    assert r.stdout == raw.split(b"\n")[0] + b"\n"


def test_grep_stops_at_break(tmp_path, capsys):
    p, evs = _grep_log(tmp_path)
    evs[2]["payload"]["reason"] = "edited"
    write(p, evs)
    raw = p.read_bytes().splitlines(keepends=True)
    r = sub("grep", "--kind", "*", p)
    assert r.returncode == 1
    # nothing at or after the break (line 3); the project also withholds the event just before it (docs/grep.md)
    assert r.stdout in (raw[0], raw[0] + raw[1])
    assert raw[2] not in r.stdout and raw[3] not in r.stdout
    assert r.stderr
    rc, out, _err = ract(capsys, "grep", "--format", "jsonl", "--kind", "tool.called", p)
    assert rc == 1 and out == ""


def test_grep_goes_on_after_a_broken_file(tmp_path, capsys):
    bad = closed_run()
    bad[1]["payload"]["x"] = 1
    b = write(tmp_path / "bad" / RUN / "events.jsonl", bad)
    good = closed_run()
    g = write(tmp_path / "good" / RUN / "events.jsonl", good)
    r = sub("grep", "--kind", "run.completed", b, g)
    assert r.returncode == 1
    assert r.stdout == line(good[-1])
    assert b"bad" in r.stderr


def test_grep_table_on_terminal(tmp_path):
    import pty

    p = write(logpath(tmp_path), closed_run())
    master, slave = pty.openpty()
    try:
        r = subprocess.run(
            [sys.executable, "-m", "ract_cli", "trace", "grep", "--kind", "*", str(p)],
            stdout=slave,
            stderr=subprocess.PIPE,
            timeout=60,
        )
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    assert r.returncode == 0
    assert b'"prev_hash"' not in out and b"run.started" in out  # a table, not the raw lines


# --- issue 6: --where against an independent filter, output modes, time forms ---------------------


def _grep_run(t0=scratch.T0, run=scratch.RUN):
    s, s2 = scratch.nid(), scratch.nid()
    evs = [
        scratch.ev("run.started", {"intent_id": "x"}, run=run),
        scratch.ev("step.started", {"parent_snapshot": "a" * 40}, step=s, run=run),
        scratch.ev(
            "tool.called",
            {"tool": "bash", "arguments": {"cmd": "ls", "limits": {"mem_mb": 512}, "list": [1, 2, 3]}},
            step=s,
            run=run,
        ),
        scratch.ev("tool.result", {"tool": "bash", "ok": False, "duration_ns": 2**60 + 1}, step=s, run=run),
        scratch.ev(
            "process.reaped",
            {"pid": 123, "argv0": "pytest", "argv_len": 3, "reason": "dispose_unsuccessful", "reap_latency_ms": 1500},
            step=s,
            run=run,
        ),
        scratch.ev(
            "process.reaped",
            {"pid": -1, "argv0": "", "argv_len": 0, "reason": "commit_failed", "reap_latency_ms": 0},
            step=s,
            run=run,
        ),
        scratch.ev("tool.called", {"tool": "git", "arguments": {"cmd": "caf\u00e9 \u2028 x"}}, step=s, run=run),
        scratch.ev("tool.result", {"tool": "git", "ok": True, "duration_ns": 5}, step=s, run=run),
        scratch.ev("step.committed", {"outcome": "COMMITTED"}, step=s, run=run),
        scratch.ev("step.started", {"parent_snapshot": "b" * 40}, step=s2, run=run),
        scratch.ev(
            "process.reaped",
            {"pid": 7, "argv0": "make", "argv_len": 1, "reason": "postcondition_failed", "reap_latency_ms": 1000},
            step=s2,
            run=run,
        ),
        scratch.ev("step.committed", {"outcome": "COMMITTED"}, step=s2, run=run),
        scratch.ev("run.completed", {"final_decision": "done"}, run=run),
    ]
    return scratch.chain(evs, t0=t0, step_ns=scratch.SEC), s, s2


_ABSENT = object()


def _get(e, path):
    cur = e
    for seg in path.split("."):
        if isinstance(cur, dict) and seg in cur:
            cur = cur[seg]
        elif isinstance(cur, list) and seg.isdigit() and int(seg) < len(cur):
            cur = cur[int(seg)]
        else:
            return _ABSENT
    return cur


def _json_eq(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) != isinstance(b, (int, float)):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_eq(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b, strict=False))
    return a == b


def _holds(e, expr):
    """Issue 6's --where: RHS is JSON when it parses, else a string; != is the negation of =."""
    path, op, value = re.fullmatch(r"([A-Za-z0-9_.]+)(\?|==|=|!=|<=|>=|<|>|!~|~)(.*)", expr, re.S).groups()
    a = _get(e, path)
    if op == "?":
        return a is not _ABSENT
    if op in ("~", "!~"):
        hit = isinstance(a, str) and re.search(value, a) is not None
        return hit if op == "~" else not hit
    try:
        b = json.loads(value)
    except ValueError:
        b = value
    if op in ("=", "=="):
        return a is not _ABSENT and _json_eq(a, b)
    if op == "!=":
        return not (a is not _ABSENT and _json_eq(a, b))
    num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)  # noqa: E731
    if not ((num(a) and num(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


WHERE = [
    "payload.ok=false",
    "payload.ok=0",
    'payload.ok="false"',
    "payload.ok==true",
    "payload.tool=bash",
    'payload.tool="bash"',
    "payload.tool!=bash",
    "payload.reap_latency_ms>1000",
    "payload.reap_latency_ms>=1000",
    "payload.reap_latency_ms<1000",
    "payload.reap_latency_ms<=0",
    "payload.reap_latency_ms=1500.0",
    "payload.reap_latency_ms=1.5e3",
    "payload.pid<0",
    "payload.pid=-1",
    'payload.pid="123"',
    "payload.reason~^dispose",
    "payload.reason~fail",
    "payload.reason!~fail",
    "payload.step_id?",
    "step_id?",
    "parent_id=null",
    "step_id=null",
    "payload.arguments.limits.mem_mb=512",
    "payload.arguments.list.1=2",
    "payload.arguments.list=[1,2,3]",
    "payload.arguments.list=[1, 2, 3]",
    'payload.arguments.limits={"mem_mb":512}',
    "payload.duration_ns=1152921504606846977",
    "payload.duration_ns>1152921504606846976",
    "payload.duration_ns=1152921504606846976",
    "timestamp_ns>=1764000005000000000",
    'payload.argv0=""',
    "payload.arguments.cmd~caf\u00e9",
    "payload.arguments.cmd~l?s",
    "kind=process.reaped",
    "kind~^tool\\.",
    "payload.tool>b",
    "payload.tool<c",
    'payload.pid>"a"',
    "payload.reason.x?",
    "payload.arguments.list.5?",
    "payload.intent_id!=y",
    "payload.x=a=b",
    "hash~^[0-9a-f]{64}$",
]


@pytest.mark.parametrize("expr", WHERE)
def test_grep_where_matches_an_independent_filter(tmp_path, capsys, expr):
    evs, _, _ = _grep_run()
    p = scratch.write(scratch.logpath(tmp_path), evs)
    raw = p.read_bytes().splitlines(keepends=True)
    want = b"".join(ln for ln, e in zip(raw, evs, strict=False) if _holds(e, expr))
    rc, out, err = scratch.ract(capsys, "grep", "--format", "jsonl", "--where", expr, p)
    assert (rc, out.encode("utf-8")) == (0 if want else 7, want), err


def test_grep_output_modes_and_filters(tmp_path):
    evs, _s, s2 = _grep_run()
    evs2, _t, t2 = _grep_run(t0=scratch.T0 + 86400 * scratch.SEC, run=scratch.RUN2)
    p1 = scratch.write(tmp_path / scratch.RUN / "events.jsonl", evs)
    p2 = scratch.write(tmp_path / scratch.RUN2 / "events.jsonl", evs2)
    r1 = p1.read_bytes().splitlines(keepends=True)
    r2 = p2.read_bytes().splitlines(keepends=True)
    P1, P2 = str(p1).encode(), str(p2).encode()
    cases = [
        (["-k", "process.*", p1, p2], 0, r1[4] + r1[5] + r1[10] + r2[4] + r2[5] + r2[10]),
        (["-k", "*", p1], 0, b"".join(r1)),
        ([p1], 0, b"".join(r1)),
        (["-k", "run.started", "-k", "run.completed", p1], 0, r1[0] + r1[12]),
        (["-w", "payload.reap_latency_ms>=1000", "-w", "payload.reason~^post", p1], 0, r1[10]),
        (["-k", "tool.resul?", p1], 0, r1[3] + r1[7]),
        (["-k", "tool.[cr]*", p1], 0, r1[2] + r1[3] + r1[6] + r1[7]),
        (["-k", "process", p1], 7, b""),
        (["-k", "run.started", tmp_path], 0, r1[0] + r2[0]),
        (["-H", "-k", "run.completed", tmp_path], 0, P1 + b":13:" + r1[12] + P2 + b":13:" + r2[12]),
        (["-c", "-k", "process.reaped", p1], 0, b"3\n"),
        (["-c", "-k", "process.reaped", p1, p2], 0, P1 + b":3\n" + P2 + b":3\n"),
        (["-c", "-k", "nope", p1], 7, b"0\n"),
        (["-c", "--run", scratch.RUN, p1, p2], 0, P1 + b":13\n" + P2 + b":0\n"),
        (["-c", "-H", "-k", "run.started", p1], 0, P1 + b":1\n"),
        (["-l", "-k", "process.reaped", p1, p2], 0, P1 + b"\n" + P2 + b"\n"),
        (["-l", "--run", scratch.RUN2, p1, p2], 0, P2 + b"\n"),
        (["-l", "-k", "nope", p1, p2], 7, b""),
        (["--run", scratch.RUN2.upper(), tmp_path], 0, b"".join(r2)),
        (["--step", s2, "--step", t2, tmp_path], 0, r1[9] + r1[10] + r1[11] + r2[9] + r2[10] + r2[11]),
        (["--since", scratch.T0 + 11 * scratch.SEC, p1], 0, r1[11] + r1[12]),
        (["--until", scratch.T0 + scratch.SEC, p1], 0, r1[0] + r1[1]),
        (["--since", "2025-11-24T16:00:11Z", p1], 0, r1[11] + r1[12]),
        (["--since", "2025-11-24T18:00:11+02:00", p1], 0, r1[11] + r1[12]),
        (["--since", "2025-11-24T16:00:11", p1], 0, r1[11] + r1[12]),
        (["--since", "2025-11-24T16:00:10.000000001Z", p1], 0, r1[11] + r1[12]),
        (["--until", "2025-11-24T16:00:01.000000000Z", p1], 0, r1[0] + r1[1]),
        (["--until", "2025-11-24T16:00:00.999999999Z", p1], 0, r1[0]),
        (["--since", "2025-11-25", "-k", "run.started", tmp_path], 0, r2[0]),
        (["--until", "2025-11-24", "-k", "run.started", tmp_path], 0, r1[0]),
        (["--since", str(scratch.T0 + 12 * scratch.SEC + 1), p1], 7, b""),
    ]
    for args, want_rc, want_out in cases:
        r = scratch.sub("grep", *args)
        assert (r.returncode, r.stdout) == (want_rc, want_out), (args, r.stderr)


def test_grep_keeps_foreign_bytes_and_finds_escaped_kinds(tmp_path):
    evs, _, _ = _grep_run()
    crlf = b"".join(scratch.line(e)[:-1] + b"\r\n" for e in evs)
    p = scratch.write(scratch.logpath(tmp_path, "crlf"), raw=crlf)
    c = crlf.splitlines(keepends=True)
    r = scratch.sub("grep", "-k", "step.committed", p)
    assert (r.returncode, r.stdout) == (0, c[8] + c[11])
    escaped = [scratch.line(e).replace(b'"kind":"process.reaped"', b'"kind":"process\\u002ereaped"') for e in evs]
    q = scratch.write(scratch.logpath(tmp_path, "esc"), raw=b"".join(escaped))
    for extra in ([], ["--no-verify"]):
        r = scratch.sub("grep", *extra, "-k", "process.reaped", q)
        assert (r.returncode, r.stdout) == (0, escaped[4] + escaped[5] + escaped[10]), extra


@pytest.mark.parametrize("broken_line", [3, 6, 13])
def test_grep_prints_nothing_at_or_after_a_break(tmp_path, broken_line):
    evs, _, _ = _grep_run()
    scratch.edit(evs[broken_line - 1], tampered=True)
    p = scratch.write(scratch.logpath(tmp_path), evs)
    raw = p.read_bytes().splitlines(keepends=True)
    r = scratch.sub("grep", "-k", "*", p)
    assert r.returncode == 1 and f":{broken_line}: HASH_MISMATCH".encode() in r.stderr
    # a prefix of the lines before the break (the line just before it may be withheld: its successor is damaged)
    printed = r.stdout.splitlines(keepends=True)
    assert printed == raw[: len(printed)] and broken_line - 2 <= len(printed) <= broken_line - 1
    c = scratch.sub("grep", "-c", "-k", "*", p)
    assert c.returncode == 1 and c.stdout == b"%d\n" % len(printed)
    n = scratch.sub("grep", "--no-verify", "-k", "*", p)  # opt-out: everything, and it says so
    assert n.returncode == 0 and n.stdout == b"".join(raw) and n.stderr


def test_grep_synthesized_flags(tmp_path, capsys):
    evs, _, _ = _grep_run()
    p = scratch.write(scratch.logpath(tmp_path), evs[:7])  # open step, open tool call, open run
    assert scratch.ract(capsys, "repair", "-q", p)[0] == 0
    raw = p.read_bytes().splitlines(keepends=True)
    synth = [ln for ln in raw if json.loads(ln)["payload"].get("synthesized") is True]
    assert synth
    rc, out, _ = scratch.ract(capsys, "grep", "--format", "jsonl", "--synthesized", p)
    assert (rc, out.encode()) == (0, b"".join(synth))
    rc, out, _ = scratch.ract(capsys, "grep", "--format", "jsonl", "--no-synthesized", p)
    assert (rc, out.encode()) == (0, b"".join(ln for ln in raw if ln not in synth))
    rc, out, _ = scratch.ract(capsys, "grep", "--format", "jsonl", "--synthesized", "-k", "run.aborted", p)
    assert rc == 0 and [json.loads(ln)["kind"] for ln in out.splitlines()] == ["run.aborted"]
