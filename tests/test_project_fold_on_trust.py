"""The Python core's ``project`` of one large log in two processes gives the one-process report, byte for byte.

``project.fold_on_trust`` folds the log in this process with ``line_proof.trusted_analyze`` standing in for
``fastpath.fast_analyze`` while a worker proves the bytes it read (``line_proof.ProofTap``). Here: every
fixture, mutated and bit-flipped logs, a line too long to be proven, hostile lines the trusted fold meets
before the proof refuses them, and a log rewritten between the two reads, through real worker processes,
against the report of ``--jobs 1``; and the CLI on a log past the size that splits it.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import itertools
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from hardening_support import chain_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_edits import EDITS, edit_lines

from ract_cli.project import fold_on_trust
from ract_cli.project.fold import project_folded
from ract_cli.project.fold_on_trust import GAVE_UP, project_on_trust
from ract_cli.project.options import ProjectOptions
from ract_cli.project.projector import Projector
from ract_cli.project.report import project_file
from ract_cli.read import dialect, framing, line_proof, parallel
from ract_cli.read.event import BIG_LINE_BYTES
from ract_cli.read.line_proof import NotProven, ProofTap, lines_proven, range_proven, trusted_analyze
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import FIXTURES, fixture_path, write_benchmark_log

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PATHS = {name: fixture_path(ROOT / "fixtures", name) for name in FIXTURES}
SCHEMA = ProjectOptions().schema_version


@pytest.fixture(autouse=True)
def python_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python core; any log splits, and is read from the file (not from the bytes detecting its dialect
    read: a small log's, which no worker could read); pieces of a few lines, few in flight (both kinds of
    proving happen); every read's lines sent (``reads`` may have the fold prove them)."""
    monkeypatch.setenv("RACT_CORE", "python")
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(dialect, "_WHOLE_BYTES", 0)
    monkeypatch.setattr(line_proof, "PIECE_BYTES", 1500)
    monkeypatch.setattr(line_proof, "IN_FLIGHT", 2)
    monkeypatch.setattr(line_proof, "BEHIND", 10_000)


