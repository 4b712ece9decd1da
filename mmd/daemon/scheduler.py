"""Periodic jobs on the asyncio loop (APScheduler 3.x): nudges, heartbeats, session expiry, watchdog.

Each job is an interval job that never overlaps itself and coalesces missed
runs. :meth:`Schedule.apply` (re)installs the jobs from a :class:`~.config.Config`,
so SIGHUP can change their periods; a job whose period is None is removed.
The jobs themselves are callables handed in by the lifecycle; this module
knows only their names and periods.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]

__all__ = ["Schedule"]

log = logging.getLogger("mmd.scheduler")


def _on_loop(job: Callable[[], Any]) -> Callable[[], Awaitable[None]]:
    """``job`` as a coroutine function: APScheduler runs plain functions in a worker thread, and the
    jobs touch the PUB socket and the state, which belong to the loop's thread."""

    async def run() -> None:
        result = job()
        if inspect.isawaitable(result):
            await result

    run.__name__ = getattr(job, "__name__", "job")
    return run


class Schedule:
    """The daemon's periodic jobs.

    Args:
        jobs: ``{name: callable}``; the callables take no arguments and may be coroutine
            functions; all of them run on the event loop's thread.
    """

    def __init__(self, jobs: Mapping[str, Callable[[], Any]]) -> None:
        self._jobs = {name: _on_loop(job) for name, job in jobs.items()}
        self._periods_ms: dict[str, int | None] = {}
        self._scheduler = AsyncIOScheduler(job_defaults={"coalesce": True, "max_instances": 1,
                                                         "misfire_grace_time": None})

    def start(self, periods_ms: Mapping[str, int | None]) -> None:
        """Start the scheduler on the running loop with ``{name: period in ms, or None for off}``."""
        self._scheduler.start()
        self.apply(periods_ms)

    def apply(self, periods_ms: Mapping[str, int | None]) -> None:
        """Install, reschedule or remove jobs so that each runs every ``periods_ms[name]`` milliseconds."""
        for name, period in periods_ms.items():
            if self._periods_ms.get(name) == period:
                continue
            if self._scheduler.get_job(name) is not None:
                self._scheduler.remove_job(name)
            if period is not None:
                self._scheduler.add_job(self._jobs[name], "interval", seconds=period / 1000, id=name, name=name)
            self._periods_ms[name] = period
            log.debug("scheduler.job name=%s period_ms=%s", name, period)

    def periods_ms(self) -> dict[str, int | None]:
        """The installed periods, milliseconds (None = off)."""
        return dict(self._periods_ms)

    def shutdown(self) -> None:
        """Stop running jobs (a running one is not awaited)."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
