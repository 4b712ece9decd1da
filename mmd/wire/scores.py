"""A candidate's score as every view shows it, and the score filters that read it so.

The queue stores a score to four decimals (:mod:`mmd.daemon.queue`); ``mmctl queue list``, ``mmctl review`` and the
review page show it to two (``0.596`` as ``0.60``). ``queue reject --below S`` and ``queue list --min-score S`` compare
the score as shown, so a candidate listed as ``0.60`` is not below 0.6 and is at 0.6 or more. Imports only the
standard library.
"""

from __future__ import annotations

import math

__all__ = ["score_text", "shown_at_least"]

_STORED = 10_000
"""The queue stores a score rounded to four decimals."""


def score_text(score: float) -> str:
    """``score`` as shown: two decimals, correctly rounded (``0.596`` → ``"0.60"``, ``0.705`` → ``"0.70"``, as the
    double nearest 0.705 is below it)."""
    return f"{score:.2f}"


def shown_at_least(threshold: float) -> float:
    """The least stored score (four decimals) whose :func:`score_text` is ``threshold`` or more: for a stored score
    ``s``, ``s < shown_at_least(t)`` means "shown below t" and ``s >= shown_at_least(t)`` "shown at t or more", so SQL
    can filter on the stored column. ``threshold`` is finite (``mmctl`` checks ``--below`` and ``--min-score``); one
    too large or too small for four decimals to matter comes back as it is."""
    start = math.floor(threshold * _STORED) - 100
    for k in range(start, start + 201):
        stored = round(k / _STORED, 4)
        if float(score_text(stored)) >= threshold:
            return stored
    return threshold
