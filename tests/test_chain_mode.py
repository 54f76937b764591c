"""The native core's chain mode (``ChainReader.read_all``) gives the verdict line-by-line reading gives.

``read_all`` with the native core hands runs of clean lines to C in batches
(``reader._take``): C takes the leading lines that link on and keeps the
chain, ids and clock; the first line it does not take, and the rest of its
batch, are judged in Python. The same bytes are also read event by event
(iteration: no chain mode) and with ``RACT_CORE=python`` (its own chain mode,
and iterated); all must agree on every finding, the head, the event count, trust and the open
handles, on logs edited at random across batch boundaries.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_edits import EDITS, edit_lines

from ract_cli.format.canonical import jcs_exact
from ract_cli.format.model import GENESIS_HASH
from ract_cli.read import chain_mode, core, framing, read_ahead
from ract_cli.read import reader as reader_module
from ract_cli.read.chain_mode import BATCH_LINE_BYTES
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import write_benchmark_log

pytestmark = pytest.mark.skipif(core.NATIVE is None, reason="the native core is not built here")


def verdict(reader: ChainReader) -> tuple[object, ...]:
    state = reader.state
    return (
        [(f.code, f.severity, f.line, f.offset, f.event_id, f.message, f.expected, f.actual) for f in state.findings],
        state.suppressed,
        int(state.exit_code),
        state.head,
        state.events,
        state.first_ts,
        state.last_ts,
        state.first_integrity_failure,
        sorted((h.kind, h.event_id, h.line, h.offset, h.queue_key) for h in state.handles.open_handles()),
        [orjson.dumps(h.event) for h in state.handles.open_handles()],  # what each open keeps, in order
        state.handles.synthesized_closes,
        state.not_a_log,
        (reader.last_event_end, reader.last_event_newline),  # where repair would cut a torn tail
    )


def search(path: Path, wanted: object, hint: bool, **kw: object) -> tuple[object, ...]:
    """What grep does with a reader: take matching events until the first untrusted event, then stop."""
    test = WANTED[wanted]  # type: ignore[index]
    reader = ChainReader(path, wanted=test if hint else None, **kw)  # type: ignore[arg-type]
    found = []
    for ev in reader:
        if not ev.trusted:
            break
        if test(ev.event["kind"]):
            found.append((ev.line, ev.offset, ev.raw, orjson.dumps(ev.event)))  # (keys in their order too)
    return found, reader.broken_at, verdict(reader)


WANTED = {
    "tool.called": lambda k: k == "tool.called",
    "process.*": lambda k: isinstance(k, str) and k.startswith("process."),
    "every": lambda k: True,
    "none": lambda k: False,
    "step opens and closes": lambda k: k in ("step.started", "step.committed", "step.rolled_back"),
}


def three_ways(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: object) -> list[tuple[object, ...]]:
    """The verdict of chain mode, of event-by-event reading (native), and of the Python core (its own chain
    mode, ``python_chain.PythonBatches``, held here to its event-by-event reading)."""
    monkeypatch.setenv("RACT_CORE", "native")
    chained = ChainReader(path, **kw)  # type: ignore[arg-type]
    chained.read_all()
    iterated = ChainReader(path, **kw)  # type: ignore[arg-type]
    last = (0, True)  # the end of the last event handed out, and whether its line ends in "\n"
    for ev in iterated:
        last = (ev.offset + len(ev.raw), ev.raw.endswith(b"\n"))
    assert (iterated.last_event_end, iterated.last_event_newline) == last
    monkeypatch.setenv("RACT_CORE", "python")
    python = ChainReader(path, **kw)  # type: ignore[arg-type]
    python.read_all()
    python_iterated = ChainReader(path, **kw)  # type: ignore[arg-type]
    for _ in python_iterated:
        pass
    monkeypatch.setenv("RACT_CORE", "native")
    assert verdict(python) == verdict(python_iterated)
    return [verdict(chained), verdict(iterated), verdict(python)]


@pytest.fixture(scope="module")
def base_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    path = tmp_path_factory.mktemp("chain") / "events.jsonl"
    write_benchmark_log(path, events=1_600, seed=23)
    return path.read_bytes().splitlines(keepends=True)


@settings(
    max_examples=int(os.environ.get("RACT_CHAIN_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    edits=st.lists(st.sampled_from(EDITS), min_size=0, max_size=6),
    cap=st.sampled_from([None, 1, 3]),
    threads=st.sampled_from([1, 2]),
)
def test_chain_mode_agrees_on_edited_logs(
    base_lines: list[bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    edits: list[str],
    cap: int | None,
    threads: int,
) -> None:
    rng = random.Random(seed)
    lines = list(base_lines)
    for kind in edits:
        edit_lines(lines, rng, kind)
    if rng.random() < 0.3:
        lines[-1] = lines[-1][: rng.randrange(len(lines[-1]))]  # a torn tail (or a last line without "\n")
    path = tmp_path / f"e{seed}" / "events.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"".join(lines))
    chained, iterated, python = three_ways(path, monkeypatch, max_findings=cap, threads=threads)
    assert chained == iterated
    assert chained == python
    for wanted in WANTED:  # a search with the kind hint stops where it stops without it, with the same findings
        hinted = search(path, wanted, True, max_findings=cap, threads=threads)
        assert hinted == search(path, wanted, False, max_findings=cap)


def _edited_reads_agree(
    lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, at: int
) -> tuple[object, ...]:
    """Edit ``lines`` at ``at``, write them, and hold the readings and the hinted searches to one verdict."""
    edit_lines(lines, random.Random(at), kind, at)
    path = tmp_path / f"{kind}-{at}" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines))
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    for wanted in WANTED:
        assert search(path, wanted, True) == search(path, wanted, False)
    return chained


@pytest.mark.parametrize("kind", EDITS)
def test_each_edit_at_a_batch_boundary(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """An edit on the last line of a batch, the first of the next, and one line further (512 lines a batch)."""
    for at in (511, 512, 513):
        verdict = _edited_reads_agree(list(base_lines), tmp_path, monkeypatch, kind, at)
        assert verdict[2] != 0 or kind == "crlf"  # the edit was seen (a CRLF ending is allowed)


@pytest.mark.parametrize("kind", EDITS)
def test_each_edit_at_the_start_of_a_file(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Chain mode takes the file's first event too (genesis, then its run_id is the file's): an edit on
    the first or second line reads as line by line."""
    for at in (0, 1):
        _edited_reads_agree(list(base_lines[:40]), tmp_path, monkeypatch, kind, at)


