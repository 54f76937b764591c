"""Second black-box conformance pass, written from SPEC §2.1-§2.5, §3, §6, §10
and the texts of issues 3 (verify) and 6 (grep).

It covers what tests/test_spec_conformance.py does not pin down: exact finding
lines and byte offsets of framing errors, the tail rules, re-anchoring after
each kind of break, a randomized canonical-hash property, the kind x version
matrix read from the reference document, --expect-head and usage errors, the
JSON report's exact shape, and grep's --where operators, output modes and time
forms against an independent filter.

Inputs are built here with this file's own JCS (exact integers, ECMAScript
number form written from scratch) and sha256: nothing from ract_cli's writer
or canonicalizer is used to build a log. The CLI runs in-process
(``ract_cli.cli.app.main``) for the big tables and as a subprocess where
stdout must be a pipe.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.cli.app import main as ract_main

ZERO = "0" * 64
RUN = "ab" * 16
RUN2 = "cd" * 16
T0 = 1_764_000_000_000_000_000  # 2025-11-24T16:00:00Z, above 2^53
SEC = 1_000_000_000
REFERENCE = Path("/work/shared/reference/ract-event-schema.md")
JCS_CORPUS = Path("/work/shared/corpora/jcs")


# --------------------------------------------------------------------------
# An independent JCS (RFC 8785) with exact integers
# --------------------------------------------------------------------------
def es_number(x: float) -> str:
    """ECMAScript Number::toString of a finite double (what JCS writes)."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError(x)
    if x == 0:
        return "0"
    r = repr(x)  # Python's repr is the shortest round-trip digit string
    neg = r.startswith("-")
    r = r.lstrip("-")
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    allz = ip + fp
    digits = allz.lstrip("0")
    n = len(ip) + int(exp or 0) - (len(allz) - len(digits))  # value = 0.DIGITS x 10^n
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return ("-" if neg else "") + s


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def jstr(s: str) -> str:
    return '"' + "".join(_SHORT.get(c, "\\u%04x" % ord(c) if ord(c) < 0x20 else c) for c in s) + '"'


def jcs(v, *, line_form: bool = False) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if line_form and v == int(v) and 2**63 <= abs(v) < 1e21:
            # JCS writes these as bare digits, which SPEC §2.1 reads as an
            # integer outside 64 bits: a line must keep a float spelling
            return repr(v)
        return es_number(v)
    if isinstance(v, str):
        return jstr(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x, line_form=line_form) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jstr(k) + ":" + jcs(v[k], line_form=line_form) for k in keys) + "}"
    raise TypeError(type(v))


def ehash(e: dict) -> str:
    return hashlib.sha256(jcs({k: x for k, x in e.items() if k != "hash"}).encode("utf-8")).hexdigest()


_ids = [0]


def nid() -> str:
    _ids[0] += 1
    return hashlib.sha1(b"conformance-2/%d" % _ids[0]).hexdigest()[:32]


def ev(kind, payload=None, *, step=None, parent=None, ts=None, run=RUN) -> dict:
    return {
        "id": nid(),
        "run_id": run,
        "step_id": step,
        "parent_id": parent,
        "timestamp_ns": ts,
        "kind": kind,
        "payload": {} if payload is None else payload,
        "prev_hash": None,
        "hash": None,
    }


def chain(evs, *, start=ZERO, t0=T0, step_ns=1000):
    prev = start
    for i, e in enumerate(evs):
        if e["timestamp_ns"] is None:
            e["timestamp_ns"] = t0 + i * step_ns
        e["prev_hash"] = prev
        e["hash"] = ehash(e)
        prev = e["hash"]
    return evs


def line(e: dict) -> bytes:
    return jcs(e, line_form=True).encode("utf-8") + b"\n"


def write(path: Path, evs=None, *, raw: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if raw is not None else b"".join(line(e) for e in evs))
    return path


def logpath(root: Path, name: str = "log", run: str = RUN) -> Path:
    return root / name / run / "events.jsonl"


def closed_run(n_reaped: int = 0) -> list[dict]:
    """run.started, step.started, n x process.reaped, step.committed, run.completed: no open handle."""
    s = nid()
    evs = [ev("run.started", {"intent_id": "x"}), ev("step.started", {"parent_snapshot": "a" * 40}, step=s)]
    evs += [ev("process.reaped", {"reason": "exit", "reap_latency_ms": i}, step=s) for i in range(n_reaped)]
    evs += [ev("step.committed", {"outcome": "COMMITTED"}, step=s), ev("run.completed", {"final_decision": "done"})]
    return chain(evs)


