"""Rebuild the committed fixtures: python scripts/gen_fixtures.py [fixtures]."""

import sys
from pathlib import Path

from ract_cli.testing.synth import FIXTURES, fixture_run_id, write_fixtures

root = Path(sys.argv[1] if len(sys.argv) > 1 else "fixtures")
for name in write_fixtures(root):
    print(f"{name:15} {fixture_run_id(name)}  {FIXTURES[name][1]}")
