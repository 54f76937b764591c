"""The writer (SPEC §9): whatever it appends verifies.

Property: any sequence of valid events written by ``EventWriter`` reads back
with zero error findings, and with zero findings at all once its opens are
closed and the run is completed. Then: resuming, the advisory lock (in this
process and from another one), ``sanitize_payload`` on hostile objects,
the redaction profile from a real ``ract.yaml``, fsync policies, and the
refusals (torn tail, damaged head, bad envelope values). Then the strict
writer's line between the caller's mistakes (refused) and what sanitizing or
redaction changed (written, flagged by ``verify``), ``ract.yaml`` value types,
hostile containers (writer and Raxol), and resuming onto a last event that
only lacks its final newline.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from collections import OrderedDict, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kind_examples import VALID

from ract_cli.errors import ExitCode, LogIOError, RactError, WriterLockedError
from ract_cli.format.canonical import canonical_bytes, jcs_exact
from ract_cli.format.model import GENESIS_HASH
from ract_cli.format.sanitize import sanitize_payload
from ract_cli.read.handles import CLOSE_FOR_OPEN
from ract_cli.read.reader import ChainReader
from ract_cli.writer.event_writer import (
    EventWriter,
    FsyncPolicy,
    RedactionProfile,
    encode_line,
    event_hash,
    is_locked,
    read_head,
)


def hyp(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


HEX32 = st.text("0123456789abcdef", min_size=32, max_size=32)


# --- property: written, then verified ------------------------------------------------

_text = st.one_of(
    st.text(),  # any code point, lone surrogates included: sanitize_payload turns those into repr text
    st.text(st.characters(codec="utf-8")),
    st.text(st.sampled_from('\ue000\uf8ff\uffee\U0001f600\U00010000é"\\\n\x00\x1f'), max_size=6),
)
_extra_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(), st.integers(-(2**70), 2**70), _text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=12,
)
# Undocumented keys are allowed (SPEC §2.6); an "x_" prefix keeps them off documented names.
_extras = st.dictionaries(st.text(min_size=1, max_size=8).map(lambda s: "x_" + s), _extra_values, max_size=3)
_STEPS = ("a" * 32, "b" * 32, "0123456789abcdef" * 2)


@st.composite
def event_plans(draw: st.DrawFn) -> list[tuple[str, dict, str | None, int | str | None]]:
    """(kind, payload, step_id, parent): parent is an index of an earlier event, a random id, or None."""
    n = draw(st.integers(1, 25))
    plan = []
    for i in range(n):
        kind = draw(st.sampled_from(sorted(VALID)))
        payload = {**VALID[kind], **draw(_extras)}
        step_id = draw(st.one_of(st.none(), st.sampled_from(_STEPS), HEX32))
        parent = draw(st.one_of(st.none(), HEX32, st.integers(0, i - 1) if i else st.none()))
        plan.append((kind, payload, step_id, parent))
    return plan


@hyp(100)
@given(plan=event_plans())
def test_any_written_sequence_verifies(logs, plan) -> None:
    path = logs.path(run_id="c" * 32)
    if path.exists():
        path.unlink()
    written: list[dict] = []
    with logs.writer(path, run_id="c" * 32) as w:
        for kind, payload, step_id, parent in plan:
            parent_id = written[parent]["id"] if isinstance(parent, int) else parent
            written.append(w.append(kind, payload, step_id=step_id, parent_id=parent_id))

    reader = ChainReader(path)
    events = [ev.event for ev in reader]
    assert [f for f in reader.findings if f.severity == "error"] == []
    # same values as written (compared canonically: a float such as 2e16 reads back as the integer JCS wrote)
    assert [jcs_exact(e) for e in events] == [jcs_exact(e) for e in written]
    assert reader.state.head == written[-1]["hash"]

    # close what is still open (innermost first), then complete the run: no finding at all
    with logs.writer(path, run_id=None) as w:
        for handle in reversed(reader.handles.open_handles()):
            if handle.kind == "run.started":
                continue
            close = CLOSE_FOR_OPEN[handle.kind]
            w.append(close, dict(VALID[close]), step_id=handle.step_id, parent_id=handle.event_id)
        w.append("run.completed", VALID["run.completed"])
    closed = ChainReader(path)
    closed.read_all()
    assert closed.findings == []
    assert closed.exit_code == 0


def test_every_kind_with_its_valid_example(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        for kind, payload in VALID.items():
            w.append(kind, payload)
    verdict = logs.read(path)
    assert verdict.errors == []
    assert {ev.kind for ev in verdict.events} == set(VALID)


# --- the writer's lines ---------------------------------------------------------------


def test_lines_are_canonical_and_chained(logs) -> None:
    path = logs.five()
    events = logs.events(path)
    lines = logs.lines(path)
    assert events[0]["prev_hash"] == GENESIS_HASH
    for prev, event, line in zip([None, *events], events, lines, strict=False):
        assert line == encode_line(event) == canonical_bytes(event) + b"\n"
        assert event["hash"] == event_hash(event)
        if prev is not None:
            assert event["prev_hash"] == prev["hash"]


def test_encode_line_and_event_hash() -> None:
    event = {
        "id": "a" * 32,
        "run_id": "b" * 32,
        "step_id": None,
        "parent_id": None,
        "timestamp_ns": 2**62,
        "kind": "run.started",
        "payload": {"x": 1.0, "é": [2.5, None]},
        "prev_hash": GENESIS_HASH,
    }
    digest = event_hash(event)
    assert digest == event_hash({**event, "hash": "whatever"})  # hash never covers itself
    assert encode_line({**event, "hash": digest}) == jcs_exact({**event, "hash": digest}) + b"\n"
    assert b'"x":1,' in encode_line(event)


def test_append_returns_the_written_event(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        ev = w.append(
            "tool.called",
            {"tool": "bash", "when": float("nan")},
            step_id="a" * 32,
            parent_id="b" * 32,
            timestamp_ns=42,
            event_id="d" * 32,
        )
        assert w.head == ev["hash"]
    assert ev == logs.events(path)[0]
    assert ev["payload"] == {"tool": "bash", "when": "nan"}  # sanitized before hashing
    assert (ev["id"], ev["timestamp_ns"], ev["step_id"], ev["parent_id"]) == ("d" * 32, 42, "a" * 32, "b" * 32)


# --- resume ------------------------------------------------------------------------------


def test_resume_continues_the_chain(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        first = [w.append("run.started", {}), w.append("step.started", {}, step_id="a" * 32)]
    head = read_head(path)
    assert head is not None and head.hash == first[-1]["hash"] and head.run_id == first[0]["run_id"]
    with EventWriter(path, fsync="never", new_id=logs.counter_ids(0xF), clock=logs.fake_clock(2 * 10**18)) as w:
        assert w.run_id == first[0]["run_id"] and w.head == first[-1]["hash"]
        second = w.append("step.committed", {"outcome": "COMMITTED"}, step_id="a" * 32, parent_id=first[1]["id"])
        w.append("run.completed", {})
    assert second["prev_hash"] == first[-1]["hash"]
    verdict = logs.read(path)
    assert verdict.findings == []
    assert len(verdict.events) == 4


def test_resume_with_another_run_id_is_refused(logs) -> None:
    path = logs.five()
    before = path.read_bytes()
    with pytest.raises(RactError) as info:
        EventWriter(path, run_id="f" * 32)
    assert info.value.exit_code == ExitCode.USAGE
    assert path.read_bytes() == before
    assert not is_locked(path)


def test_resume_onto_a_foreign_formatted_log(tmp_path: Path, repo_root: Path) -> None:
    from ract_cli.testing.synth import fixture_path, fixture_run_id

    src = fixture_path(repo_root / "fixtures", "foreign-format")
    path = tmp_path / fixture_run_id("foreign-format") / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(src.read_bytes())
    with EventWriter(path, fsync="never") as w:
        w.append("laziness.skipped", {"reason": "appended after a CRLF writer"})
    reader = ChainReader(path)
    reader.read_all()
    assert [f.code for f in reader.findings] == []


def test_refuses_to_resume_onto_a_torn_tail(logs) -> None:
    path = logs.five()
    path.write_bytes(path.read_bytes() + b'{"hash":"0123')
    before = path.read_bytes()
    with pytest.raises(RactError) as info:
        EventWriter(path)
    assert info.value.exit_code == ExitCode.INCOMPLETE
    assert "repair" in info.value.message
    assert path.read_bytes() == before
    assert not is_locked(path)  # the refusal released the lock


@pytest.mark.parametrize(
    "damage",
    [
        lambda last: last.replace(b'"final_decision":"accept"', b'"final_decision":"reject"'),  # hash mismatch
        lambda last: b"not json\n",
        lambda last: b"[1,2,3]\n",
        lambda last: b"\n",
    ],
    ids=["hash-mismatch", "not-json", "array", "blank"],
)
def test_refuses_to_resume_onto_a_damaged_last_line(logs, damage) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[-1] = damage(lines[-1])
    path.write_bytes(b"".join(lines))
    with pytest.raises(RactError) as info:
        EventWriter(path)
    assert info.value.exit_code == ExitCode.TAMPERED
    assert not is_locked(path)


def test_resume_onto_a_last_line_longer_than_the_read_block(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        w.append("run.started", {"note": "x" * 200_000})
    with logs.writer(path, run_id=None) as w:
        w.append("run.completed", {})
    assert logs.read(path).findings == []


def test_empty_existing_file_starts_a_new_chain(logs) -> None:
    path = logs.path()
    path.write_bytes(b"")
    with logs.writer(path) as w:
        ev = w.append("run.started", {})
    assert ev["prev_hash"] == GENESIS_HASH


# --- the lock ------------------------------------------------------------------------------


def test_second_writer_in_this_process_is_locked_out(logs) -> None:
    path = logs.path()
    assert not is_locked(path)  # no file yet
    with logs.writer(path) as w:
        w.append("run.started", {})
        assert is_locked(path)
        with pytest.raises(WriterLockedError) as info:
            EventWriter(path)
        assert info.value.exit_code == ExitCode.IO
        assert "another writer" in info.value.message
        w.append("run.completed", {})  # the holder is unaffected
    assert not is_locked(path)
    with logs.writer(path) as w:  # free again once closed
        assert w.head == logs.events(path)[-1]["hash"]
    assert logs.read(path).findings == []


_HOLDER = textwrap.dedent("""
    import sys
    from ract_cli.writer.event_writer import EventWriter
    w = EventWriter(sys.argv[1], run_id="%s", fsync="never")
    w.append("run.started", {})
    print("locked", flush=True)
    sys.stdin.readline()
    w.append("run.completed", {})
    w.close()
    print("released", flush=True)
