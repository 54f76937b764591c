"""The reference loops every speed ratio is taken against, in one place (bench.py, rows_layouts.py, big.py).

- ``floor_loop``: orjson parse + orjson sort-keys dump + sha256 per line, no checks at all (issue 14's
  "floor"), in this process;
- ``FLOOR_SCRIPT``: the same loop as a script of its own, for a subprocess that pays what a ``ract``
  subprocess pays (the interpreter's start-up and ``import orjson``) and nothing of ours: it imports
  neither this module nor ``ract_cli``;
- ``sha_only``: sha256 of each raw line, the physical limit of any verifier.

Imports nothing of ract, so that importing it never adds our start-up to a floor.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson

#: ``python -c FLOOR_SCRIPT PATH``: ``floor_loop`` in a subprocess (kept in step with it by hand: five lines)
FLOOR_SCRIPT = """
import hashlib, orjson, sys
loads, dumps, sha256, opt = orjson.loads, orjson.dumps, hashlib.sha256, orjson.OPT_SORT_KEYS
with open(sys.argv[1], "rb") as f:
    for line in f:
        sha256(dumps(loads(line), option=opt)).hexdigest()
"""


def floor_loop(path: Path) -> int:
    """The floor over ``path``, in this process; returns the number of lines."""
    loads, dumps, sha256, opt = orjson.loads, orjson.dumps, hashlib.sha256, orjson.OPT_SORT_KEYS
    n = 0
    with open(path, "rb") as f:
        for line in f:
            sha256(dumps(loads(line), option=opt)).hexdigest()
            n += 1
    return n


def sha_only(path: Path) -> None:
    """sha256 of each raw line: no verifier can be faster (it must hash at least these bytes)."""
    sha256 = hashlib.sha256
    with open(path, "rb") as f:
        for line in f:
            sha256(line).hexdigest()
