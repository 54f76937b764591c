"""The command skeleton: entry points, help and --version, the exit-code epilog, the --jobs bound, usage errors.

Real subprocesses (``python -m ract_cli`` and the installed ``ract``) and
in-process runs through ``ract_cli.cli.app.main`` (capsys) over the
committed fixtures. Usage errors read like a CLI: click's wording, never
pydantic's, and a value from the command line never reaches the terminal raw.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hardening_support import command_argv, read_only_commands, run_subprocess

from ract_cli.cli.app import main
from ract_cli.cli.options import MAX_JOBS
from ract_cli.errors import EXIT_CODE_MEANINGS, ExitCode
from ract_cli.read.core import NATIVE, core_name
from ract_cli.testing.synth import fixture_path, write_runtime_floats

ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, env=ENV, timeout=120)


def run_main(capsys, *argv: object) -> tuple[int, str, str]:
    """``main(ARGV)`` in-process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def fixture(name: str) -> str:
    return str(fixture_path(FIXTURES, name))


def _ract() -> list[str]:
    """The installed console script when there is one, else ``python -m ract_cli``."""
    script = Path(sys.executable).with_name("ract")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ract_cli"]


def test_python_dash_m_help() -> None:
    result = _run(sys.executable, "-m", "ract_cli", "--help")
    assert result.returncode == 0, result.stderr
    assert "trace" in result.stdout


def test_console_script_trace_help() -> None:
    result = _run(*_ract(), "trace", "--help")
    assert result.returncode == 0, result.stderr
    assert "verify" in result.stdout


def test_help_epilog_lists_every_exit_code() -> None:
    result = _run(sys.executable, "-m", "ract_cli", "--help")
    assert result.returncode == 0
    assert len(ExitCode) == 9  # 0-8 of SPEC §3 (8: diff's DIFFERENT)
    for code in ExitCode:
        assert f"{int(code)} {code.name}" in result.stdout, code
        assert EXIT_CODE_MEANINGS[code].split(":")[0] in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--no-such-option"],
        ["trace", "--no-such-option"],
        ["trace", "verify", "--no-such-option", "x"],
        ["trace", "no-such-command"],
    ],
)
def test_unknown_option_is_usage_error(args: list[str]) -> None:
    result = _run(sys.executable, "-m", "ract_cli", *args)
    assert result.returncode == ExitCode.USAGE == 2, result.stderr
    assert result.stdout == ""


def test_main_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "Exit codes" in capsys.readouterr().out
    assert main(["--no-such-option"]) == 2
    assert main(["trace", "--help"]) == 0


def test_no_arguments_shows_help() -> None:
    result = _run(sys.executable, "-m", "ract_cli")
    assert result.returncode in (0, 2)  # click: help on no args
    assert "Usage" in result.stdout + result.stderr


# --- --version and help ---------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(capsys, flag: str) -> None:
    """SPEC §11: the version and the per-line core that runs."""
    expected = importlib.metadata.version("ract-cli")
    core = core_name()  # native when built, unless RACT_CORE says python
    assert run_main(capsys, flag) == (0, f"ract {expected} (core: {core})\n", "")


@pytest.mark.parametrize("core", ["python", "native"])
def test_version_says_which_core_ract_core_chooses(monkeypatch, capsys, core: str) -> None:
    monkeypatch.setenv("RACT_CORE", core)
    if core == "native" and NATIVE is None:
        assert run_main(capsys, "--version")[0] == 2  # demanded but not built: a usage error
        return
    assert run_main(capsys, "--version")[1].endswith(f"(core: {core})\n")


def test_a_bad_ract_core_is_a_usage_error_for_every_reading_command(monkeypatch, capsys) -> None:
    monkeypatch.setenv("RACT_CORE", "fortran")
    code, out, err = run_main(capsys, "trace", "verify", "fixtures/runs")
    assert code == 2 and out == "" and "RACT_CORE must be python or native" in err


def test_version_subprocess_wins_over_a_command() -> None:
    # eager: printed before anything else is looked at, even with a command after it
    proc = run_subprocess(["--version", "trace", "verify", "/nonexistent"], timeout=60)
    assert proc.returncode == 0 and proc.stderr == b""
    core = core_name()
    assert proc.stdout.decode() == f"ract {importlib.metadata.version('ract-cli')} (core: {core})\n"


