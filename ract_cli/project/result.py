"""``ProjectResult``: the reports of every log found, and the JSON shape of several.

A fleet of runs is summarised without keeping every run's report in memory
(issue 15 item 11): each report is spilled, as compact JSON, to an anonymous
temporary file as soon as it is made (``SpilledReports``), and what the
summary needs at once (the exit code, the totals) is counted as reports
arrive. ``runs`` reads the reports back one at a time, so iterating over it
holds one report; ``json_chunks`` writes the documented JSON piece by piece,
a run at a time. Memory: 8 bytes per run (the file offsets), whatever the
number of runs; disk: the reports' compact JSON, freed when the result is.
(Without a writable temporary directory the compact JSON stays in memory.)
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence

from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.findings import Finding
from ract_cli.format.json_types import JSONObject, Report
from ract_cli.project.options import REPORT_VERSION
from ract_cli.read import json_text

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import IO, overload

_RUNS_MARK = '"runs": []'


def encode_report(report: Report, *, as_written: bool = False) -> bytes:
    """A report as ``SpilledReports`` keeps it: ``o`` and one line of compact JSON (``read.json_text``'s), or
    ``j`` and ``json``'s with ``\\u`` escapes for a report orjson refuses (a path with a lone surrogate).
    ``as_written``: ``s`` and its JSON text as a fleet's JSON holds it (``json_text.text``, sorted keys, a
    two-space indent), so that writing it out is a copy (``ProjectResult.json_chunks``)."""
    if as_written:
        return b"s" + json_text.text(report, indent=True, sort_keys=True).encode() + b"\n"
    try:
        return b"o" + json_text.dumps(report) + b"\n"
    except TypeError:  # (orjson.JSONEncodeError is one)
        import json

        return b"j" + json.dumps(report, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


#: what ``ProjectResult`` counts of a report: (exit code, status, trusted, audit-flagged, events)
ReportSummary = tuple[int, str, bool, bool, int]


def summarize(report: Report) -> ReportSummary:
    """The fields of a report that ``ProjectResult``'s totals and exit code count."""
    return (
        int(report["exit_code"]),
        report["status"],
        bool(report["trusted"]),
        bool(report["audit_flags"]["count"]),
        report["chain"]["events"],
    )


