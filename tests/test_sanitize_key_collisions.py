"""Issue 15 item 17: ``sanitize_payload`` never drops a value when converted keys collide.

A key that is not a string (or not valid UTF-8) becomes its repr text; when
that name is already taken, it takes the first free ``name#2``, ``name#3``...
(string keys keep their names, whatever the dict's order).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ract_cli.format.canonical import canonical_bytes
from ract_cli.format.sanitize import sanitize_payload, sanitize_report
from ract_cli.read.reader import ChainReader
from ract_cli.writer.event_writer import EventWriter


def test_an_int_key_and_its_string_keep_both_values_in_either_order() -> None:
    assert sanitize_payload({1: "a", "1": "b"}) == {"1": "b", "1#2": "a"}
    assert sanitize_payload({"1": "b", 1: "a"}) == {"1": "b", "1#2": "a"}
    _, replaced = sanitize_report({1: "a", "1": "b", "x": 0})
    assert replaced == frozenset({"1#2"})  # the renamed key is reported; "1" and "x" are the caller's own


def test_the_suffix_skips_names_already_taken_and_nested_dicts_too() -> None:
    assert sanitize_payload({1: "a", "1": "b", "1#2": "c"}) == {"1": "b", "1#2": "c", "1#3": "a"}
    assert sanitize_payload({"args": {None: 1, "None": 2, (1, 2): 3, "(1, 2)": 4}}) == {
        "args": {"None": 2, "None#2": 1, "(1, 2)": 4, "(1, 2)#2": 3}
    }
    surrogate = "\udc80"
    assert sanitize_payload({surrogate: 1, repr(surrogate): 2}) == {repr(surrogate): 2, repr(surrogate) + "#2": 1}


@given(
    st.dictionaries(
        st.one_of(st.integers(-5, 5), st.text(alphabet="-0123456789#", max_size=3)), st.integers(-(2**63), 2**63 - 1)
    )
)
def test_no_value_is_ever_lost(payload: dict) -> None:
    clean = sanitize_payload(payload)
    assert len(clean) == len(payload)
    assert sorted(clean.values()) == sorted(payload.values())
    assert sanitize_payload(clean) == clean  # idempotent
    canonical_bytes(clean)


def test_a_strict_writer_writes_both_values_and_the_log_verifies(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventWriter(path, fsync="never", redaction=None) as w:
        event = w.append("tool.called", {"tool": "t", "arguments": {1: "a", "1": "b"}})
    assert event["payload"]["arguments"] == {"1": "b", "1#2": "a"}
    reader = ChainReader(path)
    reader.read_all()
    assert reader.exit_code == 0