def ract(capsys, *args):
    rc = ract_main(["trace", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def verify_json(capsys, *args):
    rc, out, err = ract(capsys, "verify", "--format", "json", *args)
    return rc, json.loads(out)


def sub(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", *map(str, args)], capture_output=True, cwd=cwd, timeout=120
    )


def errors(report, i=0):
    return [(f["code"], f["line"], f["offset"]) for f in report["files"][i]["findings"] if f["severity"] == "error"]


# --------------------------------------------------------------------------
# the encoder used to build inputs agrees with the shared corpus and rfc8785
# --------------------------------------------------------------------------
def test_own_encoder_is_jcs():
    rfc8785 = pytest.importorskip("rfc8785")
    if JCS_CORPUS.exists():
        for inp in sorted((JCS_CORPUS / "input").glob("*.json")):
            want = (JCS_CORPUS / "output" / inp.name).read_bytes()
            assert jcs(json.loads(inp.read_bytes())).encode() in (want, want.rstrip(b"\n")), inp.name
    rnd = random.Random(85)
    specials = [1e21, 1e-7, 1e16, 4.5, -0.0, 2.0, 1e20, 5e-324, 1.7976931348623157e308, 1e-6, 0.1, 9007199254740993.0]
    for x in specials + [struct.unpack("d", rnd.randbytes(8))[0] for _ in range(20000)]:
        if math.isfinite(x):
            assert es_number(x) == rfc8785.dumps(x).decode(), x


# --------------------------------------------------------------------------
# §2.1 framing: exact line, offset and code of every malformed line
# --------------------------------------------------------------------------
def _base():
    evs = closed_run()
    return evs, [line(e) for e in evs]


def _offsets(lines):
    out, n = [], 0
    for l in lines:
        out.append(n)
        n += len(l)
    return out


def _in_payload(l: bytes, insert: bytes) -> bytes:
    return l.replace(b'"payload":{', b'"payload":{' + insert, 1)


# name -> (lines -> list of physical lines, 1-based line of the only error, allowed codes)
MALFORMED = {
    "blank line": (lambda L: L[:2] + [b"\n"] + L[2:], 3, {"MALFORMED_LINE"}),
    "CRLF blank line": (lambda L: L[:2] + [b"\r\n"] + L[2:], 3, {"MALFORMED_LINE"}),
    "whitespace-only line": (lambda L: L[:2] + [b" \t \n"] + L[2:], 3, {"MALFORMED_LINE"}),
    "BOM before line 3": (lambda L: L[:2] + [b"\xef\xbb\xbf" + L[2]] + L[3:], 3, {"MALFORMED_LINE"}),
    "NUL byte line": (lambda L: L[:2] + [b"\x00\n"] + L[2:], 3, {"MALFORMED_LINE"}),
    "null line": (lambda L: L[:2] + [b"null\n"] + L[2:], 3, {"MALFORMED_LINE"}),
    "array line": (lambda L: L[:2] + [b"[]\n"] + L[2:], 3, {"MALFORMED_LINE"}),
    "empty object line": (lambda L: L[:2] + [b"{}\n"] + L[2:], 3, {"ENVELOPE_ERROR", "MALFORMED_LINE"}),
    "trailing garbage": (lambda L: L[:2] + [L[2][:-1] + b" x\n"] + L[3:], 3, {"MALFORMED_LINE"}),
    "trailing comma": (lambda L: L[:2] + [L[2][:-2] + b",}\n"] + L[3:], 3, {"MALFORMED_LINE"}),
    "form feed as whitespace": (lambda L: L[:2] + [b"{\x0c" + L[2][1:]] + L[3:], 3, {"MALFORMED_LINE"}),
    "vertical tab as whitespace": (lambda L: L[:2] + [b"{\x0b" + L[2][1:]] + L[3:], 3, {"MALFORMED_LINE"}),
    "no-break space as whitespace": (lambda L: L[:2] + [b"{\xc2\xa0" + L[2][1:]] + L[3:], 3, {"MALFORMED_LINE"}),
    "duplicate key three deep": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a":{"b":{"c":1,"c":1}},')] + L[3:],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate key inside an array": (
        lambda L: L[:2] + [_in_payload(L[2], b'"l":[{"a":1},{"a":1,"a":1}],')] + L[3:],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate empty key": (
        lambda L: L[:2] + [_in_payload(L[2], b'"":1,"":2,')] + L[3:],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate key via escaped slash": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a/b":1,"a\\/b":1,')] + L[3:],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate envelope key": (
        lambda L: L[:2] + [L[2].replace(b'"kind":', b'"kind":"x","kind":', 1)] + L[3:],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "2^64 nested in arrays": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a":[[18446744073709551616]],')] + L[3:],
        3,
        {"MALFORMED_LINE"},
    ),
    "-2^63-1 in an object": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a":{"b":-9223372036854775809},')] + L[3:],
        3,
        {"MALFORMED_LINE"},
    ),
    "lone low surrogate": (lambda L: L[:2] + [_in_payload(L[2], b'"a":"\\udc00",')] + L[3:], 3, {"MALFORMED_LINE"}),
    "high surrogate then a letter": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a":"\\ud83dx",')] + L[3:],
        3,
        {"MALFORMED_LINE"},
    ),
    "lone surrogate in a key": (lambda L: L[:2] + [_in_payload(L[2], b'"\\udbff":1,')] + L[3:], 3, {"MALFORMED_LINE"}),
    "invalid UTF-8 in a key": (lambda L: L[:2] + [_in_payload(L[2], b'"\xff":1,')] + L[3:], 3, {"MALFORMED_LINE"}),
    "UTF-8 above U+10FFFF": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a":"\xf4\x90\x80\x80",')] + L[3:],
        3,
        {"MALFORMED_LINE"},
    ),
    "truncated UTF-8 mid line": (
        lambda L: L[:2] + [_in_payload(L[2], b'"a":"\xe2\x82",')] + L[3:],
        3,
        {"MALFORMED_LINE"},
    ),
    "NaN": (lambda L: L[:2] + [_in_payload(L[2], b'"a":NaN,')] + L[3:], 3, {"MALFORMED_LINE"}),
    "Infinity": (lambda L: L[:2] + [_in_payload(L[2], b'"a":Infinity,')] + L[3:], 3, {"MALFORMED_LINE"}),
    "unparsable line ending in newline, last": (lambda L: L + [L[0][:50] + b"\n"], 5, {"MALFORMED_LINE"}),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_line_is_one_finding_at_its_line_and_offset(tmp_path, capsys, name):
    build, bad_line, allowed = MALFORMED[name]
    _, L = _base()
    lines = build(L)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), raw=b"".join(lines)))
    assert rc == 1, rep
    errs = errors(rep)
    # exactly one error: the damaged line; the line after it is not a second break
    assert [(ln, off) for _, ln, off in errs] == [(bad_line, _offsets(lines)[bad_line - 1])], errs
    assert errs[0][0] in allowed, errs
    bad = [f for f in rep["files"][0]["findings"] if f["severity"] == "error"][0]
    assert bad["event_id"] is None or re.fullmatch(r"[0-9a-f]{32}", bad["event_id"])


