"""``repair`` (SPEC §4): close what an interrupted run left open, never launder tampering.

Two layers:

* ``synthesize_closes`` / ``closes_for_events`` (``repair/closes.py``, re-exported
  here) are pure: open events in, synthesized close events out (ids, payloads,
  timestamps, order and chain exactly as SPEC §4). No file, no clock, no randomness.
* ``repair_file`` reads one log through the one ``ChainReader``, refuses
  anything but a torn tail and open handles, moves the torn bytes into a
  sidecar, keeps a backup, and rewrites the log atomically (temp file in the
  same directory, fsync, rename, fsync of the directory). The original
  complete lines are stream-copied byte for byte, so memory stays bounded
  whatever the size of the log.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shlex
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ract_cli.dialects import ChainReader, detect_file_dialect, resolve_dialect
from ract_cli.errors import ExitCode, LogIOError, RefusedError, UsageError, WriterLockedError
from ract_cli.findings import ERROR, Finding
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.discovery import resolve_log_path
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.files import is_compressed, is_stdin, log_size, open_log
from ract_cli.read.line import analyze_line
from ract_cli.read.parallel import auto_jobs
from ract_cli.repair.closes import (
    ADDITIONS,
    COPIED_KEYS,
    REASON,
    REPAIR_ID_PREFIX,
    _opens_to_close,
    closes_for_events,
    repair_id,
    synthesize_close,
    synthesize_closes,
)
from ract_cli.repair.leftovers import TEMP_SUFFIX, remove_stale_temps, reusable_backup, reusable_sidecar, temp_prefix
from ract_cli.writer.event_writer import encode_line, is_locked

__all__ = [
    "ADDITIONS",
    "COPIED_KEYS",
    "REASON",
    "REPAIRABLE_CODES",
    "REPAIR_ID_PREFIX",
    "RepairOptions",
    "RepairRefused",
    "RepairResult",
    "SynthesizedClose",
    "TornTail",
    "closes_for_events",
    "repair_file",
    "repair_id",
    "synthesize_close",
    "synthesize_closes",
]

#: reader findings repair can live with: the torn tail and open handles it fixes, and warnings
REPAIRABLE_CODES = frozenset(
    {
        "TORN_TAIL",
        "OPEN_RUN",
        "OPEN_HANDLE",
        "MISSING_FINAL_NEWLINE",
        "CLOCK_REGRESSION",
        "RUN_DIR_MISMATCH",
        "REPAIRED",
        "EMPTY_LOG",
    }
)


# --- file part --------------------------------------------------------------


class RepairRefused(RefusedError):
    """The log does not verify apart from a torn tail and open handles (exit 1)."""

    def __init__(self, message: str, findings: Sequence[Finding] = ()) -> None:
        super().__init__(message, exit_code=ExitCode.TAMPERED)
        self.findings = list(findings)


@dataclass(frozen=True)
class RepairOptions:
    backup: bool = True  # keep the original next to the log (in-place repair only)
    output: str | os.PathLike[str] | None = None  # write the result here; the source stays untouched
    check: bool = False  # change nothing; report whether repair would change something
    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    dialect: str = "auto"  # "auto" | "ract" | "raxol" (SPEC §8): a Raxol journal is always refused
    follow_symlinks: bool = False  # in place on a symlinked log: rewrite the link's target (else refused, exit 5)


@dataclass(frozen=True)
class TornTail:
    line: int  # 1-based line number of the torn line
    offset: int  # byte offset where it starts
    length: int  # its bytes (all moved to the sidecar)
    sidecar: Path | None  # where they went (None under --check)


@dataclass(frozen=True)
class SynthesizedClose:
    close_kind: str
    close_id: str
    source_kind: str
    source_event_id: str
    source_line: int
    source_offset: int


@dataclass
class RepairResult:
    """What repair found and did. ``changed``: the repaired bytes differ from the log's."""

    path: Path
    events: int = 0  # complete events kept
    torn: TornTail | None = None
    closes: list[SynthesizedClose] = field(default_factory=list)
    newline_added: bool = False  # the last kept event lacked its "\n"; repair added it
    written_to: Path | None = None  # the file holding the result (None: nothing written)
    backup: Path | None = None
    warnings: list[Finding] = field(default_factory=list)  # reader warnings on the original
    stale_temps_removed: list[Path] = field(default_factory=list)  # left by a killed repair (repair/leftovers.py)

    @property
    def changed(self) -> bool:
        return self.torn is not None or bool(self.closes)


