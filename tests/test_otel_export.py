"""OTLP/JSON export (SPEC §12.2, docs/otel.md), checked with the OpenTelemetry project's own protobuf definitions."""

from __future__ import annotations

import base64
import bisect
import gc
import gzip
import hashlib
import io
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData

from ract_cli.cli.render import ci_safe_bytes
from ract_cli.dialects import ChainReader
from ract_cli.errors import ExitCode
from ract_cli.format.canonical import jcs_exact
from ract_cli.format.json_types import Event
from ract_cli.format.model import GENESIS_HASH
from ract_cli.otel import WRITE_BYTES, OtlpOptions, export_otlp, trace_line
from ract_cli.otel.spans import EVENT_BLOCK_BYTES, TraceBuilder, span_id
from ract_cli.otel.spans import Span as SpanModel
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
COMPLETED = FIXTURES / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"
TAMPERED = FIXTURES / "8686994841309902af40ce3e190711e7" / "events.jsonl"
INTERRUPTED = FIXTURES / "9ae2021ae4d2af95ab864b9bac116475" / "events.jsonl"
RUN_LOGS = sorted(FIXTURES.glob("*/events.jsonl"))
BASE_NS = 1_764_000_000_000_000_000


def export(paths: list[Path], options: OtlpOptions | None = None) -> tuple[list[bytes], ExitCode]:
    buf = io.BytesIO()
    result = export_otlp(paths, buf, options or OtlpOptions())
    return buf.getvalue().splitlines(), result.exit_code


_ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def _hex_ids_to_base64(value: object) -> object:
    """OTLP/JSON writes ids as hex, where protobuf's JSON mapping expects base64: convert, checking the hex."""
    if isinstance(value, list):
        return [_hex_ids_to_base64(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in _ID_BYTES:
            assert isinstance(item, str) and len(item) == 2 * _ID_BYTES[key] and item == item.lower(), (key, item)
            out[key] = base64.b64encode(bytes.fromhex(item)).decode()
        else:
            out[key] = _hex_ids_to_base64(item)
    return out


def parse(line: bytes) -> TracesData:
    data = TracesData()
    # raises on any key or value the OTLP protos do not define
    json_format.Parse(json.dumps(_hex_ids_to_base64(json.loads(line))), data)
    return data


def spans_of(data: TracesData) -> list[Span]:
    return [s for rs in data.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attrs(obj: Span | Span.Event) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in obj.attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which)
    return out


def log_events(path: Path) -> list[dict[str, object]]:
    """The lines of a log that are JSON objects (a torn tail is not)."""
    out = []
    for line in path.read_bytes().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def kinds_in(path: Path) -> Counter[str]:
    return Counter(str(e["kind"]) for e in log_events(path))


@pytest.mark.parametrize("log", RUN_LOGS, ids=lambda p: p.parent.name)
def test_each_run_is_one_valid_trace_whose_spans_match_the_log(log: Path) -> None:
    lines, _ = export([log])
    assert len(lines) == 1
    data = parse(lines[0])
    spans = spans_of(data)
    run_id = log_events(log)[0]["run_id"]
    assert {s.trace_id.hex() for s in spans} == {run_id}
    names = Counter(s.name.split(" ")[0] for s in spans)
    kinds = kinds_in(log)
    assert names["invoke_agent"] == 1
    assert names["execute_tool"] == kinds["tool.called"]
    assert names["chat"] == kinds["prompt.sent"]
    assert names["step"] == kinds["step.started"]
    for span in spans:
        assert {"ract.event.id", "ract.kind", "ract.event.hash"} <= set(attrs(span))
        for event in span.events:
            assert {"ract.event.id", "ract.kind", "ract.event.hash"} <= set(attrs(event))
    # every event of the log is a span's opening event or one of its span events, exactly once
    shown = Counter(attrs(s)["ract.event.id"] for s in spans)
    shown.update(attrs(e)["ract.event.id"] for s in spans for e in s.events)
    ids = [e["id"] for e in log_events(log)]
    assert set(shown) <= set(ids) and max(shown.values()) == 1


@pytest.mark.parametrize("log", RUN_LOGS, ids=lambda p: p.parent.name)
def test_the_tree_has_one_root_and_children_inside_their_parents(log: Path) -> None:
    (line,), _ = export([log])
    spans = spans_of(parse(line))
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == 1 and roots[0].name == "invoke_agent"
    assert len(by_id) == len(spans), "span ids are unique"
    for span in spans:
        assert span.start_time_unix_nano <= span.end_time_unix_nano
        if span.parent_span_id:
            parent = by_id[span.parent_span_id]  # no dangling parent
            assert parent.start_time_unix_nano <= span.start_time_unix_nano
            assert span.end_time_unix_nano <= parent.end_time_unix_nano
        for event in span.events:
            assert span.start_time_unix_nano <= event.time_unix_nano <= span.end_time_unix_nano


def test_span_ids_come_from_the_opening_events_and_times_from_their_timestamps() -> None:
    (line,), _ = export([COMPLETED])
    events = {e["id"]: e for e in map(json.loads, COMPLETED.read_bytes().splitlines())}
    for span in spans_of(parse(line)):
        opener = events[str(attrs(span)["ract.event.id"])]
        assert span.span_id.hex() == span_id(opener["id"])
        assert span.start_time_unix_nano == opener["timestamp_ns"]
        if span.name.startswith("execute_tool"):
            assert attrs(span)["gen_ai.tool.call.id"] == opener["id"]
            assert attrs(span)["gen_ai.tool.name"] == opener["payload"]["tool"]
            assert span.name == f"execute_tool {opener['payload']['tool']}"
        if span.name == "chat":
            assert attrs(span)["gen_ai.provider.name"] == opener["payload"]["provider"]


def test_the_root_carries_the_conversation_and_the_run_status() -> None:
    (line,), code = export([COMPLETED])
    root = next(s for s in spans_of(parse(line)) if not s.parent_span_id)
    a = attrs(root)
    assert code == ExitCode.OK
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.conversation.id"] == COMPLETED.parent.name
    assert root.status.code == root.status.STATUS_CODE_OK
    resource = {kv.key: kv.value.string_value for kv in parse(line).resource_spans[0].resource.attributes}
    assert resource == {"service.name": "ract", "ract.log.path": str(COMPLETED)}


def test_exporting_twice_gives_the_same_bytes() -> None:
    assert export(RUN_LOGS) == export(RUN_LOGS)


def test_an_interrupted_run_ends_open_spans_at_the_last_event_without_inventing_closes() -> None:
    (line,), code = export([INTERRUPTED])
    spans = spans_of(parse(line))
    last = max(int(str(e["timestamp_ns"])) for e in log_events(INTERRUPTED))
    still_open = [s for s in spans if attrs(s).get("ract.open") is True]
    assert code == ExitCode.INCOMPLETE  # the torn tail is the reader's verdict, passed on
    assert still_open, "the interrupted fixture leaves a step, a tool call, a prompt and a handshake open"
    assert {s.end_time_unix_nano for s in still_open} == {last}
    assert all("ract.close.event.id" not in attrs(s) for s in still_open)
    root = next(s for s in spans if not s.parent_span_id)
    assert root.status.code == root.status.STATUS_CODE_UNSET and attrs(root)["ract.open"] is True


def test_events_after_a_break_are_exported_untrusted_and_the_exit_code_says_so() -> None:
    (line,), code = export([TAMPERED])
    assert code == ExitCode.TAMPERED
    flags = [attrs(s).get("ract.trusted") for s in spans_of(parse(line))]
    flags += [attrs(e).get("ract.trusted") for s in spans_of(parse(line)) for e in s.events]
    assert False in flags and None in flags  # some events before the break stay trusted


def test_a_failed_tool_call_and_an_aborted_run_are_errors(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    with EventWriter(log) as w:
        w.append("run.started", {})
        step = "ab" * 16
        w.append("step.started", {}, step_id=step)
        call = w.append("tool.called", {"tool": "shell", "arguments": {}}, step_id=step)
        w.append("tool.result", {"tool": "shell", "ok": False}, step_id=step, parent_id=call["id"])
        w.append("step.rolled_back", {"outcome": "ROLLED_BACK"}, step_id=step)
        w.append("run.aborted", {"termination_cause": "budget_exhausted"})
    (line,), code = export([log])
    spans = {s.name: s for s in spans_of(parse(line))}
    assert code == ExitCode.OK
    assert spans["execute_tool shell"].parent_span_id == spans["step"].span_id  # a step's tool call is its child
    assert spans["step"].status.code == Status.STATUS_CODE_ERROR
    assert spans["execute_tool shell"].status.code == Status.STATUS_CODE_ERROR
    assert spans["invoke_agent"].status.code == Status.STATUS_CODE_ERROR
    assert attrs(spans["invoke_agent"])["error.type"] == "budget_exhausted"


def test_hostile_strings_stay_data(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    hostile = '"}]}\n<script>alert(1)</script>\u202e\x1b[31m'
    with EventWriter(log) as w:
        w.append("run.started", {})
        w.append("tool.called", {"tool": hostile, "arguments": {}})
        w.append("tool.result", {"tool": hostile, "ok": True})
        w.append("run.completed", {"final_decision": hostile})
    lines, _ = export([log])
    assert len(lines) == 1  # a newline in a log string cannot split the line
    spans = spans_of(parse(lines[0]))
    assert any(attrs(s).get("gen_ai.tool.name") == hostile for s in spans)


def test_a_directory_of_runs_is_one_line_per_run_in_discovery_order(tmp_path: Path) -> None:
    for log in RUN_LOGS:
        shutil.copytree(log.parent, tmp_path / log.parent.name)
    lines, code = export([tmp_path])
    assert len(lines) == len(RUN_LOGS)
    assert code == ExitCode.TAMPERED  # the lowest non-zero code of the inputs
    assert [spans_of(parse(x))[0].trace_id.hex() for x in lines] == sorted(p.parent.name for p in RUN_LOGS)


def test_a_file_output_is_written_atomically(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    result = export_otlp([COMPLETED], out)
    assert result.exit_code == ExitCode.OK
    assert out.read_bytes() == export([COMPLETED])[0][0] + b"\n"
    assert [p.name for p in tmp_path.iterdir()] == ["traces.jsonl"]  # no temporary file left behind
    assert out.stat().st_mode & 0o777 == 0o644  # readable by a collector of another user (not mkstemp's 0600)


def _ract(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "export", *args], capture_output=True, timeout=120
    )


def test_cli_to_stdout_pipes_one_line_per_run_and_exits_with_the_inputs_verdict() -> None:
    proc = _ract("--format", "otlp-json", "--output", "-", "--service-name", "ci", str(FIXTURES))
    assert proc.returncode == ExitCode.TAMPERED, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(RUN_LOGS)
    assert lines == export(RUN_LOGS, OtlpOptions(service_name="ci"))[0]
    assert b"did not verify" in proc.stderr and b"exit 1 (TAMPERED)" in proc.stderr


def test_cli_refuses_to_replace_a_file_without_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    assert _ract("--format", "otlp-json", "--output", str(out), str(COMPLETED)).returncode == 0
    before = out.read_bytes()
    second = _ract("--format", "otlp-json", "--output", str(out), str(INTERRUPTED))
    assert second.returncode == ExitCode.USAGE and b"--overwrite" in second.stderr
    assert out.read_bytes() == before  # untouched
    third = _ract("--format", "otlp-json", "--output", str(out), "--overwrite", str(INTERRUPTED))
    assert third.returncode == ExitCode.INCOMPLETE and out.read_bytes() != before


def test_a_log_under_a_name_that_is_not_utf8_is_exported_with_its_bytes_visible(tmp_path: Path) -> None:
    # a directory name with a byte that is no UTF-8 reached orjson as a lone surrogate: a traceback
    run = Path(os.fsdecode(bytes(tmp_path) + b"/run\xff"))
    run.mkdir()
    shutil.copy(COMPLETED, run / "events.jsonl")
    out = tmp_path / "traces.jsonl"
    assert export_otlp([run], out).exit_code == ExitCode.OK
    line = json.loads(out.read_bytes())
    attributes = {a["key"]: a["value"] for a in line["resourceSpans"][0]["resource"]["attributes"]}
    assert attributes["ract.log.path"] == {"stringValue": f"{tmp_path}/run\\xff/events.jsonl"}


def test_cli_summary_counts_the_runs_written_and_a_journal_as_not_exported(tmp_path: Path) -> None:
    journal = FIXTURES.parent / "journals" / "accepted.jsonl"  # (a valid journal: it verifies)
    out = tmp_path / "traces.jsonl"
    alone = _ract("--format", "otlp-json", "--output", str(out), str(journal))
    assert alone.returncode == ExitCode.IO and b"exported 0 run(s) (1 not exported)" in alone.stderr
    both = _ract("--format", "otlp-json", "--output", str(out), "--overwrite", str(journal), str(INTERRUPTED))
    assert both.returncode == ExitCode.INCOMPLETE
    assert b"exported 1 run(s) (1 did not verify, 1 not exported)" in both.stderr
    torn = tmp_path / "torn" / "events.jsonl"  # a journal that does not verify is no run log either
    torn.parent.mkdir()
    torn.write_bytes(journal.read_bytes()[:-20])
    cut = _ract("--format", "otlp-json", "--output", str(out), "--overwrite", str(torn))
    assert cut.returncode == ExitCode.INCOMPLETE and b"exported 0 run(s) (1 not exported)" in cut.stderr
    # an archive read up to its corrupt end is exported (a line written), and did not verify
    archive = tmp_path / "bad" / "events.jsonl.gz"
    archive.parent.mkdir()
    archive.write_bytes(gzip.compress(COMPLETED.read_bytes()) + b"garbage!garbage!")
    bad = _ract("--format", "otlp-json", "--output", str(out), "--overwrite", str(archive), str(COMPLETED))
    assert bad.returncode == ExitCode.IO and len(out.read_bytes().splitlines()) == 2
    assert b"exported 2 run(s) (1 did not verify)" in bad.stderr


# --- hostile sizes: work and memory bounded (docs/otel.md, "Memory and time") -------------------------


def _quiet_writer(path: Path) -> EventWriter:
    return EventWriter(path, fsync=FsyncPolicy.NEVER, redaction=None)


class _CountingOpen(dict[str, Any]):
    """A ``TraceBuilder._open`` that counts every span a walk over it visits (keys, values or items)."""

    visited = 0

    def _count(self, items: Iterator[Any]) -> Iterator[Any]:
        for item in items:
            self.visited += 1
            yield item

    def __iter__(self) -> Iterator[str]:
        return self._count(dict.__iter__(self))

    def keys(self) -> Any:
        return _Walk(self, dict.keys(self))

    def values(self) -> Any:
        return _Walk(self, dict.values(self))

    def items(self) -> Any:
        return _Walk(self, dict.items(self))


class _Walk:
    def __init__(self, owner: _CountingOpen, view: Any) -> None:
        self.owner, self.view = owner, view

    def __len__(self) -> int:
        return len(self.view)

    def __iter__(self) -> Iterator[Any]:
        return self.owner._count(iter(self.view))

    def __reversed__(self) -> Iterator[Any]:
        return self.owner._count(reversed(self.view))


def _build(log: Path, builder_type: type[TraceBuilder] = TraceBuilder) -> TraceBuilder:
    builder: TraceBuilder | None = None
    for ev in ChainReader(str(log)):
        if builder is None:
            builder = builder_type(ev.event["run_id"])
        builder.feed(ev)
    assert builder is not None
    return builder


def test_tool_calls_in_one_open_step_find_its_span_without_walking_the_open_spans(tmp_path: Path) -> None:
    # n tool calls in one step, none closed: finding each one's parent by walking the open spans
    # was n^2/2 span visits (40,000 calls: 77 s); it is a look-up in the step's own list
    calls = 2000
    log = tmp_path / "events.jsonl"
    step = "ab" * 16
    with _quiet_writer(log) as w:
        w.append("run.started", {})
        w.append("step.started", {}, step_id=step)
        for _ in range(calls):
            w.append("tool.called", {"tool": "bash"}, step_id=step)
    builder = TraceBuilder("")
    walks = builder._open = _CountingOpen()
    for ev in ChainReader(str(log)):
        builder.run_id = ev.event["run_id"]
        builder.feed(ev)
    assert walks.visited <= calls, f"{walks.visited} open spans visited to place {calls} tool calls"
    spans = builder.finish()
    (step_span,) = (s for s in spans if s.name == "step")
    tools = [s for s in spans if s.name == "execute_tool bash"]
    assert len(tools) == calls and {s.parent_id for s in tools} == {step_span.span_id}
    # and so in the exported trace
    (line,), _ = export([log])
    exported = spans_of(parse(line))
    (step_out,) = (s for s in exported if s.name == "step")
    assert [s.parent_span_id for s in exported if s.name.startswith("execute_tool")] == [step_out.span_id] * calls
    assert all(attrs(s).get("ract.open") is True for s in exported)


def test_a_step_id_opened_twice_hangs_children_under_its_newest_open_step(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    s, t = "5a" * 16, "7b" * 16
    with _quiet_writer(log) as w:
        w.append("run.started", {})
        first = w.append("step.started", {}, step_id=s)
        w.append("tool.called", {"tool": "t1"}, step_id=s)
        second = w.append("step.started", {}, step_id=s)  # the step_id again, the first still open
        other = w.append("step.started", {}, step_id=t)
        w.append("tool.called", {"tool": "t2"}, step_id=s)
        w.append("tool.called", {"tool": "t3"}, step_id=t)
        w.append("step.committed", {"outcome": "COMMITTED"}, step_id=s, parent_id=second["id"])
        w.append("tool.called", {"tool": "t4"}, step_id=s)
        w.append("step.committed", {"outcome": "COMMITTED"}, step_id=s)  # (the first: the only one open)
        w.append("tool.called", {"tool": "t5"}, step_id=s)
        w.append("tool.called", {"tool": "t6"}, step_id="c" * 32)  # a step never opened
        w.append("tool.called", {"tool": "t7"})  # no step
        w.append("run.completed", {})
    (line,), _ = export([log])
    spans = spans_of(parse(line))
    parent = {s.name.removeprefix("execute_tool "): s.parent_span_id.hex() for s in spans}
    root = span_id(log_events(log)[0]["id"])  # type: ignore[arg-type]
    assert parent == {
        "invoke_agent": "",
        "step": root,
        "t1": span_id(first["id"]),
        "t2": span_id(second["id"]),
        "t3": span_id(other["id"]),
        "t4": span_id(first["id"]),
        "t5": root,
        "t6": root,
        "t7": root,
    }


class _LinearParents(TraceBuilder):
    """The parent look-up as it was: walk every open span, newest first, for the step's span."""

    def _parent_for(self, event: Event) -> SpanModel:
        step_id = event.get("step_id")
        if step_id is not None:
            for span in reversed(self._open.values()):
                if span.attributes.get("ract.step.id") == step_id and span.name == "step":
                    return span
        assert self.root is not None
        return self.root


def _chained_log(path: Path, events: list[dict[str, Any]]) -> None:
    """Write ``events`` chained as given, ids and all (duplicate ids too: the writer refuses those)."""
    prev, lines = GENESIS_HASH, []
    for event in events:
        body = {**event, "prev_hash": prev}
        prev = hashlib.sha256(jcs_exact(body)).hexdigest()
        lines.append(jcs_exact({**body, "hash": prev}) + b"\n")
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize("seed", range(12))
def test_the_parent_of_every_span_is_the_one_the_linear_walk_chose(tmp_path: Path, seed: int) -> None:
    # random logs: step_ids reused while open, closes by parent_id and by FIFO, and duplicate ids
    # (a step.started reusing an open span's id replaces it in place: the newest-open rule follows)
    rng = random.Random(seed)
    run_id, steps, tools = f"{seed + 1:032x}", ["1" * 32, "2" * 32, "3" * 32], ["a", "b"]
    ids: list[str] = []
    events: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any], step_id: str | None = None, parent_id: str | None = None) -> None:
        fresh = f"e{len(events) + 1:031x}"
        event_id = rng.choice(ids) if ids and rng.random() < 0.15 else fresh
        ids.append(event_id)
        events.append(
            {
                "id": event_id,
                "run_id": run_id,
                "step_id": step_id,
                "parent_id": parent_id,
                "timestamp_ns": BASE_NS + len(events),
                "kind": kind,
                "payload": payload,
            }
        )

    add("run.started", {})
    for _ in range(400):
        step = rng.choice([*steps, None])
        roll = rng.random()
        if roll < 0.25:
            add("step.started", {}, step_id=step or steps[0])
        elif roll < 0.55:
            add("tool.called", {"tool": rng.choice(tools)}, step_id=step)
        elif roll < 0.65:
            add("tool.result", {"tool": rng.choice(tools), "ok": True}, step_id=step)
        elif roll < 0.75:
            add("prompt.sent", {"provider": "p"}, step_id=step)
        elif roll < 0.9:
            opener = rng.choice(ids) if rng.random() < 0.5 else None
            add(rng.choice(["step.committed", "step.rolled_back"]), {}, step_id=step, parent_id=opener)
        else:
            add("sandbox.granted", {"reason": "ok"}, step_id=step)
    log = tmp_path / "events.jsonl"
    _chained_log(log, events)
    new, old = _build(log), _build(log, _LinearParents)
    new_spans, old_spans = new.finish(), old.finish()
    assert [(s.span_id, s.parent_id) for s in new_spans] == [(s.span_id, s.parent_id) for s in old_spans]
    assert trace_line(new_spans, run_id, str(log)) == trace_line(old_spans, run_id, str(log))
    root = new_spans[0].span_id
    assert any(s.parent_id not in (None, root) for s in new_spans)  # some spans do hang under a step
    assert len(set(ids)) < len(ids)  # and some ids were duplicates


def _evaluations(path: Path, n: int) -> None:
    """A closed run of ``n`` span events whose strings would read as workflow commands."""
    with _quiet_writer(path) as w:
        w.append("run.started", {})
        for i in range(n):
            w.append("predicate.evaluated", {"predicate_id": f"p{i}", "ok": i % 2 == 0, "reason": "##[error]x"})
        w.append("run.completed", {})


def test_span_events_are_kept_encoded_in_about_the_log_s_size(tmp_path: Path) -> None:
    # each span event was an object with its own attribute dict, then a tree of dicts for the one
    # line: 10x the log (a 71 MB log: 693 MB); now each is its encoded bytes, in a few blocks
    n = 10_000
    log = tmp_path / "events.jsonl"
    with _quiet_writer(log) as w:
        w.append("run.started", {})
        for _ in range(n):
            w.append("sandbox.granted", {"reason": "ok"})
        w.append("run.completed", {})
    gc.collect()
    before = len(gc.get_objects())
    builder = _build(log)
    gc.collect()
    assert len(gc.get_objects()) - before < n // 100  # no Python object per event
    assert builder.root is not None and len(builder.root.events) == n + 1
    blocks = builder.root.events.blocks
    assert all(type(b) is bytearray and len(b) >= EVENT_BLOCK_BYTES for b in blocks[:-1])  # a few big ones
    del builder
    sink = io.BytesIO()
    tracemalloc.start()
    try:
        export_otlp([log], sink)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * log.stat().st_size, f"peak {peak} bytes for a {log.stat().st_size}-byte log"
    assert sink.getvalue().count(b'"name":"sandbox.granted"') == n


class _Writes(list[bytes]):
    def write(self, data: bytes) -> int:
        self.append(bytes(data))
        return len(data)


def test_a_long_line_is_written_in_pieces_that_join_to_one_encoding_and_split_no_string(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    _evaluations(log, 5000)
    writes = _Writes()
    export_otlp([log], writes)  # type: ignore[arg-type]
    line = b"".join(writes)
    assert len(writes) > 1 and all(len(w) < WRITE_BYTES + EVENT_BLOCK_BYTES + 4096 for w in writes)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.dumps(orjson.loads(line)) + b"\n" == line  # the bytes one orjson.dumps of it all gives
    assert len(spans_of(parse(line))[0].events) == 5001
    strings = [(m.start(), m.end()) for m in re.finditer(rb'"(?:[^"\\]|\\.)*"', line)]
    cuts = list(itertools.accumulate(len(w) for w in writes))[:-1]
    for cut in cuts:  # no piece ends inside a string
        i = bisect.bisect_right(strings, (cut, cut)) - 1
        assert i < 0 or strings[i][1] <= cut, line[cut - 40 : cut + 40]
    assert b"".join(ci_safe_bytes(w, json=True) for w in writes) == ci_safe_bytes(line, json=True)


def test_cli_stdout_of_a_long_run_is_the_file_s_line_made_ci_safe(tmp_path: Path) -> None:
    log, out = tmp_path / "run" / "events.jsonl", tmp_path / "traces.jsonl"
    _evaluations(log, 3000)
    proc = _ract("--format", "otlp-json", "--output", "-", str(log))
    assert proc.returncode == ExitCode.OK, proc.stderr
    export_otlp([log], out)
    assert len(out.read_bytes()) > WRITE_BYTES  # (written in several pieces)
    assert proc.stdout == ci_safe_bytes(out.read_bytes(), json=True)
    assert b"##[" not in proc.stdout and b"##\\u005b" in proc.stdout
