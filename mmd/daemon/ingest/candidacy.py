"""Candidates from a slice of a log, with the rest of its session in view: what the harvester calls.

Owns: :class:`Candidacy` — each slice's utterances go through
:func:`mmd.candidates.candidates_from` together with the session's earlier
utterances (kept in memory, bounded: the newest :data:`CONTEXT_UTTERANCES`
and :data:`CONTEXT_CHARS` of a session, :data:`CONTEXT_SESSIONS` sessions), so a session's visible budget and the
signals across turns (a correction acknowledged, a fact carried into a
summary) see the whole session while candidates still reach the queue as the
log is read; the marks made on purpose (``mm:``, ``MEMO:``, ``记住：`` …) are found
in every utterance, the window's or not (issue 29: a long session read in one go
lost the marks of its start). Later slices may re-rank what earlier ones queued (the queue
merges by statement), never hold a candidate back. Also
:func:`seen_of_snapshot`: the notes as :class:`mmd.candidates.Seen` (texts for
containment, subjects for append proposals).

Never: reads files, writes the queue, or names a log format.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mmd.core.snapshot import Snapshot
from mmd.sources import Utterance

if TYPE_CHECKING:  # mmd.candidates is imported where first used: with the first session read, not at start
    from mmd.candidates import NewCandidate, Seen

__all__ = ["CONTEXT_CHARS", "CONTEXT_SESSIONS", "CONTEXT_UTTERANCES", "Candidacy", "seen_of_snapshot"]

log = logging.getLogger("mmd.ingest")

CONTEXT_UTTERANCES = 4000
"""Most utterances of one session kept in view (the newest) for the rules; marks are found in every utterance."""
CONTEXT_CHARS = 400_000
"""Most utterance text (code points) of one session kept in view (the newest): a slice's pipeline run stays
near a quarter of a second however long the session grows."""
CONTEXT_SESSIONS = 64
"""Most sessions kept in view (the least recently read are dropped)."""


def seen_of_snapshot(snap: Snapshot | None) -> Seen:
    """The notes of ``snap`` as :class:`~mmd.candidates.Seen` (nothing when None)."""
    from mmd.candidates import Seen

    if snap is None:
        return Seen()
    return Seen.of_index((n.topic, n.entry.tags, n.entry.summary, n.body) for n in snap.notes)


def _place(u: Utterance) -> tuple[object, ...]:
    """Where an utterance was said: the record's uuid when the format has one, else file, line and seq."""
    p = u.position
    return (u.who, p.uuid) if p.uuid else (u.who, p.file, p.line, p.seq)


def _session_key(u: Utterance) -> str:
    return f"{u.agent}|{u.session_id or u.position.file}"


