"""Log builders and CLI runners of the conformance tests, on ``tests/independent_jcs.py``.

Logs are built here with the independent JCS-with-exact-integers encoder and
``hashlib``, never with ract's own writer or canonicalizer, so the tests check
SPEC and not the project against itself. Commands run in-process
(``ract_cli.cli.app.main``, ``ract``) or as ``python -m ract_cli`` (``sub``)
where stdout must be a real pipe.

Corpora and the reference document's kind list are read from their copies
under ``tests/data/`` (each with a README saying where it came from).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

from independent_jcs import chain, event, line, new_id

from ract_cli.cli.app import main as ract_main

DATA = Path(__file__).resolve().parent.parent / "data"
JCS_CORPUS = DATA / "jcs"  # RFC 8785's test vectors: tests/data/jcs/README.md
REFERENCE = DATA / "reference" / "ract-event-schema.md"  # the kind list: tests/data/reference/README.md

RUN = "ab" * 16

ev = functools.partial(event, run=RUN)


def logpath(base: Path, run: str = RUN) -> Path:
    """``base/evals/runs/<run>/events.jsonl``: its directory is made, the file is not."""
    p = base / "evals" / "runs" / run / "events.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def write(path: Path, events, *, raw: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if raw is not None else b"".join(line(e) for e in events))
    return path


def put(base: Path, events=None, *, raw: bytes | None = None, name: str = "x") -> Path:
    """Write a log at ``base/<name>/evals/runs/<RUN>/events.jsonl``; return its path."""
    p = logpath(base / name)
    p.write_bytes(raw if raw is not None else lines(events))
    return p


def lines(events) -> bytes:
    return b"".join(line(e) for e in events)


def read(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_bytes().splitlines()]


def siblings(p: Path) -> list[str]:
    return sorted(x.name for x in p.parent.iterdir())


def closed_run():
    s = new_id()
    return chain(
        [
            ev("run.started", {"intent_id": "x"}),
            ev("step.started", {"parent_snapshot": "a" * 40}, step=s),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s),
            ev("run.completed", {"final_decision": "done"}),
        ]
    )


def good_lines():
    return [line(e) for e in closed_run()]


def ract(capsys, *args):
    rc = ract_main(["trace", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def verify_json(capsys, path, *extra):
    rc, out, _err = ract(capsys, "verify", "--format", "json", *extra, path)
    return rc, json.loads(out)


def project_json(capsys, *paths, fmt="json"):
    rc, out, _err = ract(capsys, "project", "--format", fmt, *paths)
    return rc, out


def codes(report) -> list[str]:
    return [f["code"] for f in report["files"][0]["findings"]]


def sub(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", *map(str, args)], capture_output=True, cwd=cwd, timeout=120
    )
