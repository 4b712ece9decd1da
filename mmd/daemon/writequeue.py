"""The daemon's write queue (issue 17): writes and deletes wait here in arrival order, and the writes
that arrived together leave as one group (one group commit, :meth:`mmd.core.store.MemoryStore.write_many`).

Owns: :class:`Queued` (one waiting request and the future its caller awaits) and :func:`next_group`
(which requests may go to disk together). Never: touches the disk or the state; :mod:`.state` applies
the groups under its lock.
"""

from __future__ import annotations

import asyncio
from collections import deque

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_GROUP", "Queued", "next_group"]

MAX_GROUP = 64
"""At most this many writes go to disk in one group commit."""


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