""")

_CONTENDER = textwrap.dedent("""
    import sys
    from ract_cli.errors import WriterLockedError
    from ract_cli.writer.event_writer import EventWriter, is_locked
    print("is_locked", is_locked(sys.argv[1]), flush=True)
    try:
        EventWriter(sys.argv[1], fsync="never")
    except WriterLockedError as exc:
        print("refused", int(exc.exit_code), flush=True)
        sys.exit(0)
    print("acquired", flush=True)
""")


def _python(code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw
    )


def test_lock_holds_against_another_process(logs) -> None:
    path = logs.path()
    holder = _python(_HOLDER % path.parent.name, str(path), stdin=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert is_locked(path)
        with pytest.raises(WriterLockedError):
            EventWriter(path)
        contender = _python(_CONTENDER, str(path))
        out, err = contender.communicate(timeout=60)
        assert contender.returncode == 0, err
        assert out.split("\n")[:2] == ["is_locked True", "refused 5"]
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert not is_locked(path)
    verdict = logs.read(path)
    assert verdict.findings == [] and len(verdict.events) == 2


def test_another_process_is_locked_out_by_this_one(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        w.append("run.started", {})
        contender = _python(_CONTENDER, str(path))
        out, err = contender.communicate(timeout=60)
        assert contender.returncode == 0, err
        assert out.split("\n")[:2] == ["is_locked True", "refused 5"]
    contender = _python(_CONTENDER, str(path))
    out, err = contender.communicate(timeout=60)
    assert out.split("\n")[:2] == ["is_locked False", "acquired"], err


# --- sanitize_payload ------------------------------------------------------------------------


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class ReprNotStr:
    def __repr__(self):  # type: ignore[override]
        return 42


class ReprSurrogate:
    def __repr__(self) -> str:
        return "bad \udc80 repr"


class ReprRecursion:
    def __repr__(self) -> str:
        return repr(self)


class EqualsEverything:
    def __eq__(self, other: object) -> bool:
        raise ValueError("no comparisons")

    __hash__ = object.__hash__


_hostile_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(),
    st.integers(),
    st.integers(-(2**200), 2**200),
    st.text(),
    st.binary(max_size=8),
    st.builds(bytearray, st.binary(max_size=4)),
    st.sampled_from(
        [
            math.nan,
            math.inf,
            -math.inf,
            9.3e18,
            -9.223372036854776e18,
            Ellipsis,
            1j,
            sum,
            type,
            Path("/tmp"),
            "\ud800",
            "\udfff x \ud800",
        ]
    ),
    # built lazily: hypothesis must be able to repr its own strategies
    st.sampled_from([ReprRaises, ReprNotStr, ReprSurrogate, ReprRecursion, EqualsEverything, object]).map(
        lambda cls: cls()
    ),
    st.sampled_from([5000, -5000]).map(lambda e: (1 if e > 0 else -1) * 10 ** abs(e)),
    st.frozensets(st.integers(), max_size=3),
)
_hostile_keys = st.one_of(
    st.text(),
    st.integers(),
    st.none(),
    st.booleans(),
    st.floats(),
    st.tuples(st.integers()),
    st.frozensets(st.integers(), max_size=2),
    st.binary(max_size=3),
)
_hostile = st.recursive(
    _hostile_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.sets(st.integers(), max_size=3),
        st.dictionaries(_hostile_keys, inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict),
    ),
    max_leaves=20,
)


@hyp(400)
@given(value=_hostile)
def test_sanitize_payload_never_raises_and_always_canonicalizes(value: object) -> None:
    clean = sanitize_payload(value)
    assert type(clean) is dict
    assert canonical_bytes(clean) == jcs_exact(clean)
    assert sanitize_payload(clean) == clean  # already clean: unchanged


@hyp(60)
@given(value=_hostile)
def test_hostile_payloads_write_logs_that_verify(logs, value: object) -> None:
    path = logs.path(run_id="d" * 32)
    if path.exists():
        path.unlink()
    with logs.writer(path, run_id="d" * 32, strict=False) as w:
        w.append("laziness.skipped", {"x_data": value})
        w.append("laziness.skipped", value)  # the payload itself hostile (non-strict: any keys)
    verdict = logs.read(path)
    assert [code for code, _ in verdict.errors if code != "PAYLOAD_INVALID"] == []


def _deep(depth: int, leaf: object = 1) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _self_referencing() -> list:
    loop: list = [1]
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    "value",
    [
        _deep(5000),
        _deep(199),
        _deep(300, leaf=ReprRaises()),
        _self_referencing(),
        {"a": {"b": _self_referencing()}},
        {1: "one", "1": "string one", None: "none", (1, 2): "tuple"},
        {"\ud800": "lone surrogate key", "ok": "\udc00"},
        {"set": {1, 2}, "bytes": b"\xff\x00", "big": 2**64, "small": -(2**63) - 1, "nan": math.nan},
        defaultdict(list, {"a": [1]}),
        OrderedDict([("z", 1), ("a", 2)]),
        ["not", "a", "dict"],
        "plain text",
        None,
        10**5000,
    ],
    ids=[
        "deep-5000",
        "deep-199",
        "deep-300-hostile-leaf",
        "self-reference",
        "nested-self-reference",
        "non-str-keys",
        "lone-surrogates",
        "non-json-values",
        "defaultdict",
        "ordereddict",
        "list",
        "str",
        "none",
        "int-too-big-to-print",
    ],
)
def test_sanitize_payload_examples(logs, value: object) -> None:
    clean = sanitize_payload(value)
    assert type(clean) is dict
    canonical_bytes(clean)
    path = logs.path()
    if path.exists():
        path.unlink()
    with logs.writer(path) as w:
        w.append("laziness.skipped", {"x_data": value})
    assert logs.read(path).errors == []


def test_sanitize_payload_keeps_what_json_can_take() -> None:
    payload = {"s": "é😀", "i": 2**63 - 1, "f": -0.5, "b": True, "n": None, "l": [1, [2]], "d": {"k": "v"}}
    assert sanitize_payload(payload) == payload
    assert sanitize_payload({"t": (1, (2, "x"))}) == {"t": [1, [2, "x"]]}
    assert sanitize_payload({"big": 2**63}) == {"big": repr(2**63)}
    assert sanitize_payload({"nan": math.nan, "inf": -math.inf}) == {"nan": "nan", "inf": "-inf"}
    assert sanitize_payload({"r": ReprRaises()}) == {"r": "<unrepresentable ReprRaises>"}
    assert sanitize_payload({1: "a"}) == {"1": "a"}
    assert sanitize_payload([1]) == {"value": [1]}
    assert sanitize_payload(OrderedDict(a=1)) == {"a": 1}  # dict subclasses are dicts
    assert sanitize_payload({"d": defaultdict(int, b=2)}) == {"d": {"b": 2}}


# --- redaction ------------------------------------------------------------------------------

RACT_YAML = r"""
# ract configuration
trace:
  redaction:
    patterns:
      - 'sk-[A-Za-z0-9]{16,}'
      - '\b\d{3}-\d{2}-\d{4}\b'
    fields: [password, api_key, authorization]
    replacement: '<scrubbed>'
