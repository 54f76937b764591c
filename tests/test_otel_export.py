"""OTLP/JSON export (SPEC §12.2, docs/otel.md), checked with the OpenTelemetry project's own protobuf definitions."""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData

from ract_cli.errors import ExitCode
from ract_cli.otel import OtlpOptions, export_otlp
from ract_cli.otel.spans import span_id
from ract_cli.writer.event_writer import EventWriter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
COMPLETED = FIXTURES / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"
TAMPERED = FIXTURES / "8686994841309902af40ce3e190711e7" / "events.jsonl"
INTERRUPTED = FIXTURES / "9ae2021ae4d2af95ab864b9bac116475" / "events.jsonl"
RUN_LOGS = sorted(FIXTURES.glob("*/events.jsonl"))


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
