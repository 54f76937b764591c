"""Screenshot the demo run's HTML report: python scripts/screenshot_html.py [--out PNG] [--height N].

The demo run is the completed fixture ``make demo`` projects
(``fixtures/runs/120d7eae7ee0c9c181816e553722e2fe/events.jsonl``), written
afresh by its seeded generator (``ract_cli.testing.synth.write_fixtures``:
the same bytes as the committed fixture) into a temporary directory laid out
like the repository, so the page shows the same relative path. The page is
``ract trace project <run> --format html --output page.html``; headless
Chromium (Debian's ``chromium``) draws its top ``--height`` pixels at 1280
pixels wide. Default output: docs/img/project-html.png (docs/project.md shows it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ract_cli.testing.synth import fixture_path, write_fixtures

ROOT = Path(__file__).resolve().parent.parent
DEMO = "completed"  # the Makefile's COMPLETED run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "project-html.png"))
    parser.add_argument("--height", type=int, default=1500, help="pixels of the page drawn (from its top)")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("screenshot_html.py: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="ract-screenshot-") as tmp:
        root = Path(tmp)
        write_fixtures(root / "fixtures")
        run = fixture_path(Path("fixtures"), DEMO).as_posix()
        page = root / "page.html"
        project = [sys.executable, "-m", "ract_cli", "trace", "project", run, "--format", "html", "-o", str(page)]
        done = subprocess.run(project, cwd=root, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            print(f"screenshot_html.py: project failed ({done.returncode}): {done.stderr}", file=sys.stderr)
            return 1
        out = Path(args.out).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        shot = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={root / 'profile'}",
            f"--window-size=1280,{args.height}",
            f"--screenshot={out}",
            page.as_uri(),
        ]
        done = subprocess.run(shot, capture_output=True, text=True, timeout=120)
        if done.returncode != 0 or not out.is_file():
            print(f"screenshot_html.py: chromium failed ({done.returncode}): {done.stderr[-2000:]}", file=sys.stderr)
            return 1
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
