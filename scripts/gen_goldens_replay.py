"""Rebuild the replay golden files: python scripts/gen_goldens_replay.py [tests/golden/replay].

Each golden is the exact stdout of ``ract trace replay`` on a committed
fixture (``fixtures/``, written by the seeded generator, so their timestamps
and therefore the time column are fixed), plus ``exit_codes.json``. The
workspace is an empty temporary directory (not a git repository), which only
affects stderr. ``tests/test_replay_cli.py`` checks the committed files equal
a fresh build.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "replay"

#: golden file name -> (fixture name, extra arguments)
CASES: dict[str, tuple[str, list[str]]] = {
    "completed.txt": ("completed", []),
    "aborted.txt": ("aborted", []),
    "interrupted.txt": ("interrupted", []),
    "tampered.txt": ("tampered", []),
    "foreign-format.txt": ("foreign-format", []),
    "interrupted.until-21.txt": ("interrupted", ["--until", "21"]),
    "completed.until-72.txt": ("completed", ["--until", "72"]),
    "completed.until-85.txt": ("completed", ["--until", "85"]),
}


def run_replay(argv: list[str]) -> tuple[int, bytes]:
    """``ract`` in-process; returns the exit code and stdout's exact bytes."""
    from ract_cli.cli.app import main

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    out.flush()
    return code, raw.getvalue()


def build(root: Path = ROOT) -> dict[str, bytes]:
    """Every golden file's name and bytes, freshly rendered."""
    from ract_cli.testing.synth import fixture_path

    files: dict[str, bytes] = {}
    codes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="ract-golden-ws-") as workspace:
        for name, (fixture, extra) in CASES.items():
            path = fixture_path(root / "fixtures", fixture)
            code, stdout = run_replay(["trace", "replay", str(path), "--workspace", workspace, *extra])
            files[name] = stdout
            codes[name] = code
    files["exit_codes.json"] = (json.dumps(codes, indent=2, sort_keys=True) + "\n").encode()
    return files


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    out.mkdir(parents=True, exist_ok=True)
    for name, data in build().items():
        (out / name).write_bytes(data)
        print(f"{name:28} {len(data):7} bytes")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