@pytest.fixture(params=["sent", "in the fold"])
def reads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every read's lines sent to a worker, or proven in the fold (``line_proof.BEHIND`` 0: only a line across
    two reads is sent). Returns which."""
    if request.param == "in the fold":
        monkeypatch.setattr(line_proof, "BEHIND", 0)
    return str(request.param)


def on_trust(path: Path) -> dict | str | None:
    """What ``project_on_trust`` answers (one worker): the projection as the report's JSON dict, ``GAVE_UP``, or
    None (not proven)."""
    answer = project_on_trust(ChainReader(path, schema_version=SCHEMA), ProjectOptions().max_items, jobs=2)
    return answer.report() if isinstance(answer, Projector) else answer


def folded_alone(path: Path) -> dict | None:
    projector = project_folded(ChainReader(path, schema_version=SCHEMA), ProjectOptions().max_items)
    return None if projector is None else projector.report()


def assert_alike(path: Path) -> None:
    """Two jobs give one job's report; the fold on trust answers the fold alone's projection, or that it gave up
    only where the fold alone gives up."""
    assert project_file(path, ProjectOptions(jobs=2)) == project_file(path, ProjectOptions(jobs=1))
    answer, alone = on_trust(path), folded_alone(path)
    if alone is not None:
        assert answer == alone or answer is None
    else:
        assert answer in (GAVE_UP, None)


def test_the_fixtures_answers(reads: str) -> None:
    """Each kind of answer, where it must be: a clean log projected on trust, a torn tail where the fold alone
    gives up, a tampered line not proven by a worker, or refused by the fold's own proof (which then gives up
    there, as the fold alone does)."""
    assert on_trust(FIXTURE_PATHS["completed"]) == folded_alone(FIXTURE_PATHS["completed"]) is not None
    assert on_trust(FIXTURE_PATHS["interrupted"]) == GAVE_UP and folded_alone(FIXTURE_PATHS["interrupted"]) is None
    assert on_trust(FIXTURE_PATHS["tampered"]) == (None if reads == "sent" else GAVE_UP)


def test_project_file_takes_the_answer_on_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=400)
    answers: list[object] = []

    def spy(*args: object, **kwargs: object) -> object:
        answers.append(project_on_trust(*args, **kwargs))  # type: ignore[arg-type]
        return answers[-1]

    monkeypatch.setattr(fold_on_trust, "project_on_trust", spy)
    report = project_file(path, ProjectOptions(jobs=2))
    assert len(answers) == 1 and isinstance(answers[0], Projector)
    assert report == project_file(path, ProjectOptions(jobs=1))


def test_an_error_on_proven_lines_is_raised(reads: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error the fold raises where every line was proven is the fold's own (the fold in one process raises
    it too): raised, never taken for an unproven line. (A line the fold proves is never unproven: it stops the
    fold there, every line before it proven, so that the error is raised then too.)"""
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=400)

    def failing(reader: ChainReader, max_items: int) -> None:
        project_folded(reader, max_items)
        raise RuntimeError("a fault of the fold")

    monkeypatch.setattr(fold_on_trust, "project_folded", failing)
    with pytest.raises(RuntimeError, match="a fault of the fold"):
        on_trust(path)
    lines = path.read_bytes().splitlines(keepends=True)
    line = lines[-5]
    at = line.index(b'"hash":"') + 8  # (one digit of its stored hash changed: a line the proof refuses)
    lines[-5] = line[:at] + (b"1" if line[at : at + 1] == b"0" else b"0") + line[at + 1 :]
    path.write_bytes(b"".join(lines))
    if reads == "sent":
        assert on_trust(path) is None
    else:
        with pytest.raises(RuntimeError, match="a fault of the fold"):
            on_trust(path)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_fixture(name: str, reads: str) -> None:
    assert_alike(FIXTURE_PATHS[name])


def test_a_clean_log_is_answered_on_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=400)
    answer = on_trust(path)
    assert isinstance(answer, dict) and answer == folded_alone(path)
    assert answer["events"] == len(path.read_bytes().splitlines())
    monkeypatch.setattr(dialect, "_WHOLE_BYTES", 1 << 20)  # read whole while detecting: no descriptor to share
    assert on_trust(path) is None


