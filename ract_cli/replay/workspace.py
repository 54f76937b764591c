"""Replay's workspace checks (SPEC §5), done with GitPython.

The determinism precondition: the run's initial snapshot (``parent_snapshot``
of its first ``step.started``) should be the workspace's HEAD, and the
worktree should be clean. ``check_head`` returns what it found as findings
(data); nothing here prints or exits.

``check_commits`` verifies that each ``step.committed``'s
``parent_snapshot_after`` exists in the repository and descends from its
``parent_snapshot_before``.

A snapshot string comes from the log, so it is untrusted: it is only handed to
git after it has been checked to be a full 40- or 64-character hex object name
(never an option, never a revision expression).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ract_cli.findings import Finding, error, warning
from ract_cli.format.json_types import JSONObject, Report

#: A full git object name: SHA-1 (40 hex) or SHA-256 (64 hex).
_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")

DIVERGE_NOTE = "the replay may diverge on the first worktree-shaped operation"


def full_sha(value: object) -> str | None:
    """``value`` as a lowercase full object name, or None when it is not one."""
    if type(value) is str and _FULL_SHA.fullmatch(value):
        return value.lower()
    return None


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class WorkspaceReport:
    """What ``check_head`` learned about the workspace (all fields are data)."""

    workspace: str
    snapshot: str | None = None  # the run's initial snapshot, when it is a full sha
    repo_root: str | None = None  # None: not a git repository (or git unusable)
    head: str | None = None  # HEAD commit; None when unborn or unknown
    detached: bool = False
    branch: str | None = None
    modified: int = 0  # tracked paths with staged or unstaged changes
    untracked: int = 0  # untracked, not ignored paths
    checked: bool = False  # True when HEAD could be compared with the snapshot
    findings: list[Finding] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return self.checked and self.head != self.snapshot

    @property
    def dirty(self) -> bool:
        return bool(self.modified or self.untracked)

    def to_dict(self) -> Report:
        return {
            "workspace": self.workspace,
            "repo_root": self.repo_root,
            "snapshot": self.snapshot,
            "head": self.head,
            "detached": self.detached,
            "branch": self.branch,
            "checked": self.checked,
            "diverged": self.diverged,
            "modified": self.modified,
            "untracked": self.untracked,
            "findings": [f.to_dict() for f in self.findings],
        }


def open_repo(workspace: str | os.PathLike[str]) -> tuple[Any | None, str | None]:
    """The git repository holding ``workspace`` (searching parents), or (None, why not)."""
    try:
        import git  # GitPython: imported lazily, it starts slowly and needs a git binary
    except Exception as exc:
        return None, f"GitPython is unusable here ({type(exc).__name__}: {exc})"
    try:
        repo = git.Repo(os.fspath(workspace), search_parent_directories=True)
    except git.NoSuchPathError:
        return None, f"{os.fspath(workspace)} does not exist"
    except git.InvalidGitRepositoryError:
        return None, f"{os.fspath(workspace)} is not a git repository"
    except Exception as exc:
        return None, f"{os.fspath(workspace)}: git cannot open it ({type(exc).__name__}: {exc})"
    return repo, None


def check_head(
    workspace: str | os.PathLike[str],
    snapshot: object,
    *,
    strict: bool = False,
    where: JSONObject | None = None,
    log_path: str | os.PathLike[str] | None = None,
) -> WorkspaceReport:
    """Compare the workspace's HEAD with the run's initial snapshot; look for a dirty tree.

    ``snapshot`` is the raw ``parent_snapshot`` value from the log (or None when
    the run has no ``step.started``); ``where`` locates that event (line,
    offset, event_id) for the findings. Under ``strict`` a HEAD mismatch is an
    error (exit 6); otherwise every finding here is a warning. ``log_path``:
    the log being replayed; when it lies inside the worktree (the conventional
    ``evals/runs/<run_id>/events.jsonl``), it and repair's ``.bak``/``.torn``
    files beside it are not counted as dirt -- the run wrote them, not the work.
    """
    ws = os.fspath(workspace)
    report = WorkspaceReport(workspace=ws)
    loc = dict(where or {})
    loc.setdefault("path", ws)
    sha = full_sha(snapshot)
    report.snapshot = sha

    repo, why = open_repo(workspace)
    if repo is None:
        report.findings.append(
            warning("PRECONDITION_UNCHECKED", f"determinism precondition cannot be checked: {why}", **loc)
        )
        return report
    try:
        report.repo_root = repo.working_tree_dir or repo.git_dir
        _read_head(repo, report)
        if not repo.bare:
            _read_dirty(repo, report, _own_files(report.repo_root, log_path))
    except Exception as exc:
        report.findings.append(
            warning(
                "PRECONDITION_UNCHECKED",
                f"determinism precondition cannot be checked: git failed ({type(exc).__name__}: {exc})",
                **loc,
            )
        )
        return report
    finally:
        repo.close()

    report.findings.extend(_snapshot_findings(report, snapshot, strict, loc))
    if report.dirty:
        report.findings.append(_dirty_finding(report, ws))
    return report


def _snapshot_findings(report: WorkspaceReport, snapshot: object, strict: bool, loc: JSONObject) -> list[Finding]:
    """The run's initial snapshot against the HEAD in ``report`` (``report.checked`` set when compared)."""
    sha = report.snapshot
    if snapshot is None:
        return [
            warning(
                "PRECONDITION_UNCHECKED",
                "determinism precondition cannot be checked: the run has no snapshot (no step.started with a "
                "parent_snapshot)",
                **loc,
            )
        ]
    if sha is None:
        return [
            warning(
                "PRECONDITION_UNCHECKED",
                "determinism precondition cannot be checked: the run's initial snapshot "
                f"{_short_repr(snapshot)} is not a full commit sha (40 or 64 hex)",
                **loc,
            )
        ]
    report.checked = True
    if report.head == sha:
        return []
    head = report.head or "(none: the branch has no commit yet)"
    state = " (detached HEAD)" if report.detached else (f" (branch {report.branch})" if report.branch else "")
    make = error if strict else warning
    return [
        make(
            "HEAD_DIVERGED",
            f"workspace {report.repo_root} HEAD {head}{state} differs from the run's initial snapshot {sha}: "
            f"{DIVERGE_NOTE}",
            expected=sha,
            actual=report.head,
            **loc,
        )
    ]


