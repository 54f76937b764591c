"""Docs that cannot drift: every check that ``docs/`` still says what the code does.

They live in one file so that a change to the command line or to a table
finds, in one run, every page it must touch:

- every command registered in ``ract trace`` (``ract_cli.cli.app``): each
  option its ``--help`` lists is named in its page ``docs/<command>.md`` (or the
  page it shares with its siblings; a page not written yet is an expected failure);
- ``docs/cli.md`` is exactly what ``scripts/gen_cli_docs.py`` renders from ``--help``;
- ``docs/exit-codes.md`` and ``docs/reader.md`` list every finding code with its exit code;
- ``docs/verify.md`` names every key of the JSON report;
- ``docs/project.md`` lists every audit flag code, and the golden JSON reports
  validate against the documented ``docs/schemas/project-report.json``;
- ``docs/schemas/`` is exactly a fresh export of the kinds table (``make schemas``).

A failure names the page and what it lacks; fix the page (or regenerate it), not the test.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
import typer.main

from ract_cli.cli.app import _register_commands, main, trace_app
from ract_cli.errors import ExitCode
from ract_cli.findings import FINDING_CODES
from ract_cli.format.kinds import KINDS
from ract_cli.format.schema_export import export
from ract_cli.project.report import FLAG_CODES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SCHEMAS = DOCS / "schemas"
PROJECT_SCHEMA = json.loads((SCHEMAS / "project-report.json").read_text("utf-8"))
PROJECT_GOLDEN = ROOT / "tests" / "golden" / "project"
STALE = "docs/schemas/ is stale: run `make schemas` and commit the result"


# --- every command: each option of its --help is named in docs/<command>.md --------------------------


def registered_commands() -> list[str]:
    """The ``ract trace`` commands, in the app's own table order."""
    _register_commands()
    return [info.name or info.callback.__name__ for info in trace_app.registered_commands]  # type: ignore[union-attr]


#: Options a page must name at the least (a check that the option list is read at all).
MUST_HAVE = {"verify": {"--expect-head"}, "grep": {"--where", "--no-verify"}}


#: Commands documented together on one page (docs/checkpoints.md: "Commands: `ract trace keygen`,
#: `checkpoint`, `prove`, `verify-proof`"); every other command has its own docs/<command>.md.
SHARED_PAGES = {"keygen": "checkpoints.md", "checkpoint": "checkpoints.md", "prove": "checkpoints.md"}
SHARED_PAGES["verify-proof"] = "checkpoints.md"


def _page(command: str) -> Path:
    return DOCS / SHARED_PAGES.get(command, f"{command}.md")


def _command_params(command: str) -> list[str]:
    """Every spelling (long and short) of every option ``--help`` lists, ``--help`` itself aside."""
    click_command = typer.main.get_command(trace_app).commands[command]  # type: ignore[attr-defined]
    return [
        spelling
        for param in click_command.params
        if not getattr(param, "hidden", False)
        for spelling in [*param.opts, *getattr(param, "secondary_opts", [])]
        if spelling.startswith("-") and spelling != "--help"
    ]


def mentions(doc: str, option: str) -> bool:
    """``option`` appears in ``doc`` as a whole option (``--max-items``, not inside ``--max-items-x``)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", doc) is not None


def _help(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["trace", command, "--help"]) == 0
    return out.getvalue()


def _command_cases() -> list:
    cases = []
    for command in registered_commands():
        if _page(command).exists():
            cases.append(pytest.param(command, id=command))
        else:
            reason = f"docs/{_page(command).name} is not written yet (the command is new)"
            cases.append(pytest.param(command, id=command, marks=pytest.mark.xfail(strict=False, reason=reason)))
    return cases


@pytest.mark.parametrize("command", _command_cases())
def test_command_page_names_every_option_of_its_help(command: str) -> None:
    """The command's page mentions every option of its ``--help``, each spelling (``--output``, ``-o``).

    The check verify's and grep's pages had (``test_verify_doc_names_every_option_of_the_command``,
    ``test_docs_page_mentions_every_option``, below: those also want each option in backticks),
    for every registered command.
    """
    options = _command_params(command)
    assert options, f"{command}: no options read from the command"
    assert MUST_HAVE.get(command, set()) <= set(options), options
    help_text = _help(command)
    assert [o for o in options if o not in help_text] == [], f"{command} --help does not show these options"
    page = _page(command)
    assert page.exists(), f"docs/{page.name}: no page for `ract trace {command}`"
    doc = page.read_text(encoding="utf-8")
    missing = [o for o in options if not mentions(doc, o)]
    assert missing == [], f"docs/{page.name} never mentions {', '.join(missing)} (options of `ract trace {command}`)"


def test_every_command_is_checked() -> None:
    """The parametrisation above follows the app's table: no command is left out of the drift check."""
    names = registered_commands()
    assert names[:5] == ["verify", "repair", "replay", "grep", "project"]
    assert len(names) == len(set(names))
    assert sorted(c.values[0] for c in _command_cases()) == sorted(names)


