"""``ract trace export --format otlp-json`` (SPEC §12.2): runs as OpenTelemetry GenAI traces, one line per run.

Each line is one OTLP/JSON ``TracesData`` object, as the OpenTelemetry
collector's file exporter writes them and its ``otlpjsonfile`` receiver reads
them: lowerCamelCase keys, hex ``traceId``/``spanId``, enums as integers,
64-bit integers as decimal strings. Every log is read through the one chain
reader; what follows a chain break is exported with ``ract.trusted = false``
and the exit code says the log did not verify.

A run's line is written in pieces (``trace_chunks``), each ending between two
JSON values: the span events are already encoded (``SpanEvents``), so the
line is never built whole, nor as one tree of dicts and lists, in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from ract_cli.atomic import atomic_output
from ract_cli.dialects import ChainReader, discovery_suffixes
from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.findings import Finding, error
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.format.text import utf8_text
from ract_cli.otel.spans import STATUS_UNSET, Span, TraceBuilder, attributes_json
from ract_cli.read.discovery import discover
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES

SCOPE_NAME = "ract"
DEFAULT_SERVICE_NAME = "ract"

__all__ = ["OtlpOptions", "OtlpResult", "export_otlp", "trace_chunks", "trace_line"]

#: ``write`` is handed a run's line in pieces of about this size
WRITE_BYTES = 1 << 18


@dataclass(frozen=True)
class OtlpOptions:
    service_name: str = DEFAULT_SERVICE_NAME
    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    scope_version: str = "0"


@dataclass
class OtlpFile:
    """What exporting one log did."""

    path: str
    exit_code: ExitCode
    spans: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)


@dataclass
class OtlpResult:
    files: list[OtlpFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # discovery's (missing paths...)

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §12: the lowest non-zero verification code of the inputs."""
        return lowest_nonzero([*(f.exit_code for f in self.files), *(f.exit_code for f in self.findings)])


def _span_chunks(span: Span, trace_id: str) -> Iterator[bytes | bytearray]:
    """One span's OTLP/JSON object, in pieces: the same bytes ``orjson.dumps`` gives for it whole."""
    data: dict[str, Any] = {"traceId": trace_id, "spanId": span.span_id}
    if span.parent_id is not None:
        data["parentSpanId"] = span.parent_id
    data["name"] = span.name
    data["kind"] = span.kind
    data["startTimeUnixNano"] = str(span.start_ns)
    data["endTimeUnixNano"] = str(span.end_ns if span.end_ns is not None else span.start_ns)
    data["attributes"] = attributes_json(span.attributes)
    status: dict[str, Any] = {"code": span.status}
    if span.status != STATUS_UNSET and span.status_message:
        status["message"] = span.status_message
    head = orjson.dumps(data)[:-1]  # (without its closing brace: events and status follow)
    tail = b',"status":' + orjson.dumps(status) + b"}"
    if span.events:
        yield head + b',"events":['
        yield from span.events.encoded()
        yield b"]" + tail
    else:
        yield head + tail


_LINE_END = b"]}]}]}"  # what closes ``spans``, then ``scopeSpans``' object and list, then ``resourceSpans``'


def trace_chunks(
    spans: Sequence[Span], trace_id: str, log_path: str, options: OtlpOptions = OtlpOptions()
) -> Iterator[bytes | bytearray]:
    """One ``TracesData`` object as one line of OTLP/JSON, in pieces (the same bytes for the same spans).

    Every piece ends between two JSON values, never inside a string (so a
    writer that rewrites ``##[`` inside strings sees each whole). The first is
    encoded before any is handed out: what could fail to encode (the log's
    path) fails before anything is written.
    """
    resource = {
        "attributes": attributes_json({"service.name": options.service_name, "ract.log.path": utf8_text(log_path)}),
    }
    scope = {"name": SCOPE_NAME, "version": options.scope_version}
    body = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": []}]}]}
    shell = orjson.dumps(body)
    assert shell.endswith(b"[" + _LINE_END)
    yield shell[: -len(_LINE_END)]
    for i, span in enumerate(spans):
        if i:
            yield b","
        yield from _span_chunks(span, trace_id)
    yield _LINE_END + b"\n"


def trace_line(spans: Sequence[Span], trace_id: str, log_path: str, options: OtlpOptions = OtlpOptions()) -> bytes:
    """One ``TracesData`` object as one line of OTLP/JSON (the same bytes for the same spans)."""
    return b"".join(trace_chunks(spans, trace_id, log_path, options))


def _write_line(chunks: Iterable[bytes | bytearray], write: Callable[[bytes], object]) -> None:
    """Hand the pieces to ``write`` gathered into writes of about ``WRITE_BYTES``."""
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        if len(pending) >= WRITE_BYTES:
            write(bytes(pending))
            pending = bytearray()
    if pending:
        write(bytes(pending))


def _export_file(path: str, write: Callable[[bytes], object], options: OtlpOptions) -> OtlpFile:
    reader = ChainReader(path, schema_version=options.schema_version, max_line_bytes=options.max_line_bytes)
    if reader.dialect != "ract":  # verified all the same, so its verdict counts (the lowest code wins)
        reader.read_all()
        finding = error("IO_ERROR", "otlp-json export reads RACT run logs; this is a Raxol journal", path=path)
        code = lowest_nonzero([reader.exit_code, ExitCode.IO])
        return OtlpFile(path, code, findings=[*reader.findings, finding])
    builder: TraceBuilder | None = None
    for ev in reader:
        if builder is None:
            builder = TraceBuilder(ev.event["run_id"])
        builder.feed(ev)
    result = OtlpFile(path, reader.exit_code, findings=list(reader.findings))
    if builder is not None:
        spans = builder.finish()
        _write_line(trace_chunks(spans, builder.run_id, path, options), write)
        result.spans, result.events = len(spans), builder.events
    return result


def export_otlp(
    paths: Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str] | IO[bytes],
    options: OtlpOptions = OtlpOptions(),
) -> OtlpResult:
    """Export every log under ``paths`` (files and directories) to ``output``, one line per run.

    ``output`` is a path (written atomically: a temporary file in the same
    directory, renamed at the end) or a binary stream such as stdout.
    """
    found = discover(list(paths), suffixes=discovery_suffixes("ract"))
    result = OtlpResult(findings=list(found.findings))
    if not isinstance(output, str | os.PathLike):
        for path in found.files:
            result.files.append(_export_file(str(path), output.write, options))
        return result
    with atomic_output(output) as stream:  # (0644: a collector running as another user reads it)
        for path in found.files:
            result.files.append(_export_file(str(path), stream.write, options))
    return result
