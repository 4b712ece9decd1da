"""The review page: Starlette + uvicorn served in the daemon's own event loop (``mmd --http 127.0.0.1:PORT``).

Owns: the embedded HTTP server's life. :class:`WebServer` binds the loopback
socket itself (so the real port is known before the first request, port 0 =
any free one), runs uvicorn's ``Server`` with lifespan off, no logging config
of its own and no signal handlers (mmd's own stay in place), and stops it with
``should_exit`` before the socket closes. The routes are in :mod:`.app`, the
gate (token, cookie, Host, Origin, CSRF) in :mod:`.security`, the events in
:mod:`.sse`. Imported by the lifecycle only when ``--http`` is on, so a daemon
without the page never loads Starlette, uvicorn or Jinja2.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn

from ..events import Publisher
from ..methods import Methods
from .app import build_app
from .security import Gate
from .sse import EventStreams

__all__ = ["STOP_TIMEOUT_S", "WebServer"]

STOP_TIMEOUT_S = 3.0
"""Longest wait for open requests when the page stops, seconds."""

log = logging.getLogger("mmd.web")


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: mmd's own handle SIGTERM/SIGINT/SIGHUP."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class WebServer:
    """The review page of one daemon.

    Args:
        listen: ``(host, port)``, a loopback address (checked by the config); port 0 = any free one.
        methods: the daemon's method table (every action goes through it, as RPC does).
        publisher: the daemon's event publisher (the page's live updates).
    """

    def __init__(self, listen: tuple[str, int], methods: Methods, publisher: Publisher) -> None:
        self.listen = listen
        self.methods = methods
        self.events = EventStreams(publisher)
        self.gate: Gate | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Bind the socket and start serving (returns once the server listens).

        Raises:
            OSError: if the address cannot be bound (in use, not local).
        """
        host, port = self.listen
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        bound = sock.getsockname()[1]
        self.gate = Gate(host, bound)
        app = build_app(self.methods, self.gate, self.events)
        config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, server_header=False,
                                timeout_graceful_shutdown=int(STOP_TIMEOUT_S), proxy_headers=False)
        self._server = _Server(config)
        self.events.start()
        self._task = asyncio.ensure_future(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise OSError(f"the review page could not start on {host}:{bound}")
            await asyncio.sleep(0.01)
        log.info("web.ready listen=%s:%d", host, bound)

    def status(self) -> dict[str, Any] | None:
        """``{listen, url}`` for ``daemon.status`` (the url carries this start's token), or None before start."""
        if self.gate is None:
            return None
        return {"listen": self.gate.url.split("/")[2], "url": self.gate.url}

    async def stop(self) -> None:
        """End the event streams, then ``should_exit``; waits for the server to close its socket."""
        await self.events.close()
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), STOP_TIMEOUT_S + 2)
            except TimeoutError:
                if self._server is not None:
                    self._server.force_exit = True
                await asyncio.gather(self._task, return_exceptions=True)
            except Exception as error:  # noqa: BLE001 - stopping must go on; the error is logged
                log.warning("web.stop_failed error=%r", str(error))
        log.info("web.stopped")
