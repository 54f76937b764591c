"""Replay's workspace checks (SPEC §5) against real temporary git repositories."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from git_support import GitRepo

from ract_cli import EventWriter
from ract_cli.errors import ExitCode
from ract_cli.findings import FINDING_CODES, exit_code_for
from ract_cli.replay.workspace import DIVERGE_NOTE, CommittedStep, check_commits, check_head, full_sha

RUN_ID = "a" * 32
STEP_ID = "b" * 32


def ract(*args: str, stdout=subprocess.PIPE, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m ract_cli ARGS`` as a user runs it (its own process), stderr piped."""
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", *args], stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, timeout=120
    )


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    r = GitRepo(tmp_path / "ws")
    r.commit("a.txt")
    return r


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_new_codes_are_in_the_table_with_their_exit_codes() -> None:
    assert FINDING_CODES["HEAD_DIVERGED"][0] == ExitCode.DIVERGED
    assert FINDING_CODES["COMMIT_MISSING"][0] == ExitCode.DIVERGED
    assert FINDING_CODES["COMMIT_UNRELATED"][0] == ExitCode.DIVERGED
    assert FINDING_CODES["WORKTREE_DIRTY"][0] == ExitCode.OK
    assert FINDING_CODES["PRECONDITION_UNCHECKED"][0] == ExitCode.OK


def test_full_sha_accepts_only_full_hex_object_names() -> None:
    assert full_sha("A" * 40) == "a" * 40
    assert full_sha("b" * 64) == "b" * 64
    for bad in ("a" * 39, "a" * 41, "HEAD", "--upload-pack=touch /tmp/x", "a" * 40 + "\n", None, 7, ["a" * 40]):
        assert full_sha(bad) is None, bad


def test_head_at_snapshot_is_silent(repo: GitRepo) -> None:
    first = repo.head()
    report = check_head(repo.root, first)
    assert report.findings == []
    assert report.checked and not report.diverged
    assert report.head == first and report.branch == "main" and not report.detached


