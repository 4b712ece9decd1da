"""The event publisher: a ZeroMQ PUB socket sending multipart ``[topic, json]``.

Topics and payloads are the wire's (:mod:`mmd.wire.events`: ``memory/nudge``,
``memory/changed``, ``queue/added``, ``daemon/heartbeat``). Every payload carries ``seq`` (one more than the
previous event's, starting at 1) and ``at`` (ISO-8601 UTC with milliseconds),
so a subscriber sees what it missed and can resync with ``daemon.status``.
PUB never blocks: a subscriber too slow to keep up loses events (and sees the
gap in ``seq``). Publish only from the event loop's thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import zmq

from mmd.wire.events import TOPICS
from mmd.wire.protocol import encode

__all__ = ["Publisher"]

log = logging.getLogger("mmd.events")


class Publisher:
    """Numbers and sends events on a bound PUB socket.

    Args:
        socket: a bound ``zmq.PUB`` socket (plain, not asyncio: sends never wait).
        now_iso: the clock, ISO-8601 UTC with milliseconds.
    """

    def __init__(self, socket: zmq.Socket[bytes] | None, now_iso: Callable[[], str]) -> None:
        self.socket = socket
        self._now_iso = now_iso
        self.seq = 0
        self._thread = threading.get_ident()

    def publish(self, topic: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Send ``payload`` under ``topic`` with the next ``seq`` and ``at`` added; returns what was sent.

        A full send queue drops the event (it still consumes its ``seq``).

        Raises:
            ValueError: if ``topic`` is not one of :data:`mmd.wire.events.TOPICS`.
            RuntimeError: if called from another thread than the one that built the publisher
                (ZeroMQ sockets are not thread-safe, and ``seq`` must stay gapless).
        """
        if topic not in TOPICS:
            raise ValueError(f"unknown event topic {topic!r}")
        if threading.get_ident() != self._thread:
            raise RuntimeError("Publisher.publish called off the event loop's thread")
        self.seq += 1
        message = {"seq": self.seq, "at": self._now_iso(), **payload}
        if self.socket is not None:
            try:
                self.socket.send_multipart([topic.encode(), encode(message)], flags=zmq.NOBLOCK)
            except zmq.Again:
                log.warning("event dropped topic=%s seq=%d", topic, self.seq)
        return message

    def close(self, linger_ms: int = 500) -> None:
        """Close the socket, flushing queued events for at most ``linger_ms`` milliseconds."""
        if self.socket is not None:
            self.socket.close(linger=linger_ms)
            self.socket = None
