"""Text renderings shared by the CLI and the MCP server: a budget report's lines, a queue answer's candidates, what
an agent's proposal changes.

Owns: turning the core's and the daemon's JSON values into what a person or a
model reads, where both surfaces print the same thing. Never does: I/O, or
reaching the memory (callers pass the values in).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["budget_lines", "candidates", "cut", "proposal_lines", "table", "terminal_width"]


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


def proposal_lines(candidate: dict[str, Any]) -> list[str]:
    """What a review shows of an agent's proposal (rule ``agent.propose``; ``[]`` for any other candidate): who
    proposed it and why, then what accepting changes — a unified diff of the note's text now (``proposal.current``)
    against the proposed one for ``replace``, the note's text for ``delete`` (gone once accepted), the note it adds to
    for ``append``."""
    proposal = candidate.get("proposal") or {}
    if candidate.get("rule") != "agent.propose":
        return []
    action, topic, current = proposal.get("action"), proposal.get("topic", ""), proposal.get("current")
    reason = proposal.get("reason")
    out = [f"proposed by {proposal.get('by') or 'an agent'}: {reason}" if reason else
           f"proposed by {proposal.get('by') or 'an agent'} (no reason given)"]
    if action == "replace" and isinstance(current, str):
        import difflib

        diff = difflib.unified_diff(current.splitlines(), str(candidate.get("body", "")).splitlines(),
                                    f"{topic} (now)", f"{topic} (proposed)", n=2, lineterm="")
        out += [f"replaces the text of {topic}:", *diff]
    elif action == "delete":
        out.append(f"deletes {topic}; its text now:")
        out += [f"- {line}" for line in (current or "").splitlines()] or ["(no note of that name now)"]
    elif action == "append":
        missing = "" if isinstance(current, str) else " (no note of that name now: accepting creates it)"
        out.append(f"appends to {topic}{missing}")
    return out
