"""Text renderings shared by the CLI and the MCP server: a budget report's lines, a queue answer's candidates.

Owns: turning the core's and the daemon's JSON values into what a person or a
model reads, where both surfaces print the same thing. Never does: I/O, or
reaching the memory (callers pass the values in).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["budget_lines", "candidates"]


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