@pytest.mark.parametrize("core_name", ["native", "python"])
def test_a_clean_log_is_taken_whole_in_chain_mode(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, core_name: str
) -> None:
    """No line of a clean log, its first one included, is read line by line."""
    path = tmp_path / "clean" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(base_lines))
    monkeypatch.setenv("RACT_CORE", core_name)
    judged: list[object] = []
    real = reader_module.line_result
    monkeypatch.setattr(reader_module, "line_result", lambda raw, *a: judged.append(raw) or real(raw, *a))
    reader = ChainReader(path)
    reader.read_all()
    assert not judged and reader.state.events == len(base_lines) and reader.exit_code == 0


def test_a_clean_log_is_taken_whole_in_c(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "clean" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(base_lines))
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    assert chained[2] == 0 and chained[4] == len(base_lines)
    found, broken_at, _ = search(path, "tool.called", True)
    assert broken_at is None and found and all(orjson.loads(event)["kind"] == "tool.called" for *_, event in found)
    assert [raw for _, _, raw, _ in found] == [line for line in base_lines if b'"kind":"tool.called"' in line]


def _with_blobs(lines: list[bytes], at: set[int], size: int) -> list[bytes]:
    """``lines`` re-chained, the events at ``at`` carrying an undocumented ``blob`` of ``size`` bytes."""
    out, prev = [], GENESIS_HASH
    for i, line in enumerate(lines):
        event = json.loads(line)
        if i in at:
            event["payload"]["blob"] = {"text": "x" * size + "\u00e9\U0001f600", "n": [i, 1.5, None]}
        event["prev_hash"] = prev
        event.pop("hash")
        event["hash"] = prev = hashlib.sha256(jcs_exact(event)).hexdigest()
        out.append(jcs_exact(event) + b"\n")
    return out


