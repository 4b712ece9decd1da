"""The daemon's write queue (issue 17): writes and deletes wait here in arrival order, and the writes
that arrived together leave as one group (one group commit, :meth:`mmd.core.store.MemoryStore.write_many`).

Owns: :class:`Queued` (one waiting request and the future its caller awaits), :func:`next_group`
(which requests may go to disk together) and :func:`gather` (waiting, briefly, for the writers of the
last group to come back, so concurrent writers share one group instead of splitting into two halves
that alternate). Never: touches the disk or the state; :mod:`.state` applies the groups under its lock.
"""

from __future__ import annotations

import asyncio
from collections import deque

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GATHER_MAX_MS", "MAX_GROUP", "Queued", "gather", "next_group"]

MAX_GROUP = 64
"""At most this many writes go to disk in one group commit."""

GATHER_MAX_MS = 2.0
"""The longest :func:`gather` waits for writers to come back, milliseconds."""


class Queued:
    """A write (``write`` is ``(content, keyword arguments)``) or a delete (``write`` None) waiting its turn."""

    __slots__ = ("done", "if_revision", "session_id", "topic", "write")

    def __init__(self, topic: Any, write: tuple[Any, dict[str, Any]] | None, if_revision: int | None,
                 session_id: str | None) -> None:
        self.topic, self.write, self.if_revision, self.session_id = topic, write, if_revision, session_id
        self.done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def settle(self, result: dict[str, Any] | BaseException) -> None:
        """Answer the waiting caller (unless it stopped waiting)."""
        if self.done.done():
            return
        if isinstance(result, asyncio.CancelledError):
            self.done.cancel()
        elif isinstance(result, BaseException):
            self.done.set_exception(result)
        else:
            self.done.set_result(result)


def next_group(queue: deque[Queued], *, alone: bool = False) -> list[Queued]:
    """Take the next requests that may go to disk together from the head of ``queue`` (not empty).

    A delete goes alone; so does every request when ``alone`` (no revision to patch yet, or the
    memory id changed). A write with ``if_revision`` (checked against the revision before it), a
    topic already in the group, a non-string topic and a delete each start a new group; at most
    :data:`MAX_GROUP` writes.
    """
    group = [queue.popleft()]
    if group[0].write is None or alone:
        return group
    topics = {group[0].topic}
    while queue and len(group) < MAX_GROUP:
        head = queue[0]
        if head.write is None or head.if_revision is not None or not isinstance(head.topic, str) \
                or head.topic in topics:
            break
        topics.add(head.topic)
        group.append(queue.popleft())
    return group


async def gather(queue: deque[Queued], arrived: asyncio.Event, want: int, wait_ms: float) -> int:
    """Wait until ``queue`` holds ``want`` requests, for at most ``wait_ms`` milliseconds; the queue's length then.

    Group commit with closed-loop writers (each waits for its answer before it writes again): the
    writers of a group just answered send their next write a round trip later. Started at once,
    the next group holds only the writes that queued meanwhile, and the writers settle into two
    halves that alternate, each paying a whole index rewrite and its fsyncs. The caller waits
    here for ``want`` (the last group's writers plus those queued) for a fraction of the last
    group's disk time (as PostgreSQL's ``commit_delay`` does for its WAL flush), never after a
    lone write: a single writer is never delayed. ``arrived`` is set by whoever appends to ``queue``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(wait_ms, GATHER_MAX_MS) / 1000
    while len(queue) < want:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        arrived.clear()
        try:
            async with asyncio.timeout(remaining):
                await arrived.wait()
        except TimeoutError:
            break
    return len(queue)