def test_head_elsewhere_warns_naming_both_commits(repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    report = check_head(repo.root, first)
    assert codes(report.findings) == ["HEAD_DIVERGED"]
    f = report.findings[0]
    assert f.severity == "warning" and exit_code_for(report.findings) == ExitCode.OK
    assert first in f.message and second in f.message and DIVERGE_NOTE in f.message
    assert (f.expected, f.actual) == (first, second)
    strict = check_head(repo.root, first, strict=True)
    assert strict.findings[0].severity == "error"
    assert exit_code_for(strict.findings) == ExitCode.DIVERGED


def test_snapshot_in_uppercase_is_the_same_commit(repo: GitRepo) -> None:
    assert check_head(repo.root, repo.head().upper()).findings == []


def test_detached_head(repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    repo.checkout(first, detach=True)
    report = check_head(repo.root, first)
    assert report.detached and report.findings == []
    report = check_head(repo.root, second)
    assert codes(report.findings) == ["HEAD_DIVERGED"]
    assert "detached HEAD" in report.findings[0].message and first in report.findings[0].message


def test_dirty_tree_is_warned(repo: GitRepo) -> None:
    first = repo.head()
    (repo.root / "a.txt").write_text("changed\n")
    report = check_head(repo.root, first)
    assert codes(report.findings) == ["WORKTREE_DIRTY"]
    assert report.modified == 1 and report.untracked == 0
    assert "1 modified" in report.findings[0].message
    (repo.root / "new.txt").write_text("x\n")
    report = check_head(repo.root, first, strict=True)
    assert codes(report.findings) == ["WORKTREE_DIRTY"] and report.untracked == 1
    assert exit_code_for(report.findings) == ExitCode.OK  # dirty is never a HEAD mismatch


def test_staged_change_counts_as_dirty(repo: GitRepo) -> None:
    (repo.root / "a.txt").write_text("staged\n")
    repo.git("add", "a.txt")
    assert check_head(repo.root, repo.head()).modified == 1


def test_ignored_files_are_not_dirt(repo: GitRepo) -> None:
    (repo.root / ".gitignore").write_text("*.log\n")
    repo.git("add", ".gitignore")
    repo.git("commit", "-q", "-m", "ignore")
    (repo.root / "x.log").write_text("noise\n")
    assert check_head(repo.root, repo.head()).findings == []


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    report = check_head(plain, "a" * 40, strict=True)
    assert codes(report.findings) == ["PRECONDITION_UNCHECKED"]
    assert "not a git repository" in report.findings[0].message
    assert exit_code_for(report.findings) == ExitCode.OK and not report.checked


def test_run_without_snapshot(repo: GitRepo) -> None:
    report = check_head(repo.root, None)
    assert codes(report.findings) == ["PRECONDITION_UNCHECKED"]
    assert "no snapshot" in report.findings[0].message


@pytest.mark.parametrize("hostile", ["--upload-pack=touch pwned", "HEAD~1", "abc123", "a" * 40 + " --x"])
def test_a_snapshot_that_is_no_full_sha_is_never_given_to_git(repo: GitRepo, hostile: str) -> None:
    report = check_head(repo.root, hostile, strict=True)
    assert codes(report.findings) == ["PRECONDITION_UNCHECKED"]
    assert "not a full commit sha" in report.findings[0].message
    assert not (repo.root / "pwned").exists()


def test_unborn_branch_diverges(tmp_path: Path) -> None:
    empty = GitRepo(tmp_path / "empty")
    report = check_head(empty.root, "c" * 40)
    assert codes(report.findings) == ["HEAD_DIVERGED"] and report.head is None
    assert "c" * 40 in report.findings[0].message and "no commit" in report.findings[0].message


def test_workspace_in_a_subdirectory_finds_the_repository(repo: GitRepo) -> None:
    sub = repo.root / "pkg" / "deep"
    sub.mkdir(parents=True)
    report = check_head(sub, repo.head())
    assert report.findings == [] and Path(report.repo_root).resolve() == repo.root.resolve()


# --- --check-commits ------------------------------------------------------


def step(before: object, after: object, line: int = 7) -> CommittedStep:
    return CommittedStep(line=line, offset=100, event_id="e" * 32, before=before, after=after)


def test_descending_commits_pass(repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    third = repo.commit("c.txt")
    assert check_commits(repo.root, [step(first, second), step(second, third), step(first, third)]) == []


def test_missing_commit(repo: GitRepo) -> None:
    first = repo.head()
    ghost = "f" * 40
    findings = check_commits(repo.root, [step(first, ghost, line=9)], path="run/events.jsonl")
    assert codes(findings) == ["COMMIT_MISSING"]
    f = findings[0]
    assert ghost in f.message and f.line == 9 and f.path == "run/events.jsonl" and f.event_id == "e" * 32
    assert exit_code_for(findings) == ExitCode.DIVERGED


def test_missing_before_commit(repo: GitRepo) -> None:
    findings = check_commits(repo.root, [step("f" * 40, repo.head())])
    assert codes(findings) == ["COMMIT_MISSING"] and "parent_snapshot_before" in findings[0].message


def test_unrelated_commits(repo: GitRepo) -> None:
    first = repo.head()
    other = repo.orphan_commit("z.txt")
    findings = check_commits(repo.root, [step(first, other)])
    assert codes(findings) == ["COMMIT_UNRELATED"]
    assert first in findings[0].message and other in findings[0].message
    assert exit_code_for(findings) == ExitCode.DIVERGED


def test_going_backwards_is_unrelated(repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    assert codes(check_commits(repo.root, [step(second, first)])) == ["COMMIT_UNRELATED"]


def test_non_sha_snapshots_are_missing_commits(repo: GitRepo) -> None:
    findings = check_commits(repo.root, [step(repo.head(), "--output=/tmp/x"), step(None, repo.head())])
    assert codes(findings) == ["COMMIT_MISSING", "COMMIT_MISSING"]


def test_check_commits_without_repository_is_a_warning(tmp_path: Path) -> None:
    findings = check_commits(tmp_path, [step("a" * 40, "b" * 40)])
    assert codes(findings) == ["PRECONDITION_UNCHECKED"] and findings[0].severity == "warning"
    assert check_commits(tmp_path, []) == []


def test_the_replayed_log_inside_the_worktree_is_not_dirt(repo: GitRepo) -> None:
    """The conventional layout: evals/runs/<id>/events.jsonl, untracked, inside the workspace."""
    run_dir = repo.root / "evals" / "runs" / "0123456789abcdef0123456789abcdef"
    run_dir.mkdir(parents=True)
    log = run_dir / "events.jsonl"
    log.write_bytes(b"{}\n")
    (run_dir / "events.jsonl.bak").write_bytes(b"{}\n")  # what repair leaves beside it
    (run_dir / "events.jsonl.bak.1").write_bytes(b"{}\n")  # ... and a later repair's
    (run_dir / "events.jsonl.torn.2").write_bytes(b"{")
    assert check_head(repo.root, repo.head(), log_path=log).findings == []
    # without log_path the same files are untracked dirt (the collapsed evals/ entry)
    assert codes(check_head(repo.root, repo.head()).findings) == ["WORKTREE_DIRTY"]
    # anything else untracked next to it still counts, as does a log path given relative to elsewhere
    (run_dir / "notes.txt").write_text("x\n")
    report = check_head(repo.root, repo.head(), log_path=log)
    assert codes(report.findings) == ["WORKTREE_DIRTY"] and report.untracked == 1


def test_a_log_outside_the_worktree_excludes_nothing(repo: GitRepo, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "events.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(b"{}\n")
    (repo.root / "new.txt").write_text("x\n")
    report = check_head(repo.root, repo.head(), log_path=outside)
    assert codes(report.findings) == ["WORKTREE_DIRTY"] and report.untracked == 1


def test_glob_characters_in_the_log_name_are_literal(repo: GitRepo) -> None:
    """A run directory named with glob characters excludes only itself, not what the glob would match."""
    run_dir = repo.root / "runs" / "[ab]*"
    run_dir.mkdir(parents=True)
    log = run_dir / "events.jsonl"
    log.write_bytes(b"{}\n")
    (run_dir / "events.jsonl.bak.1").write_bytes(b"{}\n")
    assert check_head(repo.root, repo.head(), log_path=log).findings == []
    other = repo.root / "runs" / "a1"
    other.mkdir()
    (other / "events.jsonl.bak.1").write_bytes(b"{}\n")  # matched by the glob "[ab]*", but not ours
    report = check_head(repo.root, repo.head(), log_path=log)
    assert codes(report.findings) == ["WORKTREE_DIRTY"] and report.untracked == 1


# --- a repair's sidecars are not worktree dirt ----------------------------------------------------


def test_second_repair_is_not_worktree_dirt(tmp_path: Path) -> None:
    """Regression (review of session 2's commits 7e6c4a0..63e83a1, bug 5): replay
    counted a second repair's .bak.1 / .torn.1 as WORKTREE_DIRTY.
    """
    if shutil.which("git") is None:
        pytest.skip("git not installed")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.email=r@e.v", "-c", "user.name=rev", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "f").write_text("x\n")
    git("add", "f")
    git("commit", "-qm", "init")
    sha = git("rev-parse", "HEAD")
    log = tmp_path / "evals" / "runs" / RUN_ID / "events.jsonl"
    with EventWriter(log, run_id=RUN_ID, redaction=None) as w:
        w.append("run.started", {"intent_id": "x", "predicate_count": 1})
        w.append("step.started", {"parent_snapshot": sha}, step_id=STEP_ID)
        w.append("tool.called", {"tool": "t"}, step_id=STEP_ID)
    rel = str(log.relative_to(tmp_path))
    assert ract("trace", "repair", "-q", rel, cwd=tmp_path).returncode == 0
    with open(log, "ab") as f:
        f.write(b'{"torn')
    assert ract("trace", "repair", "-q", rel, cwd=tmp_path).returncode == 0
    assert (log.parent / "events.jsonl.bak.1").exists()
    proc = ract("trace", "replay", rel, cwd=tmp_path)
    assert b"WORKTREE_DIRTY" not in proc.stderr
