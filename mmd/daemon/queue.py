"""The review queue: candidate memories waiting for a person (or an agent) to accept or reject them.

Owns: the candidates' rows in the state database (:mod:`.statedb`), their
wire shape (:class:`~mmd.wire.protocol.CandidateJson`), the status changes
``pending → accepted | rejected | expired`` (and back, ``queue.undo``) with a journal row each, and the merge of
a statement seen again. Which rule drafts are on show (a budget per session, decided ones counted; an age; a
first backfill's share) is :mod:`.queue_offers`'s rule, applied here in the same transactions. A
candidate's identity is its statement: :func:`mmd.candidates.identity.norm_key` (NFKC, casefold, punctuation and
whitespace folded), or a near-duplicate of the statement itself — the summary, never the context
around it (word or CJK-bigram Jaccard ≥ 0.8), kept for the queue's whole history. A statement
seen again — the same
session read again, a resumed one, a copy of the log, another session or
agent — merges into the candidate already there. So does a restatement in
other words (:func:`same_idea`): a standing rule the person says again in
another session of the same project, and a compaction summary's bullet that
restates something said earlier in its own session, when the two statements themselves share
content words (a shared context alone never merges). Merging: new places join its
``evidence``, ``seen`` grows, its score rises (more when it comes from
another session), and a hidden one may take a place in the new sighting's session (:func:`.queue_offers.offer`);
a place already in the evidence (the record's uuid, or session and line)
adds nothing, nor does a replay of one (same session, speaker, time and
quote at another place). A rejected or accepted statement never comes back; an expired one comes back
(pending, its clock started again) when it is said again in a session it was not seen in, or marked on purpose.
Issue 13 "Dedupe and repetition", issue 30 "A queue that ends".

Every candidate passes one door first, whoever made it (:func:`mmd.candidates.screening.screen_candidate`,
issue 29): what is stored, listed and published carries secrets redacted and hidden text escaped, its
``speaker`` and its ``flags``; pending flagged candidates are listed after every other one. Rows of an
older schema are screened the same way once the daemon runs (:meth:`ReviewQueue.screen_older`).

Threading: every method uses the calling thread's own connection; the
ingestion worker adds, RPC handlers read and decide (in worker threads); the
near-duplicate index is guarded by a lock.
Never: writes memory files (``queue.accept`` does that through the memory
state, in :mod:`.review`), reads logs, or publishes events.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mmd.wire.protocol import CandidateJson
from mmd.wire.scores import shown_at_least

from . import queue_offers as offers
from .queue_index import StatementIndex, same_idea
from .queue_offers import Allowance, Sighting, is_draft, session_of
from .queue_rows import HELD, filters, framed, place, replay, row_json
from .queue_screen import screen_older
from .statedb import CursorRow, StateDB

if TYPE_CHECKING:  # mmd.candidates is imported where first used: a daemon loads it with its first candidate
    from mmd.candidates import NewCandidate

__all__ = ["HELD", "OTHER_SESSION_BONUS", "SAME_SESSION_BONUS", "STATUSES", "ReviewQueue", "same_idea"]

STATUSES = ("pending", "accepted", "rejected", "expired")
"""A candidate's possible statuses."""
SAME_SESSION_BONUS = 0.15
"""Score a candidate gains per new sighting in a session it was already seen in."""
OTHER_SESSION_BONUS = 0.4
"""Score a candidate gains per new session it is seen in: what the user told the agents twice ranks first."""


def _session_key(c: NewCandidate) -> str:
    """The session whose budget the rule draft ``c`` counts in: its first sighting's (:func:`.session_of`)."""
    return session_of(c.evidence[0].to_json()) if c.evidence else f"other|{c.session_id or c.file}"


