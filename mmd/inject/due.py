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

from mmd.core.errors import ErrorCode, MMError
from mmd.core.record import Record
from mmd.core.review_date import add_months, parse_review_date, resolve_review_after

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import date
    from typing import Any

    from mmd.core.model import IndexEntry

__all__ = ["DueReport", "DueTopic", "add_months", "due_topics", "parse_review_date", "resolve_review_after"]

class DueTopic(Record):
    """A topic whose review date has come, or comes within the window.

    Attributes:
        topic: the slug.
        review_after: the stored date.
        days_left: whole days from today to the date: 0 due today, negative overdue, positive ahead.
    """

    __slots__ = ("topic", "review_after", "days_left")

    def __init__(self, topic: str, review_after: date, days_left: int) -> None:
        self.topic, self.review_after, self.days_left = topic, review_after, days_left

    def to_json(self) -> dict[str, Any]:
        """``{topic, reviewAfter: "YYYY-MM-DD", daysLeft}``."""
        return {"topic": self.topic, "reviewAfter": self.review_after.isoformat(), "daysLeft": self.days_left}


class DueReport(Record):
    """Due topics, most overdue first (then by topic), and entries whose stored value is no date.

    Attributes:
        due: the topics due today or within the window.
        invalid: ``(topic, value)`` of review lines that are not ``YYYY-MM-DD`` (hand edits).
    """

    __slots__ = ("due", "invalid")

    def __init__(self, due: tuple[DueTopic, ...], invalid: tuple[tuple[str, str], ...]) -> None:
        self.due, self.invalid = due, invalid

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