ACCEPTED = {
    "CRLF on every line": lambda L: [l[:-1] + b"\r\n" for l in L],
    "CRLF on every other line": lambda L: [l[:-1] + (b"\r\n" if i % 2 else b"\n") for i, l in enumerate(L)],
    "two CRs before the newline": lambda L: [l[:-1] + b"\r\r\n" for l in L],
    "leading blanks and tabs": lambda L: [b" \t" + l for l in L],
    "trailing blanks before the newline": lambda L: [l[:-1] + b" \t \n" for l in L],
    "NFC and NFD keys are two keys": None,
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_json_whitespace_and_line_endings_are_accepted(tmp_path, capsys, name):
    if ACCEPTED[name] is None:
        evs = chain([ev("run.started", {"\u00e9": 1, "e\u0301": 2}), ev("run.completed", {})])
        lines = [line(e) for e in evs]
    else:
        evs, L = _base()
        lines = ACCEPTED[name](L)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), raw=b"".join(lines)))
    assert rc == 0 and errors(rep) == [], rep
    assert rep["files"][0]["events"] == len(evs) and rep["files"][0]["head"] == evs[-1]["hash"]


# --------------------------------------------------------------------------
# §2.1 the last line
# --------------------------------------------------------------------------
def _tail_cases():
    evs, L = _base()
    body = b"".join(L)
    crlf = b"".join(l[:-1] + b"\r\n" for l in L)
    last_utf8 = L[-1].replace(b'"done"', '"d\u00e9\u00e9"'.encode())
    cut_mid_char = last_utf8[: last_utf8.index(b"\xc3\xa9") + 1]
    return {
        # name: (raw, exit, code expected on the last line, its line, offset)
        "missing final newline": (body[:-1], 0, "MISSING_FINAL_NEWLINE", 4, len(body) - len(L[-1])),
        "missing final newline after CRLF lines (ends in CR)": (
            crlf[:-1],
            0,
            "MISSING_FINAL_NEWLINE",
            4,
            len(crlf) - len(L[-1]) - 1,
        ),
        "torn: half a line": (body + L[0][:60], 4, "TORN_TAIL", 5, len(body)),
        "torn: one brace": (body + b"{", 4, "TORN_TAIL", 5, len(body)),
        "torn: only blanks": (body + b"  ", 4, "TORN_TAIL", 5, len(body)),
        "torn: a lone CR": (body + b"\r", 4, "TORN_TAIL", 5, len(body)),
        "torn: cut inside a UTF-8 character": (
            b"".join(L[:-1]) + cut_mid_char,
            4,
            "TORN_TAIL",
            4,
            len(body) - len(L[-1]),
        ),
        "torn: the only line": (L[0][:30], 4, "TORN_TAIL", 1, 0),
        "unparsable last line WITH newline is malformed": (body + L[0][:60] + b"\n", 1, "MALFORMED_LINE", 5, len(body)),
        "complete object without newline whose hash is wrong": (
            b"".join(L[:-1]) + L[-1].replace(b'"done"', b'"dune"')[:-1],
            1,
            "HASH_MISMATCH",
            4,
            len(body) - len(L[-1]),
        ),
    }


@pytest.mark.parametrize("name", sorted(_tail_cases()))
def test_last_line_rules(tmp_path, capsys, name):
    raw, want_rc, code, ln, off = _tail_cases()[name]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), raw=raw))
    assert rc == want_rc, rep
    hits = [f for f in rep["files"][0]["findings"] if f["code"] == code]
    assert [(f["line"], f["offset"]) for f in hits] == [(ln, off)], rep
    # nothing else is an error
    assert [e for e in errors(rep) if e[0] != code] == []


