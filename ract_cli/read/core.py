"""Which per-line core runs (SPEC §11): the C extension ``ract_cli._core`` when it is built, else pure Python.

``RACT_CORE=python`` forces the pure-Python path; ``RACT_CORE=native`` demands
the extension (a usage error, exit 2, when it is not built); unset or empty:
native when available. Both cores give the same verdict on every line: the
native one only ever answers "this line is a valid envelope, here is its
event and hash", and hands every other line to the Python path, which alone
words findings.

``prove`` is the one name every reader proves a line through; ``use_core`` points it at the core chosen.
The Python core's proof (``read/fastpath.py``, which needs orjson) is imported only when that core is
chosen: a verify the native core answers whole imports neither (start-up, issue 14).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType

from ract_cli.errors import UsageError

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any

    from ract_cli.format.json_types import Event


def _load_native() -> ModuleType | None:
    """The extension when it was built (optional: a machine without a compiler installs without it)."""
    try:
        return importlib.import_module("ract_cli._core")
    except ImportError:
        return None


NATIVE: ModuleType | None = _load_native()
ENV = "RACT_CORE"


class NotBuilt(UsageError):
    """``RACT_CORE=native`` (or ``use_core("native")``) where the extension is not built: exit 2."""

    def __init__(self) -> None:
        super().__init__(
            f"{ENV}=native, but the native core is not built "
            "(it needs a C compiler, the Python headers and OpenSSL's libcrypto headers; see docs/performance.md)"
        )


def selected(environ: os._Environ[str] | dict[str, str] = os.environ) -> ModuleType | None:
    """The native module when it is to be used, else ``None`` (the pure-Python path)."""
    choice = environ.get(ENV, "").strip().lower()
    if choice == "python":
        return None
    if choice == "native":
        if NATIVE is None:
            raise NotBuilt()
        return NATIVE
    if choice in ("", "auto"):
        return NATIVE
    raise UsageError(f"{ENV} must be python or native, not {choice!r}")


def core_name(environ: os._Environ[str] | dict[str, str] = os.environ) -> str:
    """``"native"`` or ``"python"``: the core a command started now would use (raises UsageError on a bad RACT_CORE)."""
    return "native" if selected(environ) is not None else "python"


#: a line's proof: ``(event, stored hash)`` for a fully valid event, else None (the Python path decides)
Prove = Callable[[bytes | memoryview, int], "tuple[Event, str] | None"]


def native_analyze(body: bytes | memoryview, schema_version: int) -> tuple[Event, str] | None:
    """``fastpath.fast_analyze``'s answer from the native core: parse, envelope, payload (from the same
    compiled kinds table) and hash in C, for any layout and length (a view of a long line is read in place,
    its canonical form hashed as it is written); ``None`` hands the line to the Python path."""
    verifier = _NATIVE_VERIFIERS.get(schema_version) or _native_verifier(schema_version)
    found: tuple[Event, str] | None = verifier.check_line(body, full=True)
    return found


#: one compiled ``Verifier`` per schema version, made on first use (the vocabulary differs by version)
_NATIVE_VERIFIERS: dict[int, Any] = {}


def _native_verifier(schema_version: int) -> Any:
    from ract_cli.format.kinds import KINDS, VALIDATORS, kinds_for_version  # (not for ``ract --version``)

    assert NATIVE is not None  # use_core("native") checked it
    kinds_for_version(schema_version)  # a bad version is the reader's UsageError, before C sees it
    verifier = NATIVE.compile_kinds(KINDS, VALIDATORS, schema_version=schema_version)
    _NATIVE_VERIFIERS[schema_version] = verifier
    return verifier


def use_core(name: str) -> None:
    """Prove lines with the "native" or the "python" core from now on (``selected`` decides by default)."""
    global prove, _chosen
    if name == "native":
        if NATIVE is None:
            raise NotBuilt()
        prove = native_analyze
    else:
        from ract_cli.read.fastpath import fast_analyze  # (orjson: only the Python core's proof needs it)

        prove = fast_analyze
    _chosen = (name if name == "native" else "python", prove)


def proving_core() -> str | None:
    """``"native"`` or ``"python"``: the core whose own proof ``prove`` is; None when it is neither (a test
    put its own there, or no line was proven yet): the readers' chain modes then stand aside."""
    return _chosen[0] if _chosen is not None and prove is _chosen[1] else None


def native_chosen() -> ModuleType | None:
    """The native module when it is the core in use (before any line is proven: when RACT_CORE picks it),
    for its JSON writer and reader (``read.json_text``); else None."""
    if _chosen is not None:
        return NATIVE if _chosen[0] == "native" else None
    return NATIVE if _startup_core() == "native" else None


def _startup_core() -> str:
    try:
        return core_name()
    except UsageError:  # a bad RACT_CORE: the reader refuses it (exit 2) before reading; Python meanwhile
        return "python"


def _prove_as_started(body: bytes | memoryview, schema_version: int) -> tuple[Event, str] | None:
    """The first proof of a process that chose no core yet: RACT_CORE's as it is now, then that core's answer."""
    use_core(_startup_core())
    return prove(body, schema_version)


#: the function that proves lines now (``use_core`` chooses it; readers call it through this name)
prove: Prove = _prove_as_started
_chosen: tuple[str, Prove] | None = None  # what ``use_core`` chose last
