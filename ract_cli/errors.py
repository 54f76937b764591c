"""Exit codes (SPEC §3) and the error types of the library.

This is the one place that knows which number means what. Every command
returns the lowest non-zero code among its findings, so "1" means the same
thing whichever command printed it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, SPEC §3."""

    OK = 0  # verified (warnings allowed)
    TAMPERED = 1  # integrity failure
    USAGE = 2  # bad command line
    SCHEMA = 3  # chain intact, vocabulary or payload violation
    INCOMPLETE = 4  # torn tail, or an open run under --require-closed
    IO = 5  # missing, unreadable, or not a log
    DIVERGED = 6  # replay --strict-head: workspace HEAD differs
    NO_MATCH = 7  # grep: chain verified, nothing matched
    DIFFERENT = 8  # diff: both logs verified and the runs diverge

    @property
    def meaning(self) -> str:
        return EXIT_CODE_MEANINGS[self]


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "verified (warnings allowed)",
    ExitCode.TAMPERED: (
        "integrity failure: hash mismatch, chain break, missing genesis, malformed line, "
        "envelope error, foreign run_id, duplicate id, head differs from --expect-head"
    ),
    ExitCode.USAGE: "bad command line",
    ExitCode.SCHEMA: "chain intact, but a kind or payload violates the vocabulary/schema",
    ExitCode.INCOMPLETE: "torn tail, or an open run under --require-closed: repair can fix it",
    ExitCode.IO: "a path is missing, unreadable, or not a log",
    ExitCode.DIVERGED: "replay --strict-head: workspace HEAD differs from the run's snapshot",
    ExitCode.NO_MATCH: "grep: the chain verified and no event matched",
    ExitCode.DIFFERENT: "diff: both logs verified and the runs diverge",
}


def lowest_nonzero(codes: Iterable[int]) -> ExitCode:
    """The exit code rule of SPEC §3: the lowest non-zero code, else OK."""
    nonzero = [c for c in codes if c]
    return ExitCode(min(nonzero)) if nonzero else ExitCode.OK


class RactError(Exception):
    """Base of every error the library raises on purpose; carries its exit code."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(RactError):
    """A bad option or argument combination."""

    exit_code = ExitCode.USAGE


class LogIOError(RactError):
    """A path that is missing, unreadable or not a log."""

    exit_code = ExitCode.IO


class WriterLockedError(LogIOError):
    """Another writer holds the log's advisory lock."""


class RefusedError(RactError):
    """A command refuses to act on this log (repair on tampering, on a journal...)."""

    exit_code = ExitCode.TAMPERED


class ChainBrokenError(RactError):
    """Raised by ``EventReader.load`` at the first integrity failure."""

    exit_code = ExitCode.TAMPERED

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
        expected: str | None = None,
        actual: str | None = None,
        code: str | None = None,
        exit_code: ExitCode | None = None,
    ) -> None:
        super().__init__(message, exit_code=exit_code)
        self.path = path
        self.line = line
        self.offset = offset
        self.expected = expected
        self.actual = actual
        self.code = code