def _dirty_finding(report: WorkspaceReport, ws: str) -> Finding:
    parts = []
    if report.modified:
        parts.append(f"{report.modified} modified path(s)")
    if report.untracked:
        parts.append(f"{report.untracked} untracked path(s)")
    return warning(
        "WORKTREE_DIRTY",
        f"workspace worktree {report.repo_root} is dirty, uncommitted changes ({', '.join(parts)}): {DIVERGE_NOTE}",
        path=ws,
    )


def _read_head(repo: Any, report: WorkspaceReport) -> None:
    report.detached = bool(repo.head.is_detached)
    if not report.detached:
        try:
            report.branch = repo.active_branch.name
        except TypeError:
            report.branch = None
    try:
        report.head = repo.head.commit.hexsha
    except ValueError:  # unborn branch: HEAD names a ref with no commit yet
        report.head = None


def _own_files(repo_root: str | None, log_path: str | os.PathLike[str] | None) -> list[str]:
    """Pathspecs excluding the log and its repair by-products, when the log lies inside the worktree.

    ``.bak``/``.torn`` and the numbered ones a later repair picks (``.bak.1``...).
    ``:(exclude,...)`` pathspecs keep git's collapsing of an untracked
    directory into one entry, shown only when something else in it is untracked.
    """
    if repo_root is None or log_path is None:
        return []
    rel = os.path.relpath(os.path.realpath(log_path), os.path.realpath(repo_root))
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return []
    escaped = "".join("\\" + ch if ch in "*?[]\\" else ch for ch in rel)  # literal inside a glob pathspec
    return [f":(exclude,literal){rel}{suffix}" for suffix in ("", ".bak", ".torn")] + [
        f":(exclude,glob){escaped}{suffix}.*" for suffix in (".bak", ".torn")
    ]