def _unique_path(base: Path) -> Path:
    """``base``, or ``base.1``, ``base.2``... : the first name that does not exist."""
    candidate, n = base, 0
    while os.path.lexists(candidate):
        n += 1
        candidate = base.with_name(f"{base.name}.{n}")
    return candidate


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems cannot fsync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _copy_range(src_fd: int, dst_fd: int, start: int, length: int) -> None:
    """Copy ``length`` bytes of ``src_fd`` from ``start`` into ``dst_fd`` (at its position)."""
    offset, remaining = start, length
    fast = hasattr(os, "copy_file_range")
    while remaining > 0:
        chunk = min(remaining, 1 << 30)
        copied = 0
        if fast:
            try:
                copied = os.copy_file_range(src_fd, dst_fd, chunk, offset)
            except OSError:
                copied = 0
            if copied == 0:
                fast = False  # not supported here (or at end of file): the slow path decides
                continue
        else:
            data = os.pread(src_fd, min(chunk, 1 << 20), offset)
            if not data:
                raise LogIOError("log shrank while it was being copied")
            _write_all(dst_fd, data)
            copied = len(data)
        offset += copied
        remaining -= copied


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exclusive_file(base: Path, data_fd: int, start: int, length: int) -> Path:
    """Create a new file next to ``base`` (never overwriting) holding the given bytes; fsync it."""
    while True:
        target = _unique_path(base)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue  # lost a race for that name: take the next
        break
    try:
        _copy_range(data_fd, fd, start, length)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(target)
        raise
    os.close(fd)
    return target


def _backup(path: Path, src_fd: int, size: int) -> Path:
    """Keep the original as ``<log>.bak`` (never overwriting): a hard link, else a copy.

    A ``.bak``/``.bak.N`` that already is a hard link to the log (a killed repair's) is reused.
    """
    base = path.with_name(path.name + ".bak")
    kept = reusable_backup(base, os.fstat(src_fd))
    if kept is not None:
        return kept
    while True:
        target = _unique_path(base)
        try:
            os.link(path, target)
            return target
        except FileExistsError:
            continue
        except OSError:
            return _exclusive_file(base, src_fd, 0, size)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _read(
    path: Path, display: str, options: RepairOptions, progress: Callable[[int], None] | None = None
) -> tuple[ChainReader, int, bool]:
    """Pass 1: read through the chain reader; refuse anything but a torn tail and open handles.

    Returns the reader, the length of the prefix of complete events, and
    whether the last complete event ends in ``\n`` (true when there is none).
    ``progress`` is the reader's: called with the byte offset reached, every few MB.

    The log is read as ``verify`` reads it, no event built (``read_all``).
    Only a log that is refused is read again, event by event, to stop where
    the refusal is decided, so that a refusal shows the findings it always
    showed (a tampered log: those up to the break, not every later one).
    """
    # two threads in C on a large log and a free core, as verify's default (``read.parallel.auto_jobs``)
    reader = _reader(path, display, options, threads=min(2, auto_jobs(1, log_size(path))))
    reader.progress = progress
    reader.read_all()
    if reader.broken_at is not None or _unrepairable(reader.findings):
        reader = _reader(path, display, options)
        seen = 0
        it = iter(reader)
        try:
            for _ in it:
                findings = reader.findings
                if reader.broken_at is not None:
                    break  # tampered: no need to read on
                if len(findings) != seen:
                    if _unrepairable(findings[seen:]):
                        break
                    seen = len(findings)
        finally:
            it.close()
    code = reader.exit_code
    bad = _unrepairable(reader.findings)
    if code == ExitCode.IO or any(f.code in _IO_CODES for f in bad):
        io = next((f for f in bad if f.code in _IO_CODES), None)
        raise LogIOError(io.message if io else f"{display}: cannot read the log")
    if not reader.done or bad or code not in (ExitCode.OK, ExitCode.INCOMPLETE):
        first = bad[0] if bad else None
        where = f" at line {first.line}" if first is not None and first.line is not None else ""
        what = f": {first.code}{where}: {first.message}" if first is not None else ""
        raise RepairRefused(
            f"{display} does not verify apart from a torn tail and open handles{what}; "
            "repair never rewrites a log that fails verification (run `ract trace verify` for every finding)",
            bad,
        )
    return reader, reader.last_event_end, reader.last_event_newline


def _reader(path: Path, display: str, options: RepairOptions, threads: int = 1) -> ChainReader:
    return ChainReader(
        path,
        schema_version=options.schema_version,
        max_line_bytes=options.max_line_bytes,
        max_findings=50,
        display_path=display,
        dialect="ract",
        threads=threads,
    )


def _unrepairable(findings: list[Finding]) -> list[Finding]:
    """The findings repair cannot live with: errors other than a torn tail and open handles."""
    return [f for f in findings if f.severity == ERROR and f.code not in REPAIRABLE_CODES]


