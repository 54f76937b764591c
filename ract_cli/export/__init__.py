"""``export``: logs read through the one reader, written for other tools (SPEC §12).

Every format is one function with the same shape::

    export_FORMAT(paths, output, options, *, overwrite=False, progress=None) -> ExportResult

registered in ``EXPORT_FORMATS`` (format name -> "module:function", an
absolute module path, imported on first use so that ``ract --help`` never
loads DuckDB). ``export(fmt, ...)``
dispatches. ``--format parquet`` is ``parquet.export_parquet`` (SPEC §12.1);
``--format otlp-json`` (SPEC §12.2) is to be registered here the same way.

The tables themselves (names, types, meanings) are defined once, in
``tables.py``; ``ract_cli.sql`` serves the same tables to a query.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from importlib import import_module

from ract_cli.errors import UsageError
from ract_cli.export.result import ExportResult
from ract_cli.export.rows import DEFAULT_MAX_FINDINGS, DEFAULT_OPTIONS, ExportOptions, LogSummary
from ract_cli.export.tables import MARKER, TABLES, TABLES_BY_NAME, Column, Table, schema_markdown

__all__ = [
    "DEFAULT_MAX_FINDINGS",
    "DEFAULT_OPTIONS",
    "EXPORT_FORMATS",
    "MARKER",
    "TABLES",
    "TABLES_BY_NAME",
    "Column",
    "ExportOptions",
    "ExportResult",
    "LogSummary",
    "Table",
    "export",
    "exporter",
    "schema_markdown",
]

#: format name -> "module:function" (absolute module path)
EXPORT_FORMATS: dict[str, str] = {
    "parquet": "ract_cli.export.parquet:export_parquet",
    # "otlp-json": "<module>:export_otlp_json",  # SPEC §12.2, same signature; OUT is a file of OTLP/JSON lines
}


def exporter(fmt: str) -> Callable[..., ExportResult]:
    """The export function of ``fmt`` (UsageError for a format not registered)."""
    target = EXPORT_FORMATS.get(fmt)
    if target is None:
        raise UsageError(f"unknown export format {fmt!r} (known: {', '.join(sorted(EXPORT_FORMATS))})")
    module, name = target.split(":")
    function: Callable[..., ExportResult] = getattr(import_module(module), name)
    return function


def export(
    fmt: str,
    paths: Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    options: ExportOptions = DEFAULT_OPTIONS,
    *,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ExportResult:
    """Export every log under ``paths`` to ``output`` in format ``fmt`` (SPEC §12)."""
    return exporter(fmt)(paths, output, options, overwrite=overwrite, progress=progress)