def _imported_by(argv: list[str]) -> tuple[int, str, set[str]]:
    """(exit code, stdout, the modules imported, by full and top-level name) of the ``ract`` entry point
    run on ``argv``, fresh."""
    import subprocess
    import sys

    script = (
        "import io, contextlib, sys\n"
        "from ract_cli.cli.launch import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main({argv!r})\n"
        "print(code, sorted({*sys.modules, *(m.split('.')[0] for m in sys.modules)}), out.getvalue(), sep='\\n', end='')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-800:]
    code, modules, out = proc.stdout.split("\n", 2)
    return int(code), out, set(eval(modules))


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_a_lone_version_imports_neither_typer_nor_rich(flag: str) -> None:
    """Start-up (issue 14): ``ract --version`` answers before the CLI is imported, and says the same."""
    code, out, modules = _imported_by([flag])
    assert (code, out) == (0, f"ract {importlib.metadata.version('ract-cli')} (core: {core_name()})\n")
    assert not modules & {"typer", "click", "rich", "importlib_metadata"}, modules


def test_verify_and_project_into_a_pipe_import_neither_typer_nor_rich() -> None:
    """``trace verify [-q|--format json] PATH`` and ``trace project PATH`` into a pipe run before the CLI is
    imported (launch.py); rich is made only once something is printed on a terminal."""
    code, out, modules = _imported_by(["trace", "verify", "-q", "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe"])
    assert (code, out) == (0, "")
    assert not modules & {"rich", "typer", "click"}
    code, out, modules = _imported_by(
        ["trace", "verify", "-q", "--max-findings", "9", "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe"]
    )
    assert (code, out) == (0, "") and "typer" in modules and "rich" not in modules  # (another option: the CLI)
    code, out, modules = _imported_by(
        ["trace", "verify", "--format", "json", "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe"]
    )
    assert code == 0 and json.loads(out)["exit_code"] == 0  # (the report, printed without the CLI)
    assert not modules & {"rich", "typer", "click"}, modules
    # its verdict line on stderr (a pipe here): written without rich (render.write_stderr_lines)
    code, out, modules = _imported_by(["trace", "verify", "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe"])
    assert (code, out) == (0, "") and not modules & {"rich", "typer", "click"}, modules
    # nor a journal dialect (a RACT log), nor the process pools (concurrent.futures imports logging)
    assert not modules & {"ract_cli.dialects.raxol", "concurrent", "logging", "multiprocessing"}, modules
    # a project into a pipe: its JSON report (cli/project_output.py), without the CLI
    code, out, modules = _imported_by(["trace", "project", "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe"])
    assert code == 0 and json.loads(out)["runs"][0]["status"] == "completed"
    assert not modules & {"rich", "typer", "click"}, modules
    # nor the Markdown form, the HTML page's timeline, or a journal's report (a RACT log's JSON needs none)
    assert not modules & {"ract_cli.project.markdown", "ract_cli.project.timeline", "ract_cli.project.journal"}


@pytest.mark.skipif(core_name() != "native", reason="the native core is not built or not chosen")
def test_a_verify_the_native_core_answers_loads_neither_orjson_nor_the_python_line_analysis(tmp_path: Path) -> None:
    """Start-up (issue 14): importing orjson costs ~14 ms (it imports dataclasses, uuid, datetime), a quarter of
    a quiet verify; a log the native core proves whole, in our layout or in ``json.dumps``' with shuffled keys,
    needs neither it nor the Python path's modules, nor does its JSON report or its projection (the native
    core writes orjson's bytes, ``read.json_text``). A log with a finding is worded by the Python path."""
    completed = "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe/events.jsonl"
    foreign = tmp_path / "events.jsonl"
    write_runtime_floats(Path(completed), foreign)
    python_path = {
        "orjson",
        "json",
        "hashlib",
        "ract_cli.read.line",
        "ract_cli.read.fastpath",
        "ract_cli.format.canonical",
        "dataclasses",
    }
    for argv in (["trace", "verify", "-q", completed], ["trace", "verify", str(foreign)]):
        code, out, modules = _imported_by(argv)
        assert (code, out) == (0, "") and not modules & python_path, (argv, modules & python_path)
    for argv in (["trace", "verify", "--format", "json", str(foreign)], ["trace", "project", str(foreign)]):
        code, out, modules = _imported_by(argv)
        assert code == 0 and json.loads(out)["exit_code"] == 0, (argv, out[-300:])
        assert not modules & python_path, (argv, modules & python_path)
    tampered = "fixtures/runs/8686994841309902af40ce3e190711e7/events.jsonl"
    code, out, modules = _imported_by(["trace", "verify", "-q", tampered])
    assert code == 1 and {"orjson", "ract_cli.read.line"} <= modules


@pytest.mark.skipif(core_name() != "native", reason="the native core is not built or not chosen")
def test_a_verify_or_project_the_native_core_answers_imports_neither_typing_nor_datetime() -> None:
    """Start-up (issue 14): ``typing`` costs ~5 ms and ``datetime`` ~2 ms of a ~50 ms call. The verify and
    project paths name typing's types under ``TYPE_CHECKING`` only, and ``format.text.iso_utc`` works out
    dates itself."""
    completed = "fixtures/runs/120d7eae7ee0c9c181816e553722e2fe/events.jsonl"
    for argv in (["trace", "verify", "-q", completed], ["trace", "verify", completed]):
        code, out, modules = _imported_by(argv)
        assert (code, out) == (0, "") and not modules & {"typing", "datetime"}, (argv, modules & {"typing", "datetime"})
    for argv in (["trace", "verify", "--format", "json", completed], ["trace", "project", completed]):
        code, out, modules = _imported_by(argv)
        assert code == 0 and json.loads(out)["exit_code"] == 0 and not modules & {"typing", "datetime"}, argv


def test_version_is_listed_in_help(capsys) -> None:
    code, out, _ = run_main(capsys, "--help")
    assert code == 0 and "-V, --version" in out


def test_help_lists_commands_in_one_order_whatever_ran_first() -> None:
    """A run of one command imports only its module; help afterwards must still list every command in one order."""
    import subprocess
    import sys

    script = (
        "import contextlib, io\n"
        "from ract_cli.cli.app import main\n"
        "for argv in (['trace', 'project', '--help'], ['trace', 'replay', '--help'], ['trace', '--help']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        main(argv)\n"
        "print(out.getvalue())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"}
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    listed = [
        line.split()[0]
        for line in proc.stdout.split("Commands:")[1].splitlines()
        if line.startswith("  ") and line.split() and line.split()[0].isalpha()
    ]
    assert listed[:5] == ["verify", "repair", "replay", "grep", "project"], proc.stdout


# --- the --jobs bound -----------------------------------------------------------------------------


def commands_with_jobs(capsys) -> list[str]:
    found = []
    for command in read_only_commands():
        code, out, _ = run_main(capsys, "trace", command, "--help")
        assert code == 0
        if "--jobs" in out:
            found.append(command)
    return found


@pytest.mark.parametrize("value", ["0", "-1", str(MAX_JOBS + 1), "100000", "9" * 40])
def test_jobs_out_of_range_is_a_usage_error(capsys, value: str) -> None:
    commands = commands_with_jobs(capsys)
    assert "verify" in commands
    for command in commands:
        code, out, err = run_main(capsys, *command_argv(command, fixture("completed"), "--jobs", value))
        assert code == 2 and out == "", (command, err)
        assert f"is not in the range 1<=x<={MAX_JOBS}." in err, (command, err)
        assert value[:40] in err or value[:77] in err


def test_jobs_at_the_bound_runs(capsys) -> None:
    assert run_main(capsys, "trace", "verify", "-q", "--jobs", str(MAX_JOBS), fixture("completed")) == (0, "", "")
    assert run_main(capsys, "trace", "verify", "-q", "-j", "1", fixture("tampered")) == (1, "", "")


def test_jobs_bound_is_in_the_help(capsys) -> None:
    _, out, _ = run_main(capsys, "trace", "verify", "--help")
    assert f"1<=x<={MAX_JOBS}" in out


# --- usage errors read like a CLI -----------------------------------------------------------------


WORDING = [
    (["verify", "--jobs", "x"], "Invalid value for '--jobs' / '-j': 'x' is not a valid integer."),
    (["verify", "-j", "1.5"], "Invalid value for '--jobs' / '-j': '1.5' is not a valid integer."),
    (["verify", "--max-findings", "ten"], "Invalid value for '--max-findings': 'ten' is not a valid integer."),
    (["verify", "--schema-version", "99"], "Invalid value for '--schema-version': 99 is not in the range 1<=x<=9."),
    (["verify", "--schema-version", "0"], "Invalid value for '--schema-version': 0 is not in the range 1<=x<=9."),
    (["project", "--max-items", "0"], "Invalid value for '--max-items': 0 is not in the range x>=1."),
    (["project", "--max-line-bytes", "-5"], "Invalid value for '--max-line-bytes': -5 is not in the range x>=1."),
    (
        ["project", "--format", "yaml"],
        "Invalid value for '--format': 'yaml' is not one of 'text', 'json', 'markdown', 'html'.",
    ),
    (["verify", "--dialect", "foo"], "Invalid value for '--dialect': 'foo' is not one of 'auto', 'ract', 'raxol'."),
    (["replay", "--format", "csv"], "Invalid value for '--format': 'csv' is not one of 'text', 'jsonl'."),
    (["repair", "--max-line-bytes", "lots"], "Invalid value for '--max-line-bytes': 'lots' is not a valid integer."),
    (
        ["verify", "--jobs", "\x1b[31mPASS\u202e"],
        "Invalid value for '--jobs' / '-j': "
        r"'\x1b[31mPASS\u202e' is not a valid integer.",
    ),
    (
        ["verify", "--jobs", "7" * 300],
        "Invalid value for '--jobs' / '-j': " + "7" * 77 + "... is not in the range 1<=x<=64.",
    ),
]


@pytest.mark.parametrize("argv,message", WORDING, ids=[" ".join(a)[:40] for a, _ in WORDING])
def test_usage_error_wording(capsys, argv: list[str], message: str) -> None:
    code, out, err = run_main(capsys, "trace", *argv, fixture("completed"))
    assert code == 2 and out == ""
    assert f"Error: {message}\n" in err, err
    assert "Input should" not in err and "Value error," not in err
    assert f"Usage: ract trace {argv[0]} [OPTIONS]" in err
    assert not any(ch in err for ch in "\x1b\u202e"), "a value from the command line reached the terminal raw"


@pytest.mark.parametrize(
    "argv,message",
    [
        (["trace", "verify"], "Error: Missing argument 'PATH...'."),
        (["trace", "nope"], "Error: No such command 'nope'."),
        (["trace", "verify", "--nope", "x"], "Error: No such option: --nope"),
    ],
)
def test_other_usage_errors_unchanged(capsys, argv: list[str], message: str) -> None:
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and out == "" and message in err


def test_usage_error_wording_subprocess() -> None:
    proc = run_subprocess(["trace", "verify", "--jobs", "x", "whatever"], timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"Error: Invalid value for '--jobs' / '-j': 'x' is not a valid integer.\n" in proc.stderr


@pytest.mark.parametrize(
    "command,usage",
    [
        ("verify", "Usage: ract trace verify [OPTIONS] {PATH...}"),
        ("project", "Usage: ract trace project [OPTIONS] {PATH...}"),
        ("grep", "Usage: ract trace grep [OPTIONS] {PATH...}"),
        ("replay", "Usage: ract trace replay [OPTIONS] {PATH}"),
        ("repair", "Usage: ract trace repair [OPTIONS] {PATH}"),
    ],
)
def test_usage_line_names_path(capsys, command: str, usage: str) -> None:
    code, out, _ = run_main(capsys, "trace", command, "--help")
    assert code == 0 and out.splitlines()[0] == usage


@pytest.mark.parametrize("where", ["_quick_verify", "_quick_grep"])
def test_ctrl_c_while_a_command_loads_exits_130_without_a_traceback(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in the first ~25 ms of a call, while a quick path still imports its command's modules (before any
    of them catches it), printed a traceback and died by the signal; the entry point now exits 130 quietly, as a
    command interrupted later does."""
    from ract_cli.cli import launch

    def interrupted(args: list[str]) -> int | None:
        raise KeyboardInterrupt  # (as SIGINT raises it inside an import)

    monkeypatch.setattr(launch, where, interrupted)
    monkeypatch.setattr(sys, "argv", ["ract", "trace", "grep", "--kind", "x", str(fixture_path(FIXTURES, "completed"))])
    with pytest.raises(SystemExit) as exited:
        launch.run()
    assert exited.value.code == 130
    assert capsys.readouterr() == ("", "")