def test_torn_tail_does_not_hide_an_earlier_break_or_schema_error(tmp_path, capsys):
    evs, L = _base()
    tampered = [L[0], L[1].replace(b'"aaaa', b'"baaa', 1)] + L[2:]
    rc, rep = verify_json(capsys, write(logpath(tmp_path, "t"), raw=b"".join(tampered) + b'{"id'))
    assert rc == 1 and [c for c, _, _ in errors(rep)] == ["HASH_MISMATCH", "TORN_TAIL"]
    schema = chain([ev("run.started", {}), ev("no.such.kind", {}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path, "s"), raw=b"".join(line(e) for e in schema) + b'{"id'))
    assert rc == 3 and [c for c, _, _ in errors(rep)] == ["UNKNOWN_KIND", "TORN_TAIL"]
    rc, rep = verify_json(
        capsys, write(logpath(tmp_path, "o"), raw=line(chain([ev("run.started", {})])[0]) + b'{"id'), "--require-closed"
    )
    assert rc == 4 and sorted(c for c, _, _ in errors(rep)) == ["OPEN_RUN", "TORN_TAIL"]


# --------------------------------------------------------------------------
# §2.4 / §3 re-anchoring: one finding per independent break, at the right line
# --------------------------------------------------------------------------
def _edit(e, **payload):
    e["payload"].update(payload)


def _reanchor_cases():
    def edit_kept_hash(evs):
        _edit(evs[3], reason="edited")
        return evs, [("HASH_MISMATCH", 4)]

    def edit_rehashed(evs):
        _edit(evs[3], reason="edited")
        evs[3]["hash"] = ehash(evs[3])
        return evs, [("CHAIN_BREAK", 5)]

    def deleted(evs):
        del evs[3]
        return evs, [("CHAIN_BREAK", 4)]

    def swapped(evs):
        evs[3], evs[4] = evs[4], evs[3]
        return evs, [("CHAIN_BREAK", 4), ("CHAIN_BREAK", 5), ("CHAIN_BREAK", 6)]

    def linked_forgery_inserted(evs):
        f = json.loads(json.dumps(evs[3]))
        f["id"] = nid()
        f["prev_hash"] = evs[3]["hash"]
        f["hash"] = ehash(f)
        evs.insert(4, f)
        return evs, [("CHAIN_BREAK", 6)]

    def unlinked_forgery_inserted(evs):
        f = json.loads(json.dumps(evs[3]))
        f["id"] = nid()
        f["prev_hash"] = "11" * 32
        f["hash"] = ehash(f)
        evs.insert(4, f)
        return evs, [("CHAIN_BREAK", 5), ("CHAIN_BREAK", 6)]

    def two_edits(evs):
        _edit(evs[2], reason="x")
        _edit(evs[6], reason="y")
        return evs, [("HASH_MISMATCH", 3), ("HASH_MISMATCH", 7)]

    def adjacent_edits(evs):
        _edit(evs[3], reason="x")
        _edit(evs[4], reason="y")
        return evs, [("HASH_MISMATCH", 4), ("HASH_MISMATCH", 5)]

    def genesis_deleted(evs):
        return evs[1:], [("MISSING_GENESIS", 1)]

    def second_genesis_appended(evs):
        evs.append(chain([ev("run.started", {"intent_id": "again"})], t0=T0 + 10**6)[0])
        return evs, [("CHAIN_BREAK", len(evs))]

    def duplicate_id(evs):
        evs[5]["id"] = evs[2]["id"]
        chain(evs)
        return evs, [("DUPLICATE_ID", 6)]

    def foreign_run_id(evs):
        evs[3]["run_id"] = RUN2
        chain(evs)
        return evs, [("FOREIGN_RUN_ID", 4)]

    return {
        f.__name__: f
        for f in (
            edit_kept_hash,
            edit_rehashed,
            deleted,
            swapped,
            linked_forgery_inserted,
            unlinked_forgery_inserted,
            two_edits,
            adjacent_edits,
            genesis_deleted,
            second_genesis_appended,
            duplicate_id,
            foreign_run_id,
        )
    }


@pytest.mark.parametrize("name", sorted(_reanchor_cases()))
def test_each_independent_break_is_reported_once(tmp_path, capsys, name):
    evs, want = _reanchor_cases()[name](closed_run(n_reaped=5))
    lines = [line(e) for e in evs]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), raw=b"".join(lines)))
    assert rc == 1
    offs = _offsets(lines)
    assert errors(rep) == [(code, ln, offs[ln - 1]) for code, ln in want], rep
    for f in rep["files"][0]["findings"]:
        if f["severity"] == "error":
            assert f["event_id"] == evs[f["line"] - 1]["id"]


def test_chain_break_and_genesis_carry_expected_and_actual(tmp_path, capsys):
    evs = closed_run(n_reaped=2)
    del evs[2]
    rc, rep = verify_json(capsys, write(logpath(tmp_path, "a"), evs))
    f = [f for f in rep["files"][0]["findings"] if f["code"] == "CHAIN_BREAK"][0]
    assert (f["expected"], f["actual"]) == (evs[1]["hash"], evs[2]["prev_hash"])
    evs = chain(closed_run(), start="12" * 32)
    rc, rep = verify_json(capsys, write(logpath(tmp_path, "b"), evs))
    f = [f for f in rep["files"][0]["findings"] if f["code"] == "MISSING_GENESIS"][0]
    assert f["expected"] == ZERO and f["actual"] == "12" * 32 and f["line"] == 1 and f["offset"] == 0


def test_max_findings_caps_the_list_per_file_not_the_verdict(tmp_path, capsys):
    evs = closed_run(n_reaped=6)
    for i in (2, 4, 6):
        _edit(evs[i], reason=f"e{i}")
    a = write(logpath(tmp_path, "a"), evs)
    b = write(logpath(tmp_path, "b"), evs)
    rc, rep = verify_json(capsys, "--max-findings", 2, a, b)
    assert rc == 1
    for f in rep["files"]:
        assert [x["line"] for x in f["findings"]] == [3, 5] and f["exit_code"] == 1


