"""The writer of a memory root: budgeted writes, deletes and the live budget report (mm v1 §6).

Every operation here works on the LIVE files, never on a snapshot, and every
write runs under the root's write lock: read MEMORY.md, check the budgets in
the spec's order (write budget, detail file cap, index caps), then write the
detail file and the index all or nothing (both temp files prepared before either
is renamed; see :meth:`MemoryStore._write_both`). An over-budget write returns
``{"ok": False, ...}`` with usage and touches nothing.

What a reader could not read back is refused at the door (``E_INVALID``: NUL and
lone surrogates anywhere, line breaks in summary/tags/updated); a new topic that
differs from an indexed one only by case is ``E_CONFLICT``. Files are opened only
through :mod:`.rootfs` (never following a symlink below the root).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import date
from pathlib import Path
from typing import Any

from .budget import IndexUsage, budget_pct, index_usage
from .durable import WriteLock, atomic_write
from .errors import BudgetCode, ErrorCode, MMError
from .format import header_extras, index_header, join_index, serialize_note, with_review_after
from .index_state import IndexState
from .model import IndexEntry
from .options import MemoryOptions, is_js_integer
from .paths import DETAIL_DIR, INDEX_NAME, detail_rel
from .rootfs import make_folders, note_parts, note_problem, opened_folder, prepare_file, read_index_bytes, remove_in
from .snapshot import MalformedNote, malformed_entries, orphan_files, parse_index_text, read_note_sized
from .text import (
    byte_length,
    check_line_field,
    check_text_field,
    fold_line_breaks,
    js_trim,
    normalize_line,
    parse_tags,
    validate_topic,
)
from .uri import uri_for

__all__ = ["LOCK_TIMEOUT_S", "MemoryStore"]

LOCK_TIMEOUT_S = 30.0
"""How long a write waits for another writer's lock, in seconds, before it fails with E_IO."""


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
            MMError(E_PARSE): naming the file, if it is not mm v1, is a symlink or not a regular file.
            MMError(E_IO): if it cannot be read.
        """
        data = read_index_bytes(self.root)
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
        """``state`` with ``topic``'s sections replaced; hand-written header lines are kept (issue 15)."""
        o = self.options
        extras = header_extras(state.text)
        header = self._header + "\n" + "\n".join(extras) + "\n" if extras else self._header
        return state.replacing(topic, entry, header=header, index_lines=o.index_lines,
                               index_bytes=o.index_bytes)

    def _write_index(self, state: IndexState) -> None:
        atomic_write(self.root / INDEX_NAME, state.data)
        self._state = state

    def _write_both(self, name: str, note: bytes, state: IndexState) -> None:
        """Write ``memories/<name>`` and MEMORY.md all or nothing, as the caller sees it (issue 11).

        Both temp files are written and fsynced before either is renamed; the note is
        renamed first (a crash between leaves the old entry pointing at the new
        body, never an entry without its note); if the index rename fails, the
        previous note is put back (a new one removed).

        Raises:
            MMError(E_IO): if any step fails (ENOSPC included); both files are then as before.
        """
        try:
            with opened_folder(self.root, ()) as root_fd, opened_folder(self.root, (DETAIL_DIR,),
                                                                        create=True) as note_fd:
                note_file = prepare_file(note_fd, name, note, keep_previous=True)
                try:
                    index_file = prepare_file(root_fd, INDEX_NAME, state.data)
                    try:
                        note_file.commit()
                        try:
                            index_file.commit()
                        except OSError:
                            note_file.restore()
                            raise
                    finally:
                        index_file.discard()
                finally:
                    note_file.discard()
                os.fsync(note_fd)
                os.fsync(root_fd)
        except OSError as error:
            raise MMError(ErrorCode.E_IO, f"write {DETAIL_DIR}/{name} failed: {error.strerror or error}",
                          details=f"{DETAIL_DIR}/{name}") from error
        self._state = state

    def ensure_root(self) -> None:
        """Create the root, ``memories/`` and an empty MEMORY.md if missing; never overwrite.

        Raises:
            MMError(E_IO): if they cannot be created.
        """
        try:
            make_folders(self.root / DETAIL_DIR)
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
            MMError(E_INVALID): for a bad topic; NUL or a lone surrogate in any text;
                a line break (CR, LF, VT, FF, NEL, U+2028, U+2029) in summary, tags or updated;
                a ``review_after`` that is not a date nor a relative span (prose is refused).
            MMError(E_CONFLICT): for a new topic differing from an indexed one only by case.
            MMError(E_PARSE): if the live MEMORY.md is not mm v1 (it is never overwritten then).
            MMError(E_IO): if the files cannot be written; neither file is then torn.
        """
        topic = validate_topic(topic)
        _check_door(content, summary=summary, tags=tags, updated=updated)
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
            if existing is None:
                _refuse_case_twin(topic, entries)
            entry = IndexEntry(
                topic=topic,
                memory_id=o.memory_id,
                # a kept hand-edited field loses its line breaks here, once, instead of blocking the write
                summary=normalize_line(summary if summary is not None else
                                       fold_line_breaks(existing.summary) if existing else ""),
                tags=tuple(parse_tags(tags if tags is not None else
                                      fold_line_breaks(", ".join(existing.tags)) if existing else "")),
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
            self._write_both(f"{topic}.md", note_text.encode(), after)
        return {"ok": True, "topic": topic, "uri": uri_for(o.memory_id, topic),
                "action": "updated" if existing else "created", "usage": usage}

    def merge(self, topics: list[str], into: str) -> dict[str, Any]:
        """Consolidate notes (issue 13, mm v1 §6): ``into`` gets the bodies of ``into`` (when it has a note) and
        ``topics`` joined by a blank line, in that order; the other notes are deleted; MEMORY.md is written once.

        The joined note takes ``into``'s summary (else the first note's), the union of the tags and a write
        budget of at least its length. The index check is the write's, except that a merge that shrinks the
        index (fewer lines or bytes than before) is allowed even while the index is over its caps.

        Returns:
            ``{ok: True, topic, uri, action, merged: [topics deleted], usage}`` or the write's
            ``{ok: False, code, message, reason, usage, topic}`` (then nothing changed).

        Raises:
            MMError(E_INVALID): for a bad topic, no topic to merge, or a topic without a note.
            MMError(E_PARSE | E_IO): as :meth:`write`; a crash leaves orphan note files, never a lost entry.
        """
        into = validate_topic(into)
        others = [validate_topic(t) for t in dict.fromkeys(topics) if t != into]
        if not others:
            raise MMError(ErrorCode.E_INVALID, "merge needs at least one topic other than 'into'")
        o = self.options
        with self._lock():
            state = self.live_state()
            by_topic = {e.topic: e for e in state.entries}
            missing = [t for t in others if t not in by_topic]
            if missing:
                raise MMError(ErrorCode.E_INVALID, f"no note to merge: {', '.join(missing)}", details=missing[0])
            parts = [by_topic[t] for t in ([into] if into in by_topic else []) + others]
            bodies = [js_trim((read_note_sized(self.root, e.file) or ("", 0))[0]) for e in parts]
            content = "\n\n".join(b for b in bodies if b)
            head = by_topic.get(into) or parts[0]
            tags = ", ".join(dict.fromkeys(t for e in parts for t in e.tags))
            budget = max(o.default_write_budget, len(content), *(e.write_budget for e in parts))
            usage = self._write_usage(len(content), budget, 0, state.usage)
            if not content:
                return _failure(into, "E_INVALID", "the notes to merge have no body", usage)
            note_text = serialize_note(topic=into, memory_id=o.memory_id, file=detail_rel(into), body=content)
            usage["noteBytes"] = byte_length(note_text)
            if usage["noteBytes"] > o.detail_max_bytes:
                return _failure(into, BudgetCode.E_FILE_BUDGET_EXCEEDED,
                                "the merged note exceeds its byte cap; condense the notes first (see usage)", usage)
            if into not in by_topic:
                _refuse_case_twin(into, tuple(e for e in state.entries if e.topic not in others))
            after = state
            for topic in others:
                after = self._next_state(after, topic, None)
            entry = IndexEntry(topic=into, memory_id=o.memory_id,
                               summary=normalize_line(fold_line_breaks(head.summary)), tags=tuple(parse_tags(tags)),
                               file=detail_rel(into), updated=self._now_iso(), body_chars=len(content),
                               write_budget=budget, entry_body=by_topic[into].entry_body if into in by_topic else "")
            after = self._next_state(after, into, entry)
            usage["index"] = after.usage
            before = state.usage
            shrinks = after.usage["lines"] < before["lines"] or after.usage["bytes"] < before["bytes"]
            if after.usage["overBudget"] and not shrinks:
                return _failure(into, BudgetCode.E_INDEX_BUDGET_EXCEEDED,
                                "the MEMORY.md index would exceed its hard limit (see usage.index)", usage)
            self._write_both(f"{into}.md", note_text.encode(), after)
            for e in parts:
                if e.topic != into and e.file != detail_rel(into):
                    self._remove_note(e.file)
        return {"ok": True, "topic": into, "uri": uri_for(o.memory_id, into),
                "action": "updated" if into in by_topic else "created", "merged": others, "usage": usage}

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
            MMError(E_PARSE): if the live MEMORY.md is not mm v1.
            MMError(E_IO): if the files cannot be changed.

        An entry whose ``file`` is not a note under ``memories/`` (MEMORY.md, ``.mmd/…``,
        a folder, a path through a symlink) loses its entry; that file stays (``removed: False``).
        A hand-edited line break in another entry never blocks a delete.
        """
        validate_topic(topic)
        with self._lock():
            state = self.live_state()
            entry = next((e for e in state.entries if e.topic == topic), None)
            rel = entry.file if entry else detail_rel(topic)
            after = self._next_state(state, topic, None)
            self._write_index(after)
            removed = self._remove_note(rel)
        return {"ok": True, "removed": removed, "topic": topic, "existed": entry is not None or removed,
                "usage": after.usage}

    def _remove_note(self, rel: str) -> bool:
        """Remove the note ``rel`` if it may name one (:func:`.rootfs.note_problem`); never follow a symlink.

        Returns:
            True if a file was removed; False if none was there, or ``rel`` names
            something that is not a note (MEMORY.md, ``.mmd/``, a folder), which stays.

        Raises:
            MMError(E_IO): if the unlink fails.
        """
        if note_problem(rel) is not None:
            return False
        parts = note_parts(rel)
        try:
            with opened_folder(self.root, parts[:-1]) as dfd:
                removed = remove_in(dfd, parts[-1])
                if removed:
                    os.fsync(dfd)
                return removed
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as error:
            if error.errno == errno.ELOOP:
                return False
            raise MMError(ErrorCode.E_IO, f"delete {rel} failed: {error.strerror or error}", details=rel) from error

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
        for entry in sorted(entries, key=lambda e: e.topic):
            size, problem = _note_size(self.root, entry)
            if problem is not None:
                malformed.append(problem)
            elif size is None:
                dangling += 1
            write_budget = entry.write_budget if entry.write_budget > 0 else o.default_write_budget
            total_chars += entry.body_chars
            total_bytes += size or 0
            per_topic.append({"topic": entry.topic, "uri": uri_for(o.memory_id, entry.topic),
                              "bodyChars": entry.body_chars, "noteBytes": size or 0, "writeBudget": write_budget,
                              "budgetUsedPct": budget_pct(entry.body_chars, write_budget)})
        anomalies: dict[str, Any] = {"danglingEntries": dangling, "orphanFiles": orphan_files(self.root, entries)}
        if malformed:
            anomalies["malformedNotes"] = malformed
        bad_entries = malformed_entries(entries)
        if bad_entries:
            anomalies["malformedEntries"] = bad_entries
        return {
            "index": state.usage,
            "detail": {"noteCount": len(entries), "totalBodyChars": total_chars, "totalBytes": total_bytes,
                       "maxBytes": o.detail_max_bytes},
            "perTopic": per_topic,
            "anomalies": anomalies,
        }


