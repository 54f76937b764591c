"""Turn command-line paths into the log files to read.

A file is taken as given (the reader judges it); a directory is searched
recursively for files named ``events.jsonl`` (symlinked directories are not
followed, so a symlink loop cannot hang the search). A path that does not
exist, or a directory holding no log, is an IO finding (exit 5).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ract_cli.errors import LogIOError
from ract_cli.findings import Finding, error

LOG_FILE_NAME = "events.jsonl"


@dataclass(frozen=True)
class Discovered:
    """The log files found under the given paths, and the paths that gave none."""

    files: list[Path]
    findings: list[Finding]


def discover(
    paths: Iterable[str | os.PathLike[str]],
    *,
    names: tuple[str, ...] = (LOG_FILE_NAME,),
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
        if os.path.isdir(path):
            found = sorted(_walk(path, names, suffixes))
            if not found:
                findings.append(
                    error(
                        "IO_ERROR",
                        f"no {' or '.join(names + tuple('*' + s for s in suffixes))} file under directory {path}",
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


def _why_missing(path: Path) -> str:
    """Say why a path cannot be seen: missing, or e.g. a directory on the way denies search (EACCES)."""
    try:
        os.lstat(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return f"cannot access {path}: {exc.strerror or exc}"
    return f"no such file or directory: {path}"


def _walk(root: Path, names: tuple[str, ...], suffixes: tuple[str, ...]) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=None):
        dirnames.sort()
        for name in filenames:
            if name in names or (suffixes and name.endswith(suffixes)):
                yield Path(dirpath) / name


def resolve_log_path(path: str | os.PathLike[str]) -> Path:
    """One log for commands that take a single run: a file as given, or ``DIR/events.jsonl``."""
    if not os.fspath(path):  # Path("") is "."; an unset "$LOG" must not pick ./events.jsonl
        raise LogIOError("empty path (an unset variable?)")
    p = Path(path)
    if os.path.isdir(p) and os.path.isfile(p / LOG_FILE_NAME):  # (Path.is_dir raises on EACCES, ENAMETOOLONG)
        return p / LOG_FILE_NAME
    return p