# --------------------------------------------------------------------------
# §2.3 canonical hashing: a randomized property against this file's JCS
# --------------------------------------------------------------------------
_CHARS = [
    "a",
    "Z",
    "\u00e9",
    "\u2028",
    "\ufb01",
    "\ue000",
    "\uffff",
    "\U0001f600",
    "\U0010ffff",
    "\x00",
    "\x1f",
    "\x7f",
    '"',
    "\\",
    "/",
    "\b",
    "\f",
    "\n",
    "\r",
    "\t",
    "\u0080",
    "\u00ad",
    "\ufeff",
    " ",
]


def _random_value(rnd, depth=0):
    c = rnd.random()
    if depth > 3 or c < 0.3:
        c2 = rnd.random()
        if c2 < 0.25:
            return rnd.randint(-(2**63), 2**63 - 1)
        if c2 < 0.4:
            return rnd.randint(-(2**53), 2**53)
        if c2 < 0.75:
            while True:
                x = struct.unpack("d", rnd.randbytes(8))[0]
                if math.isfinite(x):
                    return x
        return rnd.choice([0.0, -0.0, 1e21, 1e-7, 1e16, 4.5, 2.0, 1e20, 9007199254740993.0, 5e-324, 0.1, 1e-6, 123.456])
    if c < 0.5:
        return "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 5)))
    if c < 0.55:
        return rnd.choice([True, False, None])
    if c < 0.75:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {
        "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 3))): _random_value(rnd, depth + 1)
        for _ in range(rnd.randint(0, 4))
    }


def _shuffled(rnd, v):
    if isinstance(v, dict):
        items = list(v.items())
        rnd.shuffle(items)
        return {k: _shuffled(rnd, x) for k, x in items}
    if isinstance(v, list):
        return [_shuffled(rnd, x) for x in v]
    return v


@pytest.mark.parametrize("seed", [1, 2])
def test_random_payloads_hash_by_value_in_any_spelling(tmp_path, capsys, seed):
    rnd = random.Random(seed)
    evs = [
        ev("run.started", {"r": _random_value(rnd), **{"k%d" % i: _random_value(rnd) for i in range(3)}})
        for _ in range(600)
    ]
    evs.append(ev("run.completed", {}))
    chain(evs)
    canon = write(logpath(tmp_path, "canon"), evs)
    rc, rep = verify_json(capsys, canon)
    assert (rc, errors(rep)) == (0, []), errors(rep)[:3]
    assert rep["files"][0]["head"] == evs[-1]["hash"] and rep["files"][0]["events"] == len(evs)
    # another writer: insertion order shuffled, spaces, \u escapes on some lines, Python float forms (1e+20, -0.0, 2.0)
    raw = b"".join(
        json.dumps(_shuffled(rnd, e), ensure_ascii=rnd.random() < 0.5, separators=(", ", ": ")).encode("utf-8") + b"\n"
        for e in evs
    )
    rc, rep = verify_json(capsys, write(logpath(tmp_path, "foreign"), raw=raw))
    assert (rc, errors(rep)) == (0, []), errors(rep)[:3]
    assert rep["files"][0]["head"] == evs[-1]["hash"]


def test_integral_float_above_int64_hashes_as_jcs_digits_but_needs_a_float_spelling_on_the_line(tmp_path, capsys):
    """SPEC §2.3: 1e20 canonicalizes to 100000000000000000000; SPEC §2.1: that token on a line is an
    integer outside 64 bits. So the hash input holds the digits, the line must spell a float."""
    evs = chain([ev("run.started", {"v": 1e20}), ev("run.completed", {})])
    assert '"v":100000000000000000000' in jcs(evs[0])
    for spelling, want in [(b"1e20", 0), (b"1E+20", 0), (b"100000000000000000000.0", 0), (b"100000000000000000000", 1)]:
        raw = line(evs[0]).replace(b'"v":1e+20', b'"v":' + spelling) + line(evs[1])
        assert b'"v":' + spelling in raw
        rc, rep = verify_json(capsys, write(logpath(tmp_path, spelling.decode()), raw=raw))
        assert rc == want, (spelling, rep)
        if want:
            assert errors(rep)[0][:2] == ("MALFORMED_LINE", 1)