def _read_dirty(repo: Any, report: WorkspaceReport, excludes: Sequence[str] = ()) -> None:
    out = repo.git.status(
        "--porcelain", "--untracked-files=normal", "-z", *(["--", ".", *excludes] if excludes else [])
    )
    for entry in out.split("\0"):
        if not entry:
            continue
        if entry.startswith("??"):
            report.untracked += 1
        elif len(entry) > 3 and entry[2] == " ":
            report.modified += 1
        # else: the source path of a rename (-z puts it in its own field)


@dataclass(frozen=True)
class CommittedStep:
    """One ``step.committed`` to check: where it is and its two snapshots (raw log values)."""

    line: int
    offset: int
    event_id: str | None
    before: object
    after: object


def check_commits(
    workspace: str | os.PathLike[str], steps: Iterable[CommittedStep], *, path: str | None = None
) -> list[Finding]:
    """SPEC §5: each ``parent_snapshot_after`` exists and descends from its ``parent_snapshot_before``.

    Findings: ``COMMIT_MISSING`` (a snapshot is not a full sha or not a commit
    of the repository), ``COMMIT_UNRELATED`` (after does not descend from
    before) — both errors, exit 6 — and ``PRECONDITION_UNCHECKED`` (warning)
    when there is no repository to check against. ``path`` is the log's path,
    used to locate findings.
    """
    steps = list(steps)
    if not steps:
        return []
    repo, why = open_repo(workspace)
    if repo is None:
        return [
            warning(
                "PRECONDITION_UNCHECKED",
                f"--check-commits: commits cannot be checked: {why}",
                path=os.fspath(workspace),
            )
        ]
    commits = _Commits(repo)
    findings: list[Finding] = []
    try:
        for step in steps:
            findings.extend(_step_findings(commits, step, path))
    finally:
        repo.close()
    return findings


class _Commits:
    """Which full shas are commits of the repository (git is asked once per sha)."""

    def __init__(self, repo: Any) -> None:
        self.repo = repo
        self._exists: dict[str, bool] = {}

    def exists(self, sha: str) -> bool:
        if sha not in self._exists:
            try:
                # ``sha`` is validated full hex: it cannot be read as an option or a revision expression.
                self.repo.git.rev_parse("--verify", "--quiet", sha + "^{commit}")
                self._exists[sha] = True
            except Exception:
                self._exists[sha] = False
        return self._exists[sha]


def _missing(commits: _Commits, step: CommittedStep, loc: JSONObject) -> list[Finding]:
    """``COMMIT_MISSING`` for each snapshot of ``step`` (after, then before) that is not a commit."""
    findings: list[Finding] = []
    for name, raw in (("parent_snapshot_after", step.after), ("parent_snapshot_before", step.before)):
        sha = full_sha(raw)
        if sha is None:
            findings.append(
                error(
                    "COMMIT_MISSING",
                    f"step.committed {name} {_short_repr(raw)} is not a full commit sha",
                    actual=_short_repr(raw),
                    **loc,
                )
            )
        elif not commits.exists(sha):
            repo = commits.repo
            findings.append(
                error(
                    "COMMIT_MISSING",
                    f"step.committed {name} {sha} is not a commit of the repository "
                    f"at {repo.working_tree_dir or repo.git_dir}",
                    actual=sha,
                    **loc,
                )
            )
    return findings


def _step_findings(commits: _Commits, step: CommittedStep, path: str | None) -> list[Finding]:
    """One ``step.committed``: both snapshots are commits, and after descends from before."""
    loc: JSONObject = {"path": path, "line": step.line, "offset": step.offset, "event_id": step.event_id}
    missing = _missing(commits, step, loc)
    if missing:
        return missing
    before, after = full_sha(step.before), full_sha(step.after)
    try:
        related = commits.repo.is_ancestor(before, after)
    except Exception:
        related = False
    if related:
        return []
    return [
        error(
            "COMMIT_UNRELATED",
            f"step.committed parent_snapshot_after {after} does not descend from parent_snapshot_before {before}",
            expected=f"descendant of {before}",
            actual=after,
            **loc,
        )
    ]
