"""Merging notes into one (issue 13, mm v1 §6): the store's consolidation, in a module of its own.

Owns: :func:`merge_notes`, which :meth:`.store.MemoryStore.merge` runs with the store's lock, index state,
budgets and files; the joined text is screened as a write's is (:mod:`.screening`), and the texts it
replaces and deletes are kept first (:mod:`.versions`). Never: called but through the store.
"""

from __future__ import annotations

from .errors import BudgetCode, ErrorCode, MMError
from .format import serialize_note
from .model import IndexEntry
from .paths import detail_rel
from .screening import check_carried
from .snapshot import read_note_sized
from .text import (
    byte_length,
    check_write_fields,
    fold_line_breaks,
    js_trim,
    normalize_line,
    parse_tags,
    refuse_case_twin,
    validate_topic,
)
from .uri import uri_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .store import MemoryStore, Number

__all__ = ["merge_notes"]


def merge_notes(store: MemoryStore, topics: list[str], into: str, *, summary: str | None, allow_hidden: bool,
                allow_secret: bool, number: Number) -> dict[str, Any]:
    """Consolidate notes (issue 13, mm v1 §6): ``into`` gets the bodies of ``into`` (when it has a note) and
    ``topics`` joined by a blank line, in that order; the other notes are deleted; MEMORY.md is written once.

    The joined note takes ``summary`` if given (one line), else ``into``'s (else the first note's), the tags'
    union and a write budget of at least its length. The index check is the write's, except that a merge
    that shrinks the index (fewer lines or bytes than before) is allowed even while the index is over its caps.
    The joined text, summary and tags are screened as a write's (``allow_hidden``, ``allow_secret``); in the
    version history the merge is one revision (``number``): ``into`` written, the others deleted.

    Returns:
        ``{ok: True, topic, uri, action, merged: [topics deleted], usage, allowed?}`` or the write's
        ``{ok: False, code, message, reason, usage, topic}`` (then nothing changed).

    Raises:
        MMError(E_INVALID): for a bad topic or summary, no topic to merge, a topic without a note, or hidden text.
        MMError(E_SECRET): for a secret in the notes or the summary, without ``allow_secret``.
        MMError(E_PARSE | E_IO): as a write; a crash leaves orphan note files, never a lost entry.
    """
    from .store import _failure
    from .versions import NewVersion

    into = validate_topic(into)
    others = [validate_topic(t) for t in dict.fromkeys(topics) if t != into]
    if not others:
        raise MMError(ErrorCode.E_INVALID, "merge needs at least one topic other than 'into'")
    check_write_fields(None, summary=summary, tags=None, updated=None)
    o = store.options
    with store._lock():
        state = store.live_state()
        by_topic = {e.topic: e for e in state.entries}
        missing = [t for t in others if t not in by_topic]
        if missing:
            raise MMError(ErrorCode.E_INVALID, f"no note to merge: {', '.join(missing)}", details=missing[0])
        parts = [by_topic[t] for t in ([into] if into in by_topic else []) + others]
        bodies = [js_trim((read_note_sized(store.root, e.file) or ("", 0))[0]) for e in parts]
        content = "\n\n".join(b for b in bodies if b)
        head_summary = (by_topic.get(into) or parts[0]).summary if summary is None else summary
        tags = ", ".join(dict.fromkeys(t for e in parts for t in e.tags))
        allowed = check_carried({"content": content, "summary": head_summary, "tags": tags}, screen=store.screen,
                                allow_hidden=allow_hidden, allow_secret=allow_secret)
        budget = max(o.default_write_budget, len(content), *(e.write_budget for e in parts))
        usage = store._write_usage(len(content), budget, 0, state.usage)
        if not content:
            return _failure(into, "E_INVALID", "the notes to merge have no body", usage)
        note_text = serialize_note(topic=into, memory_id=o.memory_id, file=detail_rel(into), body=content)
        usage["noteBytes"] = byte_length(note_text)
        if usage["noteBytes"] > o.detail_max_bytes:
            return _failure(into, BudgetCode.E_FILE_BUDGET_EXCEEDED,
                            "the merged note exceeds its byte cap; condense the notes first (see usage)", usage)
        if into not in by_topic:
            refuse_case_twin(into, (e.topic for e in state.entries if e.topic not in others))
        after = state
        for topic in others:
            after = store._next_state(after, topic, None)
        entry = IndexEntry(topic=into, memory_id=o.memory_id,
                           summary=normalize_line(fold_line_breaks(head_summary)), tags=tuple(parse_tags(tags)),
                           file=detail_rel(into), updated=store._now_iso(), body_chars=len(content),
                           write_budget=budget, entry_body=by_topic[into].entry_body if into in by_topic else "")
        after = store._next_state(after, into, entry)
        usage["index"] = after.usage
        before = state.usage
        shrinks = after.usage["lines"] < before["lines"] or after.usage["bytes"] < before["bytes"]
        if after.usage["overBudget"] and not shrinks:
            return _failure(into, BudgetCode.E_INDEX_BUDGET_EXCEEDED,
                            "the MEMORY.md index would exceed its hard limit (see usage.index)", usage)
        revision = number()
        store._keep_replaced({e.topic: e for e in parts}, revision - 1)
        store._write_files({f"{into}.md": note_text.encode()}, after)
        for e in parts:
            if e.topic != into and e.file != detail_rel(into):
                store._remove_note(e.file)
        store._keep([NewVersion(into, revision, "merge", content, entry.summary, ", ".join(entry.tags), budget,
                                allowed), *(NewVersion(t, revision, "merge", None) for t in others)])
    done: dict[str, Any] = {"ok": True, "topic": into, "uri": uri_for(o.memory_id, into),
                            "action": "updated" if into in by_topic else "created", "merged": others, "usage": usage}
    if allowed:
        done["allowed"] = allowed
    return done