# --------------------------------------------------------------------------
# §2.5 every kind x every version, read from the reference document
# --------------------------------------------------------------------------
def _kinds_since() -> dict[str, int]:
    text = REFERENCE.read_text(encoding="utf-8").splitlines()
    marks = []  # (line index where a version section starts, version)
    for i, l in enumerate(text):
        m = re.search(r"\(schema_version (\d+)", l)
        if m and (not marks or int(m.group(1)) > marks[-1][1]):  # the first section of each newer version
            marks.append((i, int(m.group(1))))
    since = {}
    for i, l in enumerate(text):
        m = re.fullmatch(r"`([a-z_.]+)`", l.strip())
        if m and m.group(1) not in since:
            v = 1
            for start, ver in marks:
                if i > start:
                    v = ver
            since[m.group(1)] = v
    return since


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference document not present")
def test_every_kind_against_every_schema_version(tmp_path, capsys):
    since = _kinds_since()
    assert len(since) == 64
    assert sorted(since.values()).count(9) == 20 and sorted(since.values()).count(4) == 7
    by_run = {}
    for k in since:
        rid = hashlib.md5(k.encode()).hexdigest()
        by_run[rid] = k
        # an empty payload is valid for every kind: documented keys may be absent (§2.6)
        write(
            tmp_path / rid / "events.jsonl",
            chain([ev("run.started", {}, run=rid), ev(k, {}, run=rid), ev("run.completed", {}, run=rid)]),
        )
    for version in range(1, 10):
        rc, rep = verify_json(capsys, "--schema-version", version, tmp_path)
        assert len(rep["files"]) == 64
        for f in rep["files"]:
            k = by_run[Path(f["path"]).parent.name]
            if version >= since[k]:
                assert f["exit_code"] == 0 and errors({"files": [f]}) == [], (version, k, f["findings"])
            else:
                assert f["exit_code"] == 3 and [c for c, _, _ in errors({"files": [f]})] == ["UNKNOWN_KIND"], (
                    version,
                    k,
                )
        assert rc == (0 if version == 9 else 3)


# --------------------------------------------------------------------------
# §10 --expect-head, §3 usage errors and precedence
# --------------------------------------------------------------------------
def test_expect_head(tmp_path, capsys):
    evs, L = _base()
    head = evs[-1]["hash"]
    p = write(logpath(tmp_path, "a"), evs)
    cases = [
        (["--expect-head", head, p], 0),
        (["--expect-head", head, p.parent], 0),  # a directory holding exactly one log
        (["--expect-head", head, p, p], 0),  # the same file twice is one log
        (["--expect-head", evs[-2]["hash"], p], 1),
        (["--expect-head", head, write(logpath(tmp_path, "nl"), raw=b"".join(L)[:-1])], 0),
        (["--expect-head", head, write(logpath(tmp_path, "torn"), raw=b"".join(L) + b'{"i')], 4),
        (["--expect-head", head, write(logpath(tmp_path, "cut"), raw=b"".join(L[:-1]))], 1),
        (["--expect-head", head, write(logpath(tmp_path, "empty"), raw=b"")], 1),
        (["--expect-head", head, p, write(logpath(tmp_path, "b"), evs)], 2),
        (["--expect-head", head, tmp_path], 2),  # a directory holding several logs
        (["--expect-head", head[:-1], p], 2),
        (["--expect-head", "z" * 64, p], 2),
        (["--expect-head", "", p], 2),
    ]
    for args, want in cases:
        rc, out, err = ract(capsys, "verify", "-q", *args)
        assert rc == want, (args, err)
    rc, rep = verify_json(capsys, "--expect-head", evs[-2]["hash"], p)
    f = rep["files"][0]["findings"]
    assert [(x["code"], x["severity"], x["line"], x["expected"], x["actual"]) for x in f] == [
        ("HEAD_MISMATCH", "error", None, evs[-2]["hash"], head)
    ]
    # a rewrite of the whole file with recomputed hashes verifies on its own; only the pinned head catches it
    forged = closed_run()
    q = write(logpath(tmp_path, "forged"), forged)
    assert ract(capsys, "verify", "-q", q)[0] == 0
    assert ract(capsys, "verify", "-q", "--expect-head", head, q)[0] == 1


USAGE = [
    ["verify", "--schema-version", "0"],
    ["verify", "--schema-version", "10"],
    ["verify", "--schema-version", "x"],
    ["verify", "--max-findings", "0"],
    ["verify", "--format", "xml"],
    ["verify", "--jobs", "0"],
    ["verify"],
    ["grep", "--where", "payload.reason~("],
    ["grep", "--where", "payload.pid>[1]"],
    ["grep", "--where", "=1"],
    ["grep", "--since", "yesterday"],
    ["grep", "--since", str(T0 + 5), "--until", str(T0)],
    ["grep", "--run", "xyz"],
    ["grep", "-c", "-l"],
    ["grep", "--format", "xml"],
    ["grep", "--schema-version", "10"],
]


@pytest.mark.parametrize("args", USAGE, ids=[" ".join(a) for a in USAGE])
def test_bad_command_lines_exit_2_before_reading(tmp_path, capsys, args):
    p = write(logpath(tmp_path), closed_run())
    target = [] if args == ["verify"] else [p]
    rc, out, err = ract(capsys, *args, *target)
    assert rc == 2 and out == "" and err.strip(), (rc, out, err)


def test_lowest_nonzero_code_within_one_file_and_across_files(tmp_path, capsys):
    torn = write(logpath(tmp_path, "torn"), raw=b"".join(line(e) for e in closed_run()) + b'{"i')
    schema = write(
        logpath(tmp_path, "schema"), chain([ev("run.started", {}), ev("no.such", {}), ev("run.completed", {})])
    )
    opened = write(logpath(tmp_path, "open"), chain([ev("run.started", {})]))
    bad = closed_run()
    _edit(bad[1], x=1)
    tampered = write(logpath(tmp_path, "tampered"), bad)
    missing = tmp_path / "missing" / "events.jsonl"
    cases = [
        ([opened], [], 0),
        ([opened], ["--require-closed"], 4),
        ([opened, missing], ["--require-closed"], 4),
        ([missing, schema], [], 3),
        ([torn, schema, opened], ["--require-closed"], 3),
        ([missing, torn], [], 4),
        ([missing, torn, schema, tampered], [], 1),
    ]
    for paths, opts, want in cases:
        rc, rep = verify_json(capsys, *opts, *paths)
        assert rc == want and rep["exit_code"] == want, (paths, opts, rc)
        assert want == min((f["exit_code"] for f in rep["files"] if f["exit_code"]), default=0)


