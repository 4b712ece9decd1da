"""Time as the mm core sees it: an injectable clock and ISO-8601 UTC with milliseconds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "iso_ms", "parse_iso_ms", "system_clock"]

Clock = Callable[[], datetime]
"""A function returning the current time as an aware datetime."""


def system_clock() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


def iso_ms(moment: datetime) -> str:
    """``2026-01-02T03:04:05.000Z``: JavaScript's ``Date.toISOString``."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso_ms(text: str) -> datetime:
    """Parse an ISO-8601 timestamp (``Z`` or an offset) to an aware UTC datetime.

    Raises:
        ValueError: if ``text`` is not ISO-8601.
    """
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
