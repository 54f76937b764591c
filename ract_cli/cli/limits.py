"""Command-line bounds and defaults that more than one place reads, without typer (``launch`` is typer-free)."""

from __future__ import annotations

#: the most worker processes ``--jobs`` starts (well above the cores of a CI runner): ``--jobs 100000`` is a
#: usage error (exit 2), not an attempt to fork that many processes
MAX_JOBS = 64

#: ``--max-findings``' default (verify, export): a small hostile file of blank lines would otherwise hold one
#: finding per byte
DEFAULT_MAX_FINDINGS = 1000

#: the environment variable a shell's completion script sets when it asks ``ract`` for completions (typer's
#: protocol, answered by ``completion.py``; ``launch`` hands such a call straight to the CLI)
COMPLETE_VAR = "_RACT_COMPLETE"