# --------------------------------------------------------------------------
# issue 3: the JSON report's exact shape
# --------------------------------------------------------------------------
def test_json_report_shape(tmp_path, capsys):
    evs = closed_run(n_reaped=2)
    _edit(evs[3], reason="edited")
    p = write(logpath(tmp_path), evs)
    missing = tmp_path / "nope.jsonl"
    rc, rep = verify_json(capsys, p, missing)
    assert rc == 1
    assert set(rep) == {"exit_code", "files"} and rep["exit_code"] == 1
    by_path = {f["path"]: f for f in rep["files"]}
    assert set(by_path) == {str(p), str(missing)}
    must = {"path", "ok", "exit_code", "events", "head", "first_ts", "last_ts", "findings"}
    for f in rep["files"]:
        assert must <= set(f), set(f)
        assert f["ok"] is (f["exit_code"] == 0)
        for x in f["findings"]:
            assert {"code", "severity", "line", "offset", "event_id", "message"} <= set(x)
            assert x["severity"] in ("error", "warning") and isinstance(x["message"], str) and x["message"]
    f = by_path[str(p)]
    assert (f["ok"], f["exit_code"], f["events"], f["head"]) == (False, 1, len(evs), evs[-1]["hash"])
    assert (f["first_ts"], f["last_ts"]) == (evs[0]["timestamp_ns"], evs[-1]["timestamp_ns"])
    assert type(f["first_ts"]) is int  # exact, not a double
    [x] = f["findings"]
    offset = sum(len(line(e)) for e in evs[:3])
    assert (x["code"], x["severity"], x["line"], x["offset"], x["event_id"]) == (
        "HASH_MISMATCH",
        "error",
        4,
        offset,
        evs[3]["id"],
    )
    assert x["actual"] == evs[3]["hash"] and x["expected"] == ehash(evs[3])
    m = by_path[str(missing)]
    assert (m["ok"], m["exit_code"], m["events"], m["head"]) == (False, 5, 0, None)
    assert [(x["code"], x["line"], x["offset"]) for x in m["findings"]] == [("IO_ERROR", None, None)]


def test_text_mode_keeps_stdout_empty_and_prints_path_line_code(tmp_path):
    evs = closed_run(n_reaped=2)
    _edit(evs[3], reason="edited")
    p = write(logpath(tmp_path), evs)
    r = sub("verify", p)
    assert r.returncode == 1 and r.stdout == b""
    err = r.stderr.decode()
    assert err.startswith("FAIL ") and f"{p}:4: HASH_MISMATCH " in err
    r = sub("verify", "--format", "json", p)
    assert r.stderr == b"" and json.loads(r.stdout)["exit_code"] == 1


# --------------------------------------------------------------------------
# §6 / issue 6: grep
# --------------------------------------------------------------------------
def _grep_run(t0=T0, run=RUN):
    s, s2 = nid(), nid()
    evs = [
        ev("run.started", {"intent_id": "x"}, run=run),
        ev("step.started", {"parent_snapshot": "a" * 40}, step=s, run=run),
        ev(
            "tool.called",
            {"tool": "bash", "arguments": {"cmd": "ls", "limits": {"mem_mb": 512}, "list": [1, 2, 3]}},
            step=s,
            run=run,
        ),
        ev("tool.result", {"tool": "bash", "ok": False, "duration_ns": 2**60 + 1}, step=s, run=run),
        ev(
            "process.reaped",
            {"pid": 123, "argv0": "pytest", "argv_len": 3, "reason": "dispose_unsuccessful", "reap_latency_ms": 1500},
            step=s,
            run=run,
        ),
        ev(
            "process.reaped",
            {"pid": -1, "argv0": "", "argv_len": 0, "reason": "commit_failed", "reap_latency_ms": 0},
            step=s,
            run=run,
        ),
        ev("tool.called", {"tool": "git", "arguments": {"cmd": "caf\u00e9 \u2028 x"}}, step=s, run=run),
        ev("tool.result", {"tool": "git", "ok": True, "duration_ns": 5}, step=s, run=run),
        ev("step.committed", {"outcome": "COMMITTED"}, step=s, run=run),
        ev("step.started", {"parent_snapshot": "b" * 40}, step=s2, run=run),
        ev(
            "process.reaped",
            {"pid": 7, "argv0": "make", "argv_len": 1, "reason": "postcondition_failed", "reap_latency_ms": 1000},
            step=s2,
            run=run,
        ),
        ev("step.committed", {"outcome": "COMMITTED"}, step=s2, run=run),
        ev("run.completed", {"final_decision": "done"}, run=run),
    ]
    return chain(evs, t0=t0, step_ns=SEC), s, s2


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
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b))
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
    p = write(logpath(tmp_path), evs)
    raw = p.read_bytes().splitlines(keepends=True)
    want = b"".join(l for l, e in zip(raw, evs) if _holds(e, expr))
    rc, out, err = ract(capsys, "grep", "--format", "jsonl", "--where", expr, p)
    assert (rc, out.encode("utf-8")) == (0 if want else 7, want), err


