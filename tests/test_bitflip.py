"""Bit-flip sweep (issue 9): any flip that changes a parsed value fails verify.

For each flip that still verifies clean (exit 0), the test proves with an
independent strict JSON reading (``hardening_support.strict_values``) that
every parsed value of the log is identical: that is the only exemption.
``make test`` runs a seeded sample; ``make sweep`` (``RACT_LONG=1``) every
bit of every byte. The engine is ``scripts/sweep.py``.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
from hardening_support import LONG, ROOT, strict_values, write_small_log

sys.path.insert(0, str(ROOT / "scripts"))
import sweep as sweep_engine

from ract_cli.verify.verifier import verify_file

SAMPLE = int(os.environ.get("RACT_BITFLIP_SAMPLE", "1500"))
SEED = int(os.environ.get("RACT_SEED", "20261129"))


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return sweep_engine.base_logs(tmp_path_factory.mktemp("bitflip-bases"))


def _assert_clean(result: sweep_engine.SweepResult, seed: int) -> None:
    print(f"seed={seed} {result.summary()}")
    assert not result.crashes, f"seed={seed}: verify raised on flips {result.crashes[:5]}"
    assert not result.lies, f"seed={seed}: verify passed flips that changed values {result.lies[:5]}"
    # Every exemption is one of the JSON spellings that denote the same value.
    for _offset, _bit, what in result.exempt:
        assert what.endswith("identical values"), what


@pytest.mark.parametrize("name", ["compact-8-events", "foreign-format-5-events"])
def test_bitflip_sample(name: str, bases: dict[str, bytes], tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}:{name}")
    data = bases[name]
    flips = sweep_engine.sample_flips(len(data), SAMPLE, rng)
    result = sweep_engine.sweep(name, data, tmp_path, flips)
    _assert_clean(result, SEED)
    assert result.flips == min(SAMPLE, len(data) * 8)
    # A compact canonical log has almost nothing a flip can leave equivalent.
    assert len(result.exempt) <= result.flips // 100


def test_every_newline_flip_fails(bases: dict[str, bytes], tmp_path: Path) -> None:
    """Flipping a line's newline merges or tears lines: never exit 0."""
    data = bases["compact-8-events"]
    flips = [(i, bit) for i, byte in enumerate(data) if byte == 0x0A for bit in range(8)]
    result = sweep_engine.sweep("newlines", data, tmp_path, flips)
    _assert_clean(result, SEED)
    assert result.by_exit[0] == 0
    # the last newline turns the final line into a torn tail (4); the others merge lines (1)
    assert result.by_exit[4] == 8 and result.by_exit[1] == len(flips) - 8


def test_every_hash_hex_flip_fails(bases: dict[str, bytes], tmp_path: Path) -> None:
    """A hex digit of a stored hash flipped (including to uppercase) is always caught."""
    data = bases["compact-8-events"]
    flips = []
    for line_start in [0] + [i + 1 for i, b in enumerate(data[:-1]) if b == 0x0A]:
        for i in range(line_start + 9, line_start + 9 + 64):  # {"hash":"<64 hex>"
            flips += [(i, bit) for bit in range(8)]
    result = sweep_engine.sweep("hash-hex", data, tmp_path, flips)
    _assert_clean(result, SEED)
    assert result.by_exit[0] == 0 and result.flips == 8 * 64 * 8


def test_known_exemptions_are_equivalent_spellings(tmp_path: Path) -> None:
    """The flips a full sweep exempts: exponent e/E, \\u escape hex case, \\r -> \\t before \\n."""
    data = write_small_log(tmp_path / "log.jsonl")
    original = strict_values(data)
    tiny = data.index(b"1e-7")
    esc = data.index(b"\\u001f")
    for offset in (tiny + 1, esc + 5):
        mutated = sweep_engine.flip(data, offset, 5)  # lowercase -> uppercase
        path = tmp_path / f"flip{offset}.jsonl"
        path.write_bytes(mutated)
        assert verify_file(path).exit_code == 0
        assert strict_values(mutated) == original
    # the same flip on a hash or id hex digit is caught by the envelope pattern
    hash_digit = (
        data.index(b'"hash":"')
        + 8
        + next(i for i, c in enumerate(data[data.index(b'"hash":"') + 8 :]) if chr(c) in "abcdef")
    )
    path = tmp_path / "upper-hash.jsonl"
    path.write_bytes(sweep_engine.flip(data, hash_digit, 5))
    assert verify_file(path).exit_code == 1


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="full bit-flip sweep: set RACT_LONG=1 (make sweep)")
@pytest.mark.parametrize("name", ["compact-8-events", "foreign-format-5-events"])
def test_bitflip_full(name: str, bases: dict[str, bytes], tmp_path: Path) -> None:
    data = bases[name]
    result = sweep_engine.sweep(name, data, tmp_path)
    _assert_clean(result, 0)
    assert result.flips == len(data) * 8


def _verdict(state) -> tuple:
    return int(state.exit_code), [(f.code, f.line, f.offset) for f in state.findings]


def test_bitflip_parallel_verdict_equals_sequential(bases: dict[str, bytes], tmp_path: Path) -> None:
    """``verify --jobs``: the byte-range scan, cut at every line, gives the sequential verdict on every flip."""
    try:
        from concurrent.futures import ThreadPoolExecutor

        from ract_cli.read.parallel import scan_file
    except ImportError:
        pytest.skip("no parallel verifier yet")
    from ract_cli.read.chain import ChainState
    from ract_cli.read.reader import ChainReader

    rng = random.Random(f"{SEED}:parallel")
    count = 2000 if LONG else 100
    path = tmp_path / "events.jsonl"
    with ThreadPoolExecutor(2) as pool:
        for name, data in bases.items():
            cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A] + [len(data) // 3, len(data) // 2 + 7]
            for offset, bit in sweep_engine.sample_flips(len(data), count, rng):
                mutated = sweep_engine.flip(data, offset, bit)
                path.write_bytes(mutated)
                reader = ChainReader(path)
                reader.read_all()
                state = ChainState(str(path))
                scan_file(path, state, pool, jobs=2, schema_version=9, max_line_bytes=64 << 20, cuts=cuts)
                assert _verdict(state) == _verdict(reader.state), (name, offset, bit)
