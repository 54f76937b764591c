"""Shared helpers of the hardening tests (issue 9): small logs, a strict
independent parser, and the list of ``ract trace`` commands that exist.

Nothing here mocks our own I/O: logs are real files written by
``EventWriter``; commands run in-process through ``ract_cli.cli.app.main``
or as real subprocesses.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

ROOT = Path(__file__).resolve().parent.parent
RACT = str(ROOT / ".venv" / "bin" / "ract") if (ROOT / ".venv" / "bin" / "ract").exists() else "ract"
PYTHON = sys.executable
LONG = os.environ.get("RACT_LONG") == "1"

RUN_ID = "5eed" * 8
BASE_TS = 1_764_000_000_000_000_000


def write_small_log(path: Path, *, run_id: str = RUN_ID, extra: dict | None = None) -> bytes:
    """An 8-event completed run, compact canonical lines, with tricky values.

    The payloads carry exponent floats, unicode, control characters (written as
    ``\\u00xx`` escapes), nested arrays, booleans, nulls, negative and 2^53+
    integers, so flips and mutations hit every token type of JSON.
    """
    ids = iter(f"{i:032x}" for i in range(0xA0, 0xB0))
    ts = iter(range(BASE_TS, BASE_TS + 100 * 10**9, 10**9))
    step = "5" * 32
    odd = {
        "tiny": 1e-7,
        "big": 1e21,
        "neg": -2.5,
        "huge_int": 2**60 + 7,
        "ctl": 'a\u001fb\tc"\\',
        "uni": "ﬀ é 𝄞 \u2028",
        "list": [True, False, None, [0, -1]],
        **(extra or {}),
    }
    with EventWriter(
        path, run_id=run_id, fsync=FsyncPolicy.NEVER, new_id=lambda: next(ids), clock=lambda: next(ts)
    ) as w:
        run = w.append(
            "run.started",
            {
                "intent_id": "1" * 32,
                "compiler_version": "0.4.0",
                "coverage_gate": 0.85,
                "predicate_count": 2,
                "required_count": 1,
            },
        )
        started = w.append(
            "step.started",
            {"parent_snapshot": "c" * 40, "branch": "rootact/step/x", "timeout_seconds": 600},
            step_id=step,
        )
        call = w.append(
            "tool.called", {"tool": "pytest", "arguments": {"argv": ["pytest", "-x"], "odd": odd}}, step_id=step
        )
        w.append(
            "tool.result", {"tool": "pytest", "ok": False, "duration_ns": 12_345}, step_id=step, parent_id=call["id"]
        )
        prompt = w.append(
            "prompt.sent",
            {"provider": "anthropic", "response_shape": "action", "intent_id": "1" * 32, "prompt_chars": 512},
            step_id=step,
        )
        w.append(
            "response.received",
            {"provider": "anthropic", "intent_id": "1" * 32, "response_type": "tool_use", "preview": "plan: é"},
            step_id=step,
            parent_id=prompt["id"],
        )
        w.append(
            "step.committed",
            {
                "outcome": "COMMITTED",
                "parent_snapshot_before": "c" * 40,
                "parent_snapshot_after": "d" * 40,
                "branch": "rootact/step/x",
                "reason": "ok",
            },
            step_id=step,
            parent_id=started["id"],
        )
        w.append(
            "run.completed",
            {"final_decision": "accept", "duration_ns": 7 * 10**9, "event_count": 8},
            parent_id=run["id"],
        )
    return path.read_bytes()


# --- an independent, strict reading of a log --------------------------------


class Unparseable(Exception):
    pass


def _pairs(pairs: list) -> tuple:
    # Keep every member in file order: a duplicate key or a reorder is visible.
    return ("obj", tuple((k, v) for k, v in pairs))


def _typed(value: object) -> object:
    """A structure where equal means identical JSON values, types included."""
    if isinstance(value, tuple) and value and value[0] == "obj":
        return ("obj", tuple(sorted((k, _typed(v)) for k, v in value[1])))
    if isinstance(value, list):
        return ("arr", tuple(_typed(v) for v in value))
    if isinstance(value, bool) or value is None:
        return ("lit", repr(value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", repr(value))  # repr keeps -0.0 apart from 0.0
    return ("str", value)


def strict_values(data: bytes) -> tuple:
    """Every line's parsed value (typed), independent of ract's own reader.

    Raises ``Unparseable`` for anything that is not strict JSON text: invalid
    UTF-8, NaN/Infinity, a duplicate key is kept visible as two members.
    """
    lines = data.split(b"\n")
    out = []
    for i, line in enumerate(lines):
        if i == len(lines) - 1 and line == b"":
            break  # the final newline
        try:
            text = line.decode("utf-8", "strict")
            value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise Unparseable(f"line {i + 1}: {exc}") from None
        keys = [k for k, _ in value[1]] if isinstance(value, tuple) else None
        if keys is not None and len(keys) != len(set(keys)):
            raise Unparseable(f"line {i + 1}: duplicate key")
        out.append(_typed(value))
    if data and not data.endswith(b"\n"):
        out.append(("no-final-newline",))
    return tuple(out)


def _no_constant(name: str) -> object:
    raise ValueError(name)


def verify_lie(mutated: bytes, written: list[bytes]) -> str | None:
    """Why a verify PASS of ``mutated`` would be a lie, or None when it is not.

    A PASS is honest only for the parsed values of a prefix of one of the logs
    the writer wrote: usually the one that was mutated, but a line spliced in
    from another can leave exactly a prefix of *that* log (a valid log of
    another run).
    """
    try:
        values = strict_values(mutated)
    except Unparseable as exc:
        return f"verify passed bytes that are not strict JSON ({exc})"
    values = tuple(v for v in values if v != ("no-final-newline",))
    if not any(values == strict_values(log)[: len(values)] for log in written):
        return "verify passed values that are not a prefix of any written log"
    return None


# --- the commands that exist --------------------------------------------------


def trace_commands() -> list[str]:
    """Names of every ``ract trace`` command registered right now."""
    from ract_cli.cli import app as app_module

    app_module._register_commands()
    names = []
    for info in app_module.trace_app.registered_commands:
        name = info.name or (
            info.callback.__name__.replace("_command", "").replace("_", "-") if info.callback else None
        )
        if name:
            names.append(name)
    return sorted(set(names))


#: How to run each command read-only over one log path (never rewriting it).
_READ_ONLY_ARGS: dict[str, list[str]] = {
    "verify": [],
    "replay": [],
    "project": [],
    "grep": [],
    "repair": ["--check"],
    "checkpoint": ["--key", str(ROOT / "tests/data/proofs/PeterNeumann.skey"), "--origin", "example.com/ract/test"],
    "prove": ["--line", "1", "--checkpoint", str(ROOT / "tests/data/proofs/one-event.checkpoint")],
    "verify-proof": ["--vkey", str(ROOT / "tests/data/proofs/PeterNeumann.vkey")],
    "export": ["--format", "otlp-json", "--output", "-"],  # stdout only: the parquet form writes a directory
    "sql": ["SELECT count(*) AS n FROM events"],
    "diff": [],  # the input against itself (command_argv): its verdict is the input's own
}
#: commands that read no log (the hardening tests have nothing to feed them)
NOT_ON_LOGS = frozenset({"keygen"})
#: commands that read only RACT run logs and take no --dialect (docs/checkpoints.md): a journal given to them
#: is refused as a log that does not verify
RACT_ONLY = frozenset({"checkpoint", "prove", "verify-proof"})


def command_argv(command: str, path: str | os.PathLike[str], *extra: str) -> list[str]:
    """``trace <command> [read-only flags] <path>``: argv that never modifies ``path``.

    ``diff`` compares the input with itself, so its exit code is the input's verdict.
    """
    if command == "diff":
        return ["trace", "diff", *extra, str(path), str(path)]
    return ["trace", command, *_READ_ONLY_ARGS.get(command, []), *extra, str(path)]


#: commands whose exit code judges the input against another file (a fixed test checkpoint; the input read as a
#: proof), not the input's own verdict: run for robustness everywhere, left out of the verdict comparisons
NOT_THE_INPUTS_VERDICT = frozenset({"prove", "verify-proof"})


def verdict_commands() -> list[str]:
    """Read-only commands whose exit code is the input log's own verdict (as verify's)."""
    return [c for c in read_only_commands() if c not in NOT_THE_INPUTS_VERDICT]


def read_only_commands() -> list[str]:
    """Commands safe to run over any input file without changing it."""
    return [c for c in trace_commands() if c in _READ_ONLY_ARGS]


class _Stream(io.TextIOWrapper):
    """A text stream with a ``.buffer``, as ``sys.stdout`` has (grep writes raw bytes to it)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)

    def value(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8", "replace")


@contextlib.contextmanager
def _captured():
    out, err = _Stream(), _Stream()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def run_inprocess(argv: list[str]) -> tuple[int, str, str]:
    """Run ``ract`` in-process; an uncaught exception propagates to the test."""
    from ract_cli.cli.app import main

    with _captured() as (out, err):
        code = main(argv)
    return code, out.value(), err.value()


def run_launcher(argv: list[str]) -> tuple[int, str, str]:
    """Run the ``ract`` executable's entry point (``cli/launch.py``: its quick paths, else the CLI) in-process."""
    from ract_cli.cli.launch import main

    with _captured() as (out, err):
        code = main(argv)
    return code, out.value(), err.value()


def run_subprocess(
    argv: list[str], *, timeout: float = 60, env: dict | None = None, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess:
    """Run the installed ``ract`` entry point; a hang fails through ``timeout``."""
    full_env = {**os.environ, "COLUMNS": "120", **(env or {})}
    return subprocess.run([RACT, *argv], capture_output=True, timeout=timeout, env=full_env, cwd=cwd)


def assert_no_traceback(stderr: bytes | str, context: object = "") -> None:
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    assert "Traceback (most recent call last)" not in text, f"traceback for {context}:\n{text[-3000:]}"


def chain_events(events: list[dict], *, break_at: int | None = None) -> bytes:
    """Re-chain and re-hash events (genesis first) into log bytes, as a foreign writer would.

    Uses the reference canonicalizer with a raised recursion limit, so it can
    write values nested deeper than ``EventWriter`` ever writes. ``break_at``:
    that event's ``prev_hash`` names no event (a chain break there; the rest
    links on to it).
    """
    import hashlib

    from ract_cli.format.canonical import jcs_exact
    from ract_cli.format.model import GENESIS_HASH

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20_000))
    try:
        prev, out = GENESIS_HASH, []
        for i, event in enumerate(events):
            event = {k: v for k, v in event.items() if k != "hash"}
            event["prev_hash"] = "f" * 64 if i == break_at else prev
            event["hash"] = prev = hashlib.sha256(jcs_exact(event)).hexdigest()
            out.append(jcs_exact(event) + b"\n")
        return b"".join(out)
    finally:
        sys.setrecursionlimit(old)


