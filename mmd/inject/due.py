"""Review dates: parse them at write time, and tell which topics are due (issue 14, "Due for review").

A topic may carry a review date, stored spec-legally as the index entry line
``- **review-after:** YYYY-MM-DD`` (mm v1 §3 keeps unknown entry lines through
every write; see :data:`mmd.core.model.REVIEW_AFTER_KEY`). A writer gives either
a calendar date ``2027-03-01`` or a relative span ``10d`` / ``2w`` / ``3m`` / ``1y``,
resolved to a date once, at write time, against an injected "today".

Owns: the accepted spellings, their resolution, and the due list.
Never: reads a clock itself (today is always passed in), touches files, or
accepts prose — "when we switch machines" is refused with ``E_INVALID`` at
write time, and a hand-written prose value in MEMORY.md is reported in
:attr:`DueReport.invalid`, never silently ignored.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from mmd.core.errors import ErrorCode, MMError
from mmd.core.model import IndexEntry

__all__ = ["DueReport", "DueTopic", "add_months", "due_topics", "parse_review_date", "resolve_review_after"]

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_SPAN = re.compile(r"(\d{1,5})([dwmy])", re.ASCII)
_FORMS = "a date YYYY-MM-DD (e.g. 2027-03-01) or a span from today: <N>d, <N>w, <N>m or <N>y (e.g. 10d, 2w, 3m)"


def parse_review_date(value: object) -> date:
    """A stored review date: exactly ``YYYY-MM-DD``, a real calendar day.

    Raises:
        MMError(E_INVALID): for anything else, the message quoting the value.
    """
    match = _DATE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise MMError(ErrorCode.E_INVALID, f"review date must be YYYY-MM-DD, got {value!r}")
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        raise MMError(ErrorCode.E_INVALID, f"review date {value!r} is not a calendar day (YYYY-MM-DD)") from None


def add_months(day: date, months: int) -> date:
    """``day`` plus ``months`` calendar months, the day clamped to the month's end (Jan 31 + 1m = Feb 28/29).

    Raises:
        OverflowError: past year 9999.
    """
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    if year > 9999:
        raise OverflowError("date past year 9999")
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def resolve_review_after(value: object, today: date) -> date:
    """A review date from what a writer gave: ``YYYY-MM-DD``, or ``<N>d|w|m|y`` counted from ``today``.

    Surrounding whitespace is ignored; units are lower case; ``0d`` means today
    (due at once). A date in the past is accepted (the topic is due at once).

    Args:
        value: the writer's text (CLI ``--review-after``, RPC ``reviewAfter``).
        today: the write's date (UTC), from the caller's clock.

    Raises:
        MMError(E_INVALID): for prose, an unknown unit, an impossible date, or a
            span reaching past year 9999; the message lists the accepted forms.
    """
    if not isinstance(value, str):
        raise MMError(ErrorCode.E_INVALID, f"review date must be text: {_FORMS}; got {value!r}")
    text = value.strip()
    if _DATE.fullmatch(text):
        return parse_review_date(text)
    span = _SPAN.fullmatch(text)
    if span is None:
        raise MMError(ErrorCode.E_INVALID, f"review date must be {_FORMS}; got {value!r}")
    count, unit = int(span.group(1)), span.group(2)
    try:
        if unit in "dw":
            return today + timedelta(days=count * (7 if unit == "w" else 1))
        return add_months(today, count * (12 if unit == "y" else 1))
    except OverflowError:
        raise MMError(ErrorCode.E_INVALID, f"review date {value!r} reaches past year 9999; use {_FORMS}") from None


@dataclass(frozen=True, slots=True)
class DueTopic:
    """A topic whose review date has come, or comes within the window.

    Attributes:
        topic: the slug.
        review_after: the stored date.
        days_left: whole days from today to the date: 0 due today, negative overdue, positive ahead.
    """

    topic: str
    review_after: date
    days_left: int

    def to_json(self) -> dict[str, Any]:
        """``{topic, reviewAfter: "YYYY-MM-DD", daysLeft}``."""
        return {"topic": self.topic, "reviewAfter": self.review_after.isoformat(), "daysLeft": self.days_left}


@dataclass(frozen=True, slots=True)
class DueReport:
    """Due topics, most overdue first (then by topic), and entries whose stored value is no date.

    Attributes:
        due: the topics due today or within the window.
        invalid: ``(topic, value)`` of review lines that are not ``YYYY-MM-DD`` (hand edits).
    """

    due: tuple[DueTopic, ...]
    invalid: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        """``{due: [DueTopic.to_json()], invalid: [{topic, value}]}``."""
        return {"due": [d.to_json() for d in self.due],
                "invalid": [{"topic": t, "value": v} for t, v in self.invalid]}


def due_topics(entries: Iterable[IndexEntry], today: date, within_days: int = 0) -> DueReport:
    """The topics whose review date is on or before ``today + within_days``.

    A topic listed twice in the index counts once (its first section, as
    snapshots read it).

    Args:
        entries: index entries (a snapshot's or the live index's).
        today: the date to measure from (UTC, from the caller's clock).
        within_days: also list dates up to this many days ahead; 0 = due now only.

    Raises:
        MMError(E_INVALID): if ``within_days`` is not a non-negative integer.
    """
    if isinstance(within_days, bool) or not isinstance(within_days, int) or within_days < 0:
        raise MMError(ErrorCode.E_INVALID, f"within must be a non-negative whole number of days, got {within_days!r}")
    due: list[DueTopic] = []
    invalid: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in entries:
        value = entry.review_after
        if value is None or entry.topic in seen:
            continue
        seen.add(entry.topic)
        try:
            when = parse_review_date(value)
        except MMError:
            invalid.append((entry.topic, value))
            continue
        days_left = (when - today).days
        if days_left <= within_days:
            due.append(DueTopic(entry.topic, when, days_left))
    due.sort(key=lambda d: (d.days_left, d.topic))
    return DueReport(tuple(due), tuple(invalid))
