"""ract_cli.records: the plain classes built at start-up keep a dataclass's meaning (equality, repr, frozen,
hashing, pickling, replace), and no class on ``verify -q``'s path is a dataclass any more."""

import pickle
import subprocess
import sys

import pytest

from ract_cli.dialects.raxol.record import JournalEvent
from ract_cli.errors import ExitCode
from ract_cli.findings import Finding
from ract_cli.format.kinds import KINDS
from ract_cli.format.model import Field, KindDef
from ract_cli.grep.filters import GrepFilter
from ract_cli.read.chain import TakenRun
from ract_cli.read.dialect import RACT
from ract_cli.read.event import LogEvent
from ract_cli.read.json_rules import LineResult, Problem
from ract_cli.records import FrozenRecord, Record, fields_of
from ract_cli.verify.verifier import FileReport, VerifyOptions, VerifyReport


def test_fields_are_the_slots_in_init_order_base_first() -> None:
    assert fields_of(Finding)[:3] == ("code", "severity", "message")
    assert fields_of(JournalEvent) == fields_of(LogEvent) == ("line", "offset", "raw", "event", "trusted")


@pytest.mark.parametrize(
    ("a", "b", "c"),  # a == b, a != c
    [
        (Finding("X", "error", "m", line=3), Finding("X", "error", "m", None, 3), Finding("X", "error", "m", line=4)),
        (Problem("C", "m"), Problem("C", "m", severity="error"), Problem("C", "m", actual="1")),
        (LineResult(None, None, []), LineResult(None, None, [], True), LineResult(None, None, [], parsed=False)),
        (LogEvent(1, 0, b"x", {}, True), LogEvent(1, 0, b"x", {}, True), LogEvent(1, 0, b"x", {}, False)),
        (VerifyOptions(), VerifyOptions(jobs=1), VerifyOptions(jobs=2)),
        (Field("a", "string"), Field("a", "string", ""), Field("a", "integer")),
    ],
)
def test_equal_by_fields_and_class(a: Record, b: Record, c: Record) -> None:
    assert a == b and not a != b
    assert a != c
    assert a != ("not", "a", "record")
    assert repr(a) == repr(b) != repr(c)


def test_a_subclass_is_not_equal_to_its_base() -> None:
    base, sub = LogEvent(1, 0, b"x", {}, True), JournalEvent(1, 0, b"x", {}, True)
    assert base != sub and sub != base


def test_repr_names_every_field() -> None:
    text = repr(Problem("BAD", "a message", actual="7"))
    assert text == "Problem(code='BAD', message='a message', expected=None, actual='7', severity='error')"


def test_repr_of_a_record_that_holds_itself() -> None:
    result = LineResult(None, None, [])
    result.event = {"self": result}
    assert repr(result) == "LineResult(event={'self': ...}, stored_hash=None, problems=[], parsed=True)"


def test_mutable_records_are_unhashable_and_assignable() -> None:
    result = LineResult(None, None, [])
    with pytest.raises(TypeError):
        hash(result)
    result.parsed = False
    assert result == LineResult(None, None, [], parsed=False)
    with pytest.raises(AttributeError):
        result.other = 1  # (slots: no stray attributes)


@pytest.mark.parametrize("record", [VerifyOptions(jobs=3), KINDS[0], Field("a", ("string", "null")), RACT])
def test_frozen_records_refuse_changes_and_hash_by_fields(record: FrozenRecord) -> None:
    name = fields_of(type(record))[0]
    with pytest.raises(AttributeError):
        setattr(record, name, None)
    with pytest.raises(AttributeError):
        delattr(record, name)
    twin = type(record)(*record._values())
    assert twin == record and hash(twin) == hash(record)
    assert {record: 1}[twin] == 1


@pytest.mark.parametrize(
    "record",
    [
        VerifyOptions(jobs=2, checkpoints=("a",)),
        KINDS[-1],
        Finding("X", "warning", "m", path="p", offset=9),
        TakenRun(2, 10, "0" * 64, "r", 1, "h", 2, 3, ["a", "b"], [(0, 0, {"kind": "k"})]),
        FileReport("p", ExitCode.OK, 1, None, None, None, []),
    ],
)
def test_pickle_round_trip(record: Record) -> None:
    # records cross to worker processes (range results, options)
    assert pickle.loads(pickle.dumps(record)) == record


def test_replace_changes_only_the_named_fields() -> None:
    options = VerifyOptions(max_findings=5, jobs=4)
    changed = options.replace(jobs=1)
    assert (changed.jobs, changed.max_findings, options.jobs) == (1, 5, 4)
    kind = KINDS[0]
    assert kind.replace(description="x") == KindDef(
        kind.name, kind.version, kind.section, "x", kind.fields, kind.invariants
    )
    with pytest.raises(TypeError):
        options.replace(no_such_field=1)


def test_defaults_are_fresh_per_instance() -> None:
    a, b = VerifyReport(), VerifyReport()
    a.files.append(FileReport("p", ExitCode.OK, 0, None, None, None, []))
    assert b.files == [] and b.findings == []


#: what ``ract trace verify -q`` and ``ract trace grep --kind`` import before they read (cli/launch.py's fast paths)
FAST_PATH_MODULES = (
    "ract_cli.cli.launch",
    "ract_cli.verify.verifier",
    "ract_cli.dialects",
    "ract_cli.cli.grep_report",
    "ract_cli.cli.grep_output",
    "ract_cli.grep.search",
)


def test_the_fast_paths_build_no_dataclass() -> None:
    # the point of records.py: no @dataclass compiles its methods while those commands start
    code = (
        "import dataclasses, importlib, sys\n"
        "made = []\n"
        "real = dataclasses._process_class\n"
        "def spy(cls, *a, **k):\n"
        "    made.append(cls.__module__ + '.' + cls.__qualname__)\n"
        "    return real(cls, *a, **k)\n"
        "dataclasses._process_class = spy\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "print(','.join(m for m in made if m.startswith('ract_cli')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code, *FAST_PATH_MODULES], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == ""


def test_private_slots_are_not_fields() -> None:
    a, b = GrepFilter(kinds=("tool.*", "run.started")), GrepFilter(kinds=("tool.*", "run.started"))
    assert "_kind_globs" not in fields_of(GrepFilter) and a == b and hash(a) == hash(b)
    copy = pickle.loads(pickle.dumps(a))
    assert copy == a and copy.kind_ok("tool.called") and not copy.kind_ok("step.started")
