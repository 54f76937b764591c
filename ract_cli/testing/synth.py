"""Seeded generator of realistic runs, written through ``EventWriter``: the fixtures and the benchmark log.

Used for the committed fixtures (``scripts/gen_fixtures.py``), the
benchmark log (``bench/bench.py``) and tests. Same seed, same bytes: ids
come from the seeded RNG and time from a fake clock, never from the host.
The run builder is ``testing/builder.py``, the payloads of the rarer kinds
``testing/payloads.py``; their names stay importable from here.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

from ract_cli.testing.builder import RunBuilder
from ract_cli.testing.payloads import BASE_TS, PROVIDERS, TOOLS, UNICODE_SNIPPETS
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy, event_hash

__all__ = [
    "BASE_TS",
    "FIXTURES",
    "PROVIDERS",
    "TOOLS",
    "UNICODE_SNIPPETS",
    "RunBuilder",
    "fixture_path",
    "fixture_run_id",
    "shuffled_keys",
    "write_aborted",
    "write_benchmark_log",
    "write_completed",
    "write_fixtures",
    "write_foreign_format",
    "write_interrupted",
    "write_runtime_floats",
    "write_tampered",
]


def fixture_run_id(name: str) -> str:
    """Fixture runs get a run_id derived from their name (and live in a dir of that name)."""
    return hashlib.sha256(f"ract.fixture:{name}".encode()).hexdigest()[:32]


def _writer(path: Path, run_id: str, rng: random.Random) -> EventWriter:
    return EventWriter(
        path,
        run_id=run_id,
        fsync=FsyncPolicy.NEVER,
        redaction=None,  # fixtures never depend on ./ract.yaml
        new_id=lambda: f"{rng.getrandbits(128):032x}",
    )


def write_completed(path: Path, run_id: str, *, seed: int = 1, steps: int = 6) -> None:
    """A completed run that uses 63 of the 64 kinds: all but ``run.aborted`` (see fixtures/README.md)."""
    rng = random.Random(seed)
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        for i in range(steps):
            b.step(commit=(i % 3 != 2))
            if i == steps // 2:
                b.every_other_kind()
        b.complete_run(b.count)


def write_aborted(path: Path, run_id: str, *, seed: int = 2) -> None:
    rng = random.Random(seed)
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        b.step(commit=True)
        b.step(commit=False)
        b.abort_run()


def write_interrupted(path: Path, run_id: str, *, seed: int = 3) -> None:
    """Killed mid-step: open step, tool call in flight, unanswered prompt, pending handshake, torn last line."""
    rng = random.Random(seed)
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        b.step(commit=True)
        b.step_id = b.hex(32)
        b.emit(
            "step.started",
            {
                "parent_snapshot": b.snapshot,
                "branch": f"rootact/step/{b.step_id}",
                "postcondition_count": 2,
                "manifest_digest": None,
                "timeout_seconds": 600,
            },
        )
        b.emit(
            "prompt.sent",
            {"provider": "anthropic", "response_shape": "action", "intent_id": b.intent_id, "prompt_chars": 5120},
        )
        b.emit("tool.called", {"tool": "pytest", "arguments": {"argv": ["pytest", "-x"], "cwd": "/workspace"}})
        b.emit(
            "handshake.requested",
            {
                "milestone_id": "m-merge",
                "status": "pending",
                "description": "merge to main",
                "reason": "policy requires approval",
            },
        )
    # the writer was killed while writing one more event: half a line, no newline
    with open(path, "ab") as f:
        f.write(
            b'{"hash":"'
            + hashlib.sha256(b"torn").hexdigest().encode()
            + b'","id":"'
            + b"7" * 32
            + b'","kind":"tool.res'
        )


def write_tampered(path: Path, run_id: str, *, seed: int = 4) -> None:
    """A completed run with one tool.result edited after the fact (ok flipped, hash left as it was)."""
    write_completed(path, run_id, seed=seed, steps=3)
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if b'"kind":"tool.result"' in line and b'"ok":false' in line:
            lines[i] = line.replace(b'"ok":false', b'"ok":true', 1)
            break
    else:
        raise AssertionError("fixture generator: no failed tool.result to tamper with")
    path.write_bytes(b"\n".join(lines))


def write_foreign_format(path: Path, run_id: str, *, seed: int = 5) -> None:
    """Valid events as another writer would format them: spaces, \\u escapes, other key order."""
    write_aborted(path, run_id, seed=seed)
    out: list[bytes] = []
    for line in path.read_bytes().splitlines():
        event = json.loads(line)
        reordered = dict(reversed(list(event.items())))
        out.append(json.dumps(reordered, ensure_ascii=True, separators=(", ", ": ")).encode() + b"\r\n")
    path.write_bytes(b"".join(out))


FIXTURES: dict[str, tuple[Callable[[Path, str], None], str]] = {
    "completed": (write_completed, "a completed run using every kind but run.aborted; verifies clean (exit 0)"),
    "aborted": (write_aborted, "a run aborted after a rollback (run.aborted, process.reaped); exit 0"),
    "interrupted": (
        write_interrupted,
        "killed mid-step: open step, tool call, prompt, handshake, torn last line; exit 4",
    ),
    "tampered": (write_tampered, "one tool.result's ok flipped after writing: HASH_MISMATCH, exit 1"),
    "foreign-format": (write_foreign_format, "valid events with spaces, \\u escapes, reversed keys, CRLF; exit 0"),
}


def fixture_path(root: Path, name: str) -> Path:
    return Path(root) / "runs" / fixture_run_id(name) / "events.jsonl"


def write_fixtures(root: Path) -> dict[str, Path]:
    """(Re)write every fixture under ``root/runs/<run_id>/events.jsonl``."""
    written: dict[str, Path] = {}
    for name, (make, _) in FIXTURES.items():
        path = fixture_path(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        make(path, fixture_run_id(name))
        written[name] = path
    return written


def write_benchmark_log(path: Path, *, events: int = 100_000, seed: int = 7) -> int:
    """A realistic log of about ``events`` events (every kind, nested args, floats, unicode)."""
    rng = random.Random(seed)
    run_id = f"{rng.getrandbits(128):032x}"
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        i = 0
        while b.count < events - 60:
            b.step(commit=(i % 4 != 3), tools=rng.randint(1, 4))
            if i % 50 == 25:
                b.every_other_kind()
            i += 1
        b.complete_run(b.count)
    return b.count


def shuffled_keys(value: object, rng: random.Random) -> object:
    """``value`` with the keys of every object in a random order (a layout some writers have)."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled_keys(v, rng) for v in value]
    return value


