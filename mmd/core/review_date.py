"""Review dates of topics: the accepted spellings and their resolution to a calendar day (issue 14).

Owns: :func:`parse_review_date` (a stored ``YYYY-MM-DD``) and :func:`resolve_review_after`
(a writer's date or relative span ``10d``/``2w``/``3m``/``1y``, resolved once at write time).
Never: reads a clock (today is passed in) or touches files. Which topics are due is
:mod:`mmd.inject.due`'s business; it lives above the core.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from .errors import ErrorCode, MMError

__all__ = ["add_months", "parse_review_date", "resolve_review_after"]

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
    import calendar  # with its locale: only a relative span in months pays for it

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
