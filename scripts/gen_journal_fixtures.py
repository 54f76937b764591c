"""Rebuild the committed Raxol journal fixtures: python scripts/gen_journal_fixtures.py [fixtures]."""

import sys
from pathlib import Path

from ract_cli.testing.synth_raxol import JOURNAL_FIXTURES, write_journal_fixtures

root = Path(sys.argv[1] if len(sys.argv) > 1 else "fixtures")
for name in write_journal_fixtures(root):
    fx = JOURNAL_FIXTURES[name]
    print(f"{name:17} exit {fx.exit_code}  evidence {fx.evidence:9} {fx.description}")