def _note_size(root: Path, entry: IndexEntry) -> tuple[int | None, MalformedNote | None]:
    """``(on-disk size in bytes or None when missing, the problem if malformed)``, read the one checked way."""
    try:
        read = read_note_sized(root, entry.file)
    except MMError as error:
        return None, {"topic": entry.topic, "file": entry.file, "code": error.code.value, "message": error.message}
    except OSError as error:
        return None, {"topic": entry.topic, "file": entry.file, "code": ErrorCode.E_IO.value,
                      "message": f"read {entry.file} failed: {error.strerror}"}
    return (None, None) if read is None else (read[1], None)


def _check_door(content: Any, *, summary: Any, tags: Any, updated: Any) -> None:
    """Refuse what a reader could not read back (issue 11): NUL and lone surrogates anywhere,
    line breaks in the one-line fields. Non-string content is left to the write's ``ok: False``.

    Raises:
        MMError(E_INVALID): naming the field.
    """
    for name, value in (("summary", summary), ("tags", tags), ("updated", updated)):
        if value is None:
            continue
        if not isinstance(value, str):
            raise MMError(ErrorCode.E_INVALID, f"{name} must be a single-line string, got {value!r}")
        check_line_field(name, value)
    if isinstance(content, str):
        check_text_field("content", content)


def _refuse_case_twin(topic: str, entries: tuple[IndexEntry, ...]) -> None:
    """Refuse a new ``topic`` that differs from an indexed one only by case (issue 15).

    Raises:
        MMError(E_CONFLICT): naming the existing topic (``details``).
    """
    folded = topic.lower()
    twin = next((e.topic for e in entries if e.topic.lower() == folded and e.topic != topic), None)
    if twin is not None:
        raise MMError(ErrorCode.E_CONFLICT, f"topic {topic!r} differs only by case from the existing topic {twin!r}; "
                                            f"write {twin!r} instead (one file on case-insensitive filesystems)",
                      details=twin)


def _failure(topic: str, code: str, message: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"ok": False, "code": str(code), "message": message, "reason": str(code), "usage": usage, "topic": topic}