def test_grep_output_modes_and_filters(tmp_path):
    evs, s, s2 = _grep_run()
    evs2, t, t2 = _grep_run(t0=T0 + 86400 * SEC, run=RUN2)
    p1 = write(tmp_path / RUN / "events.jsonl", evs)
    p2 = write(tmp_path / RUN2 / "events.jsonl", evs2)
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
        (["-c", "--run", RUN, p1, p2], 0, P1 + b":13\n" + P2 + b":0\n"),
        (["-c", "-H", "-k", "run.started", p1], 0, P1 + b":1\n"),
        (["-l", "-k", "process.reaped", p1, p2], 0, P1 + b"\n" + P2 + b"\n"),
        (["-l", "--run", RUN2, p1, p2], 0, P2 + b"\n"),
        (["-l", "-k", "nope", p1, p2], 7, b""),
        (["--run", RUN2.upper(), tmp_path], 0, b"".join(r2)),
        (["--step", s2, "--step", t2, tmp_path], 0, r1[9] + r1[10] + r1[11] + r2[9] + r2[10] + r2[11]),
        (["--since", T0 + 11 * SEC, p1], 0, r1[11] + r1[12]),
        (["--until", T0 + SEC, p1], 0, r1[0] + r1[1]),
        (["--since", "2025-11-24T16:00:11Z", p1], 0, r1[11] + r1[12]),
        (["--since", "2025-11-24T18:00:11+02:00", p1], 0, r1[11] + r1[12]),
        (["--since", "2025-11-24T16:00:11", p1], 0, r1[11] + r1[12]),
        (["--since", "2025-11-24T16:00:10.000000001Z", p1], 0, r1[11] + r1[12]),
        (["--until", "2025-11-24T16:00:01.000000000Z", p1], 0, r1[0] + r1[1]),
        (["--until", "2025-11-24T16:00:00.999999999Z", p1], 0, r1[0]),
        (["--since", "2025-11-25", "-k", "run.started", tmp_path], 0, r2[0]),
        (["--until", "2025-11-24", "-k", "run.started", tmp_path], 0, r1[0]),
        (["--since", str(T0 + 12 * SEC + 1), p1], 7, b""),
    ]
    for args, want_rc, want_out in cases:
        r = sub("grep", *args)
        assert (r.returncode, r.stdout) == (want_rc, want_out), (args, r.stderr)


def test_grep_keeps_foreign_bytes_and_finds_escaped_kinds(tmp_path):
    evs, _, _ = _grep_run()
    crlf = b"".join(line(e)[:-1] + b"\r\n" for e in evs)
    p = write(logpath(tmp_path, "crlf"), raw=crlf)
    c = crlf.splitlines(keepends=True)
    r = sub("grep", "-k", "step.committed", p)
    assert (r.returncode, r.stdout) == (0, c[8] + c[11])
    escaped = [line(e).replace(b'"kind":"process.reaped"', b'"kind":"process\\u002ereaped"') for e in evs]
    q = write(logpath(tmp_path, "esc"), raw=b"".join(escaped))
    for extra in ([], ["--no-verify"]):
        r = sub("grep", *extra, "-k", "process.reaped", q)
        assert (r.returncode, r.stdout) == (0, escaped[4] + escaped[5] + escaped[10]), extra


@pytest.mark.parametrize("broken_line", [3, 6, 13])
def test_grep_prints_nothing_at_or_after_a_break(tmp_path, broken_line):
    evs, _, _ = _grep_run()
    _edit(evs[broken_line - 1], tampered=True)
    p = write(logpath(tmp_path), evs)
    raw = p.read_bytes().splitlines(keepends=True)
    r = sub("grep", "-k", "*", p)
    assert r.returncode == 1 and f":{broken_line}: HASH_MISMATCH".encode() in r.stderr
    # a prefix of the lines before the break (the line just before it may be withheld: its successor is damaged)
    printed = r.stdout.splitlines(keepends=True)
    assert printed == raw[: len(printed)] and broken_line - 2 <= len(printed) <= broken_line - 1
    c = sub("grep", "-c", "-k", "*", p)
    assert c.returncode == 1 and c.stdout == b"%d\n" % len(printed)
    n = sub("grep", "--no-verify", "-k", "*", p)  # opt-out: everything, and it says so
    assert n.returncode == 0 and n.stdout == b"".join(raw) and n.stderr


def test_grep_synthesized_flags(tmp_path, capsys):
    evs, _, _ = _grep_run()
    p = write(logpath(tmp_path), evs[:7])  # open step, open tool call, open run
    assert ract(capsys, "repair", "-q", p)[0] == 0
    raw = p.read_bytes().splitlines(keepends=True)
    synth = [l for l in raw if json.loads(l)["payload"].get("synthesized") is True]
    assert synth
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--synthesized", p)
    assert (rc, out.encode()) == (0, b"".join(synth))
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--no-synthesized", p)
    assert (rc, out.encode()) == (0, b"".join(l for l in raw if l not in synth))
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--synthesized", "-k", "run.aborted", p)
    assert rc == 0 and [json.loads(l)["kind"] for l in out.splitlines()] == ["run.aborted"]
