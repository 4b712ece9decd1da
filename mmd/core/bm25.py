"""Okapi BM25 arithmetic for the FTS5 engine (mm v1 §8): per-term contributions, the top rows.

Owns the score maths the FTS5 engine needs beside SQLite: SQLite FTS5's own
``bm25()`` constants and formula (``ext/fts5/fts5_aux.c``) applied to the scan
engine's weighted token counts, and picking the best rows of a score column.
Never touches SQLite, notes or text: callers hand it numbers.

A *column* is a list with one float per row position (0.0 = no score). A term's *contribution* to a row is
``idf * (f * (K1 + 1)) / (f + K1 * (1 - B + B * D / avgdl))`` where ``f`` is the
term's frequency in the row and ``D`` the row's length in tokens; a row's bm25
score is the sum of its terms' contributions in query order (FTS5 returns it
negated as ``rank``). The loops run in C (``map``).
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Sequence
from itertools import compress, repeat

__all__ = ["B", "K1", "idf", "length_norms", "term_contributions", "top_rows"]

K1 = 1.2
"""FTS5's bm25 term-frequency saturation ``k1``."""
B = 0.75
"""FTS5's bm25 length normalisation ``b``."""
_IDF_FLOOR = 1e-6
"""FTS5 replaces an idf <= 0 (a term in more than half the rows) by this."""


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency of a term found in ``hits`` of ``rows`` rows (never <= 0)."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else _IDF_FLOOR


def length_norms(lengths: Sequence[int]) -> list[float]:
    """Per row ``K1 * (1 - B + B * D / avgdl)`` for row lengths ``D`` in tokens (empty rows count)."""
    avgdl = (sum(lengths) / len(lengths)) if lengths else 1.0
    avgdl = avgdl or 1.0
    return [K1 * (1 - B + B * length / avgdl) for length in lengths]


def term_contributions(weight: float, positions: Sequence[int], freqs: Sequence[int],
                       norms: Sequence[float]) -> list[float]:
    """One term's bm25 contribution to each of the given rows.

    Args:
        weight: the term's :func:`idf`.
        positions: rows that hold the term.
        freqs: the term's frequency in each of those rows (> 0), same order.
        norms: :func:`length_norms` of all rows (all > 0), by position.

    Returns:
        The contributions, in ``positions``' order.
    """
    ratio = map(operator.truediv, map(operator.mul, freqs, repeat(K1 + 1.0)),
                map(operator.add, freqs, map(norms.__getitem__, positions)))
    return list(map(operator.mul, repeat(weight), ratio))


def top_rows(scores: Sequence[float], count: int) -> list[tuple[int, float]]:
    """The ``count`` best ``(position, score)`` pairs with a score > 0: score descending, ties by position."""
    if count <= 0 or not scores:
        return []
    best = heapq.nlargest(count, scores)
    floor = best[-1]
    if floor <= 0.0:
        floor = min((s for s in best if s > 0.0), default=0.0)
        if floor <= 0.0:
            return []
    positions = compress(range(len(scores)), map(operator.ge, scores, repeat(floor)))
    ranked = sorted(((pos, scores[pos]) for pos in positions), key=lambda row: -row[1])
    return ranked[:count]
