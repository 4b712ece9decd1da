"""Daemon events as the client sees them: one :class:`Event` per PUB message, with ``seq`` gaps counted.

The daemon numbers its events 1, 2, 3, … (DESIGN.md). A subscriber that sees
``seq`` jump knows it missed ``missed`` events (a slow reader, a reconnect);
``seq`` going back to a smaller number means the daemon restarted. Either way
the subscriber should resync (``daemon.status``, ``memory.list``). The topics
(``TOPICS``) are the wire's (:mod:`mmd.wire.events`). Nothing here touches a socket.
"""

from __future__ import annotations

import json
from typing import Any

from mmd.core.record import Record
from mmd.wire.events import TOPICS

__all__ = ["TOPICS", "Event", "SeqTracker", "decode_event"]


class Event(Record):
    """One event (a :class:`~mmd.core.record.Record`: the client module imports this one, and
    :mod:`dataclasses` would cost a one-shot ``mmctl`` call ~5 ms).

    Attributes:
        topic: the PUB topic, one of :data:`TOPICS` (``memory/changed``, ``memory/due``, ``queue/added``, …).
        data: the payload, ``seq`` and ``at`` (ISO-8601 UTC) included.
        seq: the event's number.
        missed: events lost just before this one (0 when none).
        restarted: ``seq`` went backwards: the daemon restarted, anything may have changed.
    """

    __slots__ = ("topic", "data", "seq", "missed", "restarted")

    def __init__(self, topic: str, data: dict[str, Any] | None = None, seq: int = 0, missed: int = 0,
                 restarted: bool = False) -> None:
        self.topic, self.seq, self.missed, self.restarted = topic, seq, missed, restarted
        self.data: dict[str, Any] = {} if data is None else data

    def to_json(self) -> dict[str, Any]:
        """``{event, …payload, missed?, restarted?}``: what ``mmctl watch --json`` prints, one per line.

        ``event`` is the PUB topic (``memory/due``); the payload is as the daemon sent it, so its own ``topic``
        (the note's, in ``memory/due`` and ``queue/decided``) stays the note's.
        """
        out: dict[str, Any] = {"event": self.topic, **self.data}
        if self.missed:
            out["missed"] = self.missed
        if self.restarted:
            out["restarted"] = True
        return out


class SeqTracker:
    """Counts gaps in ``seq``; the first event seen never counts as a gap (we joined late)."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.missed_total = 0

    def track(self, seq: int) -> tuple[int, bool]:
        """``(missed, restarted)`` for the next ``seq``."""
        last, self.last = self.last, seq
        if last is None:
            return 0, False
        if seq <= last:
            return max(0, seq - 1), True
        missed = seq - last - 1
        self.missed_total += missed
        return missed, False


def decode_event(frames: list[bytes], tracker: SeqTracker) -> Event | None:
    """The :class:`Event` in a ``[topic, json]`` message, or None for a malformed one."""
    if len(frames) != 2:
        return None
    try:
        data = json.loads(frames[1])
        topic = frames[0].decode()
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    seq = data.get("seq")
    if not isinstance(seq, int):
        return Event(topic, data)
    missed, restarted = tracker.track(seq)
    return Event(topic, data, seq, missed, restarted)
