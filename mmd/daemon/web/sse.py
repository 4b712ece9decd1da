"""Server-Sent Events for the review page: the daemon's events, as they are published, to each open page.

Owns: one stream per open page, fed by an in-process subscriber of the
:class:`~mmd.daemon.events.Publisher` (bounded, same ``seq`` as the PUB socket),
written as ``id: <seq>`` / ``event: <topic>`` / ``data: <json>`` records, with a
comment every :data:`KEEPALIVE_S` seconds so a dead peer is noticed. A stream
ends when the page goes away or the server stops (:meth:`EventStreams.close`).
The browser's ``EventSource`` reconnects by itself; a gap in ``seq`` tells the
page it missed events (it reloads its content). Never: polls, or sends the token.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from ..events import Publisher

__all__ = ["KEEPALIVE_S", "RECENT_EVENTS", "EventStreams"]

KEEPALIVE_S = 15.0
"""Seconds between keep-alive comments on an idle stream."""
RECENT_EVENTS = 20
"""Events the status view lists."""


class EventStreams:
    """The open event streams of one page server, and the last events for the status view.

    Args:
        publisher: the daemon's publisher (subscribe/unsubscribe run on the event loop).
    """

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher
        self.recent: deque[tuple[str, dict[str, Any]]] = deque(maxlen=RECENT_EVENTS)
        """The last :data:`RECENT_EVENTS` events ``(topic, message)``, oldest first."""
        self._closing = asyncio.Event()
        self._recorder: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start recording the recent events (call on the event loop)."""
        queue = self.publisher.subscribe()

        async def record() -> None:
            try:
                while True:
                    self.recent.append(await queue.get())
            finally:
                self.publisher.unsubscribe(queue)

        self._recorder = asyncio.ensure_future(record())

    async def close(self) -> None:
        """End every open stream and stop recording."""
        self._closing.set()
        if self._recorder is not None:
            self._recorder.cancel()
            await asyncio.gather(self._recorder, return_exceptions=True)

    async def stream(self) -> AsyncIterator[str]:
        """One page's stream: a ``retry`` hint, then one record per event, until the server stops."""
        queue = self.publisher.subscribe()
        closing = asyncio.ensure_future(self._closing.wait())
        getter: asyncio.Future[tuple[str, dict[str, Any]]] | None = None
        try:
            yield f"retry: 2000\n: seq {self.publisher.seq}\n\n"
            while not self._closing.is_set():
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, closing}, timeout=KEEPALIVE_S,
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    if not self._closing.is_set():
                        yield ": keep-alive\n\n"
                    continue
                topic, message = getter.result()
                yield f"id: {message['seq']}\nevent: {topic}\ndata: {json.dumps(message, ensure_ascii=False)}\n\n"
        finally:  # the page went away mid-wait too: no task is left pending ("Task was destroyed" in the log)
            closing.cancel()
            if getter is not None:
                getter.cancel()
            self.publisher.unsubscribe(queue)
