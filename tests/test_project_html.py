"""``ract trace project --format html``: the self-contained page, its timeline, the fleet page, --output, progress.

Every check runs the real CLI in a subprocess over real logs (the fixtures, the
seeded generators of ``ract_cli.testing``, or logs written here through
``EventWriter``) and parses the page with ``html.parser``. The real-browser
checks run headless Chromium (Debian's ``chromium``) and skip, saying why,
where it is not installed.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hardening_support import on_pty

from ract_cli.format.text import escape_unsafe
from ract_cli.project import project_paths
from ract_cli.project.html_assets import CSS, SCRIPT
from ract_cli.project.timeline import DETAIL_MARKS
from ract_cli.testing.payloads import BASE_TS
from ract_cli.testing.synth import FIXTURES, fixture_path, fixture_run_id, write_benchmark_log
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

ROOT = Path(__file__).resolve().parent.parent
RACT = [sys.executable, "-m", "ract_cli"]
EXIT = {"completed": 0, "aborted": 0, "interrupted": 4, "tampered": 1, "foreign-format": 0}
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium): the real-browser checks need it"
)

#: every element and attribute the page may hold: anything else came from somewhere it must not
TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "section", "p", "table", "thead",
    "tbody", "tr", "th", "td", "code", "a", "ul", "li", "span", "footer", "script",
    "svg", "rect", "line", "text", "circle", "path",
}  # fmt: skip
ATTRS = {
    "lang", "charset", "http-equiv", "content", "name", "class", "id", "scope", "href", "data-sort", "viewbox",
    "width", "height", "role", "aria-hidden", "x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "d",
    "text-anchor",
    "tabindex", "aria-sort",  # set by the sorting script (the browser's DOM)
}  # fmt: skip
CLASS_TOKEN = re.compile(r"[a-z][a-z0-9-]*")
ID_VALUE = re.compile(r"summary|fleet|run-[A-Za-z0-9_-]+")

#: hostile strings a log can carry: each must come out as text, never as markup
PAYLOADS = {
    "script": "<script>alert(1)</script>",
    "img-onerror": "<img src=x onerror=alert(1)>",
    "attr-break": '"><svg onload=alert(1)>',
    "single-quote": "' onmouseover='alert(1)' x='",
    "close-style": "</style><script>alert(2)</script>",
    "close-title": "</title></svg><iframe src=//evil.example>",
    "javascript-url": "javascript:alert(document.domain)",
    "entities": "&lt;b&gt; &amp;amp; &#60;i&#62;",
    "comment-cdata": "<!-- x --> <![CDATA[ y ]]> <?php z ?>",
    "controls": "\u202eexe.txt\x1b[31mRED\x00\x85\u2028end",
    "ci-command": "::error file=a.py::forged ##[warning]x",
}


# --- helpers ----------------------------------------------------------------------------------------


class Page(HTMLParser):
    """A parsed page: every start tag with its attributes, the text, the style and script contents."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.styles: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("style", "script"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.styles.append(data)
        elif self._in == "script":
            self.scripts.append(data)
        else:
            self.text.append(data)

    def all(self, tag: str, cls: str = "") -> list[dict[str, str | None]]:
        want = set(cls.split())
        return [a for t, a in self.tags if t == tag and want <= set((a.get("class") or "").split())]

    @property
    def body_text(self) -> str:
        return "".join(self.text)


def project(*argv: str, timeout: float = 120, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RACT, "trace", "project", *argv], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def page_of(*argv: str, code: int = 0) -> tuple[str, Page]:
    done = project(*argv, "--format", "html")
    assert done.returncode == code, done.stderr
    return done.stdout, Page(done.stdout)


def csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def assert_safe_page(source: str, page: Page, *, script: bool) -> None:
    """Only the page's own elements and attributes; no load of anything; only its own style and script."""
    for tag, attrs in page.tags:
        assert tag in TAGS, f"unexpected element <{tag}>"
        for name, value in attrs.items():
            assert name in ATTRS, f"unexpected attribute {name}= on <{tag}>"
            assert not name.startswith("on")
            if name == "href":
                assert value is not None and value.startswith("#"), value
            if name == "class":
                assert value is not None and all(CLASS_TOKEN.fullmatch(t) for t in value.split()), value
            if name == "id":
                assert value is not None and ID_VALUE.fullmatch(value), value
            assert "javascript" not in (value or "").lower()
    # the same over the raw source: in a tag (text holds no raw '<'), no attribute that loads or styles
    assert not re.search(r"<[^>]*\s(?:src|style|srcset|action|formaction|xlink:href)\s*=", source, re.I)
    assert page.styles == [CSS]
    assert page.scripts == ([SCRIPT] if script else [])
    metas = [a for a in page.all("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    policy = metas[0]["content"] or ""
    assert policy.startswith("default-src 'none';")
    assert f"style-src {csp_hash(CSS)};" in policy
    assert f"script-src {csp_hash(SCRIPT) if script else chr(39) + 'none' + chr(39)};" in policy
    assert "base-uri 'none'" in policy and "form-action 'none'" in policy
    assert "http:" not in policy and "https:" not in policy and "'unsafe-inline'" not in policy


def write_hostile(path: Path, evil: str, run_id: str = "e" * 32) -> Path:
    """A run whose every log string a report shows is ``evil``: tools, providers, steps, flags, reaps..."""
    path.parent.mkdir(parents=True, exist_ok=True)
    clock = itertools.count(BASE_TS, 250_000_000)
    ids = itertools.count(1)
    with EventWriter(
        path,
        run_id=run_id,
        fsync=FsyncPolicy.NEVER,
        redaction=None,
        clock=lambda: next(clock),
        new_id=lambda: f"{next(ids):032x}",
    ) as w:
        step = "5" * 32
        w.append("run.started", {"intent_id": "1" * 32})
        started = w.append("step.started", {"parent_snapshot": "a" * 40, "branch": evil}, step_id=step)
        prompt = w.append("prompt.sent", {"provider": evil, "prompt_chars": 10}, step_id=step)
        w.append("response.received", {"provider": evil}, step_id=step, parent_id=prompt["id"])
        w.append("response.rejected", {"error": evil, "attempt": 1, "should_halt": False}, step_id=step)
        call = w.append("tool.called", {"tool": evil, "arguments": {"cmd": evil}}, step_id=step)
        w.append("tool.result", {"tool": evil, "ok": False, "duration_ns": 10}, step_id=step, parent_id=call["id"])
        w.append("tool.refused", {"tool": evil, "reason": evil, "refused_by": "policy"}, step_id=step)
        w.append("tool.invocation.refused", {"tool_id": evil, "gate": "args", "reason": evil}, step_id=step)
        asked = w.append("handshake.requested", {"milestone_id": evil, "status": "pending", "description": evil})
        w.append("handshake.resolved", {"milestone_id": evil, "status": "approved"}, parent_id=asked["id"])
        w.append("process.reaped", {"pid": 42, "argv0": evil, "reason": evil}, step_id=step)
        w.append(
            "predicate.evaluated",
            {"predicate_id": evil, "kind": "test", "required": True, "ok": False, "reason": evil},
            step_id=step,
        )
        w.append("laziness.gate_error", {"error_kind": evil, "message": evil})
        w.append("sandbox.unenforced", {"manifest_digest": "d", "reason": evil, "details": {}})
        w.append("step.rolled_back", {"outcome": "ROLLED_BACK", "reason": evil}, step_id=step, parent_id=started["id"])
        w.append("tool.called", {"tool": evil + " (open)", "arguments": {}})
        w.append("run.aborted", {"termination_cause": evil, "reason": evil})
    return path


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded benchmark log: 10^5 events, ~50 MB (over the 32 MB progress threshold); built once."""
    path = tmp_path_factory.mktemp("big") / "events.jsonl"
    write_benchmark_log(path, events=100_000)
    assert path.stat().st_size >= 32 << 20
    return path


def fixture(name: str) -> str:
    return fixture_path(Path("fixtures"), name).as_posix()


# --- hostile strings --------------------------------------------------------------------------------


@pytest.mark.parametrize("evil", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_hostile_strings_render_as_text(evil: str, tmp_path: Path) -> None:
    log = write_hostile(tmp_path / ("e" * 32) / "events.jsonl", evil)
    source, page = page_of(str(log))
    assert_safe_page(source, page, script=False)
    shown = escape_unsafe(evil)  # as the page shows it: controls and bidi characters as visible escapes
    text = page.body_text
    assert text.count(shown) >= 10, "the payload is shown, as text, in the tables"
    titles = "".join(page.text)  # the timeline's hover text is text too (<title> children)
    assert f"tool {shown}: failed" in titles and f"process reaped: pid 42 {shown}" in titles
    if "<" in evil:
        assert evil not in source  # never raw in the source
    for raw in ("\x1b", "\x00", "\x85", "\u202e", "\u2028"):
        assert raw not in source
    assert not re.search(r"^\s*::", source, re.M) and "##[" not in source  # no GitHub workflow command either


def test_hostile_path_and_run_dir_render_as_text(tmp_path: Path) -> None:
    """A run directory named like markup: in the fleet table, the sections and the page's <title>."""
    evil_dir = tmp_path / '"><svg onload=alert(1)><img src=x onerror=alert(2)>'
    write_hostile(evil_dir / "events.jsonl", PAYLOADS["script"])
    write_hostile(tmp_path / "b" / "events.jsonl", PAYLOADS["attr-break"], run_id="b" * 32)
    source, page = page_of(str(tmp_path))
    assert_safe_page(source, page, script=True)
    assert escape_unsafe(str(evil_dir / "events.jsonl")) in page.body_text
    assert '"><svg onload' not in source


# --- one run: sections, timeline ----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FIXTURES))
def test_every_fixture_gives_a_safe_page_with_its_exit_code(name: str) -> None:
    source, page = page_of(fixture(name), code=EXIT[name])
    assert_safe_page(source, page, script=False)
    assert source.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert source.endswith("</html>\n")
    run_id = fixture_run_id(name)
    assert run_id in page.body_text  # the run_id, visibly
    assert f"ract run report: {run_id}" in page.body_text  # and in the page's title
    for heading in ("Timeline", "Steps", "Signals", "Audit flags"):
        assert f"<h3>{heading}" in source


def test_the_completed_run_shows_every_section_and_timeline_lane() -> None:
    source, page = page_of(fixture("completed"))
    for heading in ("Tool calls", "Provider I/O", "Predicates (latest verdict)"):
        assert f"<h3>{heading}</h3>" in source
    assert len(page.all("svg", "timeline")) == 1
    for tag, cls in [
        ("rect", "run completed"),
        ("rect", "step committed"),
        ("rect", "step rolled-back"),
        ("rect", "tool ok"),
        ("rect", "tool failed"),
        ("circle", "tool refused"),
        ("rect", "provider answered"),
        ("circle", "provider rejected"),
        ("rect", "handshake resolved"),
        ("circle", "reap reaped"),
        ("path", "flag"),
        ("rect", "verified-range"),
        ("line", "trust-end to-end"),
    ]:
        assert page.all(tag, cls), f"no <{tag} class={cls!r}>"
    assert "verified to the end" in source
    svg = source[source.index('<svg class="timeline"') : source.index("</svg>")]
    assert svg.count("<title>") >= svg.count('class="tool ') + svg.count('class="step ')  # hover text everywhere


def test_the_timeline_counts_are_the_reports() -> None:
    """What the legend counts is what the report counts (both read the same events)."""
    result = project_paths([str(ROOT / fixture("completed"))], timelines=True)
    report, timeline = result.runs[0], result.timelines[0]  # type: ignore[index]
    counts = timeline["counts"]
    assert counts["step.committed"] == report["steps"]["committed"]
    assert counts["step.rolled-back"] == report["steps"]["rolled_back"]
    assert counts["tool.ok"] == report["tools"]["totals"]["ok"]
    assert counts["tool.failed"] == report["tools"]["totals"]["failed"]
    assert counts["tool.refused"] == report["tools"]["totals"]["refused"]
    assert counts["reap.reaped"] == report["process_reaps"]["count"]
    assert counts["flag.flag"] == report["audit_flags"]["count"]  # every flag of this run is a log flag


def test_a_tampered_run_marks_where_trust_ends() -> None:
    _source, page = page_of(fixture("tampered"), code=1)
    (end,) = page.all("line", "trust-end")
    assert "to-end" not in (end["class"] or "")
    assert page.all("rect", "unverified")
    assert "UNTRUSTED from line" in page.body_text and "not verified and not drawn" in page.body_text
    assert page.all("rect", "step open")  # open at the cut: drawn to where the verified log ends


def test_an_interrupted_run_draws_its_open_handles() -> None:
    _source, page = page_of(fixture("interrupted"), code=4)
    assert page.all("rect", "run open")
    assert page.all("rect", "tool open") and page.all("rect", "step open")


def test_a_journal_page() -> None:
    source, page = page_of("fixtures/journals/accepted.jsonl")
    assert_safe_page(source, page, script=False)
    assert "<h2>Journal" in source and "evidence" in page.body_text
    assert not page.all("svg", "timeline")


# --- the fleet page ----------------------------------------------------------------------------------


def test_fleet_page_rows_link_to_their_sections() -> None:
    source, page = page_of("fixtures/runs", code=1)
    assert_safe_page(source, page, script=True)
    (table,) = page.all("table", "sortable")
    assert table["id"] == "fleet"
    rows = source[source.index('<table class="grid sortable"') : source.index("</table>")].count("<tr>") - 1
    assert rows == len(FIXTURES)
    links = [a["href"] for a in page.all("a") if a["href"] != "#summary"]
    sections = [a["id"] for a in page.all("section")]
    assert links == [f"#{s}" for s in sections]
    assert sorted(sections) == sorted(f"run-{fixture_run_id(n)}" for n in FIXTURES)
    assert len(page.all("svg", "timeline")) == len(FIXTURES)
    assert len(page.all("a", "")) == 2 * len(FIXTURES)  # each row's link, each section's way back
    numeric = [a for a in page.all("td", "num") if a.get("data-sort") is not None]
    assert numeric, "number columns carry data-sort for the script"


def test_a_directory_of_one_run_is_a_fleet_page(tmp_path: Path) -> None:
    write_hostile(tmp_path / "r" / "events.jsonl", "x")
    source, page = page_of(str(tmp_path))
    assert page.all("table", "sortable") and page.all("section", "run")
    assert "ract run summary" in source


def test_missing_path_still_writes_a_page() -> None:
    source, page = page_of("no/such/dir", code=5)
    assert_safe_page(source, page, script=True)
    assert "0 run(s)" in page.body_text and "no/such/dir" in page.body_text


# --- bounded: a long log gives a page of bounded size ---------------------------------------------


def test_a_long_log_gives_a_bounded_page(big_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    done = project(str(big_log), "--format", "html", "--output", str(out))
    assert done.returncode == 0, done.stderr
    source = out.read_text("utf-8")
    assert len(source) < 1_500_000, len(source)
    page = Page(source)
    svg = [(t, a) for t, a in page.tags if t in ("rect", "circle", "path") and "mark" in (a.get("class") or "")]
    kinds: dict[str, int] = {}
    for _tag, attrs in svg:
        kinds[attrs["class"] or ""] = kinds.get(attrs["class"] or "", 0) + 1
    assert kinds and max(kinds.values()) <= DETAIL_MARKS
    assert f"At most {DETAIL_MARKS} marks of each kind are drawn" in page.body_text
    assert "1 in " in page.body_text  # the legend says how many of each kind are drawn


# --- --output ----------------------------------------------------------------------------------------


def test_output_writes_the_page_atomically(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "run.html"
    out.parent.mkdir()
    out.write_text("old")
    done = project(fixture("tampered"), "--format", "html", "--output", str(out))
    assert done.returncode == 1  # the verdict's exit code, as on stdout
    assert done.stdout == "" and "FAIL (TAMPERED)" in done.stderr
    assert out.read_text("utf-8") == project(fixture("tampered"), "--format", "html").stdout
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.html"]  # no temporary file left


def test_output_quiet_writes_and_prints_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    done = project(fixture("tampered"), "--format", "html", "--output", str(out), "-q")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "")
    assert out.read_text("utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_output_other_formats_match_stdout(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"run.{fmt}"
    done = project(fixture("completed"), "--format", fmt, "-o", str(out))
    assert done.returncode == 0 and done.stdout == ""
    assert out.read_text("utf-8") == project(fixture("completed"), "--format", fmt).stdout


def test_output_default_format_is_json(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    assert project(fixture("completed"), "-o", str(out)).returncode == 0
    assert json.loads(out.read_text("utf-8"))["run_id"] == fixture_run_id("completed")


def test_output_errors(tmp_path: Path) -> None:
    done = project(fixture("completed"), "--format", "html", "--output", str(tmp_path))
    assert done.returncode == 2 and "is a directory" in done.stderr
    done = project(fixture("completed"), "--format", "html", "--output", str(tmp_path / "missing" / "x.html"))
    assert done.returncode == 5 and "cannot write" in done.stderr
    assert "Traceback" not in done.stderr


def test_html_is_never_the_default() -> None:
    done = project(fixture("completed"))  # piped
    assert json.loads(done.stdout)["run_id"] == fixture_run_id("completed")


# --- progress under a pseudo-terminal --------------------------------------------------------------


def _stderr_on_pty(argv: list[str], timeout: float = 120) -> tuple[int, bytes, bytes]:
    """Run ract with stderr on a pseudo-terminal and stdout a pipe: (exit code, stdout, what the terminal got)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
    env.update(TERM="xterm-256color")
    return on_pty([*RACT, *argv], stdout=False, size=(120, 40), raw=False, env=env, timeout=timeout)


BAR = "━".encode()


def test_progress_bar_on_a_terminal(big_log: Path, tmp_path: Path) -> None:
    code, out, shown = _stderr_on_pty(["trace", "project", str(big_log), "--format", "html", "-o", str(tmp_path / "p")])
    assert code == 0 and out == b""
    assert b"projecting" in shown and BAR in shown, shown[-400:]
    assert (tmp_path / "p").read_bytes().startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize("extra", [["--format", "json"], ["-q", "--format", "markdown"]], ids=["json", "quiet"])
def test_no_progress_bar_for_json_or_quiet(extra: list[str], big_log: Path) -> None:
    code, _out, shown = _stderr_on_pty(["trace", "project", str(big_log), *extra])
    assert code == 0
    assert b"projecting" not in shown and BAR not in shown


def test_no_progress_bar_on_a_pipe(big_log: Path, tmp_path: Path) -> None:
    done = project(str(big_log), "--format", "html", "-o", str(tmp_path / "p"))
    assert done.returncode == 0 and done.stderr == ""


# --- a real browser ----------------------------------------------------------------------------------


def chromium(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def _csp_complaints(stderr: str) -> list[str]:
    """What the browser said about a refused load or a blocked inline script/style, or a script error."""
    words = ("Refused to", "Content Security Policy", "Content-Security-Policy", "Uncaught")
    return [line for line in stderr.splitlines() if any(w in line for w in words)]


def _write_page(tmp_path: Path, *argv: str, code: int = 0) -> Path:
    out = tmp_path / "page.html"
    done = project(*argv, "--format", "html", "--output", str(out))
    assert done.returncode == code, done.stderr
    return out


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@needs_chromium
def test_browser_renders_the_timeline(tmp_path: Path) -> None:
    page = _write_page(tmp_path, fixture("completed"))
    done = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Page(done.stdout)
    assert dom.all("svg", "timeline") and dom.all("rect", "step committed") and dom.all("rect", "tool failed")
    assert dom.all("line", "trust-end") and dom.all("path", "flag") and dom.all("circle", "reap")
    assert fixture_run_id("completed") in dom.body_text
    assert not _csp_complaints(done.stderr), _csp_complaints(done.stderr)


@needs_chromium
def test_browser_screenshot_is_a_png(tmp_path: Path) -> None:
    page = _write_page(tmp_path, fixture("tampered"), code=1)
    shot = tmp_path / "x.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert _png_size(shot.read_bytes()) == (1280, 2000)
    assert shot.stat().st_size > 20_000  # a page was drawn, not a blank
    assert not _csp_complaints(done.stderr), _csp_complaints(done.stderr)


@needs_chromium
def test_browser_runs_the_sorting_script_under_the_csp(tmp_path: Path) -> None:
    """The fleet page's one inline script runs (its hash is in the policy): it marks the headers sortable."""
    page = _write_page(tmp_path, "fixtures/runs", code=1)
    done = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Page(done.stdout)
    (html_tag,) = dom.all("html")
    assert "js" in (html_tag.get("class") or "").split()
    heads = dom.all("th", "sort")
    assert len(heads) == 11 and all(h.get("tabindex") == "0" for h in heads)
    assert len(dom.all("section", "run")) == len(FIXTURES)
    assert not _csp_complaints(done.stderr), _csp_complaints(done.stderr)


@needs_chromium
def test_browser_dom_of_a_hostile_run_has_no_injected_element(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for i, evil in enumerate(PAYLOADS.values()):
        write_hostile(logs / f"{i:02d}" / "events.jsonl", evil, run_id=f"{i + 1:032x}")
    page = _write_page(tmp_path, str(logs))
    done = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Page(done.stdout)
    for tag, attrs in dom.tags:
        assert tag in TAGS, f"<{tag}> in the browser's DOM"
        assert all(name in ATTRS for name in attrs), attrs
    assert len(dom.all("script")) == 1 and dom.scripts == [SCRIPT]
    assert escape_unsafe(PAYLOADS["script"]) in dom.body_text
    assert not _csp_complaints(done.stderr), _csp_complaints(done.stderr)
