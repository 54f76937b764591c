"""Which per-line core runs (SPEC §11): the C extension ``ract_cli._core`` when it is built, else pure Python.

``RACT_CORE=python`` forces the pure-Python path; ``RACT_CORE=native`` demands
the extension (a usage error, exit 2, when it is not built); unset or empty:
native when available. Both cores give the same verdict on every line: the
native one only ever answers "this line is a valid envelope, here is its
event and hash", and hands every other line to the Python path, which alone
words findings.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from ract_cli.errors import UsageError


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