def log_events(data: bytes) -> list[dict]:
    """The events of a (valid) log's bytes, parsed with exact integers."""
    from ract_cli.read.json_rules import parse_exact

    return [parse_exact(line) for line in data.splitlines()]


class Hang(Exception):
    """A command that did not answer within its time limit."""


@contextlib.contextmanager
def hang_guard(seconds: float, what: object = ""):
    """Fail (not hang) when the block runs longer than ``seconds``."""

    def alarm(signum, frame):
        raise Hang(f"no answer within {seconds}s: {what!r}"[:500])

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def on_pty(
    command: list[str],
    *,
    stdin: bool = False,
    stdout: bool = True,
    stderr: bool = True,
    size: tuple[int, int] | None = (200, 60),
    raw: bool = True,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> tuple[int, bytes, bytes]:
    """Run ``command`` with some of its standard streams on one pseudo-terminal: the tests' one pty harness.

    ``stdin``/``stdout``/``stderr``: which streams are on the terminal (stdin is otherwise
    /dev/null, stdout a pipe read alongside, stderr a pipe). ``size``: (columns, rows) set on the
    terminal, or None; ``raw``: output post-processing off, so a bare ``\\r`` in what is shown
    is the program's own. Returns (exit code, what stdout's pipe got, what the terminal showed),
    read until every writer of each is gone; a run past ``timeout`` is a hang (AssertionError).
    """
    master, slave = os.openpty()
    if raw:
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST  # no \n -> \r\n translation
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    if size is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen(
        command,
        stdin=slave if stdin else subprocess.DEVNULL,
        stdout=slave if stdout else subprocess.PIPE,
        stderr=slave if stderr else subprocess.PIPE,
        env=env,
        cwd=cwd or ROOT,
        close_fds=True,
        start_new_session=True,
    )
    os.close(slave)
    shown, out = bytearray(), bytearray()
    reading = {master: shown}
    if proc.stdout is not None:
        reading[proc.stdout.fileno()] = out
    deadline = time.monotonic() + timeout
    try:
        while reading:
            if time.monotonic() > deadline:
                raise AssertionError(f"hang on a terminal: {command}")
            ready, _, _ = select.select(list(reading), [], [], 0.2)
            for fd in ready:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:  # EIO: every writer of the terminal is gone
                    chunk = b""
                if chunk:
                    reading[fd] += chunk
                else:
                    del reading[fd]
            if not ready and proc.poll() is not None and master in reading:
                if not select.select([master], [], [], 0.05)[0]:
                    del reading[master]  # exited, nothing left to drain (the pty may not say EOF)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    code = proc.wait(timeout=30)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return code, bytes(out), bytes(shown)


def run_on_pty(
    argv: list[str],
    *,
    columns: int = 200,
    rows: int = 60,
    columns_env: bool = True,
    timeout: float = 60,
    cwd: Path | None = None,
) -> tuple[int, bytes]:
    """Run ``ract argv`` with stdin/stdout/stderr on one pseudo-terminal; return (exit code, bytes shown).

    The terminal is ``columns`` x ``rows``; ``columns_env=False`` leaves COLUMNS/LINES out of the
    environment, so the program must take its width from the terminal itself.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", FORCE_COLOR="1")
    if columns_env:
        env.update(COLUMNS=str(columns), LINES=str(rows))
    code, _, shown = on_pty([RACT, *argv], stdin=True, size=(columns, rows), env=env, cwd=cwd, timeout=timeout)
    return code, shown


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs, by /proc (a pool's own thread may have reaped a worker, which its ``Process``
    object cannot tell; a worker orphaned to init is reaped by it: no zombie left to see)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ")[-1][:1] != b"Z"
    except FileNotFoundError:
        return False
