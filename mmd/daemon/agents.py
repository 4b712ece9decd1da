"""The agent proposes, the person decides: ``memory.propose`` and the one distillation line a session (issue 28).

- :meth:`Agents.propose`: an agent's proposal (``mmctl propose``, the MCP ``mem_propose``, an MCP write or delete
  under ``[agents] writes = "propose"``) becomes a candidate of the review queue marked as the agent's
  (:func:`mmd.candidates.proposals.make_proposal`), in the root it targets: the scope's own root, or the user root
  when only the user root holds the note it names. It is deduplicated as any candidate (a note holding it: nothing
  queued; the same statement pending: merged; decided before: nothing queued) and the answer says which.
- :meth:`Agents.prompted` / :meth:`Agents.confirmed`: a hook's prompt (``memory.inject {prompt: true}``) is
  counted per client; once a session has run
  :data:`~mmd.inject.guide.DISTILL_AFTER_PROMPTS` prompts without a proposal, the next one carries the
  distillation line (``distill`` in the answer, never in the injection's text: the client's view does not move
  because of it), once: it counts as given when that injection is confirmed.
- :meth:`Agents.of_session`: the proposals of a session, for the ``session-end`` nudge.

State: table ``agent_prompts`` of ``state.db`` (created here on first use): per client key its prompts, the time of
its first, the scope it ran in, the token of the injection that carried the line and when that was confirmed.

Owns: the target root of a proposal, its evidence, the answer's shape, the prompt counts and the once-a-session
rule. Never: decides candidates (:mod:`.review`), touches sockets (events go through ``publish``), or blocks the
loop (the database work runs in worker threads).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import threading
from collections.abc import Callable
from typing import Any

from mmd.core.errors import ErrorCode
from mmd.core.text import validate_topic
from mmd.inject.guide import DISTILL_AFTER_PROMPTS, distill_line
from mmd.sources import SOURCES
from mmd.sources.other import OtherSource
from mmd.wire.events import QUEUE_ADDED
from mmd.wire.protocol import DaemonCode, DaemonError

from .home import USER, Home, Root
from .queue import ReviewQueue
from .statedb import StateDB

__all__ = ["AGENTS", "Agents"]

AGENTS = tuple(sorted(SOURCES))
"""Who a proposal may say proposed it: the agents whose sessions mmd reads (``other``: any other)."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_prompts (
    client TEXT PRIMARY KEY,
    prompts INTEGER NOT NULL,
    since TEXT NOT NULL,
    scope TEXT NOT NULL,
    nudge_token TEXT,
    nudged_at TEXT,
    updated_at TEXT NOT NULL
)"""


class Agents:
    """The agents' use-cases of one daemon.

    Args:
        home: the roots served.
        queue: the review queue, or None when ingestion is off (a proposal is then ``E_UNAVAILABLE``).
        db: the state database (``agent_prompts``; the queue's ``candidates``).
        publish: sends an event (loop thread).
        distill: returns ``nudge.distill`` (``once`` | ``off``; a SIGHUP may change it).
        lang: returns the guide's language (``lang``: ``auto`` | ``en`` | ``zh``) for the distillation line.
    """

    def __init__(self, home: Home, queue: ReviewQueue | None, db: StateDB,
                 publish: Callable[[str, dict[str, Any]], Any], distill: Callable[[], str],
                 lang: Callable[[], str] = lambda: "en") -> None:
        self.home, self.queue, self.db = home, queue, db
        self.state = home.user.state
        self._publish = publish
        self._distill = distill
        self._lang = lang
        self._lock = threading.Lock()
        self._made = False

    # --- proposals --------------------------------------------------------------------------------

    async def propose(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.propose {content?, topic?, action?, summary?, reason?, agent?, session?, sessionId?, project?}``
        → ``{ok: true, status, id, candidate?, topic, scope}``.

        ``status``: ``queued`` (a new candidate ``id``, or one accepted before whose effect the notes no longer hold,
        pending again), ``merged`` (the same statement was pending as ``id``: this proposal joined its evidence),
        ``accepted`` | ``rejected`` (decided before as ``id``, and it holds: nothing queued),
        ``held`` (a note already holds it: nothing queued, ``id`` null). ``action`` defaults to ``append`` for a
        topic that has a note, else ``create``; ``replace`` gives the note's whole new text (its summary kept unless
        ``summary`` is given); ``delete`` needs no content.

        Raises:
            DaemonError(E_UNAVAILABLE): without the review queue (``--no-ingest``): nothing was queued.
            DaemonError(E_EXISTS): ``create`` of a topic that has a note. DaemonError(E_NOT_FOUND): ``append``,
                ``replace`` or ``delete`` of a topic without one.
            MMError(E_INVALID): a bad topic, action, agent name or text (:func:`~mmd.candidates.proposals.
                make_proposal`), or a text over the write budget.
        """
        from mmd.candidates import Evidence, Seen  # mmd.candidates is loaded by the first proposal, not at start
        from mmd.candidates.proposals import PROPOSAL_RULE, make_proposal, proposal_reason

        from .ingest.candidacy import seen_of_snapshot

        queue = self.queue
        if queue is None:
            raise DaemonError(DaemonCode.E_UNAVAILABLE, "proposals wait in the review queue, which is off in this "
                              "daemon (started with --no-ingest): nothing was queued")
        scoped = self.home.resolve(p)
        topic = validate_topic(p["topic"]) if "topic" in p else None
        target, scope = scoped.root, scoped.scope
        note = target.state.current.note(topic) if target is not None and topic is not None else None
        if topic is not None and note is None and scope != USER:  # a note only the user root holds
            mine = scoped.user.state.current.note(topic)
            if mine is not None:
                target, scope, note = scoped.user, USER, mine
        action = p.get("action") or ("append" if note is not None else "create")
        _check_action(action, topic, note.uri if note is not None else None, p)
        agent = p.get("agent") or OtherSource.name
        if agent not in AGENTS:
            raise DaemonError(ErrorCode.E_INVALID, f"agent must be one of {', '.join(AGENTS)}, got {agent!r}")
        session = p.get("session") or p.get("sessionId")
        now, place = self.state.now_iso(), f"{agent}:{session or 'proposal'}"
        content = p.get("content") or ""
        summary = p.get("summary")  # a replace without one keeps the note's (review.summary_to_write)
        evidence = Evidence(agent, session, _folder(p, target), place, {"file": place, "uuid": secrets.token_hex(8)},
                            now, "assistant", content[:500], proposal_reason(p.get("reason")))
        budget = max(target.state.options.default_write_budget if target is not None else
                     self.state.options.default_write_budget, note.entry.write_budget if note is not None else 0)
        seen = seen_of_snapshot(target.state.current) if target is not None else Seen()
        made = make_proposal(seen, action=action, body=content, evidence=[evidence], topic=topic, summary=summary,
                             note_body=note.body if note is not None else None, max_chars=budget, scope=scope)
        if made is None:
            held = topic if note is not None else _holder(target, content)
            return {"ok": True, "status": "held", "id": None, "topic": held, "scope": scope}
        before = await asyncio.to_thread(queue.holding, made)
        ids = await asyncio.to_thread(queue.add, [made])
        holder = await asyncio.to_thread(queue.holding, made)
        if holder is not None and before is not None and before["status"] != "pending" == holder["status"]:
            ids = [holder["id"]]  # brought back (an accepted proposal whose effect is gone): queued again
        if ids:
            self._publish(QUEUE_ADDED, {"ids": ids, "sessionId": session, "source": place, "agent": agent})
        status = "queued" if ids else "merged" if holder is None or holder["status"] == "pending" else holder["status"]
        if holder is not None and holder["rule"] == PROPOSAL_RULE:  # as queue.get shows it: the note beside it
            holder["proposal"] = {**holder["proposal"], "current": note.body if note is not None else None}
        return {"ok": True, "status": status, "id": holder["id"] if holder else None, "candidate": holder,
                "topic": made.topic, "scope": scope}

    def of_session(self, session_id: str | None) -> list[dict[str, Any]]:
        """``[{id, status, topic, summary}]`` of the proposals first made in ``session_id``, oldest first (worker
        thread or loop: one indexed query); none without a queue or a session. A flagged one's summary names its
        flags' kinds, never its words (a nudge goes to every subscriber; issue 29)."""
        if self.queue is None or not session_id:
            return []
        from mmd.candidates.proposals import PROPOSAL_RULE

        rows = self.db.conn().execute(
            "SELECT id, status, topic, summary, flags FROM candidates WHERE rule = ? AND session_id = ? ORDER BY id",
            (PROPOSAL_RULE, session_id)).fetchall()
        return [{"id": r["id"], "status": r["status"], "topic": r["topic"], "summary": _summary(r)} for r in rows]

    # --- the distillation line ------------------------------------------------------------------------

    def _conn(self) -> Any:
        conn = self.db.conn()
        if not self._made:
            with self._lock, conn:
                conn.execute(_SCHEMA)
            self._made = True
        return conn

    async def prompted(self, client: str, scope: str, token: str | None, *, commit: bool) -> str | None:
        """Count one prompt of ``client`` (a hook's ``<agent>:<session id>``) in ``scope``; the distillation line when
        this prompt is the first after :data:`~mmd.inject.guide.DISTILL_AFTER_PROMPTS` without a proposal of its
        session (in its session, or in its scope since its first prompt) and none was given yet, else None. It counts
        as given once ``token`` is confirmed (:meth:`confirmed`), at once with ``commit`` or without a token."""
        if self._distill() == "off":
            return None
        return await asyncio.to_thread(self._prompted, client, scope, token, commit, self.state.now_iso())

    def _prompted(self, client: str, scope: str, token: str | None, commit: bool, now: str) -> str | None:
        from mmd.candidates.proposals import PROPOSAL_RULE

        conn = self._conn()
        with self._lock, conn:
            conn.execute("INSERT INTO agent_prompts (client, prompts, since, scope, updated_at) VALUES (?, 1, ?, ?, ?)"
                         " ON CONFLICT (client) DO UPDATE SET prompts = prompts + 1, scope = excluded.scope,"
                         " updated_at = excluded.updated_at", (client, now, scope, now))
            row = conn.execute("SELECT prompts, since, nudged_at FROM agent_prompts WHERE client = ?",
                               (client,)).fetchone()
            if row["nudged_at"] is not None or row["prompts"] <= DISTILL_AFTER_PROMPTS:
                return None
            if self.queue is not None and conn.execute(
                    "SELECT 1 FROM candidates WHERE rule = ? AND (session_id = ? OR (scope = ? AND created_at >= ?))"
                    " LIMIT 1", (PROPOSAL_RULE, client.partition(":")[2] or client, scope, row["since"])).fetchone():
                return None
            given = commit or token is None
            conn.execute("UPDATE agent_prompts SET nudge_token = ?, nudged_at = ? WHERE client = ?",
                         (token, now if given else None, client))
        return distill_line(self._lang())

    async def confirmed(self, client: str, token: str) -> None:
        """The injection ``token`` of ``client`` reached the agent: a distillation line it carried counts as given."""
        def run() -> None:
            conn = self._conn()
            with self._lock, conn:
                conn.execute("UPDATE agent_prompts SET nudged_at = ? WHERE client = ? AND nudge_token = ? AND"
                             " nudged_at IS NULL", (self.state.now_iso(), client, token))

        await asyncio.to_thread(run)

    def expire(self, cutoff_iso: str) -> int:
        """Forget the clients whose last prompt came before ``cutoff_iso``; how many went.

        Raises:
            sqlite3.Error: if the rows cannot be deleted.
        """
        conn = self._conn()
        with self._lock, conn:
            return int(conn.execute("DELETE FROM agent_prompts WHERE updated_at < ?", (cutoff_iso,)).rowcount)


def _summary(row: Any) -> str:
    """A proposal's summary as a nudge names it: its own, or for a flagged one ``(flagged: fetched script)``."""
    flags = json.loads(row["flags"] or "[]")
    return f"(flagged: {', '.join(dict.fromkeys(str(f.get('kind')) for f in flags))})" if flags else str(row["summary"])


def _check_action(action: str, topic: str | None, uri: str | None, p: dict[str, Any]) -> None:
    """Refuse an action its topic's note does not allow (nothing is queued).

    Args:
        uri: the URI of the topic's note, None when it has none.

    Raises:
        DaemonError(E_INVALID | E_EXISTS | E_NOT_FOUND).
    """
    from mmd.candidates.proposals import ACTIONS

    exists = uri is not None
    if action not in ACTIONS:
        raise DaemonError(ErrorCode.E_INVALID, f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    if action == "create" and exists:
        raise DaemonError(DaemonCode.E_EXISTS, f"{uri} already has a note: propose action append (add to it) or "
                          "replace (its whole new text)", topic=topic, uri=uri)
    if action != "create" and topic is None:
        raise DaemonError(ErrorCode.E_INVALID, f"a proposal to {action} names the note's topic")
    if action != "create" and not exists:
        raise DaemonError(DaemonCode.E_NOT_FOUND, f"there is no note {topic} to {action}", topic=topic)
    if action != "delete" and not (isinstance(p.get("content"), str) and p["content"].strip()):
        raise DaemonError(ErrorCode.E_INVALID, f"a proposal to {action} needs its content")


def _folder(p: dict[str, Any], target: Root | None) -> str | None:
    """The folder the agent worked in: the ``project`` param when it is a path, else one its root recorded."""
    raw = p.get("project")
    if isinstance(raw, str) and os.path.isabs(raw):
        return raw
    paths = target.project.get("paths") if target is not None else None
    return str(paths[0]) if isinstance(paths, list) and paths else None


def _holder(target: Root | None, content: str) -> str | None:
    """The topic of the note that already holds ``content`` in ``target`` (None when none is found)."""
    from mmd.candidates.identity import normalized

    needle = normalized(content)
    for note in target.state.current.notes if target is not None else ():
        if needle and needle in normalized(f"{note.entry.summary}\n{note.body}"):
            return note.topic
    return None
