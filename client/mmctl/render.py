"""Text renderings shared by the CLI and the MCP server: a budget report's lines, a queue answer's candidates (what an
agent's proposal changes is :func:`mmd.candidates.labels.proposal_lines`, which the review page shows too).

Owns: turning the core's and the daemon's JSON values into what a person or a
model reads, where both surfaces print the same thing. Never does: I/O, or
reaching the memory (callers pass the values in).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["budget_lines", "candidates", "columns", "cut", "table", "terminal_width", "wrap"]


def budget_lines(report: dict[str, Any]) -> list[str]:
    """The reference's text form of a budget report."""
    index, detail, anomalies = report["index"], report["detail"], report["anomalies"]
    over = " — OVER BUDGET" if index["overBudget"] else ""
    odd = ""
    if anomalies["danglingEntries"] > 0 or anomalies["orphanFiles"]:
        odd = f"\nanomalies: {anomalies['danglingEntries']} dangling, {len(anomalies['orphanFiles'])} orphan"
    return [
        f"memory root: {report['root']}",
        f"snapshot: {report['loadedAt']} ({report['pendingWrites']} pending write(s))",
        f"index: {index['entries']} entries, {index['lines']}/{index['lineCap']} lines, "
        f"{index['bytes']}/{index['byteCap']} bytes{over}",
        f"notes: {detail['noteCount']}, {detail['totalBodyChars']} chars / {detail['totalBytes']} bytes "
        f"(max {detail['maxBytes']}/file)",
        f"search engine: {report['search']['engine']}{odd}",
        "",
        *(f"- {t['topic']}: {t['bodyChars']}/{t['writeBudget']} chars ({t['budgetUsedPct']}%)"
          for t in report["perTopic"]),
    ]


def candidates(result: Any) -> list[dict[str, Any]]:
    """The candidates of a ``queue.list`` answer (``{candidates, total, pending, …}``; a bare list is taken as is)."""
    items = result.get("candidates") if isinstance(result, dict) else result
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def terminal_width(default: int = 100) -> int:
    """The terminal's width in columns (``$COLUMNS`` or the tty's), else ``default``."""
    import shutil

    return max(40, shutil.get_terminal_size((default, 24)).columns)


def cut(text: Any, width: int) -> str:
    """``text`` on one line (line breaks become spaces), cut to ``width`` code points with ``…`` when longer."""
    one = " ".join(str(text).split())
    return one if len(one) <= width else one[:max(0, width - 1)] + "…"


def columns(text: str) -> int:
    """The columns ``text`` takes on a terminal: 2 for a wide character (CJK, fullwidth), 0 for a combining mark."""
    import unicodedata

    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap(text: Any, width: int, indent: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` columns (:func:`columns`), each line of it wrapped at spaces, each
    starting with ``indent``; a list item's lines hang under its text. A word wider than the room is split
    (a CJK sentence, written without spaces, wraps at the column). Blank lines stay; nothing is dropped."""
    import re

    out: list[str] = []
    for line in str(text).splitlines() or [""]:
        lead = re.match(r"\s*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?", line)
        head = lead.group(0) if lead else ""
        hang = indent + " " * columns(head)
        room = max(8, width - columns(hang))
        current, used = indent + head, columns(indent + head)
        start = len(current)
        for word in line[len(head):].split():
            for piece in _pieces(word, room):
                need = columns(piece) + (1 if len(current) > start else 0)
                if len(current) > start and used + need > width:
                    out.append(current)
                    current, used, start = hang, columns(hang), len(hang)
                    need = columns(piece)
                current += (" " if len(current) > start else "") + piece
                used += need
        out.append(current.rstrip() if current.strip() else "")
    return out


def _pieces(word: str, room: int) -> list[str]:
    """``word`` split into pieces of at most ``room`` columns (itself when it fits)."""
    if columns(word) <= room:
        return [word]
    pieces, piece = [], ""
    for ch in word:
        if piece and columns(piece + ch) > room:
            pieces.append(piece)
            piece = ""
        piece += ch
    return [*pieces, piece] if piece else pieces


def table(rows: list[tuple[Any, ...]], caps: tuple[int | None, ...], width: int | None = None) -> list[str]:
    """Rows (the first is the header) as aligned columns two spaces apart, each cell cut with ``…``.

    Args:
        caps: the widest each column may be, in code points (None: no cap); the last column also
            shrinks so that a line fits in ``width`` (never below 12).
        width: the line width to fit (None: no fitting).
    """
    cells = [[cut(c, cap) if cap else cut(c, 10_000) for c, cap in zip(r, caps, strict=True)] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(caps))]
    if width is not None and cells:
        room = max(12, width - sum(widths[:-1]) - 2 * (len(widths) - 1))
        for r in cells:
            r[-1] = cut(r[-1], room)
        widths[-1] = max(len(r[-1]) for r in cells)
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
