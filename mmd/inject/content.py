"""Notes' text in an injection: the baseline carries the text of the newest and most used notes (issue 28).

A note's *block* is its entry line (:func:`~.baseline.entry_line`) with its body below it, each body line
indented by two spaces, the body cut at :data:`NOTE_TEXT_MAX_BYTES` (at a line, else a word) with a last line
saying how to read the rest::

    - deploy-region: Deploy only to eu-west-1 <mm://local/deploy-region>
      Deploy only to eu-west-1; us-east is frozen since the March outage.
      … the rest: mmctl read deploy-region

The baseline with text (:func:`render_with_text`) gives blocks, in :func:`use_order`, while they fit
:data:`TEXT_SHARE` of the byte budget, or more while every other note still fits by title (a small root is then
listed whole); a note whose block does not fit is left for the titles and the next one tried. Then come the
remaining notes as entry lines, then the count of those that fit neither. So a person's rule written in a note
("don't use playwright") reaches the model without a tool call, and a big root still names what it holds. Deltas
give the blocks of the notes that changed (:mod:`.delta`).

Owns: the block's shape, the body cut, the order by recency and use, the text share of the budget.
Never: reads files or clocks (bodies and use counts are handed in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from mmd.core.model import IndexEntry

from .baseline import DEFAULT_MAX_BYTES, Baseline, entry_line, fit_lines, list_hint, read_hint, recency_order

__all__ = ["DEFAULT_MAX_BYTES", "NOTE_TEXT_MAX_BYTES", "TEXT_SHARE", "USE_DAYS_MAX", "note_block",
           "render_with_text", "use_order"]

NOTE_TEXT_MAX_BYTES = 1024
"""Longest body one note shows in an injection, UTF-8 bytes: one long note never takes the place of several."""
TEXT_SHARE = 2 / 3
"""Share of the budget the blocks may always fill; they fill more only while every other note still fits by title."""
USE_DAYS_MAX = 30
"""A read counts as one day of recency in :func:`use_order`, up to this many days."""
_INDENT = "  "


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (never inside a character)."""
    return text.encode("utf-8")[:max(0, limit)].decode("utf-8", "ignore")


def _clip_body(body: str, limit: int) -> tuple[str, bool]:
    """``body`` (trailing blank lines dropped) within ``limit`` UTF-8 bytes, cut at a line when one ends in the
    last half of the room, else at a word; and whether it was cut."""
    body = body.strip("\n").rstrip()
    if _size(body) <= limit:
        return body, False
    head = _cut_bytes(body, limit)
    line_end = head.rfind("\n")
    if line_end >= len(head) // 2:
        return head[:line_end].rstrip(), True
    if not body[len(head)].isspace():  # the cut falls inside a word: back off to its start
        space = max(head.rfind(" "), head.rfind("\t"))
        head = head[:space] if space > 0 else head
    return head.rstrip(), True


def note_block(entry: IndexEntry, body: str, memory_id: str, command: str = "mmctl", prefix: str = "",
               max_body_bytes: int = NOTE_TEXT_MAX_BYTES) -> str:
    """The block of one note: its entry line (``prefix`` before the topic, as in a delta), then its body indented by
    two spaces (empty lines kept empty), cut at ``max_body_bytes`` UTF-8 bytes with a last line ``… the rest:
    <command> read <topic>``. A note without a body is its entry line alone."""
    line = entry_line(entry, memory_id, prefix)
    text, cut = _clip_body(body, max_body_bytes)
    if not text:
        return line
    lines = [line, *(f"{_INDENT}{b}" if b.strip() else "" for b in text.split("\n"))]
    if cut:
        lines.append(f"{_INDENT}… the rest: {command} read {entry.topic}")
    return "\n".join(lines)


def _moment(updated: str) -> datetime | None:
    try:
        return datetime.fromisoformat(updated.replace("Z", "+00:00"))
    except ValueError:
        return None


def use_order(entries: Iterable[IndexEntry], uses: Mapping[str, int] | None = None) -> list[IndexEntry]:
    """Entries newest and most used first: by ``updated`` moved forward one day per use (at most
    :data:`USE_DAYS_MAX`), ties by topic; one per topic. Without ``uses`` (or without any), :func:`recency_order`.

    Args:
        uses: topic → how many times agents read the note (the daemon counts ``memory.read``).
    """
    order = recency_order(entries)
    if not uses or not any(uses.get(e.topic) for e in order):
        return order
    floor = datetime.min

    def key(e: IndexEntry) -> datetime:
        at = _moment(e.updated)
        if at is None:
            return floor
        return at.replace(tzinfo=None) + timedelta(days=min(USE_DAYS_MAX, max(0, uses.get(e.topic, 0))))

    return sorted(order, key=key, reverse=True)  # stable: recency_order's ties by topic stay


def render_with_text(order: Sequence[IndexEntry], bodies: Mapping[str, str], *, memory_id: str, max_bytes: int,
                     command: str = "mmctl") -> Baseline:
    """The baseline with the notes' text (see the module docstring), ``order`` as given (:func:`use_order`).

    The heading says how many notes carry their text: ``Memory mm://<id>/ — N topics, newest and most used
    first, K with their text (read one: …):``.

    Raises:
        MMError(E_INVALID): if ``max_bytes`` is not a positive integer or too small for the heading and the count
            line (:func:`~.baseline.fit_lines`).
    """
    noun = "topic" if len(order) == 1 else "topics"

    def header(with_text: int) -> str:
        return (f"Memory mm://{memory_id}/ — {len(order)} {noun}, newest and most used first, {with_text} with "
                f"their text ({read_hint(command)}):")

    def omitted_line(count: int) -> str:
        return f"… {count} older {'topic' if count == 1 else 'topics'} not shown; {list_hint(command)}."

    fit_lines(header(len(order)), (), len(order), omitted_line, max_bytes)  # refuses a budget too small
    room = int(max_bytes * TEXT_SHARE)
    used = _size(header(len(order)))
    titles = {e.topic: 1 + _size(entry_line(e, memory_id)) for e in order}
    untitled = sum(titles.values()) + 1 + _size(omitted_line(len(order)))  # every title still to give, and a count
    blocks: list[tuple[IndexEntry, str]] = []
    rest: list[IndexEntry] = []
    for e in order:
        body = bodies.get(e.topic, "")
        block = note_block(e, body, memory_id, command) if body.strip() else None
        need = 1 + _size(block) if block is not None else 0
        if block is not None and (used + need <= room or used + need + untitled - titles[e.topic] <= max_bytes):
            blocks.append((e, block))
            used += need
            untitled -= titles[e.topic]
        else:
            rest.append(e)
    head = header(len(blocks))
    lines, omitted = fit_lines(head, [b for _, b in blocks] + [entry_line(e, memory_id) for e in rest],
                               len(order), omitted_line, max_bytes)
    kept = len(order) - omitted
    if kept < len(blocks):  # the titles' footer took a block's place: say so in the heading
        lines[0] = header(kept)
    shown = tuple(e.topic for e, _ in blocks[:kept]) + tuple(e.topic for e in rest[:max(0, kept - len(blocks))])
    return Baseline("\n".join(lines), shown, omitted)
