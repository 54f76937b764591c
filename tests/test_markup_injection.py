"""Rich markup in a path or log string is text, never markup (issue 15, item 5).

A directory named ``[link=https:/evil.example]click[/link]`` must not draw an OSC 8 hyperlink on the
terminal, and one named ``[/]`` must not raise rich's ``MarkupError`` (a traceback, exit 1 on a valid
log). Every rich renderable that carries log- or path-derived text (table titles, column headers,
cells) is built from ``Text``, never from a markup string: checked for every command and output form,
RACT runs and Raxol journals, single (detail) and several (fleet) reports, in-process and on a pty.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hardening_support import (
    ROOT,
    assert_no_traceback,
    command_argv,
    read_only_commands,
    run_inprocess,
    run_on_pty,
    write_small_log,
)

#: directory names a user (or an attacker) can create; each is rich markup
MARKUP_NAMES = [
    "[/]",
    "[link=https:",  # with the two below: the path [link=https:/evil.example]click[/link]/events.jsonl
    "[bold red]PASS[/]",
    "x[/bold]",
    "[link=file:///etc/passwd]open me[/link]",
]
LINK_DIR = Path("[link=https:") / "evil.example]click[" / "link]"
JOURNAL = ROOT / "fixtures" / "journals" / "accepted.jsonl"


@pytest.fixture(scope="module")
def markup_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("markup")
    runs: dict[str, Path] = {}
    for i, name in enumerate(["[/]", "[bold red]PASS[/]", "x[/bold]"]):
        d = root / "ract" / name
        d.mkdir(parents=True)
        write_small_log(d / "events.jsonl")
        runs[f"ract-{i}"] = d / "events.jsonl"
    link = root / "ract" / LINK_DIR
    link.mkdir(parents=True)
    write_small_log(link / "events.jsonl")
    runs["ract-link"] = link / "events.jsonl"
    for i, name in enumerate(["[/]", "[link=https:"]):
        d = root / "journal" / name
        d.mkdir(parents=True)
        shutil.copy(JOURNAL, d / "journal.jsonl")
        runs[f"journal-{i}"] = d / "journal.jsonl"
    runs["root"] = root
    return runs


def _no_markup_effect(out: str, err: str, context: object) -> None:
    assert_no_traceback(err, context)
    assert "MarkupError" not in err and "MarkupError" not in out, context


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_project_report_title_with_markup_path_is_text(markup_runs: dict[str, Path], fmt: str) -> None:
    """``project`` detail (one run) and fleet (several) reports over paths that are rich markup: exit 0."""
    for key in ("ract-0", "ract-1", "ract-2", "ract-link", "journal-0", "journal-1"):
        path = markup_runs[key]
        code, out, err = run_inprocess(["trace", "project", "--format", fmt, str(path)])
        _no_markup_effect(out, err, (key, fmt))
        assert code == 0, (key, fmt, err)
        if fmt == "text":
            assert str(path.parent.name) in out, (key, out[:500])  # the name shown as the text it is
    code, out, err = run_inprocess(["trace", "project", "--format", fmt, str(markup_runs["root"])])
    _no_markup_effect(out, err, ("fleet", fmt))
    assert code == 0, err
    if fmt == "text":
        assert "[/]" in out


def test_every_command_over_a_markup_path_exits_as_for_a_plain_one(
    markup_runs: dict[str, Path], tmp_path: Path
) -> None:
    """Every read-only command, in-process, over a run directory named ``[/]``: no traceback, and the exit
    code of the same file under a plain name."""
    plain = {"ract-0": tmp_path / "plain" / "events.jsonl", "journal-0": tmp_path / "plainj" / "journal.jsonl"}
    for key, path in plain.items():
        path.parent.mkdir()
        shutil.copy(markup_runs[key], path)
    for command in read_only_commands():
        for key, reference in plain.items():
            code, out, err = run_inprocess(command_argv(command, markup_runs[key]))
            _no_markup_effect(out, err, (command, key))
            expected, _, _ = run_inprocess(command_argv(command, reference))
            assert code == expected, (command, key, err[-1000:])


@pytest.mark.parametrize(
    "argv",
    [
        ["trace", "project", "--format", "text"],
        ["trace", "grep", "--format", "table"],
        ["trace", "verify"],
        ["trace", "replay"],
    ],
    ids=lambda a: "-".join(a[1:]),
)
def test_markup_link_path_draws_no_hyperlink_on_a_terminal(markup_runs: dict[str, Path], argv: list[str]) -> None:
    """On a real pty with colour forced: no OSC 8 (``ESC ] 8``), no traceback, the name shown literally."""
    for key in ("ract-link", "ract-0", "journal-1"):
        code, shown = run_on_pty([*argv, str(markup_runs[key])])
        context = (argv, key)
        assert_no_traceback(shown, context)
        assert b"\x1b]8;" not in shown, (context, shown[-1500:])
        assert code == 0, (context, shown[-1500:])
    code, shown = run_on_pty(["trace", "project", "--format", "text", str(markup_runs["root"])], columns=400)
    assert code == 0 and b"\x1b]8;" not in shown and b"MarkupError" not in shown, shown[-1500:]
    assert b"evil.example]click[" in shown
