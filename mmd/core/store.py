"""The writer of a memory root: budgeted writes, deletes and the live budget report (mm v1 §6).

Every operation here works on the LIVE files, never on a snapshot, and every
write runs under the root's write lock: read MEMORY.md, check the budgets in
the spec's order (write budget, detail file cap, index caps), then write the
detail file and the index with :func:`durable.atomic_write`. An over-budget
write returns ``{"ok": False, ...}`` with usage and touches nothing.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import date
from pathlib import Path
from typing import Any

from .budget import IndexUsage, budget_pct, index_usage
from .durable import WriteLock, atomic_write, remove_durably
from .errors import BudgetCode, ErrorCode, MMError
from .format import index_header, join_index, safe_rel_path, serialize_note, with_review_after
from .index_state import IndexState
from .model import IndexEntry
from .options import MemoryOptions, is_js_integer
from .paths import DETAIL_DIR, INDEX_NAME, RootGuard, detail_rel, inside_root
from .snapshot import MalformedNote, orphan_files, parse_index_text, read_note_checked
from .text import byte_length, js_trim, normalize_line, parse_tags, validate_topic
from .uri import uri_for

__all__ = ["LOCK_TIMEOUT_S", "MemoryStore"]

LOCK_TIMEOUT_S = 30.0
"""How long a write waits for another writer's lock, in seconds, before it fails with E_IO."""

_LINE_BREAKS = ("\n", "\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c")