class ReviewQueue:
    """Candidates in ``<root>/.mmd/state.db``.

    Args:
        db: the opened state database.
        now_iso: the clock, ISO-8601 UTC with milliseconds.
        scope_of: the root a new candidate is proposed to (``user`` or a project key, ``docs/projects.md``);
            None proposes every candidate to the user root.
    """

    def __init__(self, db: StateDB, now_iso: Callable[[], str],
                 scope_of: Callable[[NewCandidate], str] | None = None) -> None:
        self.db = db
        self._now_iso = now_iso
        self.scope_of = scope_of
        self.counts: dict[str, int] = {"pending": 0, "accepted": 0, "rejected": 0, "expired": 0, "total": 0}
        self.shown = 0
        """Pending candidates on show in the default view (as of the last change): the review left to do."""
        """Candidates per status, refreshed after every change (read it from any thread)."""
        self.merged = 0
        """Sightings merged into existing candidates since the start (new evidence, not new candidates)."""
        self.expire_days: Callable[[], int] = lambda: offers.EXPIRE_DAYS
        """Days a rule draft stays pending (``candidates.expireDays``; the composition root may replace it)."""
        self._near: StatementIndex | None = None
        self._near_lock = threading.Lock()

    def refresh_counts(self) -> dict[str, int]:
        """Recount the candidates per status; updates :attr:`counts` and :attr:`shown`."""
        rows = self.db.conn().execute("SELECT status, COUNT(*) FROM candidates GROUP BY status").fetchall()
        counts = {s: 0 for s in STATUSES}
        counts.update({r[0]: r[1] for r in rows})
        counts["total"] = sum(counts[s] for s in STATUSES)
        self.shown = int(self.db.conn().execute(
            "SELECT COUNT(*) FROM candidates WHERE status = 'pending' AND visible = 1").fetchone()[0])
        self.counts = counts
        return counts

    @property
    def pending(self) -> int:
        """Pending candidates (as of the last change), hidden ones included."""
        return self.counts["pending"]

    def _near_index(self, conn: sqlite3.Connection) -> StatementIndex:
        """Every candidate's statement, indexed (built once, then kept current by :meth:`add`)."""
        if self._near is None:
            self._near = StatementIndex((r[0], r[1], r[2]) for r in conn.execute(
                "SELECT id, body, summary FROM candidates WHERE kind != 'held'"))
        return self._near

    def _match(self, conn: sqlite3.Connection, c: NewCandidate, words: frozenset[str]) -> sqlite3.Row | None:
        """The candidate holding ``c``'s statement: the same normalized text, else a near-duplicate (oldest)."""
        row: sqlite3.Row | None = conn.execute("SELECT * FROM candidates WHERE norm = ? ORDER BY id LIMIT 1",
                                               (c.norm,)).fetchone()
        if row is not None or c.kind == "conflict":  # a sync's decision on a topic is never another topic's
            return row
        with self._near_lock:
            index = self._near_index(conn)
            hits = index.near(c.summary)  # the statement, never the context around it
            if not hits and any(e.who in ("human", "summary") for e in c.evidence):
                hits = [cid for cid in index.restated(c.body, c.summary) if self._restated(conn, cid, c)][:1]
        if not hits:
            return None
        found: sqlite3.Row | None = conn.execute("SELECT * FROM candidates WHERE id = ?", (min(hits),)).fetchone()
        return found

    @staticmethod
    def _restated(conn: sqlite3.Connection, cid: int, c: NewCandidate) -> bool:
        """Whether ``c`` restates candidate ``cid`` (words in common checked by the caller): the person's own words
        again in another session of the same project, or a summary bullet of a session it was said in. Whatever
        ``cid``'s status: a restatement of a decided candidate is dropped as the candidate's own words are (a copied
        log replaying a summary bullet merged into a candidate since accepted queued it anew)."""
        row = conn.execute("SELECT evidence FROM candidates WHERE id = ?", (cid,)).fetchone()
        if row is None:
            return False
        theirs = json.loads(row[0])
        mine = [x.to_json() for x in c.evidence]
        if any(e["who"] == "summary" and session_of(e) in {session_of(t) for t in theirs} for e in mine):
            return True
        human = [e for e in theirs if e.get("who") == "human"]
        projects = {e.get("project") for e in human} - {None}
        sessions = {session_of(e) for e in human}
        return any(e["who"] == "human" and e["project"] in projects and session_of(e) not in sessions for e in mine)

    def _merge(self, conn: sqlite3.Connection, row: sqlite3.Row, c: NewCandidate) -> tuple[bool, float]:
        """Merge ``c`` into the pending (or expired) ``row``: new places, seen, score, visibility.

        A rule draft's visibility is :func:`.queue_offers.offer`'s (only a pinned or a marked sighting shows it
        here); another candidate is shown by a sighting shown, or seen in a second session.

        Returns:
            (``c`` brought a session the row had not been seen in, the row's score after the merge).
        """
        evidence: list[dict[str, Any]] = json.loads(row["evidence"])
        places = {place(e) for e in evidence} | {replay(e) for e in evidence if e.get("at")}
        sessions = {session_of(e) for e in evidence}
        score = max(float(row["score"]), c.score)
        added = 0
        known = set(sessions)
        for e in (x.to_json() for x in c.evidence):
            if place(e) in places or (e.get("at") and replay(e) in places):
                continue  # a place already held, or a replay of one (a resumed session, a copied log)
            places.update((place(e), replay(e)) if e.get("at") else (place(e),))
            score += OTHER_SESSION_BONUS if session_of(e) not in sessions else SAME_SESSION_BONUS
            sessions.add(session_of(e))
            evidence.append(e)
            added += 1
        again = bool(sessions - known)
        pinned = bool(row["pinned"]) or c.pinned
        from mmd.candidates.proposals import is_proposal

        takeover = is_proposal(c.rule) and not is_proposal(row["rule"])  # the agent proposes what a rule drafted
        if row["draft"] and not takeover:
            visible = bool(row["visible"]) or pinned or (c.visible and not is_draft(c))
        else:
            visible = bool(row["visible"]) or c.visible or pinned or (added > 0 and len(sessions) > 1)
        if takeover:
            evidence = [e for e in evidence if e.get("reason") is not None] + \
                [e for e in evidence if e.get("reason") is None]  # its reason first: the proposal's
            conn.execute("UPDATE candidates SET kind = ?, rule = ?, topic = ?, proposal_action = ?, draft = 0"
                         " WHERE id = ?", (c.kind, c.rule, c.topic, c.proposal_action, row["id"]))
        speaker = "person" if c.speaker == "person" else row["speaker"]  # the person said what the agent proposed
        had = json.loads(row["flags"])
        flags = had + [f for f in c.flags if f not in had]
        if not takeover and not added and score <= row["score"] and visible == bool(row["visible"]) and \
                pinned == bool(row["pinned"]) and speaker == row["speaker"] and len(flags) == len(had):
            return again, float(row["score"])
        conn.execute("UPDATE candidates SET evidence = ?, seen = seen + ?, score = ?, visible = ?, pinned = ?,"
                     " agents = ?, projects = ?, speaker = ?, flags = ?, flagged = ?, redacted = ? WHERE id = ?",
                     (json.dumps(evidence, ensure_ascii=False), added, round(score, 4), int(visible or pinned),
                      int(pinned), framed(e.get("agent") for e in evidence),
                      framed(e.get("project") for e in evidence), speaker, json.dumps(flags, ensure_ascii=False),
                      int(bool(flags)), int(bool(row["redacted"]) or c.redacted), row["id"]))
        self.merged += added
        return again, round(score, 4)

    def _insert(self, conn: sqlite3.Connection, c: NewCandidate, now: str) -> int | None:
        evidence = [e.to_json() for e in c.evidence]
        norm = c.norm if c.kind != HELD else f"h:{c.file}#{c.message_id}"  # a held topic's change: its own, always
        cur = conn.execute(
            "INSERT OR IGNORE INTO candidates (key, kind, topic, summary, body, chars, over_budget, session_id, file,"
            " seq, message_id, source_kind, created_at, rule, score, seen, visible, pinned, norm, proposal_action,"
            " evidence, agents, projects, scope, draft, queued_at, speaker, flags, flagged, redacted, diff)"
            f" VALUES ({', '.join('?' * 31)})",
            (f"n:{norm}", c.kind, c.topic, c.summary, c.body, c.chars, int(c.over_budget), c.session_id, c.file,
             c.seq, c.message_id, c.source_kind, now, c.rule, round(c.score, 4), max(1, len(evidence)),
             int(c.pinned or c.visible and not is_draft(c)), int(c.pinned), norm, c.proposal_action,
             json.dumps(evidence, ensure_ascii=False), framed(e["agent"] for e in evidence),
             framed(e["project"] for e in evidence), self.scope_of(c) if self.scope_of is not None else "user",
             int(is_draft(c)), now, c.speaker, json.dumps(list(c.flags), ensure_ascii=False), int(bool(c.flags)),
             int(c.redacted), c.diff))
        return cur.lastrowid if cur.rowcount == 1 else None

    def add(self, items: Iterable[NewCandidate], cursor: CursorRow | None = None,
            allowance: Allowance | None = None) -> list[int]:
        """Add the new statements, merge the ones seen before, put each session's best rule drafts on show
        (:func:`.queue_offers.offer`), and store ``cursor``, in one transaction.

        Each goes through the door first (:func:`~mmd.candidates.screening.screen_candidate`: redacted, escaped, its
        speaker and flags set), so the identity compared and stored is the screened statement's. A statement equal
        to (or a near-duplicate of) a pending candidate merges into it; one
        equal to an accepted or rejected candidate is dropped; one equal to an expired candidate merges into
        it and brings it back (pending, hidden until a place is found for it) when it is pinned or, outside a
        first backfill, seen in a session the candidate was not seen in; an agent's proposal of an accepted one's
        very statement brings it back on show (:func:`.queue_offers.brought_back`).

        Args:
            allowance: a first backfill's share of places (what it holds back is expired from the start).

        Returns:
            The ids of the candidates added (not those merged), in order.

        Raises:
            sqlite3.Error: if the database cannot be written (nothing of the call is kept).
        """
        from mmd.candidates.screening import screen_candidate

        screened = [screen_candidate(c) for c in items]  # before the transaction: the screen is CPU work
        conn = self.db.conn()
        now = self._now_iso()
        ids: list[int] = []
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                drafts: dict[str, list[Sighting]] = {}
                for c in screened:
                    seen = self._one(conn, c, now, allowance, ids)
                    if seen is not None:
                        drafts.setdefault(_session_key(c), []).append(seen)
                for session, seen_there in drafts.items():
                    offers.offer(conn, session, seen_there, now, allowance)
                if cursor is not None:
                    self.db.put_cursor(cursor, now)
        except BaseException:
            with self._near_lock:
                self._near = None  # rolled back: rebuilt from the table on the next add
            raise
        if ids or drafts:
            self.refresh_counts()
        return ids

    def _one(self, conn: sqlite3.Connection, c: NewCandidate, now: str, allowance: Allowance | None,
             ids: builtins.list[int]) -> Sighting | None:
        """Add or merge one statement (see :meth:`add`); its :class:`.Sighting` when it is a rule draft held by a
        rule draft's row, whatever its status (its place is :func:`.queue_offers.offer`'s, and one the pipeline shows
        counts in its session's budget even when decided), else None."""
        from mmd.candidates.identity import shingles

        row = self._match(conn, c, shingles(c.body)) if c.kind != HELD else None
        if row is None:
            cid = self._insert(conn, c, now)
            if cid is None:
                return None
            ids.append(cid)
            with self._near_lock:  # later candidates of this call match it too (a held topic never merges)
                if c.kind != HELD:
                    self._near_index(conn).add(cid, c.body, c.summary)
            return Sighting(cid, c.visible, False, True, c.score) if is_draft(c) else None
        if offers.brought_back(conn, row, c, now, elsewhere=allowance is None and self._elsewhere(row, c)):
            row = conn.execute("SELECT * FROM candidates WHERE id = ?", (row["id"],)).fetchone()
        again, score = self._merge(conn, row, c) if row["status"] in ("pending", "expired") else (False, row["score"])
        if not (is_draft(c) and row["draft"]):
            return None
        return Sighting(int(row["id"]), c.visible, again, False, float(score))  # a decided one counts in the budget

    @staticmethod
    def _elsewhere(row: sqlite3.Row, c: NewCandidate) -> bool:
        """Whether ``c`` was said in a session ``row`` was never seen in."""
        theirs = {session_of(e) for e in json.loads(row["evidence"])}
        return any(session_of(e.to_json()) not in theirs for e in c.evidence)

    def expire(self) -> builtins.list[int]:
        """Move the rule drafts pending longer than :attr:`expire_days` to ``expired`` (reason ``age``), each
        journaled (``queue.expire``); returns their ids. See :func:`.queue_offers.expire`."""
        conn = self.db.conn()
        now = self._now_iso()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            ids = offers.expire(conn, now, self.expire_days())
            detail = json.dumps({"status": "expired", "reason": offers.AGE})
            conn.executemany("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, 'queue.expire', ?, ?)",
                             [(now, cid, detail) for cid in ids])
        if ids:
            self.refresh_counts()
        return ids

    def holding(self, c: NewCandidate) -> CandidateJson | None:
        """The candidate that holds ``c``'s statement after :meth:`add` (the same text or a near-duplicate, any
        status), or None when the queue has none: what an agent's proposal became (queued, merged, or decided
        before). ``c`` is looked up as the door made it (a redacted secret changes its text and key)."""
        from mmd.candidates.identity import shingles
        from mmd.candidates.screening import screen_candidate

        c = screen_candidate(c)
        conn = self.db.conn()
        row = self._match(conn, c, shingles(c.body))
        return row_json(row) if row is not None else None

    def screen_older(self) -> int:
        """Screen the rows an older schema stored unscreened (:func:`.queue_screen.screen_older`); how many.

        Raises:
            sqlite3.Error: if the database cannot be written (the rows done stay done).
        """
        done = screen_older(self.db.conn())
        if done:
            with self._near_lock:
                self._near = None  # rebuilt from the screened statements
        return done

    def known(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` (:func:`~mmd.candidates.identity.norm_key` of statements) the queue's history holds."""
        wanted = list(keys)
        found: set[str] = set()
        conn = self.db.conn()
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            marks = ",".join("?" * len(part))
            found.update(r[0] for r in conn.execute(f"SELECT norm FROM candidates WHERE norm IN ({marks})", part))
        return found

    def list(self, status: str = "pending", *, limit: int = 100, offset: int = 0, hidden: bool = True,
             min_score: float | None = None, project: str | None = None,
             agent: str | None = None, session: str | None = None, scope: str | None = None,
             first: str | None = None) -> tuple[list[CandidateJson], int]:
        """Candidates with ``status`` (or ``"all"``): ``(page, total matching)``.

        Pending candidates come highest score first (ties: oldest first), flagged ones after every other one; other
        statuses oldest first.

        Args:
            hidden: include pending candidates hidden by their session's budget (decided ones are always listed).
            min_score: only candidates shown scoring at least this, to two decimals (hidden ones included;
                :func:`mmd.wire.scores.shown_at_least`).
            project, agent: only candidates with evidence from this project (its working directory:
                a full path, or a name without ``/`` matching its last folder, or a name cut with ``…`` as
                ``queue list`` shows a long one, matching a folder starting so; folders below it count)
                or agent.
            session: only candidates first seen in this agent session (its id).
            scope: only candidates proposed to this root (``user`` or a project key).
            first: pending candidates proposed to this root (a project key) come before the others.
        """
        conn = self.db.conn()
        clauses, args = filters(project=project, agent=agent, session=session, scope=scope)
        if status != "all":
            clauses.append("status = ?")
            args.append(status)
        if min_score is not None:
            clauses.append("score >= ?")
            args.append(shown_at_least(min_score))
        elif not hidden:  # the budget hides pending candidates only: a decided one is listed whatever it was
            clauses.append("(visible = 1 OR status != 'pending')")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        order = "flagged, score DESC, id" if status == "pending" else "id"
        total = conn.execute(f"SELECT COUNT(*) FROM candidates{where}", args).fetchone()[0]
        ordering: tuple[Any, ...] = ()
        if first is not None and status == "pending":
            order, ordering = "flagged, scope = ? DESC, score DESC, id", (first,)  # flagged last, whatever the root
        rows = conn.execute(f"SELECT * FROM candidates{where} ORDER BY {order} LIMIT ? OFFSET ?",
                            (*args, *ordering, limit, offset)).fetchall()
        return [row_json(r) for r in rows], int(total)

    def left_out(self, *, project: str | None = None, agent: str | None = None, session: str | None = None,
                 scope: str | None = None) -> dict[str, int]:
        """What the default view leaves out among the candidates these filters select (as :meth:`list` reads
        them): ``{hidden, expired, heldBack}`` (:func:`.queue_offers.left_out`)."""
        clauses, args = filters(project=project, agent=agent, session=session, scope=scope)
        return offers.left_out(self.db.conn(), " AND ".join(clauses), args)

    def below(self, score: float) -> builtins.list[int]:
        """Ids of the pending candidates shown scoring below ``score`` (two decimals: one listed as ``0.60`` is not
        below 0.6, :func:`mmd.wire.scores.shown_at_least`), oldest first."""
        rows = self.db.conn().execute("SELECT id FROM candidates WHERE status = 'pending' AND score < ? ORDER BY id",
                                      (shown_at_least(score),)).fetchall()
        return [int(r[0]) for r in rows]

    def get(self, candidate_id: int) -> CandidateJson | None:
        """One candidate, or None."""
        row = self.db.conn().execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
        return row_json(row) if row is not None else None

    def decide(self, candidate_id: int, status: str, *, reason: str | None = None,
               written: dict[str, Any] | None = None) -> CandidateJson | None:
        """Move a pending (or expired) candidate to ``accepted`` or ``rejected`` and journal it.

        Args:
            candidate_id: the candidate.
            status: ``accepted`` | ``rejected``.
            reason: why (rejections), kept on the row.
            written: ``{"topic", "revision"}`` of the note an acceptance wrote.

        A rule draft decided keeps its place in its session's budget (:mod:`.queue_offers`): no hidden draft
        takes it, so reviewing a session's drafts empties the view of it.

        Returns:
            The candidate after the change, or None when it is neither pending nor expired (any more).
        """
        conn = self.db.conn()
        now = self._now_iso()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute(
                "UPDATE candidates SET status = ?, decided_at = ?, reason = ?, written_topic = ?,"
                " written_revision = ? WHERE id = ? AND status IN ('pending', 'expired')",
                (status, now, reason, (written or {}).get("topic"), (written or {}).get("revision"), candidate_id))
            if cur.rowcount != 1:
                return None
            detail = {"status": status, "reason": reason, "written": written}
            conn.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, ?, ?, ?)",
                         (now, f"queue.{status[:-2] if status.endswith('ed') else status}", candidate_id,
                          json.dumps(detail, ensure_ascii=False)))
        self.refresh_counts()
        return self.get(candidate_id)

    def rename_topic(self, old: str, new: str, scope: str = "user") -> int:
        """Pending candidates proposed to the root ``scope`` that propose the topic ``old`` (to create it or append
        to it) propose ``new`` instead: the note was renamed there (``memory.rename``). Journaled as
        ``queue.rename``; returns how many followed."""
        conn = self.db.conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            moved = conn.execute("UPDATE candidates SET topic = ? WHERE status = 'pending' AND topic = ? AND scope = ?",
                                 (new, old, scope)).rowcount
            if moved:
                conn.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, 'queue.rename', NULL,"
                             " ?)", (self._now_iso(), json.dumps({"from": old, "to": new, "candidates": moved,
                                                                  "scope": scope})))
        return int(moved)

    def last_acceptance(self, candidate_id: int) -> dict[str, Any]:
        """The ``written`` detail the candidate's last ``queue.accept`` journal row kept (``{}`` when none)."""
        row = self.db.conn().execute(
            "SELECT detail FROM journal WHERE candidate_id = ? AND action = 'queue.accept' ORDER BY id DESC LIMIT 1",
            (candidate_id,)).fetchone()
        written = json.loads(row[0]).get("written") if row is not None else None
        return written if isinstance(written, dict) else {}

    def reopen(self, candidate_id: int, was: str) -> CandidateJson | None:
        """Move a decided or expired candidate (status ``was``) back to ``pending`` and journal it (``queue.undo``).

        Its clock starts again (``queued_at``: now); an expired one comes back on show (the person asked for it;
        a place it had in its session's budget stays counted).

        Returns:
            The candidate after the change, or None when its status is not ``was`` (any more).
        """
        conn = self.db.conn()
        now = self._now_iso()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute(
                "UPDATE candidates SET status = 'pending', decided_at = NULL, reason = NULL, written_topic = NULL,"
                " written_revision = NULL, queued_at = ?, visible = CASE WHEN status = 'expired' THEN 1 ELSE visible"
                " END WHERE id = ? AND status = ?", (now, candidate_id, was))
            if cur.rowcount != 1:
                return None
            conn.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, 'queue.undo', ?, ?)",
                         (now, candidate_id, json.dumps({"was": was})))
        self.refresh_counts()
        return self.get(candidate_id)

