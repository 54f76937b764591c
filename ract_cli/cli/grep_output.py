"""``ract trace grep``'s stdout: one sink per output form (jsonl, json, -c, -l; the table is ``grep_table``'s,
the one that needs rich; docs/grep.md)."""

from __future__ import annotations

import sys

from ract_cli.cli.render import (
    above_progress,
    ci_safe,
    ci_safe_bytes,
    clean,
    clean_json,
    dumps_json,
    line_safe_path,
)
from ract_cli.grep.results import FileResult, Match
from ract_cli.grep.search import GrepSearch


class Stop(Exception):
    """stdout went away (``| head``): stop quietly."""


class _Out:
    """stdout as bytes, written in chunks of up to 64 KiB (stdout may be unbuffered: one syscall per
    match would dominate a fast search). Flushed at the end of every file, so output keeps streaming."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def reset(self) -> None:
        """Forget what an earlier run in this process left unwritten."""
        self.parts.clear()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        data = b"".join(self.parts)
        self.parts.clear()
        self.size = 0
        try:
            with above_progress():  # a progress bar on the same terminal: the lines go above it
                if data:
                    sys.stdout.buffer.write(data)
                sys.stdout.flush()
        except BrokenPipeError:
            raise Stop() from None


OUT = _Out()


def _write_bytes(data: bytes) -> None:
    OUT.write(data)


def _flush() -> None:
    OUT.flush()


class Sink:
    """Receives the search's items in order; the base prints nothing (--quiet)."""

    def match(self, m: Match) -> None:
        pass

    def file_done(self, result: FileResult) -> None:
        pass

    def finish(self, search: GrepSearch) -> None:
        pass


class JsonlSink(Sink):
    """The lines byte for byte (piped), or escaped for display (on a terminal)."""

    def __init__(self, terminal: bool, with_filename: bool) -> None:
        self.terminal = terminal
        self.with_filename = with_filename
        self._prefix_path: str | None = None
        self._prefix: bytes = b""

    def match(self, m: Match) -> None:
        if self.terminal:  # a terminal is not a data sink: escape what the log says
            text = m.raw.decode("utf-8", "replace").rstrip("\r\n")
            prefix = f"{m.path}:{m.line}:" if self.with_filename else ""
            _write_bytes((ci_safe(clean(prefix + text)) + "\n").encode("utf-8", "replace"))
        else:
            # A file's last line may lack its newline (MISSING_FINAL_NEWLINE): give it one,
            # as GNU grep does, or it would run into the next file's first match.
            raw = m.raw if m.raw.endswith(b"\n") else m.raw + b"\n"
            raw = ci_safe_bytes(raw, json=True)  # "##[" in a string is written "##\u005b": the same value
            if self.with_filename:
                if m.path != self._prefix_path:
                    self._prefix_path, self._prefix = m.path, line_safe_path(m.path)
                raw = self._prefix + b":" + str(m.line).encode() + b":" + raw
            _write_bytes(raw)

    def file_done(self, result: FileResult) -> None:
        _flush()

    def finish(self, search: GrepSearch) -> None:
        _flush()


class JsonSink(Sink):
    """One JSON object, streamed: {"matches": [...], "files": [...], "exit_code": N}."""

    def __init__(self, terminal: bool) -> None:
        self.first = True
        self.terminal = terminal
        self.files: list[FileResult] = []
        _write_bytes(b'{"matches":[')

    def match(self, m: Match) -> None:
        data = dumps_json(m.to_dict()).encode()
        if self.terminal:  # shown, not stored: bidi overrides and C1 controls become visible escapes
            data = clean_json(data.decode()).encode()
        _write_bytes((b"\n" if self.first else b",\n") + data)
        self.first = False

    def file_done(self, result: FileResult) -> None:
        self.files.append(result)

    def finish(self, search: GrepSearch) -> None:
        files = dumps_json([f.to_dict() for f in self.files]).encode()
        tail = dumps_json(
            {
                "total_matches": search.total_matches,
                "verified": search.options.verify,
                "exit_code": int(search.exit_code),
            }
        ).encode()
        if self.terminal:  # the file paths too
            files = clean_json(files.decode()).encode()
        _write_bytes(b'\n],\n"files":' + files + b",\n" + tail[1:] + b"\n")
        _flush()


class CountSink(Sink):
    def __init__(self, search: GrepSearch, terminal: bool, with_filename: bool) -> None:
        self.terminal = terminal
        self.prefix = with_filename or search.several

    def file_done(self, result: FileResult) -> None:
        if not result.is_file:
            return
        if self.prefix:
            _write_path_line(result.path, self.terminal, f":{result.matches}")
        else:
            _write_bytes(f"{result.matches}\n".encode())

    def finish(self, search: GrepSearch) -> None:
        _flush()


class FilesSink(Sink):
    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal

    def file_done(self, result: FileResult) -> None:
        if result.is_file and result.matches:
            _write_path_line(result.path, self.terminal, "")

    def finish(self, search: GrepSearch) -> None:
        _flush()


def _write_path_line(path: str, terminal: bool, suffix: str) -> None:
    if terminal:
        _write_bytes((ci_safe(clean(path)) + suffix + "\n").encode("utf-8", "replace"))
    else:  # the path's own bytes, unless a newline in it would start another line (then escaped)
        _write_bytes(line_safe_path(path) + suffix.encode() + b"\n")
