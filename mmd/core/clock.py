"""Time as the mm core sees it: an injectable clock and ISO-8601 UTC with milliseconds.

:mod:`datetime` is imported on first use: a one-shot ``mmctl read`` on the wall clock
formats its time with :func:`now_iso` and never needs it (issue 17).
"""

from __future__ import annotations

import time
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["Clock", "iso_ms", "now_iso", "parse_iso_ms", "system_clock"]

Clock = Callable[[], "datetime"]
"""A function returning the current time as an aware datetime."""


def system_clock() -> datetime:
    """The wall clock, in UTC."""
    from datetime import UTC, datetime

    return datetime.now(UTC)


def iso_ms(moment: datetime) -> str:
    """``2026-01-02T03:04:05.000Z``: JavaScript's ``Date.toISOString``."""
    from datetime import UTC

    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_iso(clock: Clock) -> str:
    """``iso_ms(clock())``; for :func:`system_clock`, the same text read from :func:`time.time_ns` directly."""
    if clock is not system_clock:
        return iso_ms(clock())
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)) + f"{nanos // 1_000_000:03d}Z"


def parse_iso_ms(text: str) -> datetime:
    """Parse an ISO-8601 timestamp (``Z`` or an offset) to an aware UTC datetime.

    Raises:
        ValueError: if ``text`` is not ISO-8601.
    """
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
