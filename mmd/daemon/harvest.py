"""Reading one session log into review-queue candidates, slice by slice, by cursor.

Owns: :class:`Harvester` — a DSH log read with :mod:`mmd.sessions` (complete
lines after the cursor, never a torn tail) and the mm digest rules run once
per model-visible message, so each candidate's provenance (session id, file,
seq, message id) is exact; another ``*.jsonl`` / ``*.json`` / ``*.md`` log gets
the mm digest rules as it is. Candidates and the file's cursor go to the queue
in one transaction per slice (at most :data:`SLICE_BYTES` of log or
:data:`SLICE_CHARS` of text), so memory stays bounded and a restart resumes
where the last slice ended. Candidates equal to an existing note are dropped
here; the queue drops those it has seen before.

Never: decides which files to read or when (:mod:`.ingest` does), or publishes
events (``on_added`` does, through the daemon's loop).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from mmd.core.digest import digest, distill
from mmd.core.snapshot import Snapshot
from mmd.core.text import slug_for_topic
from mmd.sessions import (
    ExtractState,
    LogCursor,
    LogReader,
    SessionCursor,
    SessionExtractor,
    TextRecord,
    read_other_log,
    session_identity,
)

from .queue import NewCandidate, ReviewQueue, body_key
from .statedb import CursorRow

__all__ = ["SLICE_BYTES", "SLICE_CHARS", "AddedBatch", "Harvester", "TrackedLog", "may_hold_candidates"]

log = logging.getLogger("mmd.ingest")

SLICE_BYTES = 32 * 1024 * 1024
"""Most log bytes read before the candidates and the cursor are committed."""
SLICE_CHARS = 1_000_000
"""Most model-visible text (code points) held before the candidates and the cursor are committed."""


@dataclass(frozen=True)
class AddedBatch:
    """Candidates one slice of one log added: the payload of ``queue/added``."""

    ids: list[int]
    session_id: str | None
    file: str


@dataclass
class TrackedLog:
    """One log being followed: its kind (``dsh`` | ``other``), session, cursor and quiet time."""

    path: str
    kind: str  # "dsh" | "other"
    session_id: str | None
    cursor: SessionCursor | LogCursor | None
    grew_at: float | None = None  # monotonic seconds of the last growth seen while following
    ended: bool = True


_COLON = re.compile("[:\uff1a]")
_MARKERS = ("memo", "remember", "summary", "conclusion", "记忆", "记住", "总结", "结论")
"""The digest's markers (mm v1 §9), casefolded; each must be followed by ``:`` or ``：``."""


def may_hold_candidates(text: str) -> bool:
    """Whether the mm digest rules could find a candidate in ``text``: a cheap superset test.

    A candidate needs ``mm:``, a ``##`` heading, or a marker right before a colon; the few
    characters before each colon are casefolded, which also folds ``ſ`` to ``s`` as
    JavaScript's ``/iu`` does, so the test never misses what the digest would find.
    """
    if "##" in text or "mm:" in text:
        return True
    for m in _COLON.finditer(text):
        if text[max(0, m.start() - 10):m.start()].casefold().endswith(_MARKERS):
            return True
    return False


_NUMBERED = re.compile(r"(memo|summary)-\d+", re.ASCII)
_TOPIC_WORDS = 6


def proposed_topic(kind: str, topic: str, body: str) -> str:
    """The topic a candidate is proposed under.

    The digest rules number ``explicit`` and ``summary`` candidates per text
    (``memo-1``, ``summary-1``), so every message proposes the same topics and
    accepting two of them would overwrite one note with the other. Those get a
    topic from the body's first words instead (``memo-<8 hex of the body>``
    when no ASCII slug can be made, e.g. for CJK text); other topics stay.
    """
    match = _NUMBERED.fullmatch(topic)
    if kind not in ("explicit", "summary") or match is None:
        return topic
    words = re.findall(r"[A-Za-z0-9]+", body)[:_TOPIC_WORDS]
    slug = slug_for_topic(" ".join(words)) if len(words) >= 2 else None
    if slug is not None:
        return slug[:48].rstrip("-._")
    return f"{match.group(1)}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"


def _settled(state: ExtractState) -> bool:
    """False while a seeded v2+ log's inherited prefix is not settled: such a read must not stop early."""
    h = state.header
    return not (h is not None and h.version >= 2 and h.seeded and not state.seed_resolved)


