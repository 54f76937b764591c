"""``project --format markdown`` cannot carry a link from the log into a GitHub job summary (issue 15, item 7).

GitHub renders ``$GITHUB_STEP_SUMMARY`` as GitHub-flavoured Markdown, whose autolink extension turns a
bare ``https://…``, ``www.…`` or ``a@b.c`` into a link. Every log-derived word a renderer would autolink
is put in a code span by ``project.markdown.md``. Checked by rendering the report, not by string search:
with ``cmarkgfm`` (GitHub's own cmark-gfm, autolink extension on) and with ``markdown-it-py`` + linkify
(``linkify-it-py``, which also links bare domains); the HTML holds no ``<a`` and the URL is still shown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hardening_support import ROOT, run_inprocess

from ract_cli.project.markdown import md
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

URLS = [
    "https://evil.example/login?next=x",
    "http://evil.example",
    "HTTPS://EVIL.EXAMPLE/X",
    "www.evil.example",
    "ftp://files.evil.example/a",
    "mailto:boss@evil.example",
    "xmpp:boss@evil.example",
    "boss@evil.example",
    "evil.com",
    "//evil.com/x",
    "(see:https://evil.example)",
    "`https://evil.example`",
    "a|https://evil.example|b",
]
TEXT = "click " + " and ".join(URLS) + " now"


def _renderers() -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    try:
        import cmarkgfm

        found.append(("cmarkgfm", cmarkgfm.github_flavored_markdown_to_html))
    except ImportError:
        pass
    try:
        import linkify_it  # noqa: F401  (markdown-it's linkify needs it)
        from markdown_it import MarkdownIt

        parser = MarkdownIt("gfm-like", {"linkify": True}).enable("linkify")
        found.append(("markdown-it+linkify", parser.render))
    except ImportError:
        pass
    return found


RENDERERS = _renderers()
pytestmark = pytest.mark.skipif(
    not RENDERERS, reason="no autolinking Markdown renderer installed (cmarkgfm, linkify-it-py)"
)


def _renders_links(markdown: str) -> list[str]:
    hits = []
    for name, render in RENDERERS:
        html = render(markdown)  # type: ignore[operator]
        if "<a " in html or "<a>" in html:
            hits.append(f"{name}: {html[html.find('<a') - 80 : html.find('<a') + 120]!r}")
    return hits


def test_renderers_do_autolink_bare_urls() -> None:
    """The check is not vacuous: the renderers link the raw text."""
    for name, render in RENDERERS:
        assert "<a " in render("see https://evil.example now"), name  # type: ignore[operator]


@pytest.mark.parametrize("url", URLS)
def test_md_cell_never_autolinks(url: str) -> None:
    for text in (url, f"x {url} y", f"| {url} |"):
        cell = md(text)
        assert not _renders_links(f"| a |\n|---|\n| {cell} |\n"), cell
        assert not _renders_links(cell + "\n"), cell


def _write_run(path: Path) -> None:
    path.parent.mkdir(parents=True)
    with EventWriter(path, run_id="cd" * 16, fsync=FsyncPolicy.NEVER) as w:
        run = w.append("run.started", {"intent_id": "1" * 32, "compiler_version": TEXT})
        call = w.append("tool.called", {"tool": "www.evil.example", "arguments": {"u": TEXT}})
        w.append("tool.result", {"tool": "www.evil.example", "ok": False}, parent_id=call["id"])
        w.append("prompt.sent", {"provider": "https://evil.example", "response_shape": "x", "intent_id": "1" * 32})
        w.append(
            "predicate.evaluated",
            {"predicate_id": "https://evil.example/p", "kind": "test", "required": True, "ok": False, "reason": TEXT},
        )
        w.append("run.aborted", {"termination_cause": TEXT, "reason": TEXT}, parent_id=run["id"])


def test_project_markdown_report_has_no_link_from_the_log(tmp_path: Path) -> None:
    """One run (detail), several runs (fleet) and a Raxol journal, rendered: no link, the URLs still shown."""
    one = tmp_path / "runs" / ("cd" * 16) / "events.jsonl"
    _write_run(one)
    two = tmp_path / "runs" / "www.evil.example" / "events.jsonl"
    _write_run(two)
    journal = tmp_path / "j" / "journal.jsonl"
    journal.parent.mkdir()
    records = [json.loads(line) for line in (ROOT / "fixtures/journals/accepted.jsonl").read_bytes().splitlines()]
    for record in records:
        for key, value in list(record.get("payload", {}).items()):
            if isinstance(value, str) and key not in ("item_id", "item_type", "evidence", "tool_use_id"):
                record["payload"][key] = TEXT
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    for paths in ([one], [tmp_path / "runs"], [journal], [one, journal]):
        _code, out, err = run_inprocess(["trace", "project", "--format", "markdown", *map(str, paths)])
        assert "Traceback" not in err
        assert out.strip(), (paths, err)
        assert not _renders_links(out), (paths, _renders_links(out))
    _code, out, _ = run_inprocess(["trace", "project", "--format", "markdown", str(one)])
    assert "`https://evil.example/login?next=x`" in out  # shown, as code
