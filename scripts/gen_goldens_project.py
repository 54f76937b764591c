"""Rebuild the golden run reports: python scripts/gen_goldens_project.py [--out DIR].

For every fixture (``ract_cli.synth.FIXTURES``) it writes ``<name>.json`` and
``<name>.md``: the report ``ract trace project fixtures/runs/<run_id>/events.jsonl``
prints with ``--format json`` / ``--format markdown``; plus ``fleet.json`` /
``fleet.md`` for ``ract trace project fixtures/runs``. Paths are relative to the
repository root, which this script makes its working directory.
Default output: tests/golden/project/.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ract_cli.cli.project import to_json, to_markdown
from ract_cli.project.report import ProjectOptions, ProjectResult, project_file, project_paths
from ract_cli.testing.synth import FIXTURES, fixture_path

ROOT = Path(__file__).resolve().parent.parent


def build() -> dict[str, bytes]:
    """File name -> bytes of every golden report (run from the repository root)."""
    out: dict[str, bytes] = {}
    for name in FIXTURES:
        path = fixture_path(Path("fixtures"), name).as_posix()
        result = ProjectResult(runs=[project_file(path, ProjectOptions())], detailed=True)
        out[f"{name}.json"] = to_json(result).encode()
        out[f"{name}.md"] = to_markdown(result).encode()
    fleet = project_paths(["fixtures/runs"])
    out["fleet.json"] = to_json(fleet).encode()
    out["fleet.md"] = to_markdown(fleet).encode()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "tests" / "golden" / "project"))
    args = parser.parse_args()
    out = Path(args.out).resolve()
    os.chdir(ROOT)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in sorted(build().items()):
        (out / name).write_bytes(data)
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