class Candidacy:
    """The candidate pipeline of the ingestion, one instance per harvester (one thread).

    Args:
        per_session: ``candidates.perSession`` (None: scaled by the session's size).
        notes: the user root's current snapshot (None before the first load).
        project_notes: the current snapshot of the project root of an agent session's folder (None: the folder's
            project has no root yet, or no scopes are served); a session's statements are seen against its
            project's notes and the user root's (docs/projects.md), and propose appends to its project's notes.
    """

    def __init__(self, per_session: Callable[[], int | None], notes: Callable[[], Snapshot | None],
                 project_notes: Callable[[str], Snapshot | None] | None = None) -> None:
        self.per_session = per_session
        """``candidates.perSession`` as the daemon's config says now (the composition root may replace it)."""
        self._notes = notes
        self.project_notes = project_notes
        """The project root of a folder (the composition root sets it once the home serves)."""
        self._context: OrderedDict[str, list[Utterance]] = OrderedDict()
        self._seen: dict[str, tuple[int, Seen]] = {}

    def _seen_of(self, snap: Snapshot | None) -> Seen:
        """``snap``'s notes as :class:`Seen`, rebuilt only when its root's revision moved (one per root)."""
        if snap is None:
            return seen_of_snapshot(None)
        key = str(snap.root)
        cached = self._seen.get(key)
        if cached is None or cached[0] != snap.revision:
            if len(self._seen) > CONTEXT_SESSIONS:
                self._seen.clear()
            cached = self._seen[key] = (snap.revision, seen_of_snapshot(snap))
        return cached[1]

    def seen(self, folder: str | None = None) -> Seen:
        """The notes as they are now: the user root's, and with ``folder`` (an agent session's cwd) its project
        root's too — those first, the only ones appends are proposed to."""
        user = self._seen_of(self._notes())
        project = self.project_notes(folder) if folder and self.project_notes is not None else None
        if project is None:
            return user
        from mmd.candidates import Seen

        own = self._seen_of(project)
        return Seen(own.note_bodies | user.note_bodies, own.candidate_keys, own.note_texts + user.note_texts,
                    own.subjects)

    def run(self, utterances: Sequence[Utterance], *, write_budget: int, restarted: bool = False) -> list[NewCandidate]:
        """The candidates to queue for one slice: every candidate touching the new utterances, and the
        visible ones of their sessions (re-ranked with the session's window in view), and every marked line of
        the new utterances that fell outside the window (logged as ``ingest.outside_window``).

        Args:
            utterances: the slice's utterances, in log order.
            write_budget: the default write budget, code points.
            restarted: the log was read again from its start: its sessions' context starts over.
        """
        from mmd.candidates import candidates_from, marks_from

        seen = self.seen()
        text = [u for u in utterances if u.who == "text"]
        out = candidates_from(text, write_budget=write_budget, seen=seen) if text else []
        groups: dict[str, list[Utterance]] = {}
        for u in utterances:
            if u.who != "text":
                groups.setdefault(_session_key(u), []).append(u)
        for key, new in groups.items():
            before = [] if restarted else self._context.pop(key, [])
            known = {_place(u) for u in before}
            new = [u for u in new if _place(u) not in known]  # a log read again, a resumed session's replay
            if not new:
                self._context[key] = before
                continue
            context = _newest(before + new)
            kept = {id(u) for u in context}
            outside = [u for u in new if id(u) not in kept]
            here = self.seen(new[0].project) if new[0].project else seen
            if outside:  # the rules look at a window, the marks at everything
                marked = marks_from(outside, write_budget=write_budget, seen=here)
                log.info("ingest.outside_window session=%s utterances=%d chars=%d marks=%d", key, len(outside),
                         sum(len(u.text) for u in outside), len(marked))
                out.extend(marked)
            self._context[key] = context
            self._context.move_to_end(key)
            fresh = {id(u) for u in new}
            for c in candidates_from(context, write_budget=write_budget, seen=here,
                                     per_session=self.per_session()):
                if c.visible or any(id(u) in fresh for u in _utterances_of(c, context)):
                    out.append(c)
        while len(self._context) > CONTEXT_SESSIONS:
            self._context.popitem(last=False)
        return out


def _newest(utterances: list[Utterance]) -> list[Utterance]:
    """The newest utterances within :data:`CONTEXT_UTTERANCES` and :data:`CONTEXT_CHARS` (at least one)."""
    kept = utterances[-CONTEXT_UTTERANCES:]
    size = 0
    for i in range(len(kept) - 1, -1, -1):
        size += len(kept[i].text)
        if size > CONTEXT_CHARS:
            return kept[i + 1:] or kept[-1:]
    return kept


def _utterances_of(c: NewCandidate, context: Sequence[Utterance]) -> list[Utterance]:
    """The utterances of ``context`` at the candidate's evidence positions."""
    places = {(e.position.get("file"), e.position.get("line"), e.position.get("seq"), e.position.get("uuid"))
              for e in c.evidence}
    return [u for u in context
            if (u.position.file, u.position.line, u.position.seq, u.position.uuid) in places]
