"""Dialects (SPEC §8): what the reader asks of a kind of log, and which kind a file is.

The reader knows a dialect only through ``Dialect``: how one line is judged
alone, what checks span lines, the type of the events it yields and which
files a directory search takes. RACT run logs are built in; a dialect package
registers itself on import (``ract_cli.dialects`` registers Raxol journals),
so this layer never imports one. Detection is a rule on a record's shape and
needs no dialect: a journal named by the rule but not registered is an error,
never read as the wrong dialect.
"""

from __future__ import annotations

import os
import stat as _stat
from collections.abc import Callable, Mapping

from ract_cli.errors import UsageError
from ract_cli.read import core
from ract_cli.read.chain import ChainState
from ract_cli.read.event import LogEvent
from ract_cli.read.files import GZIP_MAGIC, GZIP_SUFFIX, is_stdin, open_log
from ract_cli.read.framing import split_line_ending
from ract_cli.read.json_rules import LineResult
from ract_cli.read.verdict import analyze_ract
from ract_cli.records import FrozenRecord

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any

#: every name ``--dialect`` takes; "auto" picks one per file from its first record
DIALECTS = ("auto", "ract", "raxol")


class Dialect(FrozenRecord):
    """One kind of log, as the reader uses it."""

    __slots__ = ("name", "analyze", "state_type", "event_type", "suffixes", "splittable")
    name: str
    analyze: Callable[[bytes, int], LineResult]  # one line (without its ending) alone, given the schema version
    state_type: type[ChainState]  # fed every line's result in file order: what spans lines
    event_type: type[LogEvent]  # what the reader yields for a usable line
    suffixes: tuple[str, ...]  # file suffixes a directory search takes besides events.jsonl
    splittable: bool  # byte ranges of one file may be checked in parallel (read/parallel.py)

    def __init__(
        self,
        name: str,
        analyze: Callable[[bytes, int], LineResult],
        state_type: type[ChainState],
        event_type: type[LogEvent],
        suffixes: tuple[str, ...] = (),
        splittable: bool = False,
    ) -> None:
        self._freeze(name, analyze, state_type, event_type, suffixes, splittable)


RACT = Dialect("ract", analyze_ract, ChainState, LogEvent, splittable=True)

_REGISTRY: dict[str, Dialect] = {RACT.name: RACT}


def register(dialect: Dialect) -> None:
    """Make a dialect available to the reader by its name (one of ``DIALECTS``)."""
    if dialect.name not in DIALECTS[1:]:
        raise ValueError(f"unknown dialect name {dialect.name!r}")
    _REGISTRY[dialect.name] = dialect


#: dialects registered on first use: name -> what imports the package that registers it
_LOADERS: dict[str, Callable[[], object]] = {}


def register_loader(name: str, load: Callable[[], object]) -> None:
    """Register a dialect on first use: ``load()`` imports the package that calls ``register``.

    Reading a RACT log then never imports a journal dialect (start-up: issue 14).
    """
    if name not in DIALECTS[1:]:
        raise ValueError(f"unknown dialect name {name!r}")
    _LOADERS[name] = load


def _loaded(name: str) -> None:
    if name not in _REGISTRY and (load := _LOADERS.pop(name, None)) is not None:
        load()


