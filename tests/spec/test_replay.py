"""SPEC §5 replay: the workspace precondition, --until, --format jsonl byte for byte.

Black-box: logs built with ``tests/independent_jcs.py`` (``builders``), real
temporary git repositories (``tests/git_support.py``).
"""

from __future__ import annotations

import json

import pytest
from git_support import git as _git
from git_support import two_commit_repo
from independent_jcs import chain, line, new_id

from .builders import (
    RUN,
    ev,
    lines,
    logpath,
    put,
    ract,
    sub,
    write,
)

# --- §5 the workspace: HEAD, dirt, --strict-head, --check-commits ---------------------------------


@pytest.fixture
def repo(tmp_path):
    return two_commit_repo(tmp_path / "repo")


def _replay_log(tmp_path, snap, after=None, before=None):
    s = new_id()
    committed = {"outcome": "COMMITTED"}
    if after:
        committed["parent_snapshot_after"] = after
        committed["parent_snapshot_before"] = before
    evs = chain(
        [
            ev("run.started", {}),
            ev("step.started", {"parent_snapshot": snap}, step=s),
            ev("step.committed", committed, step=s),
            ev("run.completed", {}),
        ]
    )
    return write(logpath(tmp_path), evs), evs


def test_replay_head_mismatch_warns(tmp_path, repo):
    r, c1, c2 = repo
    p, _ = _replay_log(tmp_path, c1)
    res = sub("replay", p, "--workspace", r)
    assert res.returncode == 0
    err = res.stderr.decode()
    assert c1[:7] in err and c2[:7] in err
    assert "diverge" in err.lower()
    res = sub("replay", p, "--workspace", r, "--strict-head")
    assert res.returncode == 6


def test_replay_head_match_and_default_cwd(tmp_path, repo, capsys):
    r, _c1, c2 = repo
    p, _ = _replay_log(tmp_path, c2)
    res = sub("replay", p, cwd=r)
    assert res.returncode == 0
    assert "diverge" not in res.stderr.decode().lower()
    assert sub("replay", p, "--strict-head", cwd=r).returncode == 0


def test_replay_dirty_tree_warns(tmp_path, repo, capsys):
    r, _c1, c2 = repo
    (r / "f").write_text("dirty")
    p, _ = _replay_log(tmp_path, c2)
    rc, _out, err = ract(capsys, "replay", p, "--workspace", r)
    assert rc == 0 and "dirty" in err.lower()


def test_replay_no_repo_or_no_snapshot_warns(tmp_path, capsys):
    ws = tmp_path / "plain"
    ws.mkdir()
    p, _ = _replay_log(tmp_path, "a" * 40)
    rc, _out, err = ract(capsys, "replay", p, "--workspace", ws)
    assert rc == 0 and "cannot be checked" in err.lower()
    p2 = write(tmp_path / "x" / RUN / "events.jsonl", chain([ev("run.started", {}), ev("run.completed", {})]))
    rc, _out, err = ract(capsys, "replay", p2, "--workspace", ws)
    assert rc == 0 and "cannot be checked" in err.lower()


def test_replay_check_commits(tmp_path, repo, capsys):
    r, c1, c2 = repo
    p, _ = _replay_log(tmp_path, c1, after=c2, before=c1)
    rc, _out, err = ract(capsys, "replay", p, "--workspace", r, "--check-commits")
    assert rc == 0, err
    q, _ = _replay_log(tmp_path / "q", c1, after=c1, before=c2)  # does not descend
    rc, _out, err = ract(capsys, "replay", q, "--workspace", r, "--check-commits")
    assert rc == 6
    z, _ = _replay_log(tmp_path / "z", c1, after="f" * 40, before=c1)  # does not exist
    rc, _out, err = ract(capsys, "replay", z, "--workspace", r, "--check-commits")
    assert rc == 6


def test_replay_strict_head_tampered_is_1(tmp_path, repo):
    r, c1, _c2 = repo
    p, evs = _replay_log(tmp_path, c1)
    evs[2]["payload"]["x"] = 1
    write(p, evs)
    assert sub("replay", p, "--workspace", r, "--strict-head").returncode == 1


def _snap_log(tmp_path, snap, name="x"):
    s = new_id()
    evs = chain(
        [
            ev("run.started"),
            ev("step.started", {"parent_snapshot": snap}, step=s),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s),
            ev("run.completed"),
        ]
    )
    return put(tmp_path, evs, name=name), evs


def test_replay_workspace_cases(tmp_path, repo):
    r, c1, c2 = repo
    p1, _ = _snap_log(tmp_path, c1, "p1")
    p2, _ = _snap_log(tmp_path, c2, "p2")
    plain = tmp_path / "plain"
    plain.mkdir()
    (r / "d").mkdir()
    # no repository: cannot be checked, never 6
    assert sub("replay", "--strict-head", "--workspace", plain, p1).returncode == 0
    # a subdirectory of the repository is the repository
    assert sub("replay", "--strict-head", "--workspace", r / "d", p1).returncode == 6
    assert sub("replay", "--strict-head", "--workspace", r / "d", p2).returncode == 0
    # dirty tree with HEAD == snapshot: warning only
    (r / "f").write_text("dirty")
    res = sub("replay", "--strict-head", "--workspace", r, p2)
    assert res.returncode == 0 and b"dirty" in res.stderr.lower()
    _git(r, "checkout", "-q", "f")
    # detached HEAD
    _git(r, "checkout", "-q", c1)
    assert sub("replay", "--strict-head", "--workspace", r, p1).returncode == 0
    res = sub("replay", "--strict-head", "--workspace", r, p2)
    assert res.returncode == 6 and c1[:7].encode() in res.stderr and c2[:7].encode() in res.stderr
    # a repository with no commit: HEAD cannot equal the snapshot
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    _git(unborn, "init", "-q")
    assert sub("replay", "--strict-head", "--workspace", unborn, p1).returncode == 6
    # --strict-head with --until: the precondition still decides
    assert sub("replay", "--strict-head", "--until", "1", "--workspace", r, p2).returncode == 6