other:
  ignored: true
"""


def test_redaction_profile_from_ract_yaml(logs, tmp_path: Path) -> None:
    config = tmp_path / "ract.yaml"
    config.write_text(RACT_YAML, encoding="utf-8")
    profile = RedactionProfile.load(config)
    assert profile is not None and profile.enabled
    assert profile.fields == ["password", "api_key", "authorization"]
    assert profile.replacement == "<scrubbed>"

    secret = "sk-" + "A1b2C3d4" * 3
    path = logs.path()
    with logs.writer(path, redaction=profile) as w:
        ev = w.append(
            "tool.called",
            {
                "tool": "curl",
                "arguments": {
                    "argv": ["curl", "-H", f"Bearer {secret}"],
                    "password": "hunter2",
                    "nested": [{"api_key": {"deep": "value"}, "ssn": "SSN 123-45-6789 on file"}],
                },
                "authorization": 12345,
            },
        )
    data = path.read_bytes()
    for leaked in (secret.encode(), b"hunter2", b"123-45-6789", b'"deep"', b"12345"):
        assert leaked not in data
    args = ev["payload"]["arguments"]
    assert args["argv"][2] == "Bearer <scrubbed>"
    assert args["password"] == "<scrubbed>"
    assert args["nested"][0] == {"api_key": "<scrubbed>", "ssn": "SSN <scrubbed> on file"}
    assert ev["payload"]["authorization"] == "<scrubbed>"
    assert ev["payload"]["tool"] == "curl"
    verdict = logs.read(path)  # redacted before hashing: the log verifies
    assert verdict.findings == [] or verdict.errors == []
    assert verdict.events[0].event == ev


def test_redaction_default_replacement_and_off_by_default(tmp_path: Path) -> None:
    assert RedactionProfile.load(tmp_path / "missing.yaml") is None
    (tmp_path / "empty.yaml").write_text("", encoding="utf-8")
    assert RedactionProfile.load(tmp_path / "empty.yaml") is None
    (tmp_path / "no-trace.yaml").write_text("other: 1\n", encoding="utf-8")
    assert RedactionProfile.load(tmp_path / "no-trace.yaml") is None
    (tmp_path / "no-redaction.yaml").write_text("trace:\n  other: 1\n", encoding="utf-8")
    assert RedactionProfile.load(tmp_path / "no-redaction.yaml") is None
    (tmp_path / "fields.yaml").write_text("trace:\n  redaction:\n    fields: [token]\n", encoding="utf-8")
    profile = RedactionProfile.load(tmp_path / "fields.yaml")
    assert profile is not None
    assert profile.apply({"token": "t", "x": ["token"]}) == {"token": "[REDACTED]", "x": ["token"]}


def test_redaction_profile_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert RedactionProfile.load() is None
    (tmp_path / "ract.yaml").write_text(RACT_YAML, encoding="utf-8")
    assert RedactionProfile.load() is not None


@pytest.mark.parametrize(
    ("text", "exit_code"),
    [
        ("trace:\n  redaction:\n    patterns: ['(unclosed']\n", ExitCode.USAGE),
        ("trace:\n  redaction: [a, b]\n", ExitCode.USAGE),
        ("trace: [\n", ExitCode.USAGE),
    ],
    ids=["bad-regex", "not-a-mapping", "not-yaml"],
)
def test_bad_redaction_config_is_a_usage_error(tmp_path: Path, text: str, exit_code: ExitCode) -> None:
    config = tmp_path / "ract.yaml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(RactError) as info:
        RedactionProfile.load(config)
    assert info.value.exit_code == exit_code


def test_disabled_profile_is_ignored(logs) -> None:
    profile = RedactionProfile()
    assert not profile.enabled
    with logs.writer(logs.path(), redaction=profile) as w:
        assert w.redaction is None


# --- fsync policies ---------------------------------------------------------------------------


@pytest.mark.parametrize(("policy", "expected_fsyncs"), [("every", 5), ("close", 1), ("never", 0)])
def test_fsync_policies_write_logs_that_verify(
    logs, monkeypatch: pytest.MonkeyPatch, policy: str, expected_fsyncs: int
) -> None:
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    path = logs.write(fsync=FsyncPolicy(policy))
    assert len(calls) == expected_fsyncs
    verdict = logs.read(path)
    assert verdict.findings == []
    assert len(verdict.events) == 5


def test_unknown_fsync_policy_is_refused(logs) -> None:
    with pytest.raises(ValueError):
        EventWriter(logs.path(), fsync="sometimes")


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exit_code"),
    [
        ({"kind": "no.such.kind"}, ExitCode.SCHEMA),
        ({"kind": "probe.evaluated", "payload": {"score": 2}}, ExitCode.SCHEMA),
        ({"step_id": "A" * 32}, ExitCode.USAGE),
        ({"parent_id": "xyz"}, ExitCode.USAGE),
        ({"event_id": "not-hex"}, ExitCode.USAGE),
        ({"event_id": "A" * 32}, ExitCode.USAGE),
        ({"timestamp_ns": -1}, ExitCode.USAGE),
        ({"timestamp_ns": 2**63}, ExitCode.USAGE),
        ({"timestamp_ns": 1.5}, ExitCode.USAGE),
        ({"timestamp_ns": True}, ExitCode.USAGE),
        ({"kind": ["run.started"]}, ExitCode.USAGE),
    ],
    ids=[
        "unknown-kind",
        "invalid-payload",
        "bad-step-id",
        "bad-parent-id",
        "bad-event-id",
        "uppercase-event-id",
        "negative-timestamp",
        "timestamp-too-big",
        "float-timestamp",
        "bool-timestamp",
        "kind-not-a-string",
    ],
)
def test_append_refuses_what_would_not_verify(logs, kwargs: dict, exit_code: ExitCode) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        w.append("run.started", {})
        args = {"kind": "laziness.skipped", "payload": {}, **kwargs}
        with pytest.raises(RactError) as info:
            w.append(args.pop("kind"), args.pop("payload"), **args)
        assert info.value.exit_code == exit_code
        w.append("run.completed", {})
    verdict = logs.read(path)
    assert verdict.findings == []  # nothing half-written
    assert len(verdict.events) == 2


def test_non_strict_writer_writes_unknown_kinds(logs) -> None:
    path = logs.path()
    with logs.writer(path, strict=False) as w:
        w.append("run.started", {})
        w.append("future.kind", {"x": 1})
        w.append("run.completed", {})
    verdict = logs.read(path)
    assert verdict.errors == [("UNKNOWN_KIND", 2)]
    assert verdict.exit_code == ExitCode.SCHEMA


def test_bad_run_id_is_refused(logs) -> None:
    with pytest.raises(RactError) as info:
        EventWriter(logs.path(), run_id="RUN-1")
    assert info.value.exit_code == ExitCode.USAGE


def test_closed_writer_refuses_to_append(logs) -> None:
    w = logs.writer()
    w.close()
    w.close()  # idempotent
    with pytest.raises(RactError):
        w.append("run.started", {})


def test_writer_on_a_directory_is_an_io_error(tmp_path: Path) -> None:
    target = tmp_path / "events.jsonl"
    target.mkdir()
    with pytest.raises(LogIOError):
        EventWriter(target)


def test_redacting_a_typed_field_is_written_not_refused(logs) -> None:
    """docs/writer.md: the operator's profile is applied as configured; `verify` reports the type."""
    profile = RedactionProfile(fields=["ok"])
    path = logs.path()
    with logs.writer(path, redaction=profile) as w:
        assert w.append("tool.result", {"tool": "pytest", "ok": True})["payload"] == {
            "tool": "pytest",
            "ok": "[REDACTED]",
        }
        with pytest.raises(RactError) as info:  # a caller error in an untouched key is still refused
            w.append("tool.result", {"tool": 5, "ok": True})
        assert info.value.exit_code == ExitCode.SCHEMA
    assert logs.read(path).errors == [("PAYLOAD_INVALID", 1)]
    with logs.writer(path, redaction=profile, strict=False) as w:
        assert w.append("laziness.skipped", {"ok": "secret"})["payload"] == {"ok": "[REDACTED]"}