class MemoryStore:
    """Writes one memory root; many snapshots may be read from it meanwhile.

    Args:
        options: the validated options.
        now_iso: the clock, returning ISO-8601 UTC with milliseconds (``updated`` of writes).
        lock: a context manager factory serializing writers; by default the
            root's :class:`WriteLock`, waited for at most :data:`LOCK_TIMEOUT_S`. A process that already holds the lock
            for its whole life (the daemon) passes ``contextlib.nullcontext``.
    """

    def __init__(self, options: MemoryOptions, now_iso: Callable[[], str],
                 lock: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        self.options = options
        self.root = options.root
        self._now_iso = now_iso
        self._lock = lock or (lambda: WriteLock(self.root, timeout_s=LOCK_TIMEOUT_S))
        self._state: IndexState | None = None
        self._header = index_header(memory_id=options.memory_id, index_lines=options.index_lines,
                                    index_bytes=options.index_bytes)

    def live_state(self) -> IndexState:
        """MEMORY.md as on disk now, parsed again only when its bytes changed (see :mod:`.index_state`).

        Raises:
            MMError(E_PARSE): naming the file, if it is not mm v1.
            MMError(E_IO): if it cannot be read.
        """
        try:
            data = (self.root / INDEX_NAME).read_bytes()
        except FileNotFoundError:
            data = b""
        except OSError as error:
            raise MMError(ErrorCode.E_IO, f"read {self.root / INDEX_NAME} failed: {error.strerror}") from error
        state = self._state
        if state is None or state.data != data:
            text, entries = parse_index_text(data.decode("utf-8", "replace"), self.root, self.options.memory_id)
            state = self._state = IndexState(data, text, entries, self._usage(text, len(data)))
        return state

    def live_index(self) -> tuple[str, tuple[IndexEntry, ...]]:
        """MEMORY.md's text and entries as on disk now; raises as :meth:`live_state`."""
        state = self.live_state()
        return state.text, state.entries

    def _next_state(self, state: IndexState, topic: str, entry: IndexEntry | None) -> IndexState:
        o = self.options
        return state.replacing(topic, entry, header=self._header, index_lines=o.index_lines,
                               index_bytes=o.index_bytes)

    def _write_index(self, state: IndexState) -> None:
        atomic_write(self.root / INDEX_NAME, state.data)
        self._state = state

    def ensure_root(self) -> None:
        """Create the root, ``memories/`` and an empty MEMORY.md if missing; never overwrite.

        Raises:
            MMError(E_IO): if they cannot be created.
        """
        try:
            (self.root / DETAIL_DIR).mkdir(parents=True, exist_ok=True)
            index = self.root / INDEX_NAME
            if not index.exists():
                with self._lock():
                    if not index.exists():
                        atomic_write(index, join_index(self._header, []).encode())
        except OSError as error:
            raise MMError(ErrorCode.E_IO, f"create {self.root} failed: {error.strerror}") from error


    def _usage(self, text: str, size: int | None = None) -> IndexUsage:
        return index_usage(text, self.options.index_lines, self.options.index_bytes, size)

    def write(self, topic: str, content: Any, *, budget: Any = None, summary: str | None = None,
              tags: str | None = None, updated: str | None = None,
              review_after: str | None = None) -> dict[str, Any]:
        """Create or replace ``topic`` (mm v1 §6). Budget failures are returned, not raised.

        Args:
            topic: the slug.
            content: the body; blank content is refused (``ok: False``, ``E_INVALID``).
            budget: per-write budget in code points; used only when a positive
                integer, else ``defaultWriteBudget``.
            summary: one line (whitespace folded); None keeps the current one.
            tags: comma-separated; None keeps the current ones.
            updated: ISO timestamp to record; default now.
            review_after: the topic's review date: ``YYYY-MM-DD`` or a relative ``3m``/``2w``/``10d``
                resolved against today (UTC, this store's clock) by :func:`mmd.core.review_date.resolve_review_after`;
                stored as the entry line ``- **review-after:** YYYY-MM-DD``; ``""`` removes it; None keeps it.

        Returns:
            ``{ok: True, topic, uri, action: created|updated, usage}`` or
            ``{ok: False, code, message, reason, usage, topic}``; ``usage`` is
            ``{bodyChars, writeBudget, overflow, noteBytes, noteMaxBytes, index}``.

        Raises:
            MMError(E_INVALID): for a bad topic, an ``updated`` holding a line break, or a
                ``review_after`` that is not a date nor a relative span (prose is refused).
            MMError(E_PARSE): if the live MEMORY.md is not mm v1 (it is never overwritten then).
            MMError(E_IO): if the files cannot be written; neither file is then torn.
        """
        topic = validate_topic(topic)
        if updated is not None and (not isinstance(updated, str) or any(c in updated for c in _LINE_BREAKS)):
            raise MMError(ErrorCode.E_INVALID, f"updated must be a single-line string, got {updated!r}")
        review_line = None if review_after is None else self._review_date(review_after)
        o = self.options
        with self._lock():
            state = self.live_state()
            entries = state.entries
            if not isinstance(content, str) or not js_trim(content):
                usage0 = self._write_usage(0, o.default_write_budget, 0, state.usage)
                return _failure(topic, "E_INVALID", "content must be a non-empty string", usage0)
            body_chars = len(content)
            write_budget = int(budget) if is_js_integer(budget) and budget > 0 else o.default_write_budget
            usage = self._write_usage(body_chars, write_budget, 0, state.usage)
            if body_chars > write_budget:
                return _failure(topic, BudgetCode.E_WRITE_BUDGET_EXCEEDED,
                                "content exceeds its write budget; compress it to fit (see usage)", usage)
            file = detail_rel(topic)
            note_text = serialize_note(topic=topic, memory_id=o.memory_id, file=file, body=content)
            usage["noteBytes"] = byte_length(note_text)
            if usage["noteBytes"] > o.detail_max_bytes:
                return _failure(topic, BudgetCode.E_FILE_BUDGET_EXCEEDED,
                                "detail memory exceeds its byte cap; split or condense it (see usage)", usage)
            existing = next((e for e in entries if e.topic == topic), None)
            entry = IndexEntry(
                topic=topic,
                memory_id=o.memory_id,
                summary=normalize_line(summary if summary is not None else existing.summary if existing else ""),
                tags=tuple(parse_tags(tags)) if tags is not None else (existing.tags if existing else ()),
                file=file,
                updated=updated if updated is not None else self._now_iso(),
                body_chars=body_chars,
                write_budget=write_budget,
                entry_body=existing.entry_body if existing else "",
            )
            if review_line is not None:
                entry = entry.replace(entry_body=with_review_after(entry.entry_body, review_line))
            after = self._next_state(state, topic, entry)
            usage["index"] = after.usage
            if usage["index"]["overBudget"]:
                return _failure(
                    topic, BudgetCode.E_INDEX_BUDGET_EXCEEDED,
                    "the MEMORY.md index exceeds its hard limit; consolidate/rewrite the index "
                    "(never truncate) (see usage.index)", usage)
            detail = self.root / DETAIL_DIR / f"{topic}.md"
            detail.parent.mkdir(parents=True, exist_ok=True)
            # The note first: a crash before the index lands leaves the old entry
            # pointing at the new body, never an entry without its note.
            atomic_write(detail, note_text.encode())
            self._write_index(after)
        return {"ok": True, "topic": topic, "uri": uri_for(o.memory_id, topic),
                "action": "updated" if existing else "created", "usage": usage}

    def _review_date(self, value: object) -> str:
        """``value`` resolved to ``YYYY-MM-DD`` against today's UTC date ('' stays ''); raises E_INVALID."""
        if value == "":
            return ""
        from .review_date import resolve_review_after  # loaded only by writes that set a date

        return resolve_review_after(value, date.fromisoformat(self._now_iso()[:10])).isoformat()

    def _write_usage(self, body_chars: int, write_budget: int, note_bytes: int,
                     index: IndexUsage) -> dict[str, Any]:
        return {"bodyChars": body_chars, "writeBudget": write_budget,
                "overflow": max(0, body_chars - write_budget), "noteBytes": note_bytes,
                "noteMaxBytes": self.options.detail_max_bytes, "index": index}

    def delete(self, topic: str) -> dict[str, Any]:
        """Remove ``topic``'s entry and detail file; always allowed, even over budget (mm v1 §6).

        The index is rewritten first, then the file removed: a crash between
        leaves an orphan file, never a lost entry pointing at nothing. A symlink
        is removed itself; its target is never touched.

        Returns:
            ``{ok: True, removed, topic, existed, usage}``; ``removed`` says a
            detail file was deleted, ``existed`` that an entry or file was there,
            ``usage`` is the index usage after the delete.

        Raises:
            MMError(E_INVALID): for a bad topic.
            MMError(E_PARSE): if the live MEMORY.md is not mm v1, or the entry's
                file leads outside the root.
            MMError(E_IO): if the files cannot be changed.
        """
        validate_topic(topic)
        with self._lock():
            state = self.live_state()
            entry = next((e for e in state.entries if e.topic == topic), None)
            rel = safe_rel_path(entry.file) if entry else detail_rel(topic)
            path = self.root.joinpath(*rel.split("/"))
            if not inside_root(self.root, path.parent):
                raise MMError(ErrorCode.E_PARSE, f"file path escapes the memory root: {rel!r}", details=rel)
            after = self._next_state(state, topic, None)
            self._write_index(after)
            removed = remove_durably(path) if os.path.lexists(path) else False
        return {"ok": True, "removed": removed, "topic": topic, "existed": entry is not None or removed,
                "usage": after.usage}

    def budget(self) -> dict[str, Any]:
        """The live budget figures (mm v1 §6): ``{index, detail, perTopic, anomalies}``.

        ``anomalies`` is ``{danglingEntries, orphanFiles, malformedNotes?}`` as in a snapshot.
        ``perTopic`` rows are sorted by topic: ``{topic, uri, bodyChars,
        noteBytes (on-disk size), writeBudget (0 in the index → default), budgetUsedPct}``.

        Raises:
            MMError(E_PARSE) / MMError(E_IO): if MEMORY.md cannot be parsed or read.
        """
        o = self.options
        state = self.live_state()
        entries = state.entries
        per_topic: list[dict[str, Any]] = []
        dangling = total_chars = total_bytes = 0
        malformed: list[MalformedNote] = []
        guard = RootGuard(self.root)
        for entry in sorted(entries, key=lambda e: e.topic):
            size = _file_size(self.root, entry.file, guard)
            if size is None:
                dangling += 1
            else:
                _, problem = read_note_checked(self.root, entry, guard)
                if problem is not None:
                    malformed.append(problem)
            write_budget = entry.write_budget if entry.write_budget > 0 else o.default_write_budget
            total_chars += entry.body_chars
            total_bytes += size or 0
            per_topic.append({"topic": entry.topic, "uri": uri_for(o.memory_id, entry.topic),
                              "bodyChars": entry.body_chars, "noteBytes": size or 0, "writeBudget": write_budget,
                              "budgetUsedPct": budget_pct(entry.body_chars, write_budget)})
        anomalies: dict[str, Any] = {"danglingEntries": dangling, "orphanFiles": orphan_files(self.root, entries)}
        if malformed:
            anomalies["malformedNotes"] = malformed
        return {
            "index": state.usage,
            "detail": {"noteCount": len(entries), "totalBodyChars": total_chars, "totalBytes": total_bytes,
                       "maxBytes": o.detail_max_bytes},
            "perTopic": per_topic,
            "anomalies": anomalies,
        }


def _file_size(root: Path, rel: str, guard: RootGuard) -> int | None:
    """On-disk size in bytes of a regular file inside the root, else None."""
    path = root.joinpath(*rel.split("/"))
    with contextlib.suppress(OSError):
        st = path.stat()
        if stat.S_ISREG(st.st_mode) and guard.contains(path):
            return st.st_size
    return None


def _failure(topic: str, code: str, message: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"ok": False, "code": str(code), "message": message, "reason": str(code), "usage": usage, "topic": topic}
