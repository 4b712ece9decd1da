"""Moving notes from one root to another (``mmctl project adopt``: the user root into a project's, issue 27).

The notes are written to the target first (one group commit: one index rewrite,
budgets checked in order, each note's summary, tags, write budget and review date
kept), then deleted from the source. An interruption between the two leaves a note
in both roots, never in neither; moving it again finds it already in the target
with the same body, and only deletes it from the source. A topic the target holds
with another body is refused before anything is written (merge or rename first).

Owns: :func:`move_notes`. Never: takes a lock itself (the stores' do, or the
daemon's), or decides which root is which.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import ErrorCode, MMError
from .store import MemoryStore
from .text import validate_topic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["move_notes"]


def move_notes(source: MemoryStore, target: MemoryStore, topics: Sequence[str]) -> dict[str, Any]:
    """Move ``topics`` from ``source``'s root to ``target``'s.

    Returns:
        ``{ok, moved: [topics now only in the target], refused: [{topic, code, message}]}``; ``ok`` when every
        topic moved. A topic the target's budgets refuse stays in the source (nothing lost).

    Raises:
        MMError(E_INVALID): for a bad topic, or one the source has no note for (nothing is moved then).
        MMError(E_CONFLICT): when the target has a note of that topic with another body (nothing is moved then).
        MMError(E_PARSE | E_IO): as the stores' reads and writes.
    """
    wanted = [validate_topic(t) for t in dict.fromkeys(topics)]
    if not wanted:
        raise MMError(ErrorCode.E_INVALID, "no topic to move")
    mine = {e.topic: e for e in source.live_state().entries}
    missing = [t for t in wanted if t not in mine]
    if missing:
        raise MMError(ErrorCode.E_INVALID, f"the user root has no note {', '.join(missing)} to move",
                      details=missing[0])
    bodies = {t: _body(source, mine[t].file) for t in wanted}
    theirs = {e.topic: e for e in target.live_state().entries}
    for topic in wanted:
        if topic in theirs and _body(target, theirs[topic].file) != bodies[topic]:
            raise MMError(ErrorCode.E_CONFLICT, f"the project root already has another note {topic}: merge or "
                          "rename one of them first; nothing was moved", details=topic)
    writes = []
    for topic in wanted:
        if topic in theirs:
            continue
        e = mine[topic]
        writes.append((topic, bodies[topic], {"summary": e.summary, "tags": ",".join(e.tags),
                                              "budget": e.write_budget, "updated": e.updated,
                                              "review_after": e.review_after or None}))
    refused: list[dict[str, Any]] = []
    done = target.write_many(writes) if writes else []
    for (topic, _, _), result in zip(writes, done, strict=True):
        if result.outcome is None or not result.outcome.get("ok"):
            why = result.outcome or {}
            error = result.error
            refused.append({"topic": topic, "code": str(error.code if error else why.get("code")),
                            "message": error.message if error else str(why.get("message"))})
    failed = {r["topic"] for r in refused}
    moved = [t for t in wanted if t not in failed]
    for topic in moved:
        source.delete(topic)
    return {"ok": not refused, "moved": moved, "refused": refused}


def _body(store: MemoryStore, rel: str) -> str:
    """A note's body as its file holds it ('' when the file is missing)."""
    from .snapshot import read_note_sized

    found = read_note_sized(store.root, rel)
    return "" if found is None else found[0]
