"""The Python core's projection of one large log in two processes: folded here, its lines proven by a worker.

With the Python core a ``verify`` of one large log splits it between
processes (``read.parallel``), but a projection is one fold over the events
in order. Most of a line's cost is its proof, not its fold: so the fold reads
the log here with the proof left out (``read.line_proof.trusted_analyze``)
while up to ``jobs - 1`` worker processes prove the very bytes it read
(``ProofTap``). Every line proven: the fold's answer is the one a fold in
one process gives (``read/line_proof.py`` says why), including "the fold
gave up" (``GAVE_UP``: the caller reads the log event by event, as after an
ordinary fold that gave up). Any line not: the fold here is dropped and the
caller projects the log the ordinary way (a log with a bad line costs about
one fold more). The fold is dropped too when a worker cannot be started.
"""

from __future__ import annotations

from ract_cli.dialects import ChainReader
from ract_cli.project.fold import project_folded
from ract_cli.project.projector import Projector
from ract_cli.read.line_proof import IN_FLIGHT, NotProven, ProofTap, trusted_analyze
from ract_cli.read.parallel import make_pool, pool_failures, stop_pool

#: ``project_on_trust``'s answer when the fold gave up on lines every one of which was proven: the fold in one
#: process gives up there too (the same code on the same answers), so the log is read event by event at once
GAVE_UP = "gave up"


def project_on_trust(reader: ChainReader, max_items: int, jobs: int) -> Projector | str | None:
    """``project_folded(reader, max_items)``'s projection, its lines proven by ``jobs - 1`` processes (at most
    ``IN_FLIGHT``: no more pieces are ever out); ``GAVE_UP``; or None when this is not the answer (project the
    log again with a new reader). ``reader`` has not read yet. An error the fold raises on lines that were all
    proven is raised (the fold in one process would raise it too)."""
    try:
        with make_pool(max(1, min(jobs - 1, IN_FLIGHT))) as pool:
            tap = ProofTap(pool, reader.schema_version)
            reader.prove, reader.tap = trusted_analyze, tap
            try:
                projector = project_folded(reader, max_items)
                answer: Projector | str | None = projector if projector is not None else GAVE_UP
                if not _all_proven(tap):
                    answer = None
            except NotProven:
                answer = None
            except Exception:  # an unproven line may hold anything (a clock as text, an id as an object)
                if _all_proven(tap):
                    raise
                answer = None
            finally:
                reader.prove = reader.tap = None
            if answer is None:  # what the workers hold is not wanted (and one started alone would be waited for)
                stop_pool(pool)
            return answer
    except pool_failures():
        return None


def _all_proven(tap: ProofTap) -> bool:
    """Whether every piece the tap was handed is proven (``ProofTap.finish``); no when a worker failed."""
    try:
        tap.finish()
    except NotProven:
        return False
    except pool_failures():
        return False
    return True