def test_docs_page_mentions_every_option():
    import typer.main

    from ract_cli.cli.app import _register_commands, trace_app

    _register_commands()
    command = typer.main.get_command(trace_app).commands["grep"]  # type: ignore[attr-defined]
    options = [o for p in command.params for o in [*p.opts, *getattr(p, "secondary_opts", [])] if o.startswith("-")]
    assert "--where" in options and "--no-verify" in options
    doc = (ROOT / "docs" / "grep.md").read_text(encoding="utf-8")
    assert [o for o in options if f"`{o}" not in doc] == []


# --- docs/cli.md is generated from --help --------------------------------------------------------


def test_cli_reference_is_current() -> None:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = module.render()
    assert "## `ract trace verify`" in expected and "--expect-head" in expected
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == expected, "docs/cli.md is stale: run `python scripts/gen_cli_docs.py` and commit it"


# --- finding codes and exit codes: docs/exit-codes.md, docs/reader.md --------------------------------


def test_exit_codes_doc_lists_every_finding_code_with_its_exit_code() -> None:
    text = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (\d) [A-Z]+ \|", text, re.M))
    assert set(rows) == set(FINDING_CODES)
    assert {code: int(n) for code, n in rows.items()} == {code: int(c) for code, (c, _) in FINDING_CODES.items()}
    exit_rows = dict(re.findall(r"^\| (\d) \| ([A-Z_]+) \|", text, re.M))
    assert {int(n): name for n, name in exit_rows.items()} == {int(c): c.name for c in ExitCode}


def _codes_table(doc: str) -> dict[str, str]:
    begin, end = doc.index("<!-- finding-codes:begin -->"), doc.index("<!-- finding-codes:end -->")
    rows = {}
    for line in doc[begin:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def test_reader_doc_lists_every_finding_code(repo_root: Path) -> None:
    doc = (repo_root / "docs" / "reader.md").read_text(encoding="utf-8")
    table = _codes_table(doc)
    missing = [
        f"| `{code}` | {int(x)} {x.name} | {meaning} |"
        for code, (x, meaning) in FINDING_CODES.items()
        if code not in table
    ]
    assert not missing, "docs/reader.md: add these rows to the finding-codes table:\n" + "\n".join(missing)
    for code, (exit_code, _) in FINDING_CODES.items():
        assert f"`{code}`" in doc
        assert table[code] == f"{int(exit_code)} {exit_code.name}", f"docs/reader.md: {code} exits {exit_code!r}"
    assert set(table) <= set(FINDING_CODES), f"docs/reader.md lists unknown codes: {set(table) - set(FINDING_CODES)}"


# --- docs/verify.md: the JSON report ---------------------------------------------------------------


def test_verify_doc_names_every_option_of_the_command(capsys) -> None:
    """Every long option of ``verify --help`` and every key of the JSON report is named in docs/verify.md."""
    text = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")
    assert main(["trace", "verify", "--help"]) == 0
    help_text = capsys.readouterr().out
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", help_text)) - {"--help"}
    assert options and all(f"`{o}" in text for o in options), options - {o for o in options if f"`{o}" in text}
    for key in (
        "exit_code",
        "files",
        "path",
        "ok",
        "events",
        "head",
        "first_ts",
        "last_ts",
        "findings",
        "suppressed_findings",
        "code",
        "severity",
        "line",
        "offset",
        "event_id",
        "message",
    ):
        assert f"`{key}`" in text or f"`files[].{key}`" in text or f"`findings[].{key}`" in text, key


# --- docs/project.md and its JSON Schema -----------------------------------------------------------


def test_every_flag_code_is_documented() -> None:
    doc = (ROOT / "docs" / "project.md").read_text("utf-8")
    for code in FLAG_CODES:
        assert f"| `{code}` |" in doc, code
    flag_schema = PROJECT_SCHEMA["$defs"]["flag"]["properties"]
    assert set(flag_schema) == {"code", "source", "line", "event_id", "kind", "message"}


@pytest.mark.parametrize("path", sorted(PROJECT_GOLDEN.glob("*.json")), ids=lambda p: p.name)
def test_golden_json_validates_against_the_documented_schema(path: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(PROJECT_SCHEMA)
    errors = list(jsonschema.Draft202012Validator(PROJECT_SCHEMA).iter_errors(json.loads(path.read_text("utf-8"))))
    assert not errors, [e.message[:200] for e in errors[:5]]


# --- docs/schemas/: a fresh export of the kinds table ---------------------------------------------


def _files(directory: Path) -> dict[str, bytes]:
    # *-report.json are the commands' JSON report schemas (e.g. project-report.json),
    # hand-written and checked by their commands' tests, not exported from kinds.py.
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and not p.name.endswith("-report.json")
    }


def test_committed_schemas_are_fresh(tmp_path: Path) -> None:
    export(tmp_path)
    fresh, committed = _files(tmp_path), _files(SCHEMAS)
    assert sorted(committed) == sorted(fresh), STALE
    for name, data in fresh.items():
        assert committed[name] == data, f"{name}: {STALE}"


def test_index_maps_every_kind_to_its_version() -> None:
    index = json.loads((SCHEMAS / "index.json").read_text("utf-8"))
    assert index == {k.name: k.version for k in KINDS}
