"""Deterministic budget arithmetic shared by writes and reports (mm v1 §6).

Units: lines by the §1 rule, UTF-8 bytes, code points. Nothing here writes.
"""

from __future__ import annotations

import re

from .lazyre import lazy_compile
from .text import JS_WS, byte_length, count_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

__all__ = ["IndexUsage", "budget_pct", "index_usage"]

# JavaScript's /^##\s+\S/gm: a line starts after \n, \r, U+2028 or U+2029.
_ENTRY_LINE = lazy_compile(f"(?:^|(?<=[\r\u2028\u2029]))##[{JS_WS}]+[^{JS_WS}]", re.MULTILINE)
# With LF breaks only, a literal-prefixed pattern lets the regex engine skip ahead fast.
_ENTRY_AFTER_LF = lazy_compile(f"\n##[{JS_WS}]+[^{JS_WS}]")
_ENTRY_AT_START = lazy_compile(f"##[{JS_WS}]+[^{JS_WS}]")


if TYPE_CHECKING:
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

else:
    IndexUsage = dict

def index_usage(text: str, index_lines: int, index_bytes: int, size: int | None = None,
                entries: int | None = None, lines: int | None = None) -> IndexUsage:
    """Measure index ``text`` against ``index_lines`` (lines) and ``index_bytes`` (UTF-8 bytes).

    ``size`` (``text``'s UTF-8 length), ``entries`` (its ``## <x>`` line count) and ``lines``
    (:func:`~.text.count_lines`) may be passed when the caller already knows them.
    """
    lines = count_lines(text) if lines is None else lines
    size = byte_length(text) if size is None else size
    return {
        "entries": _count_entries(text) if entries is None else entries,
        "lines": lines,
        "bytes": size,
        "lineCap": index_lines,
        "byteCap": index_bytes,
        "overBudget": lines > index_lines or size > index_bytes,
        "overflowLines": max(0, lines - index_lines),
        "overflowBytes": max(0, size - index_bytes),
    }


def _count_entries(text: str) -> int:
    """Lines matching JavaScript's ``/^##\\s+\\S/gm``."""
    if "\r" in text or "\u2028" in text or "\u2029" in text:
        return len(_ENTRY_LINE.findall(text))
    return len(_ENTRY_AFTER_LF.findall(text)) + (1 if _ENTRY_AT_START.match(text) else 0)


def budget_pct(chars: int, budget: int) -> int:
    """``round(chars / budget * 100)`` clamped to 0..100, halves up (JS ``Math.round``); 0 if budget ≤ 0."""
    if budget <= 0:
        return 0
    pct = int((chars / budget * 100 + 0.5) // 1)  # math.floor, without importing math for it
    return min(100, max(0, pct))