class SpilledReports(Sequence[Report]):
    """A list of reports kept in an anonymous temporary file: append, ``len``, index and iterate.

    Each report is one record of ``encode_report``: compact JSON (``orjson``'s,
    ``read.json_text``; a report orjson refuses, e.g. a path with a lone
    surrogate, goes through ``json`` with ``\\u`` escapes), or with
    ``as_written`` the sorted, indented JSON text a fleet's JSON writes. Only
    the offsets stay in memory. The first
    report, until a second comes, is kept as it was given (as a list keeps it):
    one log's report, ~0.7 MB of JSON for 100,000 events, is neither encoded
    nor read back (~4 ms of a ~0.25 s project).
    """

    def __init__(self, reports: Iterable[Report] = (), *, as_written: bool = False) -> None:
        self.as_written = as_written  # reports are encoded as written out (``encode_report``)
        self._file: IO[bytes] | None = None
        # the reports not in the file: the first (one log's report is never spilled: making the file costs a
        # one-log call more than the report), or all of them when no temporary file could be made
        self._memory: list[bytes | Report] | None = []
        self._spills = True
        self._offsets = array("Q")
        self._end = 0
        for report in reports:
            self.append(report)

    def append(self, report: Report) -> None:
        if self._memory is not None and not self._memory:
            self._memory.append(report)  # (encoded only if another comes)
            return
        self.append_encoded(encode_report(report, as_written=self.as_written))

    def append_encoded(self, data: bytes) -> None:
        """Append a report as ``encode_report`` wrote it (a pool's worker did: no dict crosses to this process)."""
        if self._memory is not None and (not self._memory or not self._spills):
            self._memory.append(data)
            return
        if self._file is None:  # the second report: every report goes to the file from here on
            import tempfile  # (a fleet's only: its import costs a one-log call ~5 ms)

            try:
                self._file = tempfile.TemporaryFile()  # unlinked at once: gone with the process, whatever happens
            except OSError:  # no writable temporary directory: keep the (encoded) reports in memory instead
                self._spills = False
                self.append_encoded(data)
                return
            kept, self._memory = self._memory or [], None
            for earlier in kept:
                self._write(
                    earlier if isinstance(earlier, bytes) else encode_report(earlier, as_written=self.as_written)
                )
        self._write(data)

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        fd = self._file.fileno()
        view, offset = memoryview(data), self._end
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written
        self._offsets.append(self._end)
        self._end = offset

    def __len__(self) -> int:
        return len(self._memory) if self._memory is not None else len(self._offsets)

    if TYPE_CHECKING:  # (overload is typing's: the two signatures are for mypy only)

        @overload
        def __getitem__(self, index: int) -> Report: ...

        @overload
        def __getitem__(self, index: slice) -> list[Report]: ...

    def __getitem__(self, index: int | slice) -> Report | list[Report]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("report index out of range")
        return self._load(index)

    def __iter__(self) -> Iterator[Report]:
        for i in range(len(self)):
            yield self._load(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SpilledReports, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"SpilledReports({len(self)} reports)"

    def written(self, i: int) -> str | None:
        """Report ``i``'s JSON text as ``encode_report(..., as_written=True)`` wrote it, or None (kept otherwise)."""
        data = self._record(i)
        return data[1:-1].decode() if isinstance(data, bytes) and data[:1] == b"s" else None

    def _record(self, i: int) -> bytes | Report:
        if self._memory is not None:
            return self._memory[i]
        assert self._file is not None
        start = self._offsets[i]
        end = self._offsets[i + 1] if i + 1 < len(self._offsets) else self._end
        return os.pread(self._file.fileno(), end - start, start)

    def _load(self, i: int) -> Report:
        data = self._record(i)
        if not isinstance(data, bytes):
            return data
        body = data[1:-1]
        if data[:1] in (b"o", b"s"):  # (json_text reads the indented text too; one with \\u escapes: json)
            try:
                loaded: Report = json_text.loads(body)
                return loaded
            except ValueError:
                pass
        import json

        loaded = json.loads(body)
        return loaded

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ProjectResult:
    """Reports for every log found, plus path-level findings (a missing path...).

    ``runs`` is a ``SpilledReports`` (a read-only sequence backed by a
    temporary file); add a report with ``add``. ``exit_code`` and
    ``totals()`` are counted as reports arrive.
    """

    def __init__(
        self,
        runs: Iterable[Report] = (),
        findings: Iterable[Finding] = (),
        detailed: bool = True,
        *,
        timelines: bool = False,
        as_written: bool = False,
    ) -> None:
        self.findings: list[Finding] = list(findings)
        self.detailed = detailed  # one log given as a file: render it in detail; else a fleet summary
        #: with ``as_written``: each run's report kept as the JSON holds it (``encode_report``), for ``json_chunks``
        self.runs = SpilledReports(as_written=as_written)
        #: with ``timelines``: each run's ``TimelineCollector.to_dict()`` (``{}`` for none), beside ``runs``
        self.timelines: SpilledReports | None = SpilledReports() if timelines else None
        self._codes: set[int] = set()
        self._by_status: dict[str, int] = {}
        self._untrusted = self._flagged = self._events = 0
        self._unclean: list[int] = []  # the runs that failed or are not trusted to their end (``unclean_runs``)
        for report in runs:
            self.add(report)

    def add(self, report: Report, timeline: JSONObject | None = None) -> None:
        """One more run's report (and its timeline, when kept): spilled to disk, counted in the totals."""
        self.runs.append(report)
        self._count(summarize(report), timeline)

    def add_encoded(self, summary: ReportSummary, data: bytes, timeline: JSONObject | None = None) -> None:
        """``add`` of a report a pool's worker encoded (``encode_report``) and summarized (``summarize``)."""
        self.runs.append_encoded(data)
        self._count(summary, timeline)

    def _count(self, summary: ReportSummary, timeline: JSONObject | None) -> None:
        if self.timelines is not None:
            self.timelines.append(timeline or {})
        code, status, trusted, flagged, events = summary
        if code != 0 or not trusted:
            self._unclean.append(len(self.runs) - 1)
        self._codes.add(code)
        self._by_status[status] = self._by_status.get(status, 0) + 1
        self._untrusted += not trusted
        self._flagged += flagged
        self._events += events

    def unclean_runs(self) -> Iterator[Report]:
        """The reports of the runs that failed or are not trusted to their end, in order: what the verdicts
        on stderr name, read back without the others (a clean fleet's 10,000 reports are not read twice)."""
        for i in self._unclean:
            yield self.runs[i]

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3: the lowest non-zero code over every file and path."""
        return lowest_nonzero([*self._codes, *(f.exit_code for f in self.findings)])

    def totals(self) -> JSONObject:
        return {
            "runs": len(self.runs),
            "by_status": dict(sorted(self._by_status.items())),
            "untrusted": self._untrusted,
            "flagged": self._flagged,
            "events": self._events,
        }

    @property
    def is_single(self) -> bool:
        """Whether the JSON is one run report itself (one log given as a file, no path-level finding)."""
        return self.detailed and len(self.runs) == 1 and not self.findings

    def _envelope(self) -> Report:
        return {
            "report_version": REPORT_VERSION,
            "exit_code": int(self.exit_code),
            "runs": [],
            "totals": self.totals(),
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_dict(self) -> Report:
        """JSON shape: the run report itself when detailed, else ``{"runs": [...], ...}``.

        This holds every report in memory at once; ``json_chunks`` writes the same JSON a run at a time.
        """
        if self.is_single:
            return self.runs[0]
        return {**self._envelope(), "runs": list(self.runs)}

    def json_chunks(
        self, dumps: Callable[[object], str], *, indent: bool = True, written: bool = False
    ) -> Iterator[str]:
        """The JSON text of ``dumps(self.to_dict())``, in pieces, holding one run's report at a time.

        ``dumps`` must write sorted keys, and (``indent=True``) a two-space
        indent, or (``indent=False``) no whitespace: ``"".join(chunks)`` is
        then exactly ``dumps(self.to_dict())``. ``written=True``: a run kept
        as written (``as_written``) is taken as it was kept, not loaded and
        written again (a fleet's reports: ~0.1 ms each), which is right only
        for a ``dumps`` that writes ``json_text.text(value, indent=True,
        sort_keys=True)`` (the CLI's does, then neutralizes workflow commands:
        ``cli.project_output`` does that to each chunk).
        """

        def text(i: int) -> str:
            kept = self.runs.written(i) if written else None
            return kept if kept is not None else dumps(self.runs[i])

        if self.is_single:
            yield text(0)
            return
        skeleton = dumps(self._envelope())
        mark = f"\n  {_RUNS_MARK}" if indent else _RUNS_MARK.replace(" ", "")
        head, found, rest = skeleton.partition(mark)
        if not found or not self.runs:
            yield skeleton
            return
        yield head + mark[:-1]  # up to and including "["
        for i in range(len(self.runs)):
            run = text(i)
            if indent:
                run = "\n    " + run.replace("\n", "\n    ")
            yield ("," if i else "") + run
        yield ("\n  ]" if indent else "]") + rest
