"""Deterministic budget arithmetic shared by writes and reports (mm v1 §6).

Units: lines by the §1 rule, UTF-8 bytes, code points. Nothing here writes.
"""

from __future__ import annotations

import math
import re
from typing import TypedDict

from .text import JS_WS, byte_length, count_lines

__all__ = ["IndexUsage", "budget_pct", "index_usage"]

# JavaScript's /^##\s+\S/gm: a line starts after \n, \r, U+2028 or U+2029.
_ENTRY_LINE = re.compile(f"(?:^|(?<=[\r\u2028\u2029]))##[{JS_WS}]+[^{JS_WS}]", re.MULTILINE)


class IndexUsage(TypedDict):
    """MEMORY.md against its caps: ``entries`` counts ``## <x>`` lines; lines; UTF-8 bytes."""

    entries: int
    lines: int
    bytes: int
    lineCap: int
    byteCap: int
    overBudget: bool
    overflowLines: int
    overflowBytes: int


def index_usage(text: str, index_lines: int, index_bytes: int) -> IndexUsage:
    """Measure index ``text`` against ``index_lines`` (lines) and ``index_bytes`` (UTF-8 bytes)."""
    lines = count_lines(text)
    size = byte_length(text)
    return {
        "entries": len(_ENTRY_LINE.findall(text)),
        "lines": lines,
        "bytes": size,
        "lineCap": index_lines,
        "byteCap": index_bytes,
        "overBudget": lines > index_lines or size > index_bytes,
        "overflowLines": max(0, lines - index_lines),
        "overflowBytes": max(0, size - index_bytes),
    }


def budget_pct(chars: int, budget: int) -> int:
    """``round(chars / budget * 100)`` clamped to 0..100, halves up (JS ``Math.round``); 0 if budget ≤ 0."""
    if budget <= 0:
        return 0
    pct = math.floor(chars / budget * 100 + 0.5)
    return min(100, max(0, pct))