def _runtime_float(value: object, rng: random.Random) -> object:
    if isinstance(value, float):  # mostly random.random()'s, one in five whole, one in fifty below 1e-4
        draw = rng.random()
        if draw < 0.02:
            return rng.uniform(1e-5, 1e-4)  # (a duration in seconds: repr writes 4.3e-05, JCS 0.000043)
        return rng.random() if draw < 0.8 else float(rng.randint(0, 1))
    if isinstance(value, dict):
        return {k: _runtime_float(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_runtime_float(v, rng) for v in value]
    return value


def write_runtime_floats(source: Path, target: Path, *, seed: int = 16) -> int:
    """``source``'s events with every payload float drawn again as a Python runtime spells floats (repr's
    16-17 significant digits, a whole float as ``2.0``, ``4.3e-05``), hashed and chained again, written as ``json.dumps``
    writes by default (``", "``, ASCII escapes), keys shuffled; returns the number of events."""
    rng = random.Random(seed)
    prev: str | None = None
    count = 0
    with open(source, "rb") as src, open(target, "w", encoding="ascii") as dst:
        for line in src:
            event = json.loads(line)
            event["payload"] = _runtime_float(event["payload"], rng)
            if prev is not None:
                event["prev_hash"] = prev
            del event["hash"]
            event["hash"] = prev = event_hash(event)
            dst.write(json.dumps(shuffled_keys(event, rng)) + "\n")
            count += 1
    return count
