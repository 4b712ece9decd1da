"""The daemon's scheduled jobs and the events it publishes: payload builders over the running parts.

Owns: what each event says (``memory/changed`` after a new revision, with a
journal row; ``memory/nudge`` on the schedule and when an agent session ends,
with the topics due for review; ``queue/added`` after an ingestion batch;
``daemon/heartbeat``; ``memory/due`` is the injector's), session and injection-client expiry,
the scheduler's periods, and the ``daemon.status`` payload. Topics are the
wire's constants (:mod:`mmd.wire.events`). Everything here runs on the event
loop's thread; :func:`from_worker` brings a call from the ingestion thread
there. Never opens a socket or a file: the parts are handed in.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mmd.core.health import loose_modes
from mmd.core.memory import nudge_report
from mmd.wire.events import DAEMON_HEARTBEAT, MEMORY_CHANGED, MEMORY_NUDGE, QUEUE_ADDED
from mmd.wire.protocol import CandidateJson

from .config import Config
from .events import Publisher
from .holds import Holds
from .home import USER, Home, Root
from .ingest import AddedBatch, EndedSession
from .inject import Injector
from .review import Review
from .revision import Revision
from .statedb import StateDB

if TYPE_CHECKING:
    from .agents import Agents
    from .gitsync import GitSync
    from .lifecycle import Running

__all__ = ["Jobs", "from_worker", "periods_ms", "status_payload"]

log = logging.getLogger("mmd.daemon")

DUE_CHECK_MS = 60_000
"""How often review dates are checked without a new revision (a date comes at midnight UTC), ms."""
INJECT_EXPIRE_MS = 3_600_000
"""How often injection clients past ``daemon.injectTtlDays`` are forgotten (and rule drafts past
``candidates.expireDays`` expired), ms."""


def periods_ms(cfg: Config) -> dict[str, int | None]:
    """The scheduler's period per job, milliseconds (None: the job is off)."""
    return {
        "nudge": cfg.memory.nudge_interval_ms if cfg.memory.nudge_enabled else None,
        "heartbeat": cfg.heartbeat_ms,
        "expire": max(250, min(cfg.session_ttl_ms // 4, 60_000)),
        "due": DUE_CHECK_MS,
        "injectExpire": INJECT_EXPIRE_MS,
        "watchdog": cfg.watchdog_usec // 2000 if cfg.watchdog_usec and cfg.notify_socket else None,
    }


def from_worker(loop: asyncio.AbstractEventLoop, handler: Callable[..., None]) -> Callable[..., None]:
    """``handler`` made callable from the ingestion thread: it runs on ``loop`` (events belong there)."""

    def call(*args: Any) -> None:
        if not loop.is_closed():
            try:
                loop.call_soon_threadsafe(handler, *args)
            except RuntimeError:  # the loop closed meanwhile: the daemon is gone, so is the event
                pass

    return call


class Jobs:
    """The jobs and event payloads of one daemon.

    Args:
        config: returns the current config (a SIGHUP may replace it).
        home: the roots served (the user root's state is :attr:`state`).
        db: the state database (the journal).
        review: the review queue's use-cases (``queuePending``).
        publisher: the event publisher.
        injector: the injection use-cases (prepared revisions, due topics, exports).
    """

    def __init__(self, config: Callable[[], Config], home: Home, db: StateDB, review: Review,
                 publisher: Publisher, injector: Injector) -> None:
        self._config = config
        self.home = home
        self.state = home.user.state
        self.db = db
        self.review = review
        self.publisher = publisher
        self.injector = injector
        self.git: GitSync | None = None
        """With ``--git``: told of each revision of every root (its commit)."""
        self.agents: Agents | None = None
        """The agents' use-cases (set once built): a session-end nudge names the session's proposals."""
        self.holds = review.holds = Holds(home, review.queue, publisher.publish)
        """The held topics (issue 29): each sync's and outside edit's revision is screened before it is injected."""

    def on_change(self, revision: Revision, cause: str) -> None:
        """A new revision of the user root (``cause``: ``write`` | ``delete`` | ``merge`` | ``rename`` |
        ``external`` | ``config``): journal it, publish it."""
        self._changed(revision, cause, USER, self.injector)
        if self.git is not None:
            self.git.revised(revision, cause)

    def changed_in(self, root: Root) -> Callable[[Revision, str], None]:
        """The ``on_change`` of a project root's state: as :meth:`on_change`, the event and journal row saying
        the root's scope (with ``--git`` its commit, unless the root lives outside the home)."""
        def changed(revision: Revision, cause: str) -> None:
            self._changed(revision, cause, root.scope, root.injector)
            if self.git is not None:
                self.git.revised(revision, cause, root.scope)

        return changed

    def _changed(self, revision: Revision, cause: str, scope: str, injector: Injector | None) -> None:
        root = self.home.get(scope)
        if root is not None:  # before the injector hears of it: a flagged text is held before any injection
            self.holds.changed(root, revision, cause)
        log.info("memory.changed scope=%s revision=%d cause=%s added=%d updated=%d removed=%d", scope,
                 revision.snapshot.revision, cause, len(revision.added), len(revision.updated), len(revision.removed))
        change = {"revision": revision.snapshot.revision, "cause": cause, "added": revision.added,
                  "updated": revision.updated, "removed": revision.removed, "scope": scope}
        try:
            self.db.journal(revision.snapshot.loaded_at, f"memory.{cause}", change)
        except sqlite3.Error as error:  # the journal is a record; the change itself already landed
            log.error("journal.failed revision=%d error=%s", revision.snapshot.revision, error)
        self.publisher.publish(MEMORY_CHANGED, change)
        if injector is not None:
            injector.revision_installed(revision.snapshot, cause,
                                        tuple(i["topic"] for i in (*revision.added, *revision.updated)))
        if scope != USER:  # the export files in its project's folders carry its notes too
            self.injector.revision_installed(self.state.current)

    def screen_queue(self) -> None:
        """Screen the queue's rows an older schema stored unscreened (issue 29), in a worker thread; logged."""
        queue = self.review.queue
        if queue is None:
            return

        def run() -> None:
            try:
                done = queue.screen_older()
            except sqlite3.Error as error:  # the rows left are shown screened all the same, and screened next start
                log.error("queue.screen_failed error=%s", error)
                return
            if done:
                log.info("queue.screened rows=%d (stored before the screen: redacted, escaped, flagged)", done)

        asyncio.get_running_loop().run_in_executor(None, run)

    def allowed(self, outcome: dict[str, Any]) -> None:
        """A person let a secret or hidden text into ``outcome``'s topic (``--allow-secret``, ``--allow-hidden``):
        journal it (``memory.allowed``: topic, revision, kinds and lines, never a value) and log it."""
        allowed = outcome.get("allowed") or {}
        kinds = sorted({s["kind"] for s in allowed.get("secrets", [])} | {h["code"] for h in allowed.get("hidden", [])})
        log.warning("memory.allowed topic=%s revision=%s kinds=%s", outcome.get("topic"), outcome.get("revision"),
                    ",".join(kinds))
        try:
            self.db.journal(self.state.now_iso(), "memory.allowed",
                            {"topic": outcome.get("topic"), "revision": outcome.get("revision"), **allowed})
        except sqlite3.Error as error:
            log.error("journal.failed revision=%s error=%s", outcome.get("revision"), error)

    def nudge(self) -> None:
        """The scheduled ``memory/nudge`` (reason ``schedule``), logged."""
        report = self._nudge_report()
        log.info("memory.nudge reason=schedule notes=%s", report.get("noteCount"))
        self.publisher.publish(MEMORY_NUDGE, {**report, "reason": "schedule", "queuePending": self.review.pending,
                                              "due": self.injector.due_now()})

    def _nudge_report(self) -> dict[str, Any]:
        """The reference's nudge report, its actions said for this daemon: with the review queue on,
        sessions are digested already, so the suggestion is to review the pending candidates (with
        the commands that do), not to run ``mem_digest``."""
        queue_on = self.review.queue is not None
        report = nudge_report(self.state.current, 0, self.state.now_iso(), digest_hint=not queue_on)
        shown = self.review.shown  # those the budget hides are no review left to do
        if queue_on and shown:
            report["suggestedActions"].append(
                f"{shown} candidate memor{'y waits' if shown == 1 else 'ies wait'} for review: "
                "mmctl review (or mmctl queue list, then queue accept|reject ID…)")
        return report

    def heartbeat(self) -> None:
        """``daemon/heartbeat``: the user root's revision and the pending candidates; also checks every root is
        still ours."""
        for root in self.home:
            if root.state.guard is not None:
                root.state.guard.check()
        self.publisher.publish(DAEMON_HEARTBEAT, {"intervalMs": self._config().heartbeat_ms,
                                                  "revision": self.state.revision,
                                                  "queuePending": self.review.pending})

    def expire(self) -> None:
        """Close RPC sessions idle for longer than ``daemon.sessionTtlMs`` (in every root)."""
        ttl_s = self._config().session_ttl_ms / 1000
        for root in self.home:
            for sid in root.state.expire_sessions(ttl_s):
                log.info("session.expired session=%s scope=%s", sid, root.scope)
        scopes = self.home.session_scopes
        for sid in [s for s in scopes if not any(s in r.state.sessions for r in self.home)]:
            del scopes[sid]

    def due(self) -> None:
        """Announce topics whose review date came since the last check (``memory/due``), in every root."""
        for root in self.home:
            if root.injector is not None:
                root.injector.check_due()

    def inject_expire(self) -> None:
        """Forget injection clients idle for ``daemon.injectTtlDays``, and expire the review queue's rule drafts
        pending longer than ``candidates.expireDays`` (so status counts them without a list first; worker thread;
        logged)."""

        def run() -> None:
            try:
                gone = self.injector.expire()
                drafts = self.review.queue.expire() if self.review.queue is not None else []
                if self.agents is not None:  # the prompt counts of the same clients go with them
                    self.agents.expire(self.injector.cutoff(self.state.now_iso()))
            except sqlite3.Error as error:
                log.error("inject.expire_failed error=%s", error)
                return
            if gone:
                log.info("inject.expired clients=%d", gone)
            if drafts:
                log.info("queue.expired drafts=%d (pending longer than candidates.expireDays)", len(drafts))

        asyncio.get_running_loop().run_in_executor(None, run)

    def queue_added(self, batch: AddedBatch) -> None:
        """``queue/added`` after an ingestion batch added candidates."""
        self.publisher.publish(QUEUE_ADDED, {"ids": batch.ids, "sessionId": batch.session_id, "source": batch.file,
                                             "agent": batch.agent})

    def session_ended(self, ended: EndedSession) -> None:
        """A followed agent session went quiet (and its source reports no writer): a ``session-end`` nudge
        naming the agent, its session id, the project (null when unknown) and the log; its first suggested
        action names the session's visible pending candidates (the best three, ids and summaries; a flagged one by its
        flags' kinds alone: an instruction is never repeated to every subscriber), if any, and ``proposals`` every
        proposal the agent made in it (``[{id, status, topic, summary}]``, a flagged one's summary its flags)."""
        report = self._nudge_report()
        queue = self.review.queue
        if queue is not None and ended.session_id:  # what this session left, named first: it is fresh in mind
            best, count = queue.list("pending", limit=3, hidden=False, session=ended.session_id)
            if count:
                named = "; ".join(_named(c) for c in best) + ("; …" if count > len(best) else "")
                first = best[0]["id"]
                report["suggestedActions"].insert(0, f"this session left {count} candidate memor"
                                                     f"{'y' if count == 1 else 'ies'} to review: {named} "
                                                     f"(mmctl queue show {first}, then queue accept|reject ID…)")
        self.publisher.publish(MEMORY_NUDGE, {**report, "reason": "session-end", "queuePending": self.review.pending,
                                              "sessionId": ended.session_id, "source": ended.file,
                                              "agent": ended.agent, "project": ended.project,
                                              "due": self.injector.due_now(),
                                              "proposals": self.agents.of_session(ended.session_id)
                                              if self.agents is not None else []})


    def distill(self, session: EndedSession) -> None:
        """A followed agent session ran :data:`~mmd.inject.guide.DISTILL_AFTER_PROMPTS` prompts without a proposal:
        one ``memory/nudge`` (reason ``distill``) carrying the line to give its agent (a DSH agent subscribes), naming
        the agent, its session, project and log; none with ``nudge.distill = "off"``."""
        if self._config().distill == "off":
            return
        from mmd.inject.guide import distill_line

        line = distill_line(self._config().lang)
        report = self._nudge_report()
        report["suggestedActions"].insert(0, line)
        log.info("memory.nudge reason=distill agent=%s session=%s", session.agent, session.session_id)
        self.publisher.publish(MEMORY_NUDGE, {**report, "reason": "distill", "queuePending": self.review.pending,
                                              "sessionId": session.session_id, "source": session.file,
                                              "agent": session.agent, "project": session.project,
                                              "due": self.injector.due_now(), "distill": line})


def _named(c: CandidateJson) -> str:
    """A candidate as a nudge names it: ``#3 <summary>``, or ``#3 (flagged: fetched script)``."""
    if c.get("flags"):
        return f"#{c['id']} (flagged: {', '.join(dict.fromkeys(f['kind'] for f in c['flags']))})"
    return f"#{c['id']} {c['summary']}"


def status_payload(cfg: Config, running: Running) -> dict[str, Any]:
    """The daemon-level part of ``daemon.status``: ``{startedAt, lang, rootLost, looseModes, index, roots, endpoints,
    queue, ingest, watcher, events, requests, extractor, export, git, http}`` (``index``: the current revision's
    MEMORY.md against its caps, ``{entries, lines, lineCap, bytes, byteCap, overBudget, broken}``, lines and UTF-8
    bytes, ``broken`` the topics that cannot be read, each ``{topic, file, code, message}``; ``roots`` every root of
    the home, the user root first (:meth:`.home.Root.describe`);
    ``queue`` and ``ingest`` are null without ingestion, ``git`` without ``--git``;
    ``rootLost`` says why writes are refused after the root or its lock file was removed or replaced, else null;
    ``looseModes`` lists the root's paths others may write, :func:`mmd.core.health.loose_modes`; ``extractor`` is
    null without ``[candidates] command``, ``export`` without ``[export] files``; ``http`` is ``{listen, url}``
    of the review page, the url carrying this start's token, or null without ``--http``)."""
    queue, ingestor, guard = running.review.queue, running.ingestor, running.state.guard
    snap, options = running.state.current, running.state.options
    broken = [*snap.anomalies.get("malformedNotes", ()), *snap.anomalies.get("malformedEntries", ())]
    return {"startedAt": running.started_at, "lang": cfg.lang, "rootLost": guard.check() if guard else None,
            "looseModes": loose_modes(cfg.root),
            "index": {"entries": len(snap.entries), "lines": snap.index_line_count, "lineCap": options.index_lines,
                      "bytes": snap.index_byte_count, "byteCap": options.index_bytes,
                      "overBudget": snap.index_over_budget,
                      "broken": broken},
            "roots": [root.describe() for root in running.home],
            "endpoints": {"rpc": cfg.rpc_endpoint, "pub": cfg.pub_endpoint},
            "queue": {**queue.counts, "shown": queue.shown} if queue else None,
            "ingest": ingestor.health.to_json() if ingestor else None,
            "extractor": running.extractor.health() if running.extractor else None,
            "export": running.injector.export_status(),
            "watcher": dict(running.watcher.health),
            "events": {"seq": running.publisher.seq},
            "requests": running.rpc.requests,
            "git": running.git.status() if running.git else None,
            "http": running.web.status() if running.web is not None else None}
