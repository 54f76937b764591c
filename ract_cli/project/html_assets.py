"""What every HTML report page carries: its one style sheet, its one script, the CSP, and the escaping.

The page loads nothing (no network, no file): the style sheet and the script
are inline, and the ``Content-Security-Policy`` meta tag allows exactly
these two, by their SHA-256 (``'sha256-…'``, computed here from the very text
written), and nothing else: ``default-src 'none'`` forbids every load, and
``base-uri``/``form-action 'none'`` the two directives ``default-src`` does
not cover. No element carries a ``style`` attribute (a style hash does not
cover those): colours are classes, and the SVG uses presentation attributes.

``esc`` is the one way a value reaches the page: control and bidi characters
(and the lone surrogates of a non-UTF-8 file name) become visible escapes (``format.text.escape_unsafe``), then ``& < > " '``
are HTML-escaped, and ``[`` and ``:`` are written as character references,
so the page source, were it printed in a CI log, carries no workflow
command (``::``, ``##[``) either.
"""

from __future__ import annotations

import base64
import hashlib
import html

from ract_cli.format.text import escape_unsafe

CSS = """\
:root{color-scheme:light;--ok:#2e7d32;--bad:#c62828;--warn:#ef6c00;--muted:#6b7280;--info:#1565c0}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem auto;max-width:1240px;
padding:0 1rem;color:#1f2328;background:#fff}
h1{font-size:1.6rem;margin:.2rem 0 1rem}h2{font-size:1.3rem;margin:2rem 0 .6rem;border-bottom:1px solid #d0d7de}
h3{font-size:1.05rem;margin:1.4rem 0 .4rem}
code,.mono,td.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;margin:.3rem 0 .8rem}th,td{border:1px solid #d0d7de;padding:3px 8px;
text-align:left;vertical-align:top}thead th{background:#f6f8fa}td{overflow-wrap:break-word}
td.mono{overflow-wrap:anywhere}td.nowrap,td.status{white-space:nowrap}
table.kv th{background:#f6f8fa;white-space:nowrap;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{border:2px solid var(--bad);background:#fdecea;padding:.6rem .8rem;margin:.6rem 0;font-weight:600}
.good{color:var(--ok)}.bad{color:var(--bad);font-weight:600}.warn{color:var(--warn)}.muted{color:var(--muted)}
.note{color:var(--muted);font-size:12.5px;margin:.2rem 0 .6rem}
.status.completed{color:var(--ok)}.status.aborted,.status.open{color:var(--warn)}
.status.repaired{color:#8e24aa}.status.unknown{color:var(--bad)}
ul.legend{list-style:none;padding:0;margin:.3rem 0;display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;font-size:12.5px}
svg.swatch{vertical-align:middle;margin-right:.3rem}
svg.timeline{width:100%;height:auto;border:1px solid #d0d7de;background:#fff}
.timeline text{font:11px system-ui,sans-serif;fill:#1f2328}.timeline .lane-label{font-weight:600}
.timeline .tick{stroke:#d0d7de}.timeline .axis{stroke:#57606a}.timeline .tick-label{fill:#57606a}
.timeline .lane-bg{fill:#f6f8fa}.verified-range{fill:#c8e6c9}.unverified{fill:#f5c6c6}
.unverified-label{fill:var(--bad)}
.trust-end{stroke:var(--bad);stroke-width:2}.trust-end.to-end{stroke:var(--ok);stroke-dasharray:4 3}
.trust-end-label{fill:var(--bad)}.trust-end-label.to-end{fill:var(--ok)}
.run.completed{fill:#66bb6a}.run.aborted{fill:#ffa726}.run.open{fill:#ffcc80}.run.repaired{fill:#ba68c8}
.run.unknown{fill:#bdbdbd}
.step.committed{fill:#43a047}.step.rolled-back{fill:#fb8c00}.step.open{fill:#ffe082;stroke:#f9a825}
.tool.ok{fill:#1e88e5}.tool.failed{fill:#e53935}.tool.unknown{fill:#9e9e9e}.tool.open{fill:#bbdefb;stroke:#1e88e5}
.tool.refused{fill:#6a1b9a}
.provider.answered{fill:#00897b}.provider.timed-out{fill:#f4511e}.provider.open{fill:#b2dfdb;stroke:#00897b}
.provider.rejected{fill:#ad1457}
.handshake.resolved{fill:#5e35b1}.handshake.interrupted{fill:#f4511e}.handshake.pending{fill:#d1c4e9;stroke:#5e35b1}
.reap.reaped{fill:#6d4c41}.flag{fill:#d32f2f;stroke:#fff}
.timeline rect.mark,.timeline circle.mark,.timeline path.mark{fill-opacity:.85}
th.sort{cursor:pointer;user-select:none}th.sort:focus{outline:2px solid var(--info)}
th[aria-sort=ascending]::after{content:" \\25b2"}th[aria-sort=descending]::after{content:" \\25bc"}
.js-hint{display:none}.js .js-hint{display:inline}
a{color:var(--info)}footer{margin-top:2.5rem;color:var(--muted);font-size:12px}
"""

#: sorts every ``table.sortable`` by the clicked header (``data-sort`` holds a cell's number, if any)
SCRIPT = """\
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    return v === null ? cell.textContent : Number(v);
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a).localeCompare(String(b));
  }
  function setup(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      th.classList.add("sort");
      function sort() {
        var up = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r, s) {
          var c = compare(key(r.cells[col]), key(s.cells[col]));
          return up ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), setup);
})();
"""


def csp_hash(text: str) -> str:
    """The CSP source expression allowing one inline element whose text is exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def csp(*, script: bool) -> str:
    """The policy: nothing loads; the one style sheet (and, on a fleet page, the one script) runs."""
    scripts = csp_hash(SCRIPT) if script else "'none'"
    return (
        f"default-src 'none'; style-src {csp_hash(CSS)}; script-src {scripts}; img-src 'none'; "
        "font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )


_CI_SAFE = str.maketrans({"[": "&#91;", ":": "&#58;"})


def esc(value: object) -> str:
    """Any value as HTML text: ``-`` for None, yes/no for a bool; controls visible, markup escaped."""
    if value is None:
        return "-"
    if value is True or value is False:
        return "yes" if value else "no"
    text = str(value).encode("utf-8", "backslashreplace").decode("utf-8")  # a path's lone surrogates: visible
    return html.escape(escape_unsafe(text), quote=True).translate(_CI_SAFE)
