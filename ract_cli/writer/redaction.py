"""The redaction profile (SPEC §9): regex patterns scrubbed and named fields replaced, before hashing.

Configured from ``ract.yaml`` under ``trace.redaction`` (docs/writer.md);
``EventWriter`` applies it (``ract_cli.writer.event_writer`` re-exports it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ract_cli.errors import ExitCode, LogIOError, RactError
from ract_cli.format.json_types import JSONObject
from ract_cli.format.sanitize import _describe, _string_list, _utf8_text


@dataclass
class RedactionProfile:
    """Scrub regex patterns from strings and fully replace named fields, before hashing.

    Intentionally shallow (the reference calls it a first line of defence):
    it walks nested dicts and lists of the payload. ``patterns`` and
    ``fields`` take a list of strings (one string is a one-item list);
    ``replacement`` is written literally (no regex template).
    """

    patterns: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    replacement: str = "[REDACTED]"

    def __post_init__(self) -> None:
        self.patterns = [_utf8_text(p, "redaction pattern") for p in _string_list(self.patterns, "patterns")]
        self.fields = [_utf8_text(f, "redaction field") for f in _string_list(self.fields, "fields")]
        if type(self.replacement) is not str:
            raise RactError(
                f"replacement must be a string, not {_describe(self.replacement)}", exit_code=ExitCode.USAGE
            )
        _utf8_text(self.replacement, "replacement")
        compiled: list[re.Pattern[str]] = []
        for pattern in self.patterns:
            try:
                compiled.append(re.compile(pattern))
            except (re.error, OverflowError, RecursionError, ValueError) as exc:
                raise RactError(f"bad redaction pattern {pattern!r}: {exc}", exit_code=ExitCode.USAGE) from None
        self._compiled = compiled
        self._fields = frozenset(self.fields)

    @property
    def enabled(self) -> bool:
        return bool(self._compiled or self._fields)

    def apply(self, value: Any) -> Any:
        """The value with patterns scrubbed from its strings and named fields replaced (a sanitized value)."""
        if type(value) is dict:
            return {k: (self.replacement if k in self._fields else self.apply(v)) for k, v in value.items()}
        if type(value) is list:
            return [self.apply(v) for v in value]
        if type(value) is str:
            return self.scrub(value)
        return value

    def scrub(self, text: str) -> str:
        """``text`` with every pattern match replaced by the literal replacement."""
        for pattern in self._compiled:
            text = pattern.sub(self._literal, text)
        return text

    def _literal(self, _match: re.Match[str]) -> str:
        return self.replacement  # a function: a backslash or "\\g<0>" in the replacement is written as is

    @classmethod
    def from_config(cls, config: JSONObject | None) -> RedactionProfile | None:
        """Build from the ``trace.redaction`` mapping of ``ract.yaml``; None when absent.

        A key of the wrong type is a ``RactError`` (exit 2) naming it.
        """
        if not config:
            return None
        if not isinstance(config, dict):
            raise RactError("ract.yaml: the configuration must be a mapping", exit_code=ExitCode.USAGE)
        trace = config.get("trace")
        if trace is None:
            return None
        if not isinstance(trace, dict):
            raise RactError("ract.yaml: trace must be a mapping", exit_code=ExitCode.USAGE)
        section = trace.get("redaction")
        if section is None:
            return None
        if not isinstance(section, dict):
            raise RactError("ract.yaml: trace.redaction must be a mapping", exit_code=ExitCode.USAGE)
        replacement = section.get("replacement", "[REDACTED]")
        if type(replacement) is not str:
            raise RactError(
                f"ract.yaml: trace.redaction.replacement must be a string, not {_describe(replacement)}",
                exit_code=ExitCode.USAGE,
            )
        try:
            return cls(
                patterns=_string_list(section.get("patterns"), "ract.yaml: trace.redaction.patterns"),
                fields=_string_list(section.get("fields"), "ract.yaml: trace.redaction.fields"),
                replacement=replacement,
            )
        except RactError as exc:
            if exc.message.startswith("ract.yaml"):
                raise
            raise RactError(f"ract.yaml: trace.redaction: {exc.message}", exit_code=ExitCode.USAGE) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str] = "ract.yaml") -> RedactionProfile | None:
        """Read ``ract.yaml``; a missing file means redaction is off."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise RactError(f"{path}: not UTF-8 text", exit_code=ExitCode.USAGE) from None
        except OSError as exc:
            raise LogIOError(f"cannot read {path}: {exc.strerror or exc}") from None
        # PyYAML: imported only when a config file is read. It ships no type information
        # (the stubs are the separate types-PyYAML package), hence the ignore.
        import yaml  # type: ignore[import-untyped]

        try:
            config = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            raise RactError(f"{path}: not valid YAML: {exc}", exit_code=ExitCode.USAGE) from None
        return cls.from_config(config)
