"""The review page's event streams: records as published, and nothing left pending when a page goes away.

In-process on a real event loop, with the daemon's own Publisher (no socket).
"""

from __future__ import annotations

import asyncio

from mmd.daemon.events import Publisher
from mmd.daemon.web.sse import EventStreams


async def test_a_stream_closed_mid_wait_leaves_no_task_pending() -> None:
    publisher = Publisher(None, lambda: "2026-12-01T00:00:00.000Z")
    streams = EventStreams(publisher)
    stream = streams.stream()
    assert (await anext(stream)).startswith("retry: 2000")
    waiting = asyncio.ensure_future(anext(stream))  # waits for the next event, as an open page does
    await asyncio.sleep(0.05)
    before = asyncio.all_tasks() - {asyncio.current_task(), waiting}
    assert before  # the stream's own waits
    waiting.cancel()  # the page went away: the server cancels the response mid-wait
    await asyncio.gather(waiting, return_exceptions=True)
    await stream.aclose()
    await asyncio.sleep(0)
    left = [t for t in asyncio.all_tasks() - {asyncio.current_task()} if not t.done()]
    assert left == [], left
    assert not publisher._subscribers  # its queue is no longer fed
    await streams.close()
