"""Reading one log into review-queue candidates, slice by slice, by cursor.

Owns: :class:`Harvester` — a log read through its source's adapter
(:meth:`mmd.sources.Source.read`: complete lines after the cursor, never a
torn tail), its utterances through :class:`.candidacy.Candidacy` (the
candidate pipeline with the session's earlier utterances in view, minus
statements a note already holds), and the candidates with the
file's cursor into the queue in one transaction per slice (at most
:data:`SLICE_BYTES` of log or :data:`SLICE_CHARS` of text), so memory stays
bounded and a restart resumes where the last slice ended. The queue merges a
statement it has seen before into its candidate (and drops a rejected one). During a first backfill
(:attr:`Harvester.allowance`), a log read for the first time shares the backfill's places on show
(:class:`~..queue_offers.Allowance`).

Never: names a log format (the adapter decides everything about the file),
decides which files to read or when (:mod:`.follow` does), or publishes
events (``on_added`` does, through the daemon's loop).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmd.core.snapshot import Snapshot
from mmd.sources import Source

from ..queue import ReviewQueue
from ..queue_offers import Allowance
from ..statedb import CursorRow
from .candidacy import Candidacy
from .health import IngestHealth

if TYPE_CHECKING:
    from mmd.candidates import NewCandidate

__all__ = ["SLICE_BYTES", "SLICE_CHARS", "AddedBatch", "Harvester", "TrackedLog"]

log = logging.getLogger("mmd.ingest")

SLICE_BYTES = 32 * 1024 * 1024
"""Most log bytes read before the candidates and the cursor are committed."""
SLICE_CHARS = 1_000_000
"""Most model-visible text (code points) held before the candidates and the cursor are committed."""


@dataclass(frozen=True)
class AddedBatch:
    """Candidates one slice of one log added: the payload of ``queue/added`` (``agent``: the source's name)."""

    ids: list[int]
    session_id: str | None
    file: str
    agent: str = ""


@dataclass
class TrackedLog:
    """One log being followed: its source, session, opaque cursor JSON, project (the session's cwd), quiet time, and
    the person's prompts read (for the one distillation nudge of its session)."""

    path: str
    source: Source
    session_id: str | None
    cursor: dict[str, Any] | None
    project: str | None = None
    grew_at: float | None = None  # monotonic seconds of the last growth seen while following
    ended: bool = True
    prompts: int = 0  # the person's utterances read so far (the distillation nudge counts them)
    distilled: bool = False  # its distillation nudge was sent (or is not wanted)


class Harvester:
    """Reads logs into the review queue.

    Args:
        queue: the review queue (candidates and cursors).
        notes: the current memory snapshot (None before the first load): candidates equal to a note are skipped.
        write_budget: the default write budget (code points) the rules cut bodies to.
        health: the ingestion's health (``bytes_read``, ``candidates_added``, ``warnings``), updated here.
        on_added: called after each slice that added candidates.
        stop: set when the daemon stops; a long log is left between two slices.
    """

    def __init__(self, queue: ReviewQueue, *, notes: Callable[[], Snapshot | None], write_budget: Callable[[], int],
                 health: IngestHealth, on_added: Callable[[AddedBatch], None], stop: threading.Event) -> None:
        self.queue = queue
        self._notes = notes
        self._write_budget = write_budget
        self.health = health
        self._on_added = on_added
        self._stop = stop
        self.rows: dict[str, CursorRow] = {}
        """The stored cursor of every log, by path (loaded by the caller, kept current here)."""
        self.candidacy = Candidacy(lambda: None, notes)
        """The candidate pipeline (its ``per_session`` is set by the composition root from the config)."""
        self.allowance: Allowance | None = None
        """A first backfill's places on show, while one runs (:meth:`.follow.Ingestor._backfill` sets it): a log
        with no cursor yet shares them."""

    def read(self, t: TrackedLog) -> int:
        """Read what is new in one log, slice by slice; returns the bytes consumed.

        Raises:
            OSError: if the file cannot be read (FileNotFoundError when it vanished).
            sqlite3.Error: if the queue cannot be written.
        """
        consumed = 0
        allowance = self.allowance if t.cursor is None else None  # a log read for the first time
        while not self._stop.is_set():
            s = t.source.read(t.path, t.cursor, max_bytes=SLICE_BYTES, max_chars=SLICE_CHARS)
            self.health.warnings += len(s.warnings)
            self.health.bytes_read += s.consumed
            consumed += s.consumed
            if s.session_id is not None:
                t.session_id = s.session_id
            if s.project is not None:
                t.project = s.project
            t.prompts += sum(1 for u in s.utterances if u.who == "human")
            candidates = self.candidacy.run(s.utterances, write_budget=self._write_budget(),
                                            restarted=s.restarted) if s.utterances else []
            if candidates or s.restarted or t.cursor is None or s.cursor != t.cursor:
                self._commit(t, candidates, s.cursor, allowance)
            t.cursor = s.cursor
            if not s.more:
                break
        return consumed

    def _commit(self, t: TrackedLog, candidates: list[NewCandidate], cursor: dict[str, Any],
                allowance: Allowance | None) -> None:
        row = CursorRow(t.path, t.source.name, t.session_id, cursor)
        ids = self.queue.add(candidates, row, allowance)
        self.rows[t.path] = row
        if ids:
            self.health.candidates_added += len(ids)
            log.info("queue.added file=%s session=%s count=%d ids=%s", t.path, t.session_id, len(ids), _ids(ids))
            self._on_added(AddedBatch(ids, t.session_id, t.path, t.source.name))


def _ids(ids: Sequence[int]) -> str:
    """Candidate ids for a log line: ``4-9`` when consecutive, else the first ten comma-separated (``…`` after)."""
    if len(ids) > 1 and list(ids) == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}"
    return ",".join(map(str, ids[:10])) + (",…" if len(ids) > 10 else "")
