"""JSONTestSuite ``test_parsing`` corpus as lines of an otherwise valid log (issue 9).

Each corpus file is placed between two valid chained events. A file that
holds newlines becomes several lines; each such line is judged on its own.
The expected verdict of every line comes from an independent oracle, the
rules of SPEC §2.1-2.2 written out with Python's ``json``:

* not strict JSON (syntax error, invalid UTF-8, BOM, NaN/Infinity, a lone
  surrogate, an integer outside int64, a number that overflows a double, a
  blank line, nesting too deep to read) -> ``MALFORMED_LINE``; a duplicate
  key -> ``DUPLICATE_KEY``;
* JSON but not an object (array, string, number, literal) -> ``MALFORMED_LINE``;
* an object -> ``ENVELOPE_ERROR`` (no corpus object has the nine envelope keys).

So every ``n_`` file gives a malformed finding, every ``y_``/``i_`` file the
finding the envelope rules decide, and every log exits 1. Nothing raises.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from hardening_support import (
    RACT_ONLY,
    assert_no_traceback,
    command_argv,
    read_only_commands,
    run_inprocess,
    run_subprocess,
    write_small_log,
)

from ract_cli.read.framing import split_line_ending
from ract_cli.read.line import analyze_line
from ract_cli.read.reader import ChainReader
from ract_cli.verify.verifier import verify_file

CORPUS = Path(__file__).parent / "data" / "json-parsing" / "test_parsing"
FILES = sorted(p.name for p in CORPUS.iterdir())
MALFORMED = {"MALFORMED_LINE", "DUPLICATE_KEY"}
SEED = int(os.environ.get("RACT_SEED", "20261129"))


def test_corpus_is_complete() -> None:
    assert len(FILES) == 318
    assert sum(f.startswith("n_") for f in FILES) == 188
    assert (CORPUS.parent / "LICENSE").is_file() and (CORPUS.parent / "README.md").is_file()


class _Dup(ValueError):
    pass


def _pairs(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _Dup(keys)
    return dict(pairs)


def _int(text: str) -> int:
    n = int(text)
    if not -(2**63) <= n < 2**63:
        raise ValueError("int64")
    return n


def _float(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise ValueError("overflows a double")
    return x


def _const(name: str) -> object:
    raise ValueError(name)


def _has_surrogate(value: object) -> bool:
    stack = [value]  # iterative: corpus nesting is deeper than Python's recursion limit
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def oracle(body: bytes) -> str:
    """The finding code SPEC §2.1-2.2 gives this line body (line ending removed)."""
    try:
        text = body.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float, parse_constant=_const)
    except _Dup:
        return "DUPLICATE_KEY"
    except (ValueError, RecursionError):
        return "MALFORMED_LINE"
    if not isinstance(value, dict) or _has_surrogate(value):
        return "MALFORMED_LINE"
    return "ENVELOPE_ERROR"


def corpus_log(name: str, dest: Path, first: bytes, last: bytes) -> tuple[Path, list[bytes]]:
    """A log: valid event, the corpus file's bytes, the next valid event. Returns the corpus line bodies."""
    content = (CORPUS / name).read_bytes()
    path = dest / f"{name}.jsonl"
    path.write_bytes(first + content + b"\n" + last)
    bodies = [split_line_ending(raw)[0] for raw in (content + b"\n").splitlines(keepends=True)]
    return path, bodies


