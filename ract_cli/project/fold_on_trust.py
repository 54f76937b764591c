"""The Python core's projection of one large log in two processes: folded here, its lines proven by a worker.

With the Python core a ``verify`` of one large log splits it between
processes (``read.parallel``), but a projection is one fold over the events
in order. Most of a line's cost is its proof, not its fold: so the fold reads
the log here with the proof left out (``read.line_proof.trusted_analyze``)
while ``jobs - 1`` worker processes prove the very bytes it read
(``ProofTap``). Every line proven: the report is the one a fold in one
process makes (``read/line_proof.py`` says why). Any line not: the fold here
is dropped and the caller projects the log the ordinary way (a log with a
bad line costs about one fold more). The fold is dropped too when it stops
on hostile bytes the proof would have refused (an error of any kind: it
read unproven lines), and when no worker can be started.
"""

from __future__ import annotations

from ract_cli.dialects import ChainReader
from ract_cli.project.fold import project_folded
from ract_cli.project.projector import Projector
from ract_cli.read.line_proof import ProofTap, trusted_analyze
from ract_cli.read.parallel import make_pool, pool_failures, stop_pool


def project_on_trust(reader: ChainReader, max_items: int, workers: int) -> Projector | None:
    """``project_folded(reader, max_items)``'s projection, its lines proven by ``workers`` processes; None when
    it is not the answer (read the log again with a new reader). ``reader`` has not read yet."""
    try:
        with make_pool(workers) as pool:
            tap = ProofTap(pool, reader.schema_version)
            reader.prove, reader.tap = trusted_analyze, tap
            try:
                projector = project_folded(reader, max_items)
                if projector is not None:
                    tap.finish()
            # NotProven; a worker that could not start; anything an unproven line made the fold raise: no answer
            except Exception:
                projector = None
            if projector is None:  # what the workers hold is not wanted (and one started alone would be waited for)
                stop_pool(pool)
            return projector
    except pool_failures():
        return None