def _self_check(reader: ChainReader, closes: list[Event], first_line: int, first_offset: int) -> None:
    """Feed the synthesized lines to the reader's state: they must chain, validate and close everything."""
    state = reader.state
    state.expected_prev = state.head  # after a torn tail the reader stops judging linkage
    before = len(state.findings)
    line, offset = first_line, first_offset
    for close in closes:
        raw = encode_line(close)
        result = analyze_line(raw[:-1], reader.schema_version)
        state.feed(result, line, offset)
        line, offset = line + 1, offset + len(raw)
    problems = [f for f in state.findings[before:] if f.severity == ERROR]
    still_open = [h for h in state.handles.open_handles() if h.kind != "run.started"]
    if problems or still_open or (state.handles.run_started is not None and not state.handles.run_is_closed):
        what = f"{problems[0].code}: {problems[0].message}" if problems else "handles remain open"
        raise RepairRefused(
            f"{reader.display_path}: the synthesized closes would not verify ({what}); refusing to write", problems
        )


def _output_path(src: Path, options: RepairOptions) -> Path | None:
    """Where ``--output`` writes (None: in place); a directory or a special file there is a usage error."""
    output = Path(options.output) if options.output is not None else None
    if output is not None and (output == src or _same_file(output, src)):
        output = None  # --output naming the log itself is an in-place repair
    if output is not None and os.path.isdir(output):
        raise UsageError(f"--output {output} is a directory, not a file")
    if output is not None and os.path.lexists(output) and not os.path.isfile(output):
        # the atomic rename would replace a device node, FIFO or socket with the repaired log
        raise UsageError(f"--output {output} exists and is not a regular file; refusing to replace it")
    return output


#: findings that say the file could not be read as a log: repair refuses with their message (exit 5)
_IO_CODES = frozenset({"IO_ERROR", "NOT_A_LOG"})


def _journal_refusal(src: Path, display: str, options: RepairOptions) -> str:
    """Why a journal is refused, true to the file: a RACT log read as one under ``--dialect raxol`` is not one."""
    why = "repair refuses journals, since synthesizing a close there would invent a done verdict"
    if options.dialect == "raxol" and detect_file_dialect(src, max_line_bytes=options.max_line_bytes) == "ract":
        return (
            f"{display}: --dialect raxol reads it as a Raxol agent journal, and {why}; by its records it is not "
            "one (its first record is no journal record with `type`): without --dialect raxol, repair reads it "
            "as a RACT run log"
        )
    return f"{display} is a Raxol agent journal (records with `type`, no `kind`): {why}"


def _refuse_symlink(src: Path, display: str) -> None:
    """An in-place repair of a symlinked log would rewrite the link's target, wherever it is: refuse (exit 5)."""
    try:
        linked = src.is_symlink()
    except OSError:  # a name too long, a directory not searchable: opening the log says what is wrong
        return
    if not linked:
        return
    real = Path(os.path.realpath(src))
    raise LogIOError(
        f"{display} is a symbolic link to {real}: an in-place repair would write the repaired log "
        f"{real} and its {real.name}.bak / {real.name}.torn in {real.parent}; refusing "
        "(--follow-symlinks repairs the target there, --output FILE writes the result elsewhere)"
    )


def _lock_or_refuse(src: Path, fd: int, display: str, *, check: bool) -> None:
    """Take the log's writer lock (held until the rewrite is done); ``--check`` only looks at it."""
    if check:
        if is_locked(src):
            raise WriterLockedError(f"{display}: a writer holds this log's lock; it is still being written")
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise WriterLockedError(f"{display}: a writer holds this log's lock; it is still being written") from None


def _check_rewritable(path: str | os.PathLike[str], src: Path | None = None) -> None:
    """Repair works on a log file it can rewrite: standard input and a gzip archive are usage errors (exit 2).

    Checked on the path as given, and (``src``) on the log a run directory resolved to.
    """
    if is_stdin(path):
        raise UsageError(
            "repair rewrites a log file in place (or copies it with --output): it cannot read standard "
            "input (-); save the log to a file and repair that file"
        )
    for name in (path, src):
        if name is not None and is_compressed(name):
            shown = os.fspath(name)
            raise UsageError(
                f"{shown} is gzip-compressed: repair rewrites a log file in place and does not rewrite "
                f"archives; decompress it first (gunzip -k {shlex.quote(shown)} keeps the archive), repair the .jsonl, "
                "and compress it again to archive it; the archive was left untouched"
            )


