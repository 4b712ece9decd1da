"""A small bounded pool for blocking work that may hang (``memory.digest`` reading a caller's file).

Owns: running a blocking function in a daemon thread of its own, at most
``workers`` at once with at most ``backlog`` more waiting (the rest get
``E_BUSY`` at once), and failing every waiting caller with ``E_SHUTTING_DOWN``
when closed. Never shares the default executor that writes, searches and
loads use, so a stuck reader cannot starve them; never joins its threads, so
shutdown never waits on a hung read (the threads are daemon threads and die
with the process). Never touches a socket or the memory state.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from mmd.wire.protocol import DaemonCode, DaemonError

__all__ = ["BoundedPool"]

T = TypeVar("T")


class BoundedPool:
    """Runs blocking calls in daemon threads, bounded.

    Args:
        name: names the threads (``mmd-<name>``) and the errors.
        workers: most calls running at once.
        backlog: most calls waiting for a worker; more get ``E_BUSY``.
    """

    def __init__(self, name: str, *, workers: int = 1, backlog: int = 7) -> None:
        self.name = name
        self.workers = workers
        self.backlog = backlog
        self.closed = False
        self._held = 0
        self._slots: asyncio.Semaphore | None = None
        self._futures: set[asyncio.Future[Any]] = set()

    @property
    def held(self) -> int:
        """Calls running or waiting now."""
        return self._held

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a daemon thread; its result, or what it raised.

        Raises:
            DaemonError(E_BUSY): if ``workers + backlog`` calls are already running or waiting.
            DaemonError(E_SHUTTING_DOWN): if the pool is closed, or closes while the call waits or runs
                (the thread is left to finish on its own).
        """
        if self.closed:
            raise self._closing()
        if self._held >= self.workers + self.backlog:
            raise DaemonError(DaemonCode.E_BUSY, f"{self._held} {self.name} requests already running or "
                                                 f"waiting (at most {self.workers + self.backlog}); retry later")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        self._held += 1
        try:
            async with self._slots:
                if self.closed:
                    raise self._closing()
                return await self._start(fn, args, kwargs)
        finally:
            self._held -= 1

    async def _start(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(ok: bool, value: Any) -> None:
            if not future.done():
                (future.set_result if ok else future.set_exception)(value)

        def work() -> None:
            try:
                outcome: tuple[bool, Any] = (True, fn(*args, **kwargs))
            except BaseException as error:  # noqa: BLE001 - handed to the awaiting request
                outcome = (False, error)
            try:
                loop.call_soon_threadsafe(settle, *outcome)
            except RuntimeError:  # the loop is closed: the daemon is gone, and so is the caller
                pass

        self._futures.add(future)
        try:
            threading.Thread(target=work, name=f"mmd-{self.name}", daemon=True).start()
            return await future
        finally:
            self._futures.discard(future)

    def close(self) -> None:
        """Refuse new calls and fail the running and waiting ones with ``E_SHUTTING_DOWN`` (never waits)."""
        self.closed = True
        for future in list(self._futures):
            if not future.done():
                future.set_exception(self._closing())

    def _closing(self) -> DaemonError:
        return DaemonError(DaemonCode.E_SHUTTING_DOWN, f"the daemon is shutting down ({self.name} not finished)")
