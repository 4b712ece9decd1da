"""What the review page's templates show, built from the methods' JSON: groups, meters, outcome sentences.

Owns: grouping candidates (by project, session or kind) and index entries (by
tag, date or due date), a card's one line of provenance, the budget meters'
figures, and the sentence a decision's outcome becomes (a budget refusal with
its figures). Pure functions over JSON values: never calls a method, never
reads a file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import Any

from mmd.candidates.labels import project_of, rank_key
from mmd.core.model import REVIEW_AFTER_LINE

__all__ = ["CANDIDATE_GROUPS", "ENTRY_GROUPS", "candidate_groups", "entry_groups", "outcome_text", "provenance",
           "review_after_of"]

CANDIDATE_GROUPS = ("project", "session", "kind")
"""How the queue view groups candidates."""
ENTRY_GROUPS = ("tag", "date", "due")
"""How the memory view groups index entries."""


def candidate_groups(candidates: Iterable[dict[str, Any]], by: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """``[(group label, candidates)]``: candidates by score (highest first, then oldest, flagged ones last), groups by
    their best.

    Args:
        by: one of :data:`CANDIDATE_GROUPS` (anything else groups by project).
    """
    keys: dict[str, Callable[[dict[str, Any]], str]] = {
        "project": project_of,
        "session": lambda c: str((c.get("source") or {}).get("sessionId") or "(no session)"),
        "kind": lambda c: str(c.get("kind") or "(no kind)"),
    }
    key = keys.get(by, project_of)
    groups: dict[str, list[dict[str, Any]]] = {}
    for cand in sorted(candidates, key=rank_key):
        groups.setdefault(key(cand), []).append(cand)
    return sorted(groups.items(), key=lambda kv: rank_key(kv[1][0]))


def provenance(cand: dict[str, Any]) -> str:
    """Where a candidate was first said, in one short line: ``human · claude-code · shop · 2026-02-26`` (who, agent,
    the project's last folder, the day); a candidate without evidence names its session, source and day."""
    first = next((e for e in cand.get("evidence") or [] if isinstance(e, dict)), None)
    if first is None:
        source = cand.get("source") or {}
        parts = [source.get("kind"), f"session {source.get('sessionId')}" if source.get("sessionId") else None,
                 str(cand.get("createdAt") or "")[:10]]
    else:
        project = str(first.get("project") or "")
        parts = [first.get("who"), first.get("agent"), PurePath(project).name or project or None,
                 str(first.get("at") or "")[:10]]
    return " · ".join(str(p) for p in parts if p)


def review_after_of(entry: dict[str, Any]) -> str | None:
    """The entry's ``- **review-after:**`` value from its ``entryBody`` (verbatim), or None."""
    found = REVIEW_AFTER_LINE.search(entry.get("entryBody") or "")
    return found.group(1) if found else None


def entry_groups(entries: Iterable[dict[str, Any]], by: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """``[(group label, entries)]`` of index entries (the ``memory.index`` JSON).

    ``tag``: one group per tag (an entry shows under each of its tags; ``(untagged)`` last);
    ``date``: by the day of ``updated``, newest first; ``due``: by review date, soonest first,
    ``(no review date)`` last.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    rows = list(entries)
    if by == "date":
        for e in sorted(rows, key=lambda e: e.get("updated") or "", reverse=True):
            groups.setdefault((e.get("updated") or "")[:10] or "(no date)", []).append(e)
        return list(groups.items())
    if by == "due":
        for e in sorted(rows, key=lambda e: (review_after_of(e) is None, review_after_of(e) or "", e["topic"])):
            groups.setdefault(review_after_of(e) or "(no review date)", []).append(e)
        return list(groups.items())
    for e in sorted(rows, key=lambda e: e["topic"]):
        for tag in e.get("tags") or ["(untagged)"]:
            groups.setdefault(tag, []).append(e)
    return sorted(groups.items(), key=lambda kv: (kv[0] == "(untagged)", kv[0]))


def outcome_text(topic: str, write: dict[str, Any], after: str = "still pending") -> str:
    """A refused write, in a sentence with its figures (characters are code points, sizes UTF-8 bytes), ending in
    ``after`` (what became of what was refused: a candidate is ``still pending``; an edit ``your text is kept``)."""
    usage = write.get("usage") or {}
    code = write.get("code")
    if code == "E_INDEX_BUDGET_EXCEEDED":
        index = usage.get("index") or {}
        return (f"{topic}: the index would be over its caps — {index.get('lines')}/{index.get('lineCap')} lines, "
                f"{index.get('bytes')}/{index.get('byteCap')} bytes; nothing written, {after}. Append it to a note "
                "instead (the index keeps its size), or merge notes first (mmctl merge A B --into C)")
    if code == "E_FILE_BUDGET_EXCEEDED":
        return (f"{topic}: the note would be {usage.get('noteBytes')} bytes against its cap of "
                f"{usage.get('noteMaxBytes')}; nothing written, {after}")
    if usage.get("overflow"):
        return (f"{topic}: over budget — {usage.get('bodyChars')} characters against a write budget of "
                f"{usage.get('writeBudget')} ({usage.get('overflow')} too many); nothing written, {after}")
    return f"{topic}: not written — {write.get('message') or write.get('reason') or 'refused'}; {after}"