@pytest.mark.parametrize("edit", EDITS)
def test_edited_logs(edit: str, reads: str, tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    write_benchmark_log(source, events=200)
    lines = source.read_bytes().splitlines(keepends=True)
    for seed in range(3):
        edited = list(lines)
        edit_lines(edited, random.Random(seed), edit)
        path = tmp_path / f"{edit}-{seed}.jsonl"
        path.write_bytes(b"".join(edited))
        assert_alike(path)


def test_a_hash_that_does_not_match_is_not_proven(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=200)
    lines = path.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    event = orjson.loads(lines[middle])
    event["timestamp_ns"] += 1  # (the stored hash, and the next line's prev_hash, now name other bytes)
    lines[middle] = orjson.dumps(event, option=orjson.OPT_SORT_KEYS) + b"\n"
    path.write_bytes(b"".join(lines))
    assert on_trust(path) is None
    assert project_file(path, ProjectOptions(jobs=2)) == project_file(path, ProjectOptions(jobs=1))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_byte_edits(seed: int, reads: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    rng = random.Random(seed)
    raw = bytearray(FIXTURE_PATHS[rng.choice(sorted(FIXTURES))].read_bytes())
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(raw))
        op = rng.choice(["flip", "delete", "newline", "crlf"])
        if op == "flip":
            raw[i] ^= 1 << rng.randrange(8)
        elif op == "delete":
            del raw[i]
        elif op == "newline":
            raw[i:i] = b"\n"
        else:
            raw[i:i] = b"\r"
    path = tmp_path_factory.mktemp("edited") / "events.jsonl"
    path.write_bytes(bytes(raw))
    assert_alike(path)


# Lines hashed as written whose values only the proof refuses: the trusted fold meets them first (a clock
# compared with a number, an id or a kind used as a key raise in it; a payload it may fold), so the fold on trust
# gives no answer and the log is projected the ordinary way.
HOSTILE = {
    "clock as text": lambda e: {**e, "timestamp_ns": "soon"},
    "id as an object": lambda e: {**e, "id": {"a": 1}},
    "kind as a list": lambda e: {**e, "kind": ["tool.invocation.pre"]},
    "payload as a string": lambda e: {**e, "payload": "x"},
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_lines_the_fold_meets_first(name: str, reads: str, tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    write_benchmark_log(source, events=120)
    events = [orjson.loads(line) for line in source.read_bytes().splitlines()]
    middle = len(events) // 2
    events[middle] = HOSTILE[name](events[middle])
    path = tmp_path / "events.jsonl"
    path.write_bytes(chain_events(events))  # (hashed as written: only the proof of its values refuses it)
    assert on_trust(path) == (None if reads == "sent" else GAVE_UP)  # (the fold proves it: it stops there)
    assert project_file(path, ProjectOptions(jobs=2)) == project_file(path, ProjectOptions(jobs=1))


@pytest.mark.parametrize("piece_bytes", [1500, 1 << 30])  # (the second: the lines before the long line sent with it)
def test_a_line_too_long_to_prove_is_left_out_of_every_piece(
    piece_bytes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tap never holds the long line, and cuts the pieces around it at the right offsets: every other
    piece a worker reads again hashes to what the tap read (a wrong offset would be ``NotProven``)."""
    source = tmp_path / "source.jsonl"
    write_benchmark_log(source, events=200)
    lines = source.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    long_line = b"x" * (BIG_LINE_BYTES + (2 << 20)) + b"\n"
    data = b"".join([*lines[:middle], long_line, *lines[middle:]])
    long_from = data.index(long_line)
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    rng = random.Random(5)
    monkeypatch.setattr(line_proof, "IN_FLIGHT", 10_000)  # every piece to the worker, none proven here
    monkeypatch.setattr(line_proof, "PIECE_BYTES", piece_bytes)
    with parallel.make_pool(1) as pool, path.open("rb") as log:
        tap = ProofTap(pool, SCHEMA)
        tap.opened(log)
        at = 0
        while at < len(data):
            # reads that end inside lines, short ones but across the long line
            size = 1 << 20 if long_from <= at < long_from + len(long_line) else rng.choice([1, 7, 300, 5000])
            tap(data[at : at + size])
            assert tap.open_bytes <= BIG_LINE_BYTES + 2  # (never the long line whole)
            at += size
        tap(b"")
        answered_by_the_worker(tap)
        tap.finish()
        # the tap read a tampered line, the file holds the valid one when the worker reads it: the worker proves
        # its bytes, but they are not the bytes read here
        tampered = bytearray(data)
        tampered[data.index(lines[-3]) + 100] ^= 1
        tap = ProofTap(pool, SCHEMA)
        tap.opened(log)
        tap(bytes(tampered))
        tap(b"")
        answered_by_the_worker(tap)
        with pytest.raises(NotProven):
            tap.finish()


def answered_by_the_worker(tap: ProofTap) -> None:
    """Wait until the worker answered every piece sent (``finish`` would prove those it had not started here)."""
    assert tap.waiting
    concurrent.futures.wait([future for future, _, _ in tap.waiting])


class _Recording(concurrent.futures.ThreadPoolExecutor):
    """One thread that runs nothing until ``release`` (a worker behind on every piece); records each piece sent."""

    def __init__(self) -> None:
        super().__init__(1)
        self.gate = threading.Event()
        super().submit(self.gate.wait)
        self.pieces: list[tuple[int, int]] = []  # (offset, size) of each piece sent

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.pieces.append((args[1], args[2]))  # (range_proven's start and size)
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("behind", [2, 10_000])
def test_reads_proven_in_the_fold_and_pieces_sent_tile_the_log(
    behind: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once ``BEHIND`` pieces wait unanswered, or the pieces waiting hold the bytes left to read, the fold proves
    each further read's lines itself: from then on every read is (nothing is answered here), and the pieces
    sent (each line across two reads among them) and the blocks the fold proves cover every line once; a worker
    then proves each piece at its offset (a wrong one would not hash to the bytes read: ``NotProven``)."""
    monkeypatch.setattr(line_proof, "BEHIND", behind)
    monkeypatch.setattr(line_proof, "PIECE_BYTES", 1)  # (each read's lines a piece of their own)
    monkeypatch.setattr(line_proof, "IN_FLIGHT", 10_000)
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=300)
    data = path.read_bytes()
    size = len(data) // 12 + 17  # (reads that end inside lines)
    with _Recording() as pool, path.open("rb") as log:
        tap = ProofTap(pool, SCHEMA)
        tap.opened(log)
        in_fold: list[tuple[int, int]] = []  # the blocks the fold proves (file offsets)
        for base in range(0, len(data), size):
            chunk = data[base : base + size]
            tap(chunk)
            if tap.proven_in_fold(base):
                own = 0 if base == 0 or data[base - 1 : base] == b"\n" else chunk.index(b"\n") + 1
                in_fold.append((base + own, base + chunk.rindex(b"\n") + 1))
        tap(b"")
        assert 0 < len(in_fold) < len(range(0, len(data), size))
        assert in_fold[-1][1] == len(data)  # (from the first read the fold proves on, every read)
        first = next(i for i, (at, _) in enumerate(pool.pieces) if at >= in_fold[0][0])
        assert all(piece_size < size for _, piece_size in pool.pieces[first:])  # (a line across two reads alone)
        spans = sorted(in_fold + [(at, at + piece_size) for at, piece_size in pool.pieces])
        assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        assert spans[-1][1] == len(data)
        pool.gate.set()
        tap.finish()


def test_a_log_of_many_reads_proven_in_the_fold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log of four reads, every read's lines proven in the fold: a clean log is projected as by the fold alone;
    a line changed inside a read stops the fold (it gives up there, as alone); a line across two reads, sent to
    the worker, is not proven."""
    monkeypatch.setattr(line_proof, "BEHIND", 0)
    source = tmp_path / "source.jsonl"
    write_benchmark_log(source, events=7_000)
    data = source.read_bytes()
    assert len(data) > 3 * framing.BLOCK_BYTES
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    answer = on_trust(path)
    assert isinstance(answer, dict) and answer == folded_alone(path)
    for at, expected in ((framing.BLOCK_BYTES + 1000, GAVE_UP), (3 * framing.BLOCK_BYTES, None)):
        start = data.rindex(b"\n", 0, at) + 1
        flipped = data.index(b'"hash":"', start) + 8  # (a digit of the stored hash of the line holding ``at``)
        assert flipped < data.index(b"\n", start)
        edited = bytearray(data)
        edited[flipped] = ord("1") if data[flipped : flipped + 1] == b"0" else ord("0")
        path.write_bytes(bytes(edited))
        if expected is None:  # (the line holds the read's end: the worker proves it)
            assert start < at and data.index(b"\n", start) >= at
        assert on_trust(path) == expected
        assert_alike(path)


def test_lines_proven_takes_the_body_the_fold_takes() -> None:
    line = orjson.loads(FIXTURE_PATHS["completed"].read_bytes().splitlines()[0])
    body = orjson.dumps(line, option=orjson.OPT_SORT_KEYS)
    assert lines_proven(body + b"\n", SCHEMA) and lines_proven(body + b"\r\n", SCHEMA)
    assert lines_proven(body + b"\n" + body + b"\r\n", SCHEMA)
    assert not lines_proven(body, SCHEMA)  # no end: never a whole line
    assert not lines_proven(body + b"\n\n", SCHEMA)  # an empty line is not an event
    assert not lines_proven(body[:-1] + b" \n", SCHEMA)  # (a byte changed: the hash no longer matches)
    assert lines_proven(b"", SCHEMA)
    assert trusted_analyze(body, SCHEMA) == (line, line["hash"])
    for not_an_answer in (b"[1]", b"{", b'{"hash":1}', b"x" * (BIG_LINE_BYTES + 1)):
        assert trusted_analyze(not_an_answer, SCHEMA) is None


def test_range_proven_reads_the_open_file_and_hashes_what_it_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    data = FIXTURE_PATHS["completed"].read_bytes()
    path.write_bytes(data)
    second = data.index(b"\n") + 1
    third = data.index(b"\n", second) + 1
    with path.open("rb") as log:
        st = os.fstat(log.fileno())
        source = (log.fileno(), st.st_dev, st.st_ino)
        path.unlink()  # (by its descriptor: the path no longer matters)
        expected = (True, hashlib.sha256(data[second:third]).digest())
        assert range_proven(source, second, third - second, SCHEMA) == expected
        assert range_proven(source, 0, len(data) - 1, SCHEMA)[0] is False  # (the last line cut short)
        assert range_proven((log.fileno(), st.st_dev, st.st_ino + 1), 0, len(data), SCHEMA) == (False, b"")
    assert range_proven(source, 0, len(data), SCHEMA) == (False, b"")  # (closed: not that file any more)


@pytest.mark.parametrize("swap", ["removed", "renamed", "a FIFO", "another log"])
def test_the_workers_read_the_file_the_reader_opened_whatever_becomes_of_its_path(swap: str, tmp_path: Path) -> None:
    """A worker opening the path again read another file (a rotated log's successor, nothing) or blocked on
    a FIFO forever; it reads the reader's own descriptor."""
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=300)
    data = path.read_bytes()
    with parallel.make_pool(1) as pool, path.open("rb") as log:
        tap = ProofTap(pool, SCHEMA)
        tap.opened(log)
        if swap == "removed":
            path.unlink()
        elif swap == "renamed":
            path.rename(tmp_path / "events.jsonl.1")
        elif swap == "a FIFO":
            path.unlink()
            os.mkfifo(path)
        else:
            path.unlink()
            path.write_bytes(b"{}\n" * len(data))
        tap(data)
        tap(b"")
        answered_by_the_worker(tap)
        tap.finish()


@pytest.fixture(scope="module")
def large_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A log past ``read.parallel.PARALLEL_MIN_BYTES`` (no patch reaches a subprocess)."""
    path = tmp_path_factory.mktemp("large") / "events.jsonl"
    events = write_benchmark_log(path, events=17_000)
    assert path.stat().st_size > 8 << 20
    return path, events


def _project(path: Path, jobs: str, *, max_descriptors: int | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "ract_cli", "trace", "project", "--format", "json", "--jobs", jobs, str(path)]
    if max_descriptors is not None:  # (the shell's ulimit, not a preexec_fn: this process may run threads)
        argv = ["sh", "-c", f'ulimit -n {max_descriptors} && exec "$@"', "sh", *argv]
    return subprocess.run(argv, capture_output=True, env={**os.environ, "RACT_CORE": "python"}, timeout=120)


def test_the_cli_on_a_log_large_enough_to_split(large_log: tuple[Path, int]) -> None:
    path, events = large_log
    one, two = _project(path, "1"), _project(path, "2")
    assert one.returncode == 0 and orjson.loads(one.stdout)["events"] == events
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)


def test_workers_that_cannot_all_start_do_not_hold_the_exit(large_log: tuple[Path, int]) -> None:
    """Few descriptors: the pool starts one worker of three and fails on the next; the fold on trust is
    dropped, the started worker stopped (not waited for at exit), the log projected alone."""
    path, _ = large_log

    one = _project(path, "1")
    four = _project(path, "4", max_descriptors=16)
    assert (four.returncode, four.stdout) == (one.returncode, one.stdout)