def repair_file(
    path: str | os.PathLike[str],
    options: RepairOptions = RepairOptions(),
    *,
    progress: Callable[[int, int], None] | None = None,
) -> RepairResult:
    """Repair one log (SPEC §4). Raises ``RepairRefused`` (exit 1), ``WriterLockedError``/``LogIOError`` (5).

    Standard input (``-``) and a gzip-compressed log (``*.gz``) are refused
    with ``UsageError`` (exit 2) before anything is opened: repair rewrites a
    file in place. ``progress(done_bytes, total_bytes)`` is called as the log
    is read (the verifying pass), every few MB.

    Order of writes, so that a crash at any point leaves the log either as it
    was or completely repaired, and never loses a byte: torn bytes to the
    sidecar (fsync), backup (hard link), temp file (copy, closes, fsync),
    rename over the log, fsync of the directory.
    """
    if options.check and options.output is not None:
        raise UsageError("--check changes nothing; it cannot be combined with --output")
    _check_rewritable(path)
    started_ns = time.time_ns()  # a temp file older than this and unlocked is a killed repair's
    src = resolve_log_path(path)
    _check_rewritable(path, src)  # a run directory holding only events.jsonl.gz
    display = str(src)
    output = _output_path(src, options)
    if output is None and not options.check and not options.follow_symlinks:
        _refuse_symlink(src, display)
    handle = open_log(src)  # LogIOError (5) when missing, a directory, a FIFO...
    with handle:
        fd = handle.fileno()
        _lock_or_refuse(src, fd, display, check=options.check)
        if resolve_dialect(options.dialect, src, options.max_line_bytes) == "raxol":
            raise RepairRefused(_journal_refusal(src, display, options))
        before = os.fstat(fd)
        size = before.st_size
        say = (lambda offset: progress(min(offset, size), size)) if progress is not None else None
        reader, prefix_len, ends_in_newline = _read(src, display, options, say)
        state = reader.state
        result = RepairResult(
            path=src, events=state.events, warnings=[f for f in reader.findings if f.severity != ERROR]
        )
        if prefix_len < size:
            # every line before the torn one is a complete event (anything else was refused)
            result.torn = TornTail(line=state.events + 1, offset=prefix_len, length=size - prefix_len, sidecar=None)
        opens = _opens_to_close(state.handles)
        closes: list[Event] = []
        if opens:
            # a handle is open, so an event was read: the state has its run_id, head and last timestamp
            closes = synthesize_closes(
                [h.event for h in opens],
                run_id=cast(str, state.run_id),
                prev_hash=cast(str, state.head),
                timestamp_ns=cast(int, state.last_ts),
            )
            result.closes = [
                SynthesizedClose(c["kind"], c["id"], h.kind, h.event_id, h.line, h.offset)
                for c, h in zip(closes, opens, strict=True)
            ]
            result.newline_added = not ends_in_newline
            _self_check(reader, closes, state.events + 1, prefix_len + int(result.newline_added))
        if options.check:
            return result

        # in place: write next to the real file, so a symlinked log (follow_symlinks) is repaired, not replaced
        target = output if output is not None else (Path(os.path.realpath(src)) if src.is_symlink() else src)
        directory = target.parent
        result.stale_temps_removed = remove_stale_temps(target, started_ns)
        if not result.changed and output is None:
            return result  # nothing to repair: not one byte written

        after = os.fstat(fd)
        if (after.st_size, after.st_mtime_ns, after.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino):
            raise LogIOError(f"{display} changed while it was being read; nothing written")
        tail = (b"\n" if result.newline_added else b"") + b"".join(encode_line(c) for c in closes)
        try:
            if result.torn is not None:
                base, length = target.with_name(target.name + ".torn"), size - prefix_len
                kept = reusable_sidecar(base, fd, prefix_len, length)  # a killed repair's, holding these bytes
                sidecar = kept if kept is not None else _exclusive_file(base, fd, prefix_len, length)
                _fsync_dir(directory)
                result.torn = TornTail(result.torn.line, result.torn.offset, result.torn.length, sidecar)
            if output is None and options.backup:
                result.backup = _backup(target, fd, size)
            _atomic_write(target, directory, fd, prefix_len, tail, stat.S_IMODE(before.st_mode))
        except OSError as exc:
            raise LogIOError(f"cannot write the repaired log next to {target}: {exc.strerror or exc}") from None
        result.written_to = target
        return result


def _atomic_write(target: Path, directory: Path, src_fd: int, prefix_len: int, tail: bytes, mode: int) -> None:
    """Temp file, copy, closes, fsync, rename over ``target``; the temp file is locked until it is renamed.

    The lock tells a later repair that this temp file is not a killed repair's (``leftovers.remove_stale_temps``).
    """
    tmp_fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(target), suffix=TEMP_SUFFIX, dir=directory)
    try:
        try:
            fcntl.flock(tmp_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _copy_range(src_fd, tmp_fd, 0, prefix_len)
            _write_all(tmp_fd, tail)
            os.fchmod(tmp_fd, mode)
            os.fsync(tmp_fd)
            os.replace(tmp_name, target)
        finally:
            os.close(tmp_fd)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
    _fsync_dir(directory)