@pytest.mark.parametrize("kind", ("none", *EDITS))
def test_long_lines_go_to_c_alone_and_agree(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Lines longer than BATCH_LINE_BYTES (the first line, opens, closes, kinds a search wants) are
    checked in C as views, compact when C does not take them: the same verdict, handles and search."""
    lines = base_lines[:300]
    kinds = [json.loads(line)["kind"] for line in lines]
    at = {0, kinds.index("tool.called"), kinds.index("tool.result"), kinds.index("process.reaped"), 150, 151}
    lines = _with_blobs(lines, at, BATCH_LINE_BYTES + 10)
    if kind != "none":
        for where in sorted(at)[1:4]:  # an edit on a long line, or right next to one
            edit_lines(lines, random.Random(where), kind, where)
    path = tmp_path / kind / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines))
    batched: list[int] = []
    take_long = chain_mode.Batches.take_long
    monkeypatch.setattr(
        chain_mode.Batches, "take_long", lambda self, line: batched.append(len(line[2])) or take_long(self, line)
    )
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    assert (chained[2] == 0) == (kind in ("none", "crlf"))
    clean_long = [line for line in lines if len(line) > BATCH_LINE_BYTES and line[:1] == b"{"]
    assert clean_long and sum(size > BATCH_LINE_BYTES for size in batched) == len(clean_long)  # each went to C
    for wanted in WANTED:
        assert search(path, wanted, True) == search(path, wanted, False)


@pytest.mark.parametrize(
    "case",
    [
        "break on a long line",
        "long last line without newline",
        "tampered long lines",
        "malformed long lines",
        "malformed long first line",
    ],
)
def test_long_lines_at_the_edges_of_trust(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """A long line that breaks the chain (trust then ends at the event before it, which C took: handed out
    once), a long last line without its newline (judged as a last line, never as a clean one), and long
    lines that are not JSON (trust ends on the line itself when no event is before it: a search once
    parsed that line again to hand it out, and raised)."""
    lines = base_lines[:120]
    kinds = [json.loads(line)["kind"] for line in lines]
    long_at = {kinds.index("process.reaped"), kinds.index("tool.called"), 60, 119}
    if case == "malformed long first line":
        long_at.add(0)
    lines = _with_blobs(lines, long_at, BATCH_LINE_BYTES + 10)
    if case.startswith("malformed"):
        for at in long_at if case == "malformed long lines" else {0}:
            lines[at] = lines[at][:-2] + b"!\n"  # its closing brace gone
    elif case == "break on a long line":
        for at in sorted(long_at, reverse=True):
            del lines[at - 1]  # the long line now links to a line that is gone: CHAIN_BREAK on it
    elif case == "tampered long lines":  # valid but for the hash: C words nothing, and builds nothing
        for at in long_at:
            lines[at] = lines[at].replace(b"xxxx", b"xxxy", 1)
    else:
        lines[-1] = lines[-1][:-1] + b" "  # valid JSON once its last byte is dropped, which must not happen
    path = tmp_path / "edge" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines))
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    codes = {finding[0] for finding in chained[0]}
    expected_code = {"break on a long line": "CHAIN_BREAK", "tampered long lines": "HASH_MISMATCH"}
    expected_code.update(dict.fromkeys(("malformed long lines", "malformed long first line"), "MALFORMED_LINE"))
    assert expected_code.get(case, "MISSING_FINAL_NEWLINE") in codes, codes
    for wanted in WANTED:
        hinted, plain = search(path, wanted, True), search(path, wanted, False)
        assert hinted == plain, wanted
        found = hinted[0]
        assert len({line for line, *_ in found}) == len(found)  # no event handed out twice


# --- opens and closes paired in C (check_block's pairs) ------------------------------------------

_STEPS = ("a" * 32, "b" * 32)
_OPENS: dict[str, Callable[[int], dict[str, object]]] = {
    "step.started": lambda k: {
        "parent_snapshot": "c" * 40,
        "branch": f"rootact/step/{k}",
        "postcondition_count": 1,
        "manifest_digest": None,
        "timeout_seconds": 600,
    },
    "tool.called": lambda k: {"tool": ("bash", "grep")[k % 2], "arguments": {"argv": ["x"]}},
    "prompt.sent": lambda k: {
        "provider": ("anthropic", "openai")[k % 2],
        "response_shape": "action",
        "intent_id": "d" * 32,
        "prompt_chars": 10,
    },
    "handshake.requested": lambda k: {
        "milestone_id": f"m-{k % 2}",
        "status": "pending",
        "description": "merge",
        "reason": "policy",
    },
}
_CLOSES: dict[str, Callable[[int], dict[str, object]]] = {
    "step.committed": lambda k: {
        "outcome": "COMMITTED",
        "parent_snapshot_before": "c" * 40,
        "parent_snapshot_after": "e" * 40,
        "branch": f"rootact/step/{k}",
        "reason": "ok",
    },
    "step.rolled_back": lambda k: {
        "outcome": "ROLLED_BACK",
        "parent_snapshot_before": "c" * 40,
        "parent_snapshot_after": "c" * 40,
        "branch": f"rootact/step/{k}",
        "reason": "failed",
    },
    "tool.result": lambda k: {"tool": ("bash", "grep")[k % 2], "ok": True, "duration_ns": 5},
    "response.received": lambda k: {
        "provider": ("anthropic", "openai")[k % 2],
        "intent_id": "d" * 32,
        "response_type": "tool_use",
        "preview": "p",
    },
    "handshake.resolved": lambda k: {
        "milestone_id": f"m-{k % 2}",
        "status": "approved",
        "description": "merge",
        "reason": "ok",
    },
}

#: one event of a handle log: (kind, key (its queue: tool, provider, milestone), step, parent, synthesized source)
#: parent and source: k >= 0 names the event k before this one (any kind), -1: none, -2: an id of no event
_Op = tuple[str, int, int, int, int]
_EVENT_BEFORE = st.one_of(st.just(-1), st.just(-1), st.just(-2), st.integers(0, 4), st.integers(0, 30))
_FAMILIES = (
    ("tool.called", "tool.result"),
    ("step.started", "step.committed", "step.rolled_back"),
    ("prompt.sent", "response.received"),
    ("handshake.requested", "handshake.resolved"),
    (*_OPENS, *_CLOSES, "run.completed", "run.started", "stop"),
)


def _ops(kinds: tuple[str, ...]) -> st.SearchStrategy[list[_Op]]:
    one = st.tuples(
        st.sampled_from(kinds),
        st.integers(0, 1),
        st.sampled_from((0, 0, 0, 1, -1)),
        _EVENT_BEFORE,
        st.one_of(st.just(-1), st.just(-1), st.just(-1), _EVENT_BEFORE),
    )
    return st.lists(one, min_size=4, max_size=80)


#: a log of one family's opens and closes (their queues collide often), or of every handle kind
_HANDLE_OPS = st.sampled_from(_FAMILIES).flatmap(_ops)


def _handle_log(ops: list[_Op], rng: random.Random) -> bytes:
    """A valid log (genesis, one run, clock forward) of run.started and then ``ops``; a "stop" op
    puts a blank before the line before it (valid, but not a line C frames: C stops and resumes after it)."""
    events: list[dict[str, object]] = []
    lines: list[bytes] = []
    prev = GENESIS_HASH

    def add(kind: str, payload: dict[str, object], step: int, parent: int) -> None:
        nonlocal prev
        ids = [str(e["id"]) for e in events]
        event: dict[str, object] = {
            "id": f"{rng.getrandbits(128):032x}",
            "run_id": "f" * 32,
            "step_id": _STEPS[step] if step >= 0 else None,
            "parent_id": ids[-1 - parent % len(ids)] if parent >= 0 else "9" * 32 if parent == -2 else None,
            "timestamp_ns": 1_000 + len(events),
            "kind": kind,
            "payload": payload,
            "prev_hash": prev,
        }
        event["hash"] = prev = hashlib.sha256(jcs_exact(event)).hexdigest()
        events.append(event)
        lines.append(jcs_exact(event) + b"\n")

    add("run.started", {"intent_id": "d" * 32}, -1, -1)
    for kind, key, step, parent, source in ops:
        if kind == "stop":
            lines[-1] = b" " + lines[-1]
        elif kind in _OPENS:
            add(kind, _OPENS[kind](key), step, parent)
        elif kind.startswith("run."):
            add(kind, {"final_decision": "accept"} if kind == "run.completed" else {"intent_id": "d" * 32}, -1, parent)
        else:
            payload = _CLOSES[kind](key)
            if source != -1:  # a synthesized close, naming an event (or no event) as its open
                named = str(events[-1 - source % len(events)]["id"]) if source >= 0 else "9" * 32
                payload.update({"synthesized": True, "source_event_id": named})
            add(kind, payload, step, parent)
    return b"".join(lines)


@settings(
    max_examples=int(os.environ.get("RACT_CHAIN_EXAMPLES", "30")) * 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32 - 1), ops=_HANDLE_OPS)
def test_opens_and_closes_paired_in_c_agree_with_the_tracker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, ops: list[_Op]
) -> None:
    """Closes naming their open by parent_id, by a synthesized source, or neither (FIFO), of the
    wrong kind, twice, across a C stop (a line not "{" first): C's pairing leaves the tracker with what it would hold."""
    path = tmp_path / f"h{seed}" / "events.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(_handle_log(ops, random.Random(seed)))
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    assert chained[2] == 0, chained[0]  # every line valid: C took each one it framed
    for wanted in WANTED:
        assert search(path, wanted, True) == search(path, wanted, False)


#: logs where pairing a close with its parent in C, wrongly, would leave another open set
PAIRING_CASES: dict[str, list[_Op]] = {
    # the first tool.result has no parent: it takes the first call (FIFO); the second names that call,
    # already closed, so it falls back to its own queue and takes the second call: none is left open
    "a close handed to Python between an open and its close": [
        ("tool.called", 0, 0, -1, -1),
        ("tool.called", 1, 0, -1, -1),
        ("tool.result", 0, 0, -1, -1),
        ("tool.result", 1, 0, 2, -1),
    ],
    # a synthesized close takes the open its source names, not its parent (SPEC §4 rule 1 first)
    "a synthesized close naming another open": [
        ("prompt.sent", 0, 0, -1, -1),
        ("prompt.sent", 0, 0, -1, -1),
        ("response.received", 0, 0, 1, 0),
    ],
    # a close whose parent is an open of another kind pairs by its queue, not with that parent
    "a parent of the wrong kind": [
        ("step.started", 0, 0, -1, -1),
        ("tool.called", 0, 1, -1, -1),
        ("tool.result", 0, 1, 1, -1),
    ],
    # a second close naming the same open finds it closed: it takes the next in its queue
    "two closes naming one open": [
        ("handshake.requested", 0, -1, -1, -1),
        ("handshake.requested", 0, -1, -1, -1),
        ("handshake.resolved", 0, -1, 0, -1),
        ("handshake.resolved", 0, -1, 2, -1),
    ],
    # C stops at a line it does not frame and resumes after it: the open it took before is the tracker's
    "an open and its close on either side of a C stop": [
        ("step.started", 0, 0, -1, -1),
        ("stop", 0, 0, -1, -1),
        ("tool.called", 0, 0, -1, -1),
        ("step.committed", 0, 0, 1, -1),
        ("tool.result", 0, 0, 1, -1),
    ],
    # any run close closes every run.started, which C never pairs
    "a second run.started": [
        ("run.started", 0, -1, -1, -1),
        ("tool.called", 0, 0, -1, -1),
        ("run.completed", 0, -1, 1, -1),
        ("tool.result", 0, 0, 1, -1),
    ],
}


@pytest.mark.parametrize("case", PAIRING_CASES)
def test_pairing_in_c_on_the_tracker_s_edge_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    path = tmp_path / "pairing" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(_handle_log(PAIRING_CASES[case], random.Random(5)))
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    assert chained[2] == 0, chained[0]


@pytest.mark.parametrize("block", [1, 200, 4096])
@pytest.mark.parametrize("kind", ("none", "flip", "crlf", "garbage", "duplicate"))
def test_chain_mode_in_small_reads_agrees(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, kind: str
) -> None:
    """Reads of ``block`` bytes: lines across two reads (a block of their own), across many (read alone),
    and a read holding no whole line: the verdict, handles and searches of 1 MiB reads."""
    lines = base_lines[:400]
    if kind != "none":
        edit_lines(lines := list(lines), random.Random(block), kind, 200)
    path = tmp_path / kind / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines))
    whole = three_ways(path, monkeypatch)
    searched = {wanted: search(path, wanted, True) for wanted in WANTED}
    monkeypatch.setattr(reader_module, "frame_blocks", functools.partial(framing.frame_blocks, block_size=block))
    assert three_ways(path, monkeypatch) == whole
    assert whole[0] == whole[1] == whole[2]
    for wanted in WANTED:
        assert search(path, wanted, True) == searched[wanted] == search(path, wanted, False)


