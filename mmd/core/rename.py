"""Renaming a topic (issue 30): which links follow it, and what one rename changes in the notes and the index.

Owns: the link rule (:func:`rewrite_links`: ``mm://<memoryId>/OLD`` and ``mm:OLD`` in a note's
body or in an index entry's free lines become NEW's; ``mm:OLD-x``, ``mm:OLD.v2``, ``xmm:OLD``
and ``mm://another-memory/OLD`` name something else and stay; a sentence's final ``.`` after
the topic is not part of it), and planning a rename over the live index (:func:`plan_rename`):
the entries to replace, in order, and the note texts to write (NEW's note under its own
``mm-topic`` and ``mm-file`` meta lines, every other note that links to OLD). A note keeps its
write budget, raised to fit when its links grew; ``updated`` moves only for a text that changed.
The store checks the caps and writes (:meth:`.store.MemoryStore.rename`); :func:`live_body` is the
one read a rename makes of a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import BudgetCode, ErrorCode, MMError
from .format import serialize_note
from .model import IndexEntry
from .paths import DETAIL_DIR, detail_rel
from .record import Record
from .snapshot import read_note_sized
from .text import validate_topic
from .uri import uri_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .store import MemoryStore

__all__ = ["RenamePlan", "live_body", "plan_rename", "rename_topic", "rewrite_links"]

_AFTER = r"(?![A-Za-z0-9_\-]|\.+[A-Za-z0-9_\-])"
"""What may follow a linked topic: no more of a slug (a run of dots ending the sentence is not one)."""


def rewrite_links(text: str, old: str, new: str, memory_id: str) -> str:
    """``text`` with every link to ``old`` in this memory (``memory_id``) pointing at ``new`` (see the module doc)."""
    if old not in text:
        return text
    canonical = re.compile(rf"(?<![A-Za-z0-9])mm://{re.escape(memory_id)}/{re.escape(old)}{_AFTER}")
    shorthand = re.compile(rf"(?<![A-Za-z0-9])mm:{re.escape(old)}{_AFTER}")
    return shorthand.sub(f"mm:{new}", canonical.sub(f"mm://{memory_id}/{new}", text))


class RenamePlan(Record):
    """What one rename writes.

    Attributes:
        entries: ``[(topic, entry or None)]`` to replace in the index in this order (OLD's removed first).
        notes: ``{file name under memories/: note bytes}`` to write, NEW's first.
        linked: the other topics whose note or entry now links to NEW, sorted.
        removed: OLD's note file (root-relative) to remove once the rest is written.
        body_chars: NEW's body length in code points. write_budget: NEW's write budget.
    """

    __slots__ = ("entries", "notes", "linked", "removed", "body_chars", "write_budget")

    def __init__(self, entries: list[tuple[str, IndexEntry | None]], notes: dict[str, bytes], linked: list[str],
                 removed: str, body_chars: int, write_budget: int) -> None:
        self.entries, self.notes, self.linked, self.removed = entries, notes, linked, removed
        self.body_chars, self.write_budget = body_chars, write_budget


def plan_rename(entries: Sequence[IndexEntry], old: str, new: str, body_of: Callable[[IndexEntry], str | None], *,
                memory_id: str, now: str) -> RenamePlan:
    """The plan of renaming ``old`` to ``new`` (both valid slugs) over the live ``entries``.

    Args:
        body_of: a note's body as its file holds it now (None when the file is missing).
        memory_id: the memory's id (its canonical links). now: ``updated`` of the texts that change.

    Raises:
        MMError(E_INVALID): when ``old`` equals ``new``, ``old`` has no note (or its file is missing), or ``new``
            has one already (``details``: that topic).
        MMError(E_CONFLICT): when ``new`` differs only by case from a topic there is (``old`` included).
    """
    by_topic = {e.topic: e for e in entries}
    if old == new:
        raise MMError(ErrorCode.E_INVALID, f"{old} is already called {new}: nothing to rename", details=old)
    if old not in by_topic:
        raise MMError(ErrorCode.E_INVALID, f"no note {old} to rename", details=old)
    if new in by_topic:
        raise MMError(ErrorCode.E_INVALID, f"mm://{memory_id}/{new} already has a note: rename refused, nothing "
                      f"changed (join them with `mmctl merge {old} {new} --into {new}`)", details=new)
    twin = next((t for t in by_topic if t.lower() == new.lower()), None)
    if twin is not None:
        raise MMError(ErrorCode.E_CONFLICT, f"{new!r} differs only by case from the topic {twin!r}: rename refused "
                      "(one file on case-insensitive file systems)", details=twin)
    source = by_topic[old]
    body = body_of(source)
    if body is None:
        raise MMError(ErrorCode.E_INVALID, f"{source.file} is missing: there is no text to rename; `mmctl doctor` "
                      "says how to mend it", details=old)
    moved = rewrite_links(body, old, new, memory_id)
    renamed = source.replace(topic=new, file=detail_rel(new), body_chars=len(moved),
                             write_budget=max(source.write_budget, len(moved)),
                             entry_body=rewrite_links(source.entry_body, old, new, memory_id),
                             updated=now if moved != body else source.updated)
    plan = RenamePlan([(old, None), (new, renamed)],
                      {f"{new}.md": _note(new, memory_id, moved)}, [], source.file, len(moved),
                      renamed.write_budget)
    for entry in entries:
        if entry.topic == old:
            continue
        text = body_of(entry)
        linked_body = rewrite_links(text, old, new, memory_id) if text is not None else None
        linked_entry = rewrite_links(entry.entry_body, old, new, memory_id)
        if linked_body == text and linked_entry == entry.entry_body:
            continue
        changed = entry.replace(entry_body=linked_entry)
        if linked_body is not None and linked_body != text:
            changed = changed.replace(file=detail_rel(entry.topic), body_chars=len(linked_body), updated=now,
                                      write_budget=max(entry.write_budget, len(linked_body)))
            plan.notes[f"{entry.topic}.md"] = _note(entry.topic, memory_id, linked_body)
        plan.entries.append((entry.topic, changed))
        plan.linked.append(entry.topic)
    plan.linked.sort()
    return plan


def live_body(root: Path, entry: IndexEntry) -> str | None:
    """The body of ``entry``'s note as its file holds it now, or None when the
    file is missing or cannot be read as a note (such a note keeps its links: it is not rewritten)."""
    try:
        found = read_note_sized(root, entry.file)
    except (MMError, OSError):
        return None
    return found[0] if found is not None else None


def _note(topic: str, memory_id: str, body: str) -> bytes:
    return serialize_note(topic=topic, memory_id=memory_id, file=detail_rel(topic), body=body).encode()


def rename_topic(store: MemoryStore, old: str, new: str) -> dict[str, Any]:
    """Rename the topic ``old`` to ``new`` of ``store``'s root (issue 30, :meth:`.store.MemoryStore.rename`) in one
    write of the index: NEW's note (meta lines included) and entry, the other notes and entries linking to OLD
    (:mod:`.rename`); then OLD's file goes.

    Budgets are the write's: each note written must fit the file cap, and the index its caps unless the
    rename shrinks it. A note that cannot be read keeps its links (it is not rewritten).

    Returns:
        ``{ok: True, topic: new, uri, from: old, linked: [topics], usage}`` or the write's
        ``{ok: False, code, message, reason, usage, topic}`` (then nothing changed).

    Raises:
        MMError(E_INVALID): for a topic that is not a slug, OLD without a note, NEW with one, OLD equal to NEW.
        MMError(E_CONFLICT): for a NEW that differs only by case from a topic there is.
        MMError(E_PARSE | E_IO): as :meth:`.store.MemoryStore.write`; a crash leaves an orphan note, never a lost entry.
    """
    from .store import _failure

    old, new = validate_topic(old), validate_topic(new)
    o = store.options
    with store._lock():
        state = store.live_state()
        plan = plan_rename(state.entries, old, new, lambda entry: live_body(store.root, entry),
                           memory_id=o.memory_id, now=store._now_iso())
        after = state
        for topic, entry in plan.entries:
            after = store._next_state(after, topic, entry)
        usage = store._write_usage(plan.body_chars, plan.write_budget, len(plan.notes[f"{new}.md"]), after.usage)
        big = next((name for name, data in plan.notes.items() if len(data) > o.detail_max_bytes), None)
        if big is not None:
            return _failure(new, BudgetCode.E_FILE_BUDGET_EXCEEDED, f"{DETAIL_DIR}/{big} would exceed its byte cap "
                            "with the new name; condense it first (see usage)", usage)
        shrinks = after.usage["lines"] < state.usage["lines"] or after.usage["bytes"] < state.usage["bytes"]
        if after.usage["overBudget"] and not shrinks:
            return _failure(new, BudgetCode.E_INDEX_BUDGET_EXCEEDED,
                            "the MEMORY.md index would exceed its hard limit with the new name", usage)
        store._write_files(plan.notes, after)
        if plan.removed != detail_rel(new):
            store._remove_note(plan.removed)
    return {"ok": True, "topic": new, "uri": uri_for(o.memory_id, new), "from": old, "linked": plan.linked,
            "usage": usage}

