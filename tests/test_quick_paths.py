"""The quick paths of ``cli/launch.py`` against the CLI, on generated command lines.

``ract`` answers some calls of ``trace verify``, ``trace project`` and ``trace grep`` before typer is
imported; any call it does not take goes to the CLI. Either way the result must be the CLI's: hypothesis
builds command lines from the options the quick paths parse, their values right and wrong, options they
do not parse, ``--``, ``-`` and paths (valid, tampered, torn, missing, a directory), runs each through the
entry point (``launch.main``) and through the CLI (``app.main``), in-process, and compares exit code, stdout
and stderr. (Subprocess runs of the same, on every fixture: ``tests/test_cli_quiet.py``,
``tests/test_grep_cli.py``.)
"""

from __future__ import annotations

import pytest
from hardening_support import ROOT, run_inprocess, run_launcher
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli.testing.synth import fixture_path

FIXTURES = ROOT / "fixtures"
PATHS = [
    str(fixture_path(FIXTURES, "completed")),
    str(fixture_path(FIXTURES, "tampered")),
    str(fixture_path(FIXTURES, "interrupted")),
    str(FIXTURES / "runs"),
    str(FIXTURES / "journals"),
    "/nonexistent/events.jsonl",
]
#: what the quick paths parse, and what they must hand on
OPTION_WORDS = [
    "-q",
    "--quiet",
    "--require-closed",
    "-j",
    "--jobs",
    "--format",
    "--format=json",
    "--format=JSON",
    "--format=",
    "--no-verify",
    "-k",
    "--kind",
    "--max-findings",
    "--max-items",
    "--",
    "-",
    "-qq",
    "--jobs=2",
]
VALUES = ["json", "JSON", "text", "github", "GitHub", "markdown", "jsonl", "1", "2", "0", "65", "02", "x", "", "²"]
KIND_VALUES = ["process.reaped", "tool.*", "run.*", "no.such.kind", "*"]
WORDS = st.lists(
    st.one_of(
        st.sampled_from(OPTION_WORDS), st.sampled_from(VALUES), st.sampled_from(KIND_VALUES), st.sampled_from(PATHS)
    ),
    max_size=7,
)


@pytest.mark.parametrize("command", ["verify", "project", "grep"])
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(words=WORDS, path=st.sampled_from(PATHS))
def test_the_entry_point_answers_as_the_cli(command: str, words: list[str], path: str) -> None:
    lead = ["--kind", "tool.*"] if command == "grep" else []  # (grep's quick path needs a kind)
    argv = ["trace", command, *lead, *words, path]
    assert run_launcher(argv) == run_inprocess(argv), argv


def test_the_quick_paths_are_taken() -> None:
    """The comparison above is not of the CLI with itself: these calls never reach ``app.main``."""
    import ract_cli.cli.app as app

    calls: list[list[str]] = []
    real = app.main
    app.main = lambda argv=None: calls.append(list(argv or [])) or 0  # type: ignore[assignment,func-returns-value]
    try:
        for argv in (
            ["trace", "verify", PATHS[0]],
            ["trace", "verify", "--format", "json", "-j", "2", PATHS[1]],
            ["trace", "project", "-q", PATHS[3]],
            ["trace", "grep", "--kind", "run.*", PATHS[0]],
        ):
            code, _, _ = run_launcher(argv)
            assert code in (0, 1, 4), argv
    finally:
        app.main = real
    assert calls == []