def get_dialect(name: str) -> Dialect:
    """The registered dialect called ``name`` ("ract" or "raxol"; resolve "auto" first)."""
    if name not in DIALECTS[1:]:
        raise UsageError(f"dialect must be ract, raxol or auto, not {name!r}")
    _loaded(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UsageError(f"dialect {name} is not loaded (import ract_cli.dialects)") from None


def detect_dialect(first_record: Any) -> str:
    """``"raxol"`` for a record with ``type`` and no ``kind``, else ``"ract"``."""
    if isinstance(first_record, Mapping) and "type" in first_record and "kind" not in first_record:
        return "raxol"
    return "ract"


_DETECT_LINES = 8
_DETECT_BYTES = 1 << 20
_QUICK_BYTES = 64 << 10  # the quick look at a large file's start (one read)
#: a file smaller than this is read whole by the quick look (one read; a fleet's completed runs are ~70 KB,
#: and the second open a larger one took cost a third of the Python time of a 10,000-run verify)
_WHOLE_BYTES = 1 << 20


def _quick_look(path: str | os.PathLike[str], limit: int) -> tuple[str | None, bytes | None]:
    """The dialect of a plain regular file whose first line is a JSON object within ``limit`` and the
    first read (else None: ``detect_file_dialect`` then reads as the reader reads), and the file's
    bytes when that read took all of them (else None): a file under ``_WHOLE_BYTES`` is read whole.

    One open, fstat and read: a fleet of small runs was opened once more for this, and ``open_log``'s
    buffered, checked open cost as much as the whole check of a 45-event run (issue 14); the reader
    reads a run this read took whole from these bytes instead of opening it again.
    """
    if is_stdin(path) or os.fspath(path).endswith(GZIP_SUFFIX):
        return None, None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None, None
    try:
        st = os.fstat(fd)
        regular = _stat.S_ISREG(st.st_mode)  # (never read from anything else: a FIFO could block)
        # (one byte past the size: a file that grew since the fstat is not taken as whole)
        size = st.st_size
        head = os.read(fd, size + 1 if size < _WHOLE_BYTES else _QUICK_BYTES) if regular else b""
    except OSError:
        return None, None
    finally:
        os.close(fd)
    whole = head if regular and len(head) == size < _WHOLE_BYTES else None
    end = head.find(b"\n") + 1
    if not end or end > limit + 2 or head[:2] == GZIP_MAGIC:
        return None, None
    return _record_dialect(head[:end]), whole


def _record_dialect(raw: bytes) -> str | None:
    """The dialect of one line (with its ending) when it is a JSON object, else None.

    A valid RACT event is read by the native core when it proves lines (the event it builds is the one
    orjson reads: ``tests/test_native_core.py``); only another line is read with orjson, imported then: a
    log the native core proves whole never loads it (~14 ms of a ~50 ms start-up, issue 14).
    """
    body, _ = split_line_ending(raw)
    if core.prove is core.native_analyze and core.NATIVE is not None:
        if (proven := core.NATIVE.check_line(body)) is not None:
            return detect_dialect(proven[0])
    import orjson

    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return detect_dialect(obj) if type(obj) is dict else None


def detect_file_dialect(path: str | os.PathLike[str], *, max_line_bytes: int = _DETECT_BYTES) -> str:
    """The dialect of a file from its first parseable record (of its first few lines).

    A file that cannot be opened, or whose first lines hold no JSON object,
    is ``"ract"``: the RACT reader then reports what is wrong with it.
    """
    return _detect(path, max_line_bytes)[0]


def _detect(path: str | os.PathLike[str], max_line_bytes: int) -> tuple[str, bytes | None]:
    limit = min(max_line_bytes, _DETECT_BYTES)
    quick, whole = _quick_look(path, limit)
    if quick is not None:
        return quick, whole
    return _detect_by_reading(path, limit), None


def _detect_by_reading(path: str | os.PathLike[str], limit: int) -> str:
    try:
        f = open_log(path)
    except Exception:
        return "ract"
    with f:
        for _ in range(_DETECT_LINES):
            try:
                raw = f.readline(limit + 2)
            except OSError:
                return "ract"
            if not raw:
                break
            if len(raw) == limit + 2 and not raw.endswith(b"\n"):
                break  # too long to judge here
            if (found := _record_dialect(raw)) is not None:
                return found
    return "ract"


def resolve_dialect(dialect: str, path: str | os.PathLike[str], max_line_bytes: int = _DETECT_BYTES) -> str:
    """``"ract"`` or ``"raxol"``: ``"auto"`` detects from the file's first record (SPEC §8)."""
    return resolve_dialect_reading(dialect, path, max_line_bytes)[0]


def resolve_dialect_reading(
    dialect: str, path: str | os.PathLike[str], max_line_bytes: int = _DETECT_BYTES
) -> tuple[str, bytes | None]:
    """``resolve_dialect``, and the file's bytes when detecting it read them all (a small run: the reader
    reads them instead of opening the file again), else None."""
    if dialect == "auto":
        return _detect(path, max_line_bytes)
    get_dialect(dialect)  # validates the name
    return dialect, None


def discovery_suffixes(dialect: str) -> tuple[str, ...]:
    """File suffixes a directory search also takes: ``*.jsonl`` journals when the dialect is raxol."""
    _loaded(dialect)
    return _REGISTRY[dialect].suffixes if dialect in _REGISTRY else ()
