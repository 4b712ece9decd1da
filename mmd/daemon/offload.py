"""A small bounded pool for blocking work that may hang (``memory.digest`` reading a caller's file).

Owns: running a blocking function, at most ``workers`` at once with at most
``backlog`` more waiting (the rest get ``E_BUSY`` at once), and failing every
waiting caller with ``E_SHUTTING_DOWN`` when closed. The work runs in daemon
threads of its own, or (``processes``) in worker processes of its own, so
CPU-heavy work (distilling a 4 MiB text) does not hold the interpreter lock the
event loop and writes need; a call in a worker process that passes
``timeout_s`` is stopped by replacing the process. Never shares the default
executor that writes, searches and loads use, so a stuck reader cannot starve
them; never waits for its threads or processes at shutdown (threads die with
the process, worker processes are terminated). Never touches a socket or the
memory state.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from mmd.core.errors import ErrorCode, MMError
from mmd.wire.protocol import DaemonCode, DaemonError

__all__ = ["BoundedPool"]

T = TypeVar("T")


def _boxed(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """In a worker process: ``fn``'s result, or its error as plain data (exceptions with keyword-only
    fields, as :class:`MMError`, do not survive pickling)."""
    try:
        return True, fn(*args, **kwargs)
    except MMError as error:
        return False, ("mm", error.code.value, error.message, error.details)
    except Exception as error:  # noqa: BLE001 - handed back to the awaiting request
        return False, ("other", type(error).__name__, str(error), None)


def _unboxed(error: tuple[str, str, str, Any]) -> Exception:
    kind, code, message, details = error
    if kind == "mm":
        return MMError(ErrorCode(code), message, details=details)
    return RuntimeError(f"{code}: {message}")


class BoundedPool:
    """Runs blocking calls in daemon threads, bounded.

    Args:
        name: names the threads (``mmd-<name>``) and the errors.
        workers: most calls running at once.
        backlog: most calls waiting for a worker; more get ``E_BUSY``.
        processes: run the calls in worker processes (started on first use; the function and its
            arguments must pickle) instead of threads.
        timeout_s: with ``processes``, longest run of one call, seconds (None: no limit); a call
            past it gets ``E_BUSY`` and its worker process is replaced.
    """

    def __init__(self, name: str, *, workers: int = 1, backlog: int = 7, processes: bool = False,
                 timeout_s: float | None = None) -> None:
        self.name = name
        self.workers = workers
        self.backlog = backlog
        self.processes = processes
        self.timeout_s = timeout_s if processes else None
        self._pool: Any = None
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

        def call_back(ok: bool, value: Any) -> None:  # from a worker or the pool's result thread
            try:
                loop.call_soon_threadsafe(settle, ok, value)
            except RuntimeError:  # the loop is closed: the daemon is gone, and so is the caller
                pass

        def work() -> None:
            try:
                outcome: tuple[bool, Any] = (True, fn(*args, **kwargs))
            except BaseException as error:  # noqa: BLE001 - handed to the awaiting request
                outcome = (False, error)
            call_back(*outcome)

        self._futures.add(future)
        try:
            if self.processes:
                pool = await self._process_pool()
                pool.apply_async(_boxed, (fn, args, kwargs),
                                 callback=lambda box: call_back(box[0], box[1] if box[0] else _unboxed(box[1])),
                                 error_callback=lambda error: call_back(False, error))
            else:
                threading.Thread(target=work, name=f"mmd-{self.name}", daemon=True).start()
            try:
                return await asyncio.wait_for(future, self.timeout_s)
            except TimeoutError:
                self._replace_pool()
                raise DaemonError(DaemonCode.E_BUSY, f"{self.name} did not finish within {self.timeout_s:g} s "
                                                     f"and was stopped; retry later") from None
        finally:
            self._futures.discard(future)

    async def _process_pool(self) -> Any:
        """The worker processes, started on first use (in a thread: spawning takes a moment)."""
        if self._pool is None:
            fresh = await asyncio.to_thread(self._new_pool)
            if self._pool is None and not self.closed:
                self._pool = fresh
            else:  # another call started one meanwhile, or the pool closed
                fresh.terminate()
        if self.closed:
            raise self._closing()
        return self._pool

    def _new_pool(self) -> Any:
        import multiprocessing
        import signal

        # Ctrl+C reaches the whole process group: the daemon decides, its workers ignore it
        return multiprocessing.get_context("spawn").Pool(self.workers, initializer=signal.signal,
                                                         initargs=(signal.SIGINT, signal.SIG_IGN))

    def _replace_pool(self) -> None:
        """Terminate the worker processes (a stuck call with them); the next call starts new ones."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()

    def close(self) -> None:
        """Refuse new calls and fail the running and waiting ones with ``E_SHUTTING_DOWN``; terminate the
        worker processes (never waits for a call)."""
        self.closed = True
        for future in list(self._futures):
            if not future.done():
                future.set_exception(self._closing())
        self._replace_pool()

    def _closing(self) -> DaemonError:
        return DaemonError(DaemonCode.E_SHUTTING_DOWN, f"the daemon is shutting down ({self.name} not finished)")