class Harvester:
    """Reads logs into the review queue.

    Args:
        queue: the review queue (candidates and cursors).
        notes: the current memory snapshot (None before the first load): candidates equal to a note are skipped.
        write_budget: the default write budget (code points) the digest cuts bodies to.
        dsh_home: handed to the mm digest of other logs (it never looks there when given text).
        health: the ingestion's health counters (``bytesRead``, ``candidatesAdded``, ``warnings``), updated here.
        on_added: called after each slice that added candidates.
        stop: set when the daemon stops; a long log is left between two slices.
    """

    def __init__(self, queue: ReviewQueue, *, notes: Callable[[], Snapshot | None], write_budget: Callable[[], int],
                 dsh_home: Path, health: dict[str, Any], on_added: Callable[[AddedBatch], None],
                 stop: threading.Event) -> None:
        self.queue = queue
        self._notes = notes
        self._write_budget = write_budget
        self._dsh_home = dsh_home
        self.health = health
        self._on_added = on_added
        self._stop = stop
        self.rows: dict[str, CursorRow] = {}
        """The stored cursor of every log, by path (loaded by the caller, kept current here)."""
        self._note_keys: tuple[int, frozenset[str]] = (-1, frozenset())

    def read(self, t: TrackedLog) -> int:
        """Read what is new in one log; returns the bytes consumed.

        Raises:
            OSError: if the file cannot be read (FileNotFoundError when it vanished).
            sqlite3.Error: if the queue cannot be written.
        """
        return self._read_dsh(t) if t.kind == "dsh" else self._read_other(t)

    def _note_body_keys(self) -> frozenset[str]:
        snap = self._notes()
        if snap is None:
            return frozenset()
        if self._note_keys[0] != snap.revision:
            self._note_keys = (snap.revision, frozenset(body_key(n.body) for n in snap.notes))
        return self._note_keys[1]

    def _candidates(self, text: str, source: dict[str, Any], *, other: bool = False) -> list[NewCandidate]:
        """The mm digest candidates of one text, minus those equal to an existing note."""
        if not other and not may_hold_candidates(text):
            return []  # decoded DSH text only: raw JSON of other logs may spell a colon as \u003a
        budget = self._write_budget()
        if other:
            result = digest(text=text, default_write_budget=budget, dsh_home=self._dsh_home)
            source = {**source, "source_kind": result["sourceKind"]}
        else:
            result = distill(text, default_write_budget=budget)
        notes = self._note_body_keys()
        return [NewCandidate(c["kind"], proposed_topic(c["kind"], c["topic"], c["body"]), c["summary"], c["body"],
                             c["chars"], c["overBudget"], **source)
                for c in result["candidates"] if body_key(c["body"]) not in notes]

    def _commit(self, t: TrackedLog, candidates: list[NewCandidate], cursor_json: dict[str, Any]) -> None:
        row = CursorRow(t.path, t.kind, t.session_id, cursor_json)
        ids = self.queue.add(candidates, row)
        self.rows[t.path] = row
        if ids:
            self.health["candidatesAdded"] += len(ids)
            log.info("queue.added file=%s session=%s ids=%d", t.path, t.session_id, len(ids))
            self._on_added(AddedBatch(ids, t.session_id, t.path))

    def _read_dsh(self, t: TrackedLog) -> int:
        """Read a DSH log slice by slice; returns the bytes consumed. Switches to ``other`` if it is not DSH."""
        cursor = t.cursor if isinstance(t.cursor, SessionCursor) else SessionCursor.start(t.path)
        consumed = 0
        while not self._stop.is_set():
            warnings: list[str] = []
            records: list[TextRecord] = []
            more = False
            with LogReader(t.path, cursor.log, warnings=warnings) as reader:
                start = 0 if reader.restarted else cursor.log.offset
                extractor = SessionExtractor(ExtractState() if reader.restarted else cursor.state, warn=reader.warn)
                chars = nbytes = 0
                lines = cast(Generator[tuple[int, bytes], None, None], iter(reader))
                try:
                    for index, line in lines:
                        nbytes += len(line) + 1
                        for record in extractor.feed(index, line):
                            records.append(record)
                            chars += len(record.text)
                        if (chars >= SLICE_CHARS or nbytes >= SLICE_BYTES) and _settled(extractor.state):
                            more = True
                            break
                finally:
                    lines.close()  # runs the reader's bookkeeping now, so its cursor is final
                records.extend(extractor.finish())
            state = extractor.state
            new = SessionCursor(reader.cursor, state)
            self.health["warnings"] += len(warnings)
            if state.header is None and state.invalid:
                log.info("ingest.not_dsh file=%s (read as an other log)", t.path)
                t.kind, t.cursor = "other", None
                return self._read_other(t)
            if state.header is not None:
                t.session_id = state.header.session_id
            elif t.session_id is None:
                t.session_id = session_identity(t.path).session_id
            step = max(0, new.log.offset - start)
            consumed += step
            self.health["bytesRead"] += step
            candidates = [c for r in records for c in self._candidates(r.text, {
                "session_id": r.session_id, "file": t.path, "seq": r.seq, "message_id": r.message_id,
                "source_kind": r.kind.value})]
            new_json = new.to_json()
            if candidates or reader.restarted or t.cursor is None or new_json != cursor.to_json():
                self._commit(t, candidates, new_json)
            t.cursor = cursor = new
            if not more:
                break
        return consumed

    def _read_other(self, t: TrackedLog) -> int:
        """Read an other log (``*.jsonl`` by new lines, ``*.json``/``*.md`` whole when changed); bytes consumed."""
        cursor = t.cursor if isinstance(t.cursor, LogCursor) else None
        consumed = 0
        while not self._stop.is_set():
            r = read_other_log(t.path, cursor)
            self.health["warnings"] += len(r.warnings)
            if t.path.lower().endswith(".jsonl"):
                step = r.cursor.offset - (0 if r.restarted or cursor is None else cursor.offset)
            else:
                step = r.cursor.size if (r.text or r.binary) else 0
            consumed += max(0, step)
            self.health["bytesRead"] += max(0, step)
            candidates = self._candidates(r.text, {"session_id": None, "file": t.path, "seq": None,
                                                   "message_id": None, "source_kind": "text"},
                                          other=True) if r.text.strip() else []
            if candidates or cursor is None or r.cursor.to_json() != cursor.to_json():
                self._commit(t, candidates, r.cursor.to_json())
            t.cursor = cursor = r.cursor
            if not (r.truncated and t.path.lower().endswith(".jsonl")):
                break
        return consumed
