"""The event topics and their payloads: what the daemon's PUB socket sends and subscribers receive.

Each event is a multipart ``[topic, json]`` message; every payload carries
``seq`` (one more than the previous event's, from 1) and ``at`` (ISO-8601 UTC
with milliseconds). A topic is written once, here, as a constant; the daemon
publishes and the client filters with these names. This module is shapes and
names only: it never touches a socket.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = [
    "DAEMON_HEARTBEAT",
    "EVENT_PAYLOADS",
    "MEMORY_CHANGED",
    "MEMORY_DUE",
    "MEMORY_NUDGE",
    "MEMORY_SYNCED",
    "QUEUE_ADDED",
    "QUEUE_DECIDED",
    "TOPICS",
    "ChangedEvent",
    "ChangedItem",
    "DueEvent",
    "DueItem",
    "HeartbeatEvent",
    "NudgeEvent",
    "ProposalItem",
    "QueueAddedEvent",
    "QueueDecidedEvent",
    "SyncedEvent",
]

MEMORY_NUDGE = "memory/nudge"
"""The mm nudge report, on a schedule or when a session ends (:class:`NudgeEvent`)."""
MEMORY_CHANGED = "memory/changed"
"""A new revision: the topics added, updated and removed (:class:`ChangedEvent`)."""
QUEUE_ADDED = "queue/added"
"""Ingestion added review-queue candidates (:class:`QueueAddedEvent`)."""
QUEUE_DECIDED = "queue/decided"
"""A candidate was accepted, rejected, or its decision undone (:class:`QueueDecidedEvent`)."""
MEMORY_DUE = "memory/due"
"""A topic's review date has come: once per topic and date, across restarts (:class:`DueEvent`)."""
DAEMON_HEARTBEAT = "daemon/heartbeat"
"""The daemon is alive, every ``daemon.heartbeatMs`` (:class:`HeartbeatEvent`)."""

MEMORY_SYNCED = "memory/synced"
"""A git sync finished, well or not (:class:`SyncedEvent`; only with ``mmd --git``)."""

TOPICS = (MEMORY_NUDGE, MEMORY_CHANGED, MEMORY_DUE, QUEUE_ADDED, QUEUE_DECIDED, DAEMON_HEARTBEAT, MEMORY_SYNCED)
"""Every event topic, as sent in the first frame (UTF-8)."""


class ChangedItem(TypedDict):
    """A topic in ``memory/changed``; ``sha256`` (hex) of the note body, absent for removed topics."""

    topic: str
    sha256: NotRequired[str]


class ChangedEvent(TypedDict):
    """``memory/changed``: ``cause`` is ``write`` | ``delete`` | ``merge`` | ``rename`` | ``external`` | ``config`` |
    ``sync``."""

    seq: int
    at: str
    revision: int
    cause: str
    added: list[ChangedItem]
    updated: list[ChangedItem]
    removed: list[ChangedItem]
    scope: NotRequired[str]
    """The root: ``user`` or a project key (``docs/projects.md``)."""


class DueItem(TypedDict):
    """A topic due for review: its stored date (``YYYY-MM-DD``) and whole days left (0 today, negative overdue)."""

    topic: str
    reviewAfter: str
    daysLeft: int


class DueEvent(TypedDict):
    """``memory/due``: one topic whose review date has come (sent once per topic and date, across restarts)."""

    seq: int
    at: str
    topic: str
    uri: str
    reviewAfter: str
    daysLeft: int
    scope: NotRequired[str]


class ProposalItem(TypedDict):
    """An agent's proposal a ``session-end`` nudge names: its candidate id, status, topic and summary."""

    id: int
    status: str
    topic: str
    summary: str


class NudgeEvent(TypedDict):
    """``memory/nudge``: the mm nudge report plus the reason (``schedule`` | ``session-end`` | ``sync``: a git
    sync merged an index over its caps | ``distill``).

    A ``session-end`` nudge names the session: the daemon session of ``memory.close``, or the
    agent's session whose log went quiet for ``daemon.sessionIdleSeconds`` (and, for DSH, with its lock
    released): then ``agent`` is the source (``dsh`` | ``claude-code`` | ``codex``), ``project`` the
    session's working directory (None when the log does not say) and ``source`` the log's path.
    ``due`` lists the topics whose review date has come (today or earlier, UTC), most overdue first. A ``sync``
    nudge about a project root's index names it (``scope``: its key).
    A ``session-end`` nudge also names the session's ``proposals`` (the agent's own, ``[{id, status, topic,
    summary}]``, oldest first). A ``distill`` nudge (issue 28) is for an agent's session that ran a few prompts
    without proposing anything (``nudge.distill = "once"``): ``distill`` is the one line to give the agent,
    sent once per session.
    """

    seq: int
    at: str
    reason: str
    queuePending: int
    scope: NotRequired[str]
    sessionId: NotRequired[str]
    source: NotRequired[str]
    agent: NotRequired[str]
    project: NotRequired[str | None]
    pendingWrites: int
    noteCount: int
    indexOverBudget: bool
    needsCommit: bool
    suggestedActions: list[str]
    due: list[DueItem]
    proposals: NotRequired[list[ProposalItem]]
    distill: NotRequired[str]


class HeartbeatEvent(TypedDict):
    """``daemon/heartbeat``: every ``daemon.heartbeatMs``; ``intervalMs`` is that period, milliseconds (a
    subscriber judges a silent daemon by it: gaps measured on a loaded machine can be any length)."""

    seq: int
    at: str
    intervalMs: int
    revision: int
    queuePending: int


class QueueAddedEvent(TypedDict):
    """``queue/added``: after each ingestion batch that added candidates; ``source`` is the log's path,
    ``agent`` the source that read it (``dsh`` | ``claude-code`` | ``codex`` | ``other``)."""

    seq: int
    at: str
    ids: list[int]
    sessionId: str | None
    source: str
    agent: str


class SyncedEvent(TypedDict):
    """``memory/synced``: what a git sync did (``mmctl sync``, or every ``git.syncIntervalMs``).

    ``merged`` is ``none`` | ``up-to-date`` | ``fast-forward`` | ``merge``; ``topics`` changed locally
    by the merge; ``queued`` are the ids of the ``conflict`` candidates it added; ``error`` is
    ``{stage, message}`` or null (no local revision is lost; the sync is retried with back-off);
    ``ahead``/``behind`` count commits against the remote branch (null when unknown).
    """

    seq: int
    at: str
    ok: bool
    remote: str
    branch: str | None
    merged: str
    pushed: bool
    head: str | None
    ahead: int | None
    behind: int | None
    topics: list[str]
    queued: list[int]
    error: dict[str, str] | None
    revision: int
    indexOverBudget: bool


class QueueDecidedEvent(TypedDict):
    """``queue/decided``: a candidate's status changed by ``queue.accept`` (``accepted``, ``topic`` the note
    written), ``queue.reject`` (``rejected``) or ``queue.undo`` (``pending`` again), from any surface."""

    seq: int
    at: str
    id: int
    status: str
    topic: NotRequired[str]
    queuePending: int


EVENT_PAYLOADS: dict[str, type] = {MEMORY_NUDGE: NudgeEvent, MEMORY_CHANGED: ChangedEvent, MEMORY_DUE: DueEvent,
                                   QUEUE_ADDED: QueueAddedEvent, QUEUE_DECIDED: QueueDecidedEvent,
                                   DAEMON_HEARTBEAT: HeartbeatEvent, MEMORY_SYNCED: SyncedEvent}
"""``{topic: the TypedDict of its payload}`` (``schema/events.schema.json`` holds the same)."""