@pytest.fixture(scope="module")
def lines_of_four_reads(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A log of a little over three reads (``framing.BLOCK_BYTES``), as lines."""
    path = tmp_path_factory.mktemp("reads") / "events.jsonl"
    write_benchmark_log(path, events=6_500, seed=31)
    lines = path.read_bytes().splitlines(keepends=True)
    assert 3 * framing.BLOCK_BYTES < sum(map(len, lines)) < 4 * framing.BLOCK_BYTES
    return lines


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The helpers chain mode starts on a read ahead's block (``Verifier.start_block``), as they are started."""
    made: list[object] = []
    real_check = chain_mode.Batches._check_block

    def check(self: chain_mode.Batches, *args: object, **kwargs: object) -> object:
        answer = real_check(self, *args, **kwargs)  # type: ignore[arg-type]
        if self.started is not None and self.started not in made:
            made.append(self.started)
        return answer

    monkeypatch.setattr(chain_mode.Batches, "_check_block", check)
    return made


@pytest.mark.parametrize("kind", ("none", *EDITS, "torn"))
def test_the_helper_thread_reads_the_next_block_ahead_and_the_verdict_is_the_same(
    lines_of_four_reads: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, started: list[object]
) -> None:
    """With two threads in C, its helper reads each next block (``read_ahead``): edits on the lines across
    each read's end, a torn last line, the verdict of one thread; and the reads ahead are what is read."""
    lines, edges, size = list(lines_of_four_reads), [], 0
    for i, line in enumerate(lines):
        size += len(line)
        if size // framing.BLOCK_BYTES > len(edges):
            edges.append(i)  # the line across a read's end
    rng = random.Random(kind)
    for i in reversed(edges):
        if kind in EDITS:
            edit_lines(lines, rng, kind, i + rng.choice((-1, 0, 0, 1)))
    if kind == "torn":
        lines[-1] = lines[-1][:-40]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    received: list[bytes | None] = []  # what C answered for each read ahead
    served: list[int] = []  # for each reading: the reads that were bytes C read ahead
    real_got, real_read = read_ahead.ReadAhead.got, read_ahead.ReadAhead.read

    def got(self: read_ahead.ReadAhead, data: bytes | None) -> None:
        received.append(data)
        real_got(self, data)

    def read(self: read_ahead.ReadAhead, size: int) -> bytes:
        data = real_read(self, size)
        served[-1] += any(data is r for r in received)
        return data

    monkeypatch.setattr(read_ahead.ReadAhead, "got", got)
    monkeypatch.setattr(read_ahead.ReadAhead, "read", read)
    monkeypatch.setenv("RACT_CORE", "native")
    answers = []
    for threads in (1, 2):
        served.append(0)
        reader = ChainReader(path, threads=threads)
        reader.read_all()
        answers.append(verdict(reader))
        if threads == 2:  # (each read ahead's block, staged from its start while Python went on: taken over)
            assert len(started) == 2 and all(s.taken for s in started), started  # type: ignore[attr-defined]
        for wanted in ("every", "tool.called"):
            served.append(0)
            answers.append(search(path, wanted, True, threads=threads))
    assert answers[: len(answers) // 2] == answers[len(answers) // 2 :]
    # one thread reads ahead nothing; two read the file's second and third reads ahead, and the fourth,
    # short (the end of the file), is read again
    assert served[:3] == [0, 0, 0] and served[3] == 2, served
    assert None in received


def test_a_long_line_across_a_read_end_is_checked_in_two_threads_and_the_next_block_started_where_it_starts(
    lines_of_four_reads: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[object]
) -> None:
    """A line across a read's end is a block of its own: over ``HELPER_MIN_BYTES`` it is checked in two
    threads, but the next read is read ahead by the call on the read's own block, whose helper is started on
    the next read's block where that starts (after its first newline: the read ended inside a line) and is
    taken over: the second and the third read's (the fourth, short, is read at the end of the file)."""
    lines, at = list(lines_of_four_reads), set()
    for edge in (1, 2, 3):  # (the line across each read's end, once the blobs before it are in)
        size = 0
        for i, line in enumerate(_with_blobs(lines, at, 90_000)):
            size += len(line)
            if size > edge * framing.BLOCK_BYTES:
                at.add(i)
                break
    lines = _with_blobs(lines, at, 90_000)
    assert all(chain_mode.HELPER_MIN_BYTES < len(lines[i]) < BATCH_LINE_BYTES for i in at) and len(at) == 3
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    monkeypatch.setenv("RACT_CORE", "native")
    answers = []
    for threads in (2, 1):
        reader = ChainReader(path, threads=threads)
        reader.read_all()
        answers.append(verdict(reader))
    assert answers[0] == answers[1] and answers[0][2] == 0
    assert len(started) == 2 and all(s.taken for s in started), [(s.start, s.taken) for s in started]  # type: ignore[attr-defined]


@pytest.mark.parametrize("wanted", [lambda kind: True, lambda kind: kind.startswith("tool.")], ids=["every", "tool"])
def test_a_search_hands_out_its_events_block_by_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wanted: Callable[[str], bool]
) -> None:
    """On a clean log C takes every line and no line comes back to Python; the events it hands out must
    still leave a block at a time (held to its end, ``grep --kind '*'`` of a 52 MB log peaked at 262 MB
    and printed nothing until the end), and be the events line-by-line reading hands out."""
    monkeypatch.setenv("RACT_CORE", "native")  # (C's chain mode: the Python core hands out every event)
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=2000)
    total = path.read_bytes().count(b"\n")
    expected = [(e.line, e.offset, e.raw, e.event, e.trusted) for e in ChainReader(path) if wanted(e.kind)]
    monkeypatch.setattr(reader_module, "frame_blocks", functools.partial(framing.frame_blocks, block_size=32 << 10))
    reader = ChainReader(path, wanted=wanted)
    got, lines_read_at = [], []
    for e in reader:
        got.append((e.line, e.offset, e.raw, e.event, e.trusted))
        lines_read_at.append(reader.state.lines)
    assert got == expected and len(got) > 100
    assert lines_read_at[0] < total // 10  # the first event left with its block, not at the end of the file
    assert all(read - line < 200 for read, (line, *_) in zip(lines_read_at, got, strict=True))  # ~a block behind