@pytest.fixture(scope="module")
def valid_lines(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    lines = write_small_log(tmp_path_factory.mktemp("corpus") / "base.jsonl").splitlines(keepends=True)
    return lines[0], lines[1]


@pytest.fixture(scope="module")
def corpus_logs(tmp_path_factory: pytest.TempPathFactory, valid_lines: tuple[bytes, bytes]) -> dict:
    dest = tmp_path_factory.mktemp("corpus-logs")
    return {name: corpus_log(name, dest, *valid_lines) for name in FILES}


@pytest.mark.parametrize("name", FILES)
def test_corpus_line_in_log(name: str, corpus_logs: dict) -> None:
    path, bodies = corpus_logs[name]
    expected = [oracle(b) for b in bodies]
    if name.startswith("n_"):
        # an n_ file is not JSON: at least one of its lines is malformed
        assert MALFORMED & set(expected), (name, expected)
    reader = ChainReader(path)
    events = [ev.line for ev in reader]
    last_line = len(bodies) + 2
    assert events == [1, last_line], (name, events)  # only the two real events are usable
    for i, code in enumerate(expected, start=2):
        codes = {f.code for f in reader.findings if f.line == i and f.severity == "error"}
        assert codes == {code}, f"{name} line {i}: expected {code}, got {codes} ({bodies[i - 2][:80]!r})"
    # the surrounding events are untouched; only end-of-file warnings besides
    assert not [f for f in reader.findings if f.line in (1, last_line) and f.severity == "error"]
    assert reader.exit_code == 1
    assert verify_file(path).exit_code == 1


@pytest.mark.parametrize("name", FILES)
def test_corpus_file_as_bare_line(name: str) -> None:
    """``analyze_line`` on the raw file body: never raises, judged by the same oracle."""
    body = (CORPUS / name).read_bytes()
    if b"\n" in body:
        pytest.skip("holds a newline: judged line by line in test_corpus_line_in_log")
    result = analyze_line(split_line_ending(body)[0])
    assert result.event is None
    assert {p.code for p in result.problems} == {oracle(split_line_ending(body)[0])}


def test_corpus_through_every_command_inprocess(corpus_logs: dict) -> None:
    """Every read-only command over the corpus logs: no exception, exit 1 (tampered) every time.

    Commands taking many paths get all 318 logs in one call; single-path
    commands get a seeded sample of 40 plus every file that holds a newline.
    """
    commands = read_only_commands()
    assert "verify" in commands
    rng = random.Random(SEED)
    sample = sorted(set(rng.sample(FILES, 40)) | {n for n in FILES if b"\n" in (CORPUS / n).read_bytes()})
    print(f"seed={SEED} commands={commands}")
    for command in commands:
        paths = [str(corpus_logs[name][0]) for name in FILES]
        code, _out, err = run_inprocess(command_argv(command, paths[0], *paths[1:]))
        assert_no_traceback(err, command)
        if code == 2 and ("extra argument" in err or "unexpected" in err.lower()):
            for name in sample:  # one path per call
                path, _ = corpus_logs[name]
                code, _out, err = run_inprocess(command_argv(command, path))
                assert_no_traceback(err, (command, name))
                assert code == 1, (command, name, code, err[-500:])
        else:
            assert code == 1, (command, code, err[-1000:])


def test_corpus_through_cli_subprocess(corpus_logs: dict) -> None:
    """One real ``ract trace verify`` over all 318 logs: per-file exit 1, no traceback."""
    paths = [str(corpus_logs[name][0]) for name in FILES]
    proc = run_subprocess(["trace", "verify", "--format", "json", *paths], timeout=120)
    assert_no_traceback(proc.stderr, "verify corpus")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert len(report["files"]) == len(FILES)
    assert all(f["exit_code"] == 1 and not f["ok"] for f in report["files"])
    text = run_subprocess(["trace", "verify", *paths], timeout=120)
    assert_no_traceback(text.stderr, "verify corpus text")
    assert text.returncode == 1 and b"PASS" not in text.stderr


JOURNAL = Path(__file__).resolve().parent.parent / "fixtures" / "journals" / "accepted.jsonl"


@pytest.mark.skipif(not JOURNAL.exists(), reason="no Raxol journal fixtures yet")
def test_corpus_in_a_raxol_journal(tmp_path: Path) -> None:
    """The same corpus as line 2 of a Raxol journal (SPEC §8): malformed lines are malformed (exit 1);
    an object that is not a record is a CONTRACT_VIOLATION; nothing raises, in any command."""
    from ract_cli.verify.verifier import VerifyOptions

    records = JOURNAL.read_bytes().splitlines(keepends=True)
    paths = []
    for name in FILES:
        content = (CORPUS / name).read_bytes()
        path = tmp_path / f"{name}.journal.jsonl"
        path.write_bytes(records[0] + content + b"\n" + b"".join(records[1:]))
        paths.append(path)
        bodies = [split_line_ending(raw)[0] for raw in (content + b"\n").splitlines(keepends=True)]
        report = verify_file(path, VerifyOptions(dialect="raxol"))
        for i, body in enumerate(bodies, start=2):
            expected = oracle(body)
            expected = "CONTRACT_VIOLATION" if expected == "ENVELOPE_ERROR" else expected
            codes = {f.code for f in report.findings if f.line == i and f.severity == "error"}
            assert codes == {expected}, (name, i, codes)
        worst = {oracle(b) for b in bodies}
        assert int(report.exit_code) == (1 if worst & MALFORMED else 3), (name, report.exit_code)
    for command in read_only_commands():
        if command == "repair" or command in RACT_ONLY:
            continue  # repair refuses every journal (SPEC §8): covered by the raxol tests; RACT_ONLY take no --dialect
        code, _out, err = run_inprocess(command_argv(command, paths[0], *map(str, paths[1:]), "--dialect", "raxol"))
        assert_no_traceback(err, command)
        if code == 2 and "extra argument" in err:
            for path in paths[::20]:
                code, _out, err = run_inprocess(command_argv(command, path, "--dialect", "raxol"))
                assert_no_traceback(err, (command, path.name))
                assert code in (1, 3), (command, path.name, code)
        else:
            assert code == 1, (command, code, err[-500:])
