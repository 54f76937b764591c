"""Walking a tree never skips what it cannot read (issue 15, items 1 and 12).

Every directory the walk cannot read (permission denied, vanished, a name
too long), and an ``events.jsonl`` that is itself a directory, is an
``IO_ERROR`` finding naming the path: exit 5 in verify, grep and project
alike (they all search through ``read.discovery.discover``), never a silent
exit 0 over a tree whose unreadable run is tampered. The walk is iterative:
a tree deeper than Python's recursion limit is searched, not a traceback.

Permission denied is tested as the unprivileged user ``nobody`` (root reads
everything): a subprocess under ``setpriv`` runs the system Python 3.11 on
this checkout and the virtualenv's site-packages, over a tree in a
world-readable temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer

from ract_cli.read import discovery
from ract_cli.read.discovery import discover

ROOT = Path(__file__).resolve().parent.parent
RUN = "1a2b3c4d5e6f708192a3b4c5d6e7f809"


def ract(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@pytest.fixture
def tree(logs) -> Path:  # type: ignore[no-untyped-def]
    """A tree with one valid run under ``runs/``."""
    logs.five()
    return Path(logs.root)


def _tamper(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    event = json.loads(lines[2])
    event["payload"]["reason"] = "forged"
    lines[2] = json.dumps(event, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(b"".join(lines))


# --- an events.jsonl that is a directory -------------------------------------------------------


def test_events_jsonl_directory_is_an_io_error(tree: Path) -> None:
    bogus = tree / "other" / "events.jsonl"
    bogus.mkdir(parents=True)
    found = discover([tree])
    assert [f.code for f in found.findings] == ["IO_ERROR"]
    assert found.findings[0].path == str(bogus)
    assert "is a directory" in found.findings[0].message
    assert len(found.files) == 1  # the valid run is still read


@pytest.mark.parametrize("command", [["verify"], ["grep", "--kind", "run.*"], ["project"]])
def test_events_jsonl_directory_exits_5_in_every_command(tree: Path, command: list[str]) -> None:
    bogus = tree / "other" / "events.jsonl"
    bogus.mkdir(parents=True)
    done = ract("trace", *command, str(tree))
    assert done.returncode == 5, done.stderr
    assert str(bogus) in done.stdout + done.stderr


def test_symlinked_events_jsonl_to_a_directory_is_an_io_error(tree: Path) -> None:
    (tree / "target").mkdir()
    (tree / "link").mkdir()
    (tree / "link" / "events.jsonl").symlink_to(tree / "target")
    found = discover([tree])
    assert [(f.code, f.path) for f in found.findings] == [("IO_ERROR", str(tree / "link" / "events.jsonl"))]


# --- a directory that vanishes while it is walked ----------------------------------------------


def test_vanished_directory_is_an_io_error(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tree / "gone"
    gone.mkdir()
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        if isinstance(path, str) and path == str(gone):
            gone.rmdir()  # removed between the parent's listing and this one
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    found = discover([tree])
    assert [(f.code, f.path) for f in found.findings] == [("IO_ERROR", str(gone))]
    assert "vanished" in found.findings[0].message
    assert len(found.files) == 1


def test_unreadable_root_is_one_io_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scandir(path):  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied", os.fspath(path))

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    found = discover([tmp_path])
    assert [(f.code, f.path) for f in found.findings] == [("IO_ERROR", str(tmp_path))]
    assert "Permission denied" in found.findings[0].message


# --- permission denied, as an unprivileged user -------------------------------------------------

SYSTEM_PYTHON = Path("/usr/bin/python3.11")
SETPRIV = shutil.which("setpriv")
SITE = Path(typer.__file__).resolve().parent.parent  # the virtualenv's site-packages


def _nobody_can_run() -> str | None:
    """Why the unprivileged run cannot happen here (None: it can)."""
    if os.geteuid() != 0:
        return "not root: cannot switch to nobody"
    if SETPRIV is None or not SYSTEM_PYTHON.exists():
        return "needs setpriv and /usr/bin/python3.11 (a Python nobody may execute)"
    probe = subprocess.run(
        [*_as_nobody(), "-c", "import ract_cli.cli.app, orjson"],
        capture_output=True,
        text=True,
        env=_nobody_env(),
        cwd="/",
        timeout=60,
    )
    if probe.returncode != 0:
        return f"nobody cannot import ract_cli from this checkout: {probe.stderr.strip()[-200:]}"
    return None


def _as_nobody() -> list[str]:
    assert SETPRIV is not None
    return [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", str(SYSTEM_PYTHON)]


def _nobody_env() -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{SITE}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LC_ALL": "C.UTF-8",
    }


@pytest.fixture
def world_tree(logs) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    """A world-readable tree (pytest's tmp_path is not) with one valid and one tampered, unreadable run."""
    why = _nobody_can_run()
    if why is not None:
        pytest.skip(why)
    base = Path(tempfile.mkdtemp(prefix="ract-walk-"))
    try:
        base.chmod(0o755)
        good = logs.five()
        tree = base / "runs"
        shutil.copytree(good.parent.parent, tree)
        bad_run = tree / "aaaa" / "secret" / RUN
        shutil.copytree(good.parent, bad_run)
        _tamper(bad_run / "events.jsonl")
        for d in [tree, *(p for p in tree.rglob("*") if p.is_dir())]:
            d.chmod(0o755)
        for f in tree.rglob("*.jsonl"):
            f.chmod(0o644)
        (tree / "aaaa" / "secret").chmod(0)  # nobody cannot list it: the tampered run is hidden
        yield tree
    finally:
        for d in [base, *(p for p in base.rglob("*") if p.is_dir())]:
            d.chmod(stat.S_IRWXU)
        shutil.rmtree(base)


@pytest.mark.parametrize("command", [["verify"], ["grep", "--kind", "run.*"], ["project"]])
def test_permission_denied_directory_exits_5_as_nobody(world_tree: Path, command: list[str]) -> None:
    done = subprocess.run(
        [*_as_nobody(), "-m", "ract_cli", "trace", *command, str(world_tree)],
        capture_output=True,
        text=True,
        env=_nobody_env(),
        cwd="/",
        timeout=120,
    )
    assert done.returncode == 5, (done.stdout, done.stderr)
    out = done.stdout + done.stderr
    assert str(world_tree / "aaaa" / "secret") in out
    assert "Permission denied" in out
    assert "Traceback" not in out


# --- a tree deeper than the recursion limit (item 12) ----------------------------------------


def _deep(base: Path, depth: int) -> Path:
    """``base/d/d/.../d`` ``depth`` levels down, made without a path longer than PATH_MAX at once."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    return base.joinpath(*["d"] * depth)


def _remove_deep(base: Path) -> None:
    """Remove a ``_deep`` chain bottom-up through directory descriptors: Python 3.11's ``shutil.rmtree`` (and
    pytest's clean-up of old temporary directories, on a later run) recurses once per level and fails."""
    if not base.exists():
        return
    fds = [os.open(base, os.O_RDONLY)]
    try:
        while "d" in os.listdir(fds[-1]):
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        while len(fds) > 1:
            leaf = fds.pop()
            for name in os.listdir(leaf):
                os.unlink(name, dir_fd=leaf)
            os.close(leaf)
            os.rmdir("d", dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


@pytest.fixture
def deep() -> Iterator[Callable[[Path, int], Path]]:
    """``_deep``, with every chain it made removed afterwards (so no later run trips over it)."""
    made: list[Path] = []

    def make(base: Path, depth: int) -> Path:
        made.append(base)
        return _deep(base, depth)

    yield make
    for base in made:
        _remove_deep(base)


def test_deep_tree_is_walked_iteratively(tree: Path, tmp_path: Path, deep: Callable[[Path, int], Path]) -> None:
    depth = 1200
    assert depth > sys.getrecursionlimit()
    bottom = deep(tree / "deep", depth)
    shutil.copy(tree / RUN / "events.jsonl", bottom / "events.jsonl")
    found = discover([tree / "deep"])
    assert found.findings == [] and found.files == [bottom / "events.jsonl"]
    done = ract("trace", "verify", "deep", cwd=tree)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["verify"], ["grep", "--kind", "run.*"], ["project"]])
def test_deep_tree_without_a_log_exits_5(tmp_path: Path, command: list[str], deep: Callable[[Path, int], Path]) -> None:
    deep(tmp_path / "deep", 1200)
    done = ract("trace", *command, "deep", cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