@pytest.mark.parametrize("block", [64 << 10, 1 << 20])
def test_a_run_of_long_lines_a_search_wants_leaves_one_at_a_time(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Lines longer than BATCH_LINE_BYTES go to C alone (in reads of 64 KiB, each is longer than two reads:
    assembled alone, not a block); a search's events among them are handed on each after its own line,
    not held (each as long as its line) until a line comes back to Python."""
    monkeypatch.setenv("RACT_CORE", "native")  # (C's chain mode)
    lines = _with_blobs(base_lines[:40], set(range(5, 15)), BATCH_LINE_BYTES + 10)
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    monkeypatch.setattr(reader_module, "frame_blocks", functools.partial(framing.frame_blocks, block_size=block))
    reader = ChainReader(path, wanted=lambda kind: True)
    handed = [(e.line, reader.state.lines) for e in reader]
    expected = [(e.line, e.offset, e.event) for e in ChainReader(path)]
    assert [(e.line, e.offset, e.event) for e in ChainReader(path, wanted=lambda kind: True)] == expected
    long_lines = {i + 1 for i, line in enumerate(lines) if len(line) > BATCH_LINE_BYTES}
    assert len(long_lines) == 10
    at_once = Counter(read for line, read in handed if line in long_lines)  # long events left per read position
    assert max(at_once.values()) <= 2  # (held to the end, all ten would leave together)


@pytest.mark.parametrize("core_name", ["native", "python"])
def test_a_crlf_log_is_read_whole_in_chain_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, core_name: str
) -> None:
    """SPEC §11: every valid layout takes the fast path, CRLF endings too (the "\\r" is JSON whitespace):
    no line of a clean CRLF log comes back to be read line by line, and its verdict is the LF log's."""
    if core_name == "native" and core.NATIVE is None:
        pytest.skip("the native core is not built here")
    monkeypatch.setenv("RACT_CORE", core_name)
    lf, crlf = tmp_path / "lf" / "events.jsonl", tmp_path / "crlf" / "events.jsonl"
    lf.parent.mkdir()
    crlf.parent.mkdir()
    write_benchmark_log(lf, events=3000)
    crlf.write_bytes(lf.read_bytes().replace(b"\n", b"\r\n"))
    read_alone: list[bytes] = []
    line_result = reader_module.line_result
    monkeypatch.setattr(reader_module, "line_result", lambda raw, *a: read_alone.append(raw) or line_result(raw, *a))
    verdicts = []
    for path in (lf, crlf):
        reader = ChainReader(path)
        findings = reader.read_all()
        verdicts.append(([(f.code, f.line) for f in findings], reader.state.events, reader.state.head))
    assert not read_alone
    assert verdicts[0] == verdicts[1] and verdicts[0][1] > 2900


@pytest.mark.parametrize("damage", ["garbage after the archive", "bytes flipped mid-archive", "a bad CRC-32"])
def test_a_corrupt_archive_reads_alike_in_chain_mode_and_line_by_line(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """A gzip log that fails part way: chain mode's whole reads of a block dropped what was decoded before
    the failure (verify: 0 events and IO_ERROR on line 1, where reading line by line read every line up to
    it); read one decode at a time, both read the same lines (a helper's review). And zlib itself drops
    what the failing call decoded (a bad CRC: the archive's last lines): decoded again, they are read."""
    data = gzip.compress(b"".join(base_lines))
    if damage == "garbage after the archive":
        data += b"garbage!garbage!"
    elif damage == "a bad CRC-32":  # (zlib finds it at the member's end, in the call that decodes its last lines)
        data = data[:-8] + bytes([data[-8] ^ 1]) + data[-7:]
    else:
        flipped = bytearray(data)
        for i in range(len(flipped) // 2, len(flipped) // 2 + 200):
            flipped[i] ^= 0x55
        data = bytes(flipped)
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(data)
    chained, iterated, python = three_ways(path, monkeypatch)
    assert chained == iterated == python
    events = chained[4]
    assert isinstance(events, int) and events > len(base_lines) // 3
    if damage != "bytes flipped mid-archive":  # every line was decoded before the failure: every one is read
        assert events == len(base_lines)
        assert ("IO_ERROR", len(base_lines) + 1) in [(f[0], f[2]) for f in chained[0]]  # type: ignore[index, union-attr]


def test_a_kind_test_is_compiled_once_and_an_unhashable_one_still_gets_its_verifier() -> None:
    """``_verifier`` keeps a kind test's verifier (a fleet's runs do not call the test 63 times each); a test
    that cannot be hashed is worked out each time, to the same verifier as any test wanting the same kinds."""

    def reaps(kind: str) -> bool:
        return kind == "process.reaped"

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, kind: str) -> bool:
            return kind == "process.reaped"

    version = 9
    first = chain_mode._verifier(version, reaps)
    assert chain_mode._verifier(version, reaps) is first
    assert chain_mode._verifier(version, Unhashable()) is first  # (compiled per wanted kinds)
    assert chain_mode._verifier(version, None) is not first
    assert chain_mode._verifier(version, lambda kind: kind == "run.started") is not first
