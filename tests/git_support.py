"""Real temporary git repositories for the replay/workspace tests (git CLI, no mocks)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "ract test",
    "GIT_AUTHOR_EMAIL": "ract@example.invalid",
    "GIT_COMMITTER_NAME": "ract test",
    "GIT_COMMITTER_EMAIL": "ract@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(cwd: Path, *args: str) -> str:
    """Run ``git ARGS`` in ``cwd`` (a test identity, no system config); return its stdout, stripped."""
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


def two_commit_repo(root: Path) -> tuple[Path, str, str]:
    """A repository at ``root`` whose file ``f`` was committed twice; returns (root, first sha, second sha)."""
    repo = GitRepo(root)
    first = repo.commit("f", "1")
    return root, first, repo.commit("f", "2")


class GitRepo:
    """A repository in ``root`` driven through the git command line."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def commit(self, name: str, text: str | None = None) -> str:
        """Write ``name`` and commit it; return the new commit's sha."""
        (self.root / name).write_text(text if text is not None else f"{name}\n", encoding="utf-8")
        self.git("add", name)
        self.git("commit", "-q", "-m", f"add {name}")
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def checkout(self, ref: str, *, detach: bool = False) -> None:
        self.git("checkout", "-q", *(["--detach"] if detach else []), ref)

    def orphan_commit(self, name: str) -> str:
        """A commit on a new root (no common history with main); HEAD returns to main."""
        self.git("checkout", "-q", "--orphan", "unrelated")
        self.git("rm", "-rq", "--cached", ".")
        for p in self.root.iterdir():
            if p.name != ".git" and p.is_file():
                p.unlink()
        sha = self.commit(name)
        self.git("checkout", "-q", "-f", "main")
        return sha
