"""Turn command-line paths into the log files to read.

A file is taken as given (the reader judges it), and so is ``-`` (standard
input); a directory is searched recursively for files named ``events.jsonl``
or ``events.jsonl.gz`` (symlinked directories are not followed, so a symlink
loop cannot hang the search). A path that does not
exist, or a directory holding no log, is an IO finding (exit 5).

Nothing under a tree is skipped silently (issue 15, item 1): a directory the
walk cannot read (permission denied, vanished, a name too long) and an
``events.jsonl`` that is a directory are each an ``IO_ERROR`` finding naming
the path, so a tree holding an unreadable run never verifies. The walk is
iterative (an explicit stack), so no depth of tree reaches Python's recursion
limit (item 12).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from ract_cli.errors import LogIOError
from ract_cli.findings import Finding, error
from ract_cli.read.files import GZIP_SUFFIX, is_stdin
from ract_cli.records import FrozenRecord

LOG_FILE_NAME = "events.jsonl"
#: the names a directory search takes: the log, and the log as archived (gzip)
LOG_FILE_NAMES = (LOG_FILE_NAME, LOG_FILE_NAME + GZIP_SUFFIX)


class Discovered(FrozenRecord):
    """The log files found under the given paths, and the paths that gave none."""

    __slots__ = ("files", "findings")
    files: list[Path]
    findings: list[Finding]

    def __init__(self, files: list[Path], findings: list[Finding]) -> None:
        self._freeze(files, findings)


def discover(
    paths: Iterable[str | os.PathLike[str]],
    *,
    names: tuple[str, ...] = LOG_FILE_NAMES,
    suffixes: tuple[str, ...] = (),
) -> Discovered:
    """Expand paths to log files, in a stable (sorted) order, each at most once."""
    files: list[Path] = []
    findings: list[Finding] = []
    seen: set[str] = set()

    def take(p: Path) -> None:
        key = os.path.normpath(str(p))
        if key not in seen:
            seen.add(key)
            files.append(p)

    for raw in paths:
        if not os.fspath(raw):  # Path("") is "."; an unset "$LOG" must not verify the current directory
            findings.append(error("IO_ERROR", "empty path (an unset variable?)", path=""))
            continue
        path = Path(raw)
        if is_stdin(raw):
            take(path)
        elif os.path.isdir(path):
            walk_errors: list[Finding] = []
            found = sorted(_walk(path, names, suffixes, walk_errors))
            findings.extend(walk_errors)
            if not found and not walk_errors:
                findings.append(
                    error(
                        "IO_ERROR",
                        f"no {' or '.join(_shown(names) + tuple('*' + s for s in suffixes))} file under directory {path}",
                        path=str(path),
                    )
                )
            for f in found:
                take(f)
        elif os.path.lexists(path):  # (Path.exists raises on ENAMETOOLONG; lexists answers False)
            take(path)  # the reader reports a dangling symlink, a FIFO or a device
        else:
            findings.append(error("IO_ERROR", _why_missing(path), path=str(path)))
    return Discovered(files, findings)


def _shown(names: tuple[str, ...]) -> tuple[str, ...]:
    """The names a message lists: ``events.jsonl`` stands for its ``.gz`` twin too."""
    return tuple(n for n in names if not (n.endswith(GZIP_SUFFIX) and n[: -len(GZIP_SUFFIX)] in names))


def _why_missing(path: Path) -> str:
    """Say why a path cannot be seen: missing, or e.g. a directory on the way denies search (EACCES)."""
    try:
        os.lstat(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return f"cannot access {path}: {exc.strerror or exc}"
    return f"no such file or directory: {path}"


def _walk(root: Path, names: tuple[str, ...], suffixes: tuple[str, ...], errors: list[Finding]) -> Iterable[Path]:
    """Every file under ``root`` taken by name or suffix; what cannot be read lands in ``errors``.

    Iterative (a stack of directories still to read), never recursive; a
    symlinked directory is not entered.
    """
    stack: list[str] = [os.fspath(root)]
    while stack:
        dirpath = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError as exc:
            errors.append(_unreadable(dirpath, exc))
            continue
        subdirs: list[str] = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()  # follows a symlink: a symlinked events.jsonl directory is reported
                real_dir = is_dir and not entry.is_symlink()
            except OSError:
                is_dir = real_dir = False
            if is_dir:
                if name in names:
                    errors.append(error("IO_ERROR", f"{entry.path} is a directory, not a log file", path=entry.path))
                if real_dir:
                    subdirs.append(entry.path)
            elif name in names or (suffixes and name.endswith(suffixes + tuple(x + GZIP_SUFFIX for x in suffixes))):
                yield Path(entry.path)
        stack.extend(sorted(subdirs, reverse=True))


def _unreadable(dirpath: str, exc: OSError) -> Finding:
    """The IO finding of a directory the walk could not list (EACCES, vanished, ENAMETOOLONG...)."""
    path = exc.filename if isinstance(exc.filename, str) else dirpath
    if exc.errno == errno.ENOENT:
        return error("IO_ERROR", f"directory vanished while searching it: {path}", path=path)
    return error("IO_ERROR", f"cannot read directory {path}: {exc.strerror or exc}", path=path)


def resolve_log_path(path: str | os.PathLike[str]) -> Path:
    """One log for commands that take a single run: a file as given, ``-``, or ``DIR/events.jsonl`` (or ``.gz``)."""
    if not os.fspath(path):  # Path("") is "."; an unset "$LOG" must not pick ./events.jsonl
        raise LogIOError("empty path (an unset variable?)")
    p = Path(path)
    if os.path.isdir(p):  # (Path.is_dir raises on EACCES, ENAMETOOLONG)
        for name in LOG_FILE_NAMES:
            if os.path.isfile(p / name):
                return p / name
    return p