def test_replay_initial_snapshot_is_the_first_step_started(tmp_path, repo):
    r, c1, c2 = repo
    s1, s2 = new_id(), new_id()
    evs = chain(
        [
            ev("run.started"),
            ev("step.started", {"parent_snapshot": c2}, step=s1),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s1),
            ev("step.started", {"parent_snapshot": c1}, step=s2),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s2),
            ev("run.completed"),
        ]
    )
    p = put(tmp_path, evs)
    assert sub("replay", "--strict-head", "--workspace", r, p).returncode == 0  # HEAD is c2


# --- §5 --until, the output, recorded responses ---------------------------------------------------


def test_replay_until_and_jsonl(tmp_path, capsys):
    p, evs = _replay_log(tmp_path, "a" * 40)
    rc, out, _err = ract(capsys, "replay", p, "--until", "2", "--format", "jsonl", "--workspace", tmp_path)
    assert rc == 0
    assert out.encode() == b"".join(line(e) for e in evs[:2])
    rc, out, _err = ract(capsys, "replay", p, "--until", evs[2]["id"], "--format", "jsonl", "--workspace", tmp_path)
    assert rc == 0 and out.encode() == b"".join(line(e) for e in evs[:3])


def test_replay_until_shows_state(tmp_path, capsys):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("step.started", {}, step=s),
            ev("tool.called", {"tool": "bash"}, step=s),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    rc, out, _err = ract(capsys, "replay", "--until", "3", "--workspace", tmp_path, p)
    assert rc == 0
    assert "run.completed" not in out and "bash" in out.split("state")[-1]


def test_replay_tampered_exit_1(tmp_path, capsys):
    p, evs = _replay_log(tmp_path, "a" * 40)
    evs[2]["payload"]["reason"] = "x"
    write(p, evs)
    rc, out, _err = ract(capsys, "replay", p, "--format", "jsonl", "--workspace", tmp_path)
    assert rc == 1
    assert evs[2]["id"] not in out


def test_replay_recorded_responses(tmp_path):
    from ract_cli.replay.session import recorded_responses

    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("prompt.sent", {"provider": "p", "intent_id": "I"}, step=s),
            ev("response.received", {"provider": "p", "intent_id": "I", "preview": "first"}, step=s),
            ev("prompt.sent", {"provider": "p", "intent_id": "I"}, step=s),
            ev("response.received", {"provider": "p", "intent_id": "I", "preview": "second"}, step=s),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    responses = recorded_responses(p)
    got = responses.by_intent["I"]
    assert len(got) == 2
    assert "first" in repr(got[0]) and "second" in repr(got[1])


UNTIL = [("0", 2), ("-1", 2), ("99", 2), ("abc", 2), ("f" * 32, 2), ("ID3", 0), ("ID3UPPER", 0), ("4", 0)]


@pytest.mark.parametrize("until,want", UNTIL, ids=[u[0] for u in UNTIL])
def test_replay_until_values(tmp_path, capsys, until, want):
    p, evs = _snap_log(tmp_path, "a" * 40)
    value = {"ID3": evs[2]["id"], "ID3UPPER": evs[2]["id"].upper()}.get(until, until)
    rc, out, err = ract(capsys, "replay", "--until", value, "--format", "jsonl", "--workspace", tmp_path, p)
    assert rc == want, err
    if want == 0:
        n = 3 if until.startswith("ID3") else int(until)
        assert out.encode() == lines(evs[:n])


JSONL_BYTES = [
    ("crlf", lambda raw: raw.replace(b"\n", b"\r\n"), 0, lambda raw: raw),
    ("missing final newline", lambda raw: raw[:-1], 0, lambda raw: raw),
    ("torn tail", lambda raw: raw + b'{"id":"', 4, lambda raw: raw[: -len(b'{"id":"')]),
    ("spaced foreign formatting", None, 0, None),
]


@pytest.mark.parametrize("name,mutate,want,expect", JSONL_BYTES, ids=[j[0] for j in JSONL_BYTES])
def test_replay_jsonl_is_byte_for_byte(tmp_path, name, mutate, want, expect):
    p, evs = _snap_log(tmp_path, "a" * 40)
    if mutate is None:
        raw = b"".join(
            json.dumps(e, indent=None, separators=(" , ", " : "), ensure_ascii=True).encode() + b"\n" for e in evs
        )
        expect = lambda r: r  # noqa: E731
    else:
        raw = mutate(lines(evs))
    p.write_bytes(raw)
    r = sub("replay", "--format", "jsonl", "--workspace", tmp_path, p)
    assert r.returncode == want, r.stderr
    assert r.stdout == expect(raw)


def test_replay_schema_error_is_3_and_still_replayed(tmp_path):
    evs = chain([ev("run.started"), ev("tool.result", {"tool": "t", "ok": "yes"}), ev("run.completed")])
    p = put(tmp_path, evs)
    r = sub("replay", "--format", "jsonl", "--workspace", tmp_path, p)
    assert r.returncode == 3 and r.stdout == lines(evs)
