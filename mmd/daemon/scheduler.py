"""Periodic jobs on the asyncio loop (APScheduler 3.x): nudges, heartbeats, session expiry, watchdog.

Each job is an interval job that never overlaps itself and coalesces missed
runs. :meth:`Schedule.apply` (re)installs the jobs from a :class:`~.config.Config`,
so SIGHUP can change their periods; a job whose period is None is removed.
The jobs themselves are callables handed in by the lifecycle; this module
knows only their names and periods.

Durable jobs (the nudge) keep their next due time in a small JSON file
(``<root>/.mmd/schedule.json``, ``{name: due time in ms since the epoch}``),
written when the job is installed and after each run (then logged: ``scheduler.next job=… due_ms=…``),
so a restart neither stretches the period nor skips it: a due time that passed while the daemon was
down fires once at start (missed runs coalesce, never a burst), a future one
fires when it comes (at the latest one period from now).

APScheduler itself is loaded :data:`BOOT_LEAD_MS` before the first job is due, not at the start (~50 ms of a
start's CPU: its import scans every installed package's entry points): until then each installed job keeps its
first run time here, and a daemon that stops before (a default heartbeat is 5 s away) never loads it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiofiles.os

__all__ = ["BOOT_LEAD_MS", "DURABLE_JOBS", "START_GRACE_MS", "Schedule", "load_due", "save_due"]

DURABLE_JOBS = frozenset({"nudge"})
"""Jobs whose next due time survives a restart."""
START_GRACE_MS = 1000
"""A durable job due while the daemon was down runs this long after start (ms), so that subscribers
reconnecting after the restart receive its event."""
BOOT_LEAD_MS = 250
"""How long before the first job is due APScheduler is loaded and started (ms), so that its import never
delays that run."""


def load_due(path: Path | None) -> dict[str, int]:
    """``{job: next due time, ms since the epoch}`` from ``path``; empty when absent or unreadable."""
    if path is None:
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def save_due(path: Path | None, due: Mapping[str, int]) -> None:
    """Write ``{job: due ms}`` atomically to ``path``; a failure (root gone, disk full) is logged, never raised."""
    if path is None:
        return
    from mmd.core.durable import atomic_write
    from mmd.core.errors import MMError

    try:
        atomic_write(path, json.dumps(dict(due), sort_keys=True).encode())
    except (MMError, OSError) as error:
        log.warning("scheduler.save_failed file=%s error=%r", path, str(error))

log = logging.getLogger("mmd.scheduler")

_save_due = aiofiles.os.wrap(save_due)
""":func:`save_due` run by aiofiles, for the jobs that run on the loop."""


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
        due_file: where the :data:`DURABLE_JOBS` keep their next due time (None: nowhere).
        now_ms: the wall clock, ms since the epoch.
    """

    def __init__(self, jobs: Mapping[str, Callable[[], Any]], due_file: Path | None = None,
                 now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        self._jobs = {name: self._durable(name, _on_loop(job)) if name in DURABLE_JOBS else _on_loop(job)
                      for name, job in jobs.items()}
        self.due_file = due_file
        self._now_ms = now_ms
        self._due = load_due(due_file)
        self._periods_ms: dict[str, int | None] = {}
        self._scheduler: Any = None
        """The AsyncIOScheduler, once :meth:`_boot` made it."""
        self._waiting: dict[str, int] = {}
        """Before the scheduler is made: each installed job's first run, ms since the epoch."""
        self._boot_timer: asyncio.TimerHandle | None = None

    def start(self, periods_ms: Mapping[str, int | None]) -> None:
        """Start the schedule on the running loop with ``{name: period in ms, or None for off}``."""
        self.apply(periods_ms)

    def apply(self, periods_ms: Mapping[str, int | None]) -> None:
        """Install, reschedule or remove jobs so that each runs every ``periods_ms[name]`` milliseconds, the first
        time one period from now (a durable job: at its due time, :meth:`_first_run`). Runs on the loop."""
        for name, period in periods_ms.items():
            if self._periods_ms.get(name) == period:
                continue
            self._waiting.pop(name, None)
            if self._scheduler is not None and self._scheduler.get_job(name) is not None:
                self._scheduler.remove_job(name)
            if period is not None:
                first = self._first_run(name, period) if name in DURABLE_JOBS else self._now_ms() + period
                if self._scheduler is None:
                    self._waiting[name] = first
                else:
                    self._add(name, period, first)
            self._periods_ms[name] = period
            log.debug("scheduler.job name=%s period_ms=%s", name, period)
        if self._scheduler is None:
            self._arm()

    def _add(self, name: str, period_ms: int, first_ms: int) -> None:
        self._scheduler.add_job(self._jobs[name], "interval", seconds=period_ms / 1000, id=name, name=name,
                                next_run_time=datetime.fromtimestamp(first_ms / 1000, tz=UTC))

    def _arm(self) -> None:
        """(Re)set the timer that boots the scheduler :data:`BOOT_LEAD_MS` before the first waiting job."""
        if self._boot_timer is not None:
            self._boot_timer.cancel()
            self._boot_timer = None
        if self._waiting:
            delay_ms = min(self._waiting.values()) - self._now_ms() - BOOT_LEAD_MS
            self._boot_timer = asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000, self._boot)

    def _boot(self) -> None:
        """Load APScheduler, start it on the loop and hand it the waiting jobs with their first run times."""
        from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]

        self._boot_timer = None
        self._scheduler = AsyncIOScheduler(job_defaults={"coalesce": True, "max_instances": 1,
                                                         "misfire_grace_time": None})
        self._scheduler.start()
        waiting, self._waiting = self._waiting, {}
        for name, first in waiting.items():
            period = self._periods_ms[name]
            assert period is not None
            self._add(name, period, first)
        log.debug("scheduler.started jobs=%d", len(waiting))

    def _first_run(self, name: str, period_ms: int) -> int:
        """The first run of a durable job, ms since the epoch: its saved due time (:data:`START_GRACE_MS` from
        now if it passed; at most one period ahead), else one period from now; saved at once, so a restart
        before it fires keeps it."""
        now = self._now_ms()
        due = min(max(self._due.get(name, now + period_ms), now + min(START_GRACE_MS, period_ms)), now + period_ms)
        self._due[name] = due
        # blocking, not aiofiles: apply() is synchronous (start, SIGHUP) and the due time must be on disk before
        # the job is installed, or a restart right after would stretch the period
        save_due(self.due_file, self._due)
        return due

    def _durable(self, name: str, run: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """``run``, then the next due time (one period from now) saved."""

        async def run_and_save() -> None:
            try:
                await run()
            finally:
                period = self._periods_ms.get(name)
                if period is not None:
                    self._due[name] = self._now_ms() + period
                    await _save_due(self.due_file, dict(self._due))  # an fsync: off the loop
                    log.info("scheduler.next job=%s due_ms=%d", name, self._due[name])

        run_and_save.__name__ = getattr(run, "__name__", name)
        return run_and_save

    def due_ms(self) -> dict[str, int]:
        """The durable jobs' next due times, ms since the epoch."""
        return dict(self._due)

    def periods_ms(self) -> dict[str, int | None]:
        """The installed periods, milliseconds (None = off)."""
        return dict(self._periods_ms)

    def shutdown(self) -> None:
        """Stop running jobs (a running one is not awaited); a scheduler not booted yet never will be."""
        if self._boot_timer is not None:
            self._boot_timer.cancel()
            self._boot_timer = None
        self._waiting.clear()
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.shutdown(wait=False)