def test_writer_on_a_fifo_is_an_io_error_not_a_hang(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            EventWriter(fifo)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # let the blocked open finish
        pytest.fail("opening a FIFO for writing blocked")
    assert isinstance(outcome[0], LogIOError)


# --- strict mode refuses only the caller's own errors (SPEC §9: sanitizing never crashes) ----------

RACT = Path(sys.executable).with_name("ract")
RUN_ID = "1a2b3c4d5e6f708192a3b4c5d6e7f809"  # the directory name is the run id: no RUN_DIR_MISMATCH


def _verify_json(path: Path, *args: str) -> dict:
    import json

    done = subprocess.run(
        [str(RACT), "trace", "verify", "--format", "json", *args, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert report["exit_code"] == done.returncode
    return report


def _findings(report: dict) -> list[tuple[str, int, str]]:
    return [(f["code"], f["line"], f["message"]) for f in report["files"][0]["findings"]]


# (kind, payload, the key sanitizing turns into repr text, what it becomes)
SANITIZED_TYPED_FIELDS = [
    ("tool.result", {"tool": "t", "ok": True, "duration_ns": math.nan}, "duration_ns", "nan"),
    ("tool.result", {"tool": "t", "ok": True, "duration_ns": math.inf}, "duration_ns", "inf"),
    ("run.started", {"predicate_count": 2**70}, "predicate_count", repr(2**70)),
    ("run.started", {"predicate_count": -(2**63) - 1}, "predicate_count", repr(-(2**63) - 1)),
    ("run.started", {"coverage_gate": 9.3e18}, "coverage_gate", repr(9.3e18)),
    ("run.started", {"predicate_count": ReprRaises()}, "predicate_count", "<unrepresentable ReprRaises>"),
    ("tool.result", {"tool": "t", "ok": EqualsEverything()}, "ok", None),
    ("tool.called", {"tool": "t", "arguments": {1: "non-string key"}}, "arguments", None),
    ("tool.called", {"tool": "t", "arguments": {"argv": b"\xff"}}, "arguments", None),
    ("tool.refused", {"tool": "t", "reason": "r", "refused_by": "policy\udc80"}, "refused_by", None),
    ("probe.evaluated", {"probe": "needle", "score": {0.5}}, "score", "{0.5}"),
]


@pytest.mark.parametrize(
    ("kind", "payload", "key", "text"),
    SANITIZED_TYPED_FIELDS,
    ids=[f"{k}.{key}:{i}" for i, (k, _, key, _t) in enumerate(SANITIZED_TYPED_FIELDS)],
)
def test_strict_writer_writes_what_sanitizing_replaced(
    logs, kind: str, payload: dict, key: str, text: str | None
) -> None:
    """The repr text is written (never a crash, never a refusal); verify reports a wrong type as SCHEMA."""
    path = logs.path()
    with logs.writer(path) as w:  # strict=True (the default)
        event = w.append(kind, payload)
    value = event["payload"][key]
    if text is not None:
        assert value == text
    written = logs.events(path)
    assert written == [event] or jcs_exact(written[0]) == jcs_exact(event)
    report = _verify_json(path)
    codes = [(code, line) for code, line, _ in _findings(report) if code not in ("OPEN_RUN", "OPEN_HANDLE")]
    from ract_cli.format.kinds import VALIDATORS

    if VALIDATORS[kind]({key: value}):  # the repr text breaks the field's type: a SCHEMA finding
        assert report["exit_code"] == ExitCode.SCHEMA
        assert codes == [("PAYLOAD_INVALID", 1)]
        assert any(key in message for code, _, message in _findings(report) if code == "PAYLOAD_INVALID")
    else:  # a string field: the repr text is a valid value
        assert report["exit_code"] == 0 and codes == []


# (kind, payload, the caller's own mistake the message names)
CALLER_ERRORS = [
    ("no.such.kind", {"x": math.nan}, "unknown event kind"),
    ("tool.result", {"tool": 5, "ok": True, "duration_ns": math.nan}, "tool must be string"),
    ("run.started", {"predicate_count": 2**70, "coverage_gate": "high"}, "coverage_gate must be number"),
    ("probe.evaluated", {"score": 2, "note": ReprRaises()}, "score must be <= 1"),
    ("tool.called", {"tool": "t", "arguments": [1, 2], "x_other": object()}, "arguments must be object"),
    # an array where an object belongs, even when sanitizing had to reach into it (review finding B5)
    ("tool.called", {"tool": "t", "arguments": [math.nan]}, "arguments must be object"),
]


@pytest.mark.parametrize(("kind", "payload", "named"), CALLER_ERRORS, ids=[c[2] for c in CALLER_ERRORS])
def test_strict_writer_still_refuses_the_callers_own_errors(logs, kind: str, payload: dict, named: str) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        with pytest.raises(RactError) as info:
            w.append(kind, payload)
    assert info.value.exit_code == ExitCode.SCHEMA
    assert named in info.value.message
    assert path.read_bytes() == b""  # a refused event writes nothing


_typed_payloads = st.sampled_from(sorted(VALID)).flatmap(
    lambda kind: st.tuples(
        st.just(kind),
        st.dictionaries(st.sampled_from(sorted(VALID[kind]) or ["x_none"]), _hostile, max_size=3).map(
            lambda hostile, kind=kind: {**VALID[kind], **hostile}
        ),
    )
)


def _plain_json(value: object, depth: int = 0) -> bool:
    """True when JSON carries the value as it is (the test's own reading of SPEC §2.1/§9, not the writer's)."""
    t = type(value)
    if value is None or t is bool:
        return True
    if t is str:
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if t is int:
        return -(2**63) <= value < 2**63
    if t is float:
        if not math.isfinite(value):
            return False
        # RFC 8785 writes |x| < 1e21 with its shortest round-trip digits, as an integer token when whole
        token = int(Decimal(repr(value))) if abs(value) < 1e21 and value == int(value) else 0
        return -(2**63) <= token < 2**63
    if depth > 150:
        return False
    if issubclass(t, dict):
        return all(type(k) is str and _plain_json(k) and _plain_json(v, depth + 1) for k, v in value.items())
    if issubclass(t, (list, tuple)):
        return all(_plain_json(v, depth + 1) for v in value)
    return False


@hyp(200)
@given(case=_typed_payloads)
def test_strict_writer_refuses_exactly_the_callers_errors(logs, case: tuple[str, dict]) -> None:
    """Property: documented fields given hostile values. The writer refuses exactly when a key it
    did not have to replace breaks the schema; otherwise it writes, and the chain verifies (at worst
    a SCHEMA finding on a replaced field)."""
    from ract_cli.format.kinds import VALIDATORS

    kind, payload = case
    clean = sanitize_payload(payload)
    callers_own = {k: clean[k] for k, v in payload.items() if _plain_json(v)}
    # a container sanitizing reached into is still the caller's choice of container type
    callers_own.update(
        {k: type(clean[k])() for k in payload if k not in callers_own and type(clean[k]) in (dict, list)}
    )
    path = logs.path(run_id="e" * 32)
    if path.exists():
        path.unlink()
    with logs.writer(path, run_id="e" * 32) as w:
        try:
            w.append(kind, payload)
        except RactError as exc:
            assert exc.exit_code == ExitCode.SCHEMA
            assert VALIDATORS[kind](callers_own), exc.message
            assert path.read_bytes() == b""
            return
    assert VALIDATORS[kind](callers_own) == []
    verdict = logs.read(path)
    assert {code for code, _ in verdict.errors} <= {"PAYLOAD_INVALID"}


@pytest.mark.parametrize(
    ("yaml_text", "kind", "payload", "key", "expected"),
    [
        (
            "trace: {redaction: {fields: [arguments]}}\n",
            "tool.called",
            {"tool": "t", "arguments": {"k": "v"}},
            "arguments",
            "[REDACTED]",
        ),
        ("trace: {redaction: {fields: [ok]}}\n", "tool.result", {"tool": "t", "ok": False}, "ok", "[REDACTED]"),
        (
            "trace: {redaction: {fields: duration_ns, replacement: '-'}}\n",
            "tool.result",
            {"tool": "t", "ok": True, "duration_ns": 7},
            "duration_ns",
            "-",
        ),
        (
            "trace: {redaction: {patterns: 'pol.*'}}\n",
            "tool.refused",
            {"tool": "t", "reason": "r", "refused_by": "policy"},
            "refused_by",
            "[REDACTED]",
        ),
    ],
    ids=["dict-field", "bool-field", "int-field-scalar-config", "enum-scrubbed-by-pattern"],
)
def test_redaction_never_makes_a_strict_writer_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, yaml_text: str, kind: str, payload: dict, key: str, expected: str
) -> None:
    """The reference: `tool.called` arguments are "redacted per profile". The operator configured it:
    the replacement is written and `verify` reports the field (SCHEMA, exit 3)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ract.yaml").write_text(yaml_text, encoding="utf-8")
    path = tmp_path / "evals" / "runs" / RUN_ID / "events.jsonl"
    with EventWriter(path, run_id=RUN_ID, fsync="never") as w:  # redaction from ./ract.yaml
        event = w.append(kind, payload)
    assert event["payload"][key] == expected
    report = _verify_json(path)
    assert report["exit_code"] == ExitCode.SCHEMA
    invalid = [(line, message) for code, line, message in _findings(report) if code == "PAYLOAD_INVALID"]
    assert len(invalid) == 1 and invalid[0][0] == 1 and key in invalid[0][1]
    assert not [c for c, _, _ in _findings(report) if c in ("HASH_MISMATCH", "CHAIN_BROKEN", "MALFORMED_LINE")]


def test_redaction_keeps_secrets_out_of_a_refusal_message(logs) -> None:
    """Validation sees the redacted payload: a refused event does not echo the secret it carried."""
    profile = RedactionProfile(patterns=["sk-[a-z]+"])
    with logs.writer(logs.path(), redaction=profile) as w:
        with pytest.raises(RactError) as info:
            w.append("tool.refused", {"tool": 5, "reason": "r", "refused_by": "sk-secret"})
    assert "tool must be string" in info.value.message
    assert "sk-secret" not in info.value.message


# --- ract.yaml: scalar values and wrong types -----------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "payload", "expected"),
    [
        ("patterns: secret", {"note": "a secret s e c r e t"}, {"note": "a [REDACTED] s e c r e t"}),
        ("patterns: ['secret']", {"note": "a secret s"}, {"note": "a [REDACTED] s"}),
        ("fields: api_key", {"api_key": "k", "x": "api_key"}, {"api_key": "[REDACTED]", "x": "api_key"}),
        ("fields: [api_key, token]", {"api_key": 1, "token": [2]}, {"api_key": "[REDACTED]", "token": "[REDACTED]"}),
        ("{fields: api_key, replacement: '\\1 \\g<0> \\'}", {"api_key": "k"}, {"api_key": "\\1 \\g<0> \\"}),
        ("{patterns: 'k(e)y', replacement: '\\1'}", {"note": "key"}, {"note": "\\1"}),
        ("{patterns: [], fields: []}", {"note": "secret"}, None),
    ],
    ids=[
        "pattern-string",
        "pattern-list",
        "field-string",
        "field-list",
        "replacement-backslashes-literal",
        "replacement-group-ref-literal",
        "empty-lists-off",
    ],
)
def test_redaction_config_values(tmp_path: Path, yaml_text: str, payload: dict, expected: dict | None) -> None:
    config = tmp_path / "ract.yaml"
    config.write_text(
        "trace:\n  redaction: " + yaml_text + "\n"
        if yaml_text.startswith("{")
        else "trace:\n  redaction:\n    " + yaml_text + "\n",
        encoding="utf-8",
    )
    profile = RedactionProfile.load(config)
    if expected is None:
        assert profile is None or not profile.enabled
        return
    assert profile is not None and profile.enabled
    path = tmp_path / "log" / "events.jsonl"
    with EventWriter(path, redaction=profile, strict=False, fsync="never") as w:
        assert w.append("laziness.skipped", payload)["payload"] == expected
    reader = ChainReader(path)
    reader.read_all()
    assert [f.code for f in reader.findings if f.severity == "error"] == []


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("trace:\n  redaction:\n    patterns: 5\n", "trace.redaction.patterns"),
        ("trace:\n  redaction:\n    patterns: [secret, 5]\n", "trace.redaction.patterns"),
        ("trace:\n  redaction:\n    patterns: {a: b}\n", "trace.redaction.patterns"),
        ("trace:\n  redaction:\n    patterns: true\n", "trace.redaction.patterns"),
        ("trace:\n  redaction:\n    fields: [[api_key]]\n", "trace.redaction.fields"),
        ("trace:\n  redaction:\n    fields: 12\n", "trace.redaction.fields"),
        ("trace:\n  redaction:\n    fields: [null]\n", "trace.redaction.fields"),
        ("trace:\n  redaction:\n    fields: [a]\n    replacement: 5\n", "trace.redaction.replacement"),
        ("trace:\n  redaction:\n    fields: [a]\n    replacement: [x]\n", "trace.redaction.replacement"),
        ("trace:\n  redaction:\n    fields: [a]\n    replacement:\n", "trace.redaction.replacement"),
        ('trace:\n  redaction:\n    fields: [a]\n    replacement: "\\ud800"\n', "replacement"),
        ("trace:\n  redaction:\n    patterns: ['(unclosed']\n", "pattern"),
        ("trace:\n  redaction:\n    patterns: ['a{99999999999999999999}']\n", "pattern"),
        ("trace:\n  redaction: [a, b]\n", "trace.redaction must be a mapping"),
        ("trace:\n  redaction: text\n", "trace.redaction must be a mapping"),
        ("trace: 5\n", "trace must be a mapping"),
        ("trace: [redaction]\n", "trace must be a mapping"),
        ("- trace\n", "must be a mapping"),
        ("trace: [\n", "not valid YAML"),
    ],
    ids=[
        "patterns-int",
        "patterns-list-with-int",
        "patterns-mapping",
        "patterns-bool",
        "fields-nested-list",
        "fields-int",
        "fields-null-item",
        "replacement-int",
        "replacement-list",
        "replacement-null",
        "replacement-lone-surrogate",
        "bad-regex",
        "huge-repeat",
        "redaction-list",
        "redaction-string",
        "trace-int",
        "trace-list",
        "top-level-list",
        "not-yaml",
    ],
)
def test_bad_redaction_values_are_usage_errors_naming_the_key(tmp_path: Path, text: str, named: str) -> None:
    config = tmp_path / "ract.yaml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(RactError) as info:
        RedactionProfile.load(config)
    assert info.value.exit_code == ExitCode.USAGE
    assert named in info.value.message


def test_non_utf8_ract_yaml_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "ract.yaml"
    config.write_bytes(b"trace:\n  redaction:\n    fields: [\xff]\n")
    with pytest.raises(RactError) as info:
        RedactionProfile.load(config)
    assert info.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize(
    "kwargs",
    [
        {"patterns": 5},
        {"patterns": [b"x"]},
        {"fields": {"a": 1}},
        {"fields": [1]},
        {"replacement": None},
        {"replacement": b"x"},
    ],
    ids=["patterns-int", "patterns-bytes", "fields-dict", "fields-int", "replacement-none", "replacement-bytes"],
)
def test_redaction_profile_in_code_checks_types(kwargs: dict) -> None:
    with pytest.raises(RactError) as info:
        RedactionProfile(**kwargs)
    assert info.value.exit_code == ExitCode.USAGE
    assert next(iter(kwargs)) in info.value.message


def test_redaction_profile_in_code_takes_one_string() -> None:
    profile = RedactionProfile(patterns="secret", fields="api_key")
    assert profile.patterns == ["secret"] and profile.fields == ["api_key"]
    assert profile.apply({"api_key": 1, "s": "secret"}) == {"api_key": "[REDACTED]", "s": "[REDACTED]"}


# --- hostile containers: sanitizing never crashes (writer and Raxol) ------------------------------


class ItemsRaise(dict):
    def items(self):  # type: ignore[override]
        raise RuntimeError("items")


class IterRaises(list):
    def __iter__(self):
        raise RuntimeError("iter")


class TupleIterRaises(tuple):
    def __iter__(self):
        raise RuntimeError("iter")


class ItemsMutate(dict):
    def items(self):  # type: ignore[override]
        for key in list(dict.keys(self)):
            self[key + "x"] = 1  # grows while read
            yield key, self[key]
        raise RuntimeError("mutated")


class ClassRaises:
    @property  # type: ignore[misc]
    def __class__(self):
        raise RuntimeError("__class__")

    def __repr__(self) -> str:
        raise RuntimeError("repr")


class StrRaises(str):
    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __str__(self) -> str:
        raise RuntimeError("str")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    __hash__ = str.__hash__  # usable as a key; every other method raises


class KeyRaises:
    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __str__(self) -> str:
        raise RuntimeError("str")


class ReprHostileStr:
    def __repr__(self):  # a str subclass with its own methods as the repr text
        return StrRaises("x")


class NameRaises(type):
    @property
    def __name__(cls):
        raise RuntimeError("name")


class Nameless(metaclass=NameRaises):
    def __repr__(self) -> str:
        raise RuntimeError("repr")


def _hostile_container_cases() -> list[tuple[str, object]]:
    key = KeyRaises()
    return [
        ("dict-items-raise", ItemsRaise(a=1)),
        ("list-iter-raises", IterRaises([1, 2])),
        ("tuple-iter-raises", TupleIterRaises((1, 2))),
        ("dict-mutated-while-read", ItemsMutate(a=1)),
        ("class-property-raises", ClassRaises()),
        ("str-subclass-all-raise", StrRaises("v")),
        ("key-str-and-repr-raise", {key: 1, KeyRaises(): 2}),
        ("str-subclass-key", {StrRaises("k"): 1}),
        ("repr-returns-hostile-str", ReprHostileStr()),
        ("type-name-raises", Nameless()),
        ("nested", {"a": [ItemsRaise(b=IterRaises([3])), {"c": ClassRaises()}], "d": TupleIterRaises((1,))}),
    ]


HOSTILE_CONTAINER_NAMES = [name for name, _ in _hostile_container_cases()]


@pytest.mark.parametrize("name", HOSTILE_CONTAINER_NAMES)
def test_hostile_containers_become_repr_text(logs, name: str) -> None:
    """Built inside the test: pytest itself would trip over a hostile ``__class__`` in a parameter."""
    from ract_cli.dialects import raxol

    value = dict(_hostile_container_cases())[name]

    for payload in (value, {"x_data": value}, [value]):
        clean = sanitize_payload(payload)
        assert type(clean) is dict
        assert canonical_bytes(clean) == jcs_exact(clean)
        assert sanitize_payload(clean) == clean
        journal = raxol.sanitize_payload(payload)
        assert canonical_bytes(journal) == jcs_exact(journal)
        assert raxol.encode_line({"type": "turn_started", "payload": payload}).endswith(b"\n")
    path = logs.path()
    with logs.writer(path) as w:  # strict: what sanitizing replaced is written, not refused
        w.append("laziness.skipped", {"x_data": value})
        w.append("tool.called", {"tool": "t", "arguments": value})
    assert {code for code, _ in logs.read(path).errors} <= {"PAYLOAD_INVALID"}


def test_hostile_container_report_names_the_key() -> None:
    from ract_cli.format.sanitize import sanitize_report

    clean, replaced = sanitize_report({"a": ItemsRaise(x=1), "b": [IterRaises()], "c": 1, 2: "k", "d": {"e": 1}})
    assert clean["a"] == repr({"x": 1}) and clean["b"] == ["[]"] and clean["c"] == 1 and clean["2"] == "k"
    assert replaced == {"a", "b", "2"}
    assert sanitize_report(ItemsRaise(x=1)) == ({"value": repr({"x": 1})}, frozenset({"value"}))
    assert sanitize_report([1, "a"]) == ({"value": [1, "a"]}, frozenset())
    assert sanitize_report({"k": EqualsEverything()})[1] == {"k"}  # reported without comparing it


def _hostile_wrap(value: object, how: int) -> object:
    return [
        lambda v: v,
        lambda v: ItemsRaise(k=v),
        lambda v: IterRaises([v]),
        lambda v: TupleIterRaises((v,)),
        lambda v: {KeyRaises(): v},
        lambda v: ItemsMutate(k=v),
        lambda v: [v, ClassRaises()],
    ][how](value)


_hostile_nested = st.recursive(
    _hostile_leaves,
    lambda inner: st.one_of(
        st.tuples(inner, st.integers(0, 6)).map(lambda t: _hostile_wrap(*t)),
        st.dictionaries(_hostile_keys, inner, max_size=3),
        st.lists(inner, max_size=3),
    ),
    max_leaves=10,
)


@hyp(300)
@given(value=_hostile_nested)
def test_sanitizing_hostile_containers_never_raises(value: object) -> None:
    from ract_cli.dialects import raxol
    from ract_cli.format.sanitize import sanitize_report

    clean, replaced = sanitize_report({"x": value})
    assert canonical_bytes(clean) == jcs_exact(clean)
    assert replaced <= set(clean)
    assert sanitize_report(clean) == (clean, frozenset())  # clean output: nothing left to replace
    line = raxol.encode_line({"type": "item_started", "payload": {"v": value}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1


# --- resume onto a last event that lacks only its final newline (SPEC §2.1) -----------------------


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("events", [1, 5], ids=["one-event", "five-events"])
def test_resume_onto_a_missing_final_newline(logs, ending: bytes, events: int) -> None:
    path = logs.write(FIVE_EVENTS_LIST[:events])
    data = path.read_bytes().replace(b"\n", ending)[:-1]  # the last event, complete, lacks its "\n"
    path.write_bytes(data)
    before = _verify_json(path)
    assert before["exit_code"] == 0
    assert "MISSING_FINAL_NEWLINE" in [code for code, _, _ in _findings(before)]
    head = read_head(path)
    assert head is not None and head.missing_newline

    w = logs.writer(path, run_id=None)
    assert path.read_bytes() == data  # opening writes nothing
    appended = w.append("laziness.skipped", {"reason": "after a missing newline"})
    w.append("run.completed", {"final_decision": "accept"}) if events == 1 else None
    w.close()
    after = path.read_bytes()
    assert after.startswith(data)  # the bytes before are unchanged
    assert after[len(data) :].startswith(b"\n" + encode_line(appended))  # the "\n" went with the event
    assert appended["prev_hash"] == logs.events(path.with_name(path.name))[events - 1]["hash"]
    report = _verify_json(path)
    assert report["exit_code"] == 0, _findings(report)
    assert "MISSING_FINAL_NEWLINE" not in [code for code, _, _ in _findings(report)]
    assert report["files"][0]["events"] == events + (2 if events == 1 else 1)


def test_resume_onto_a_missing_final_newline_and_close_without_appending(logs) -> None:
    path = logs.five()
    data = path.read_bytes()[:-1]
    path.write_bytes(data)
    with logs.writer(path, run_id=None):
        pass
    assert path.read_bytes() == data  # nothing written, nothing owed


FIVE_EVENTS_LIST = [
    ("run.started", {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6"}, None),
    ("step.started", {"timeout_seconds": 600}, "5e7e9f00aa11bb22cc33dd44ee55ff66"),
    (
        "predicate.evaluated",
        {"predicate_id": "p", "kind": "test", "required": True, "ok": True},
        "5e7e9f00aa11bb22cc33dd44ee55ff66",
    ),
    ("step.committed", {"outcome": "COMMITTED"}, "5e7e9f00aa11bb22cc33dd44ee55ff66"),
    ("run.completed", {"final_decision": "accept"}, None),
]


@pytest.mark.parametrize(
    ("tail", "exit_code"),
    [
        (lambda last: last[:-1][: len(last) // 2], ExitCode.INCOMPLETE),  # cut mid-event: a torn tail
        (lambda last: last[:-2], ExitCode.INCOMPLETE),  # the closing brace lost
        (lambda last: b'{"a":1,"a":2}', ExitCode.INCOMPLETE),  # duplicate key: the reader's torn tail too
        (lambda last: b"\xef\xbb\xbf" + last[:-1], ExitCode.INCOMPLETE),  # BOM
        (lambda last: last[:-1].replace(b'"accept"', b'"reject"'), ExitCode.TAMPERED),  # parses, hash wrong
        (lambda last: b"[1,2]", ExitCode.INCOMPLETE),  # not an object: the reader's torn tail too
    ],
    ids=["cut", "no-closing-brace", "duplicate-key", "bom", "hash-mismatch", "array"],
)
def test_a_last_line_without_newline_that_is_no_valid_event_is_refused(logs, tail, exit_code: ExitCode) -> None:
    path = logs.five()
    lines = logs.lines(path)
    path.write_bytes(b"".join(lines[:-1]) + tail(lines[-1]))
    before = path.read_bytes()
    verdict = _verify_json(path)
    with pytest.raises(RactError) as info:
        EventWriter(path)
    assert info.value.exit_code == exit_code == verdict["exit_code"]  # what `verify` says of that line
    assert path.read_bytes() == before
    assert not is_locked(path)
    if exit_code == ExitCode.INCOMPLETE:  # the same verdict `verify` reaches on that line
        assert "TORN_TAIL" in [code for code, _, _ in _findings(verdict)]
        assert "repair" in info.value.message


def test_raxol_atoms_keep_their_names_next_to_hostile_containers() -> None:
    """A hostile neighbour no longer costs the whole record its atom names (ract_cli/raxol.py)."""
    import enum

    from ract_cli.dialects import raxol

    class Evidence(enum.Enum):
        accepted = "accepted"

    record = {
        "ok": Evidence.accepted,
        "bad": ItemsRaise(x=1),
        KeyRaises(): Evidence.accepted,
        Evidence.accepted: [IterRaises(), Evidence.accepted],
    }
    clean = raxol.sanitize_payload(record)
    assert clean == {
        "ok": "accepted",
        "bad": repr({"x": 1}),
        "<unrepresentable KeyRaises>": "accepted",
        "accepted": ["[]", "accepted"],
    }
    assert raxol.encode_line(record) == canonical_bytes(clean) + b"\n"
