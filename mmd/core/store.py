"""The writer of a memory root: budgeted writes, deletes and the live budget report (mm v1 §6).

Every operation here works on the LIVE files, never on a snapshot, and every write runs under the root's write lock:
read MEMORY.md, check the budgets in the spec's order (write budget, detail file cap, index caps), then write the
detail file and the index all or nothing (both temp files prepared before either is renamed; see
:meth:`MemoryStore._write_files`). An over-budget write returns ``{"ok": False, ...}`` with usage and touches
nothing.

What a reader could not read back is refused at the door (``E_INVALID``: NUL and lone surrogates anywhere, line
breaks in summary/tags/updated); a new topic that differs from an indexed one only by case is ``E_CONFLICT``. What
must not be remembered is refused there too (:mod:`.screening`, issue 29): hidden text (always; in a body unless
``allow_hidden``) and, through the ``screen`` the caller hands in, secrets (``E_SECRET``, unless ``allow_secret``).
Every write, merge and delete keeps the text it leaves, and first the text it replaces when the history does not
hold it yet (:mod:`.versions`), numbered with the revision the caller's ``number`` hands out. Files are opened only
through :mod:`.rootfs` (never following a symlink below the root).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager

from .budget import IndexUsage, index_usage
from .durable import WriteLock, atomic_write
from .errors import BudgetCode, ErrorCode, MMError
from .format import header_extras, index_header, join_index, serialize_note, with_review_after
from .index_state import IndexState
from .model import IndexEntry
from .options import MemoryOptions, is_js_integer
from .paths import DETAIL_DIR, INDEX_NAME, detail_rel
from .rootfs import make_folders, read_index_bytes, remove_note, replace_together
from .snapshot import parse_index_text
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

    from .screening import SecretScreen
    from .versions import NewVersion, VersionLog

__all__ = ["LOCK_TIMEOUT_S", "BatchedWrite", "MemoryStore", "Number"]

LOCK_TIMEOUT_S = 30.0
"""How long a write waits for another writer's lock, in seconds, before it fails with E_IO."""
Number = Callable[[], int]
"""Hands out the revision number of the next change (called with the lock held, once per accepted write)."""


class BatchedWrite:
    """One write of :meth:`MemoryStore.write_many`.

    Attributes:
        outcome: what :meth:`MemoryStore.write` returns for it (``ok`` True or False), or None when it raised.
        error: the MMError :meth:`MemoryStore.write` would have raised, or None.
        state: MEMORY.md as this write left it (None unless it was written), for the revision after it.
        note: the note's bytes as written (None unless it was written): the revision needs no re-read.
        revision: the number ``number`` handed out for it (None unless it was written).
    """

    __slots__ = ("error", "note", "outcome", "revision", "state")

    def __init__(self, outcome: dict[str, Any] | None, error: MMError | None, state: IndexState | None = None,
                 note: bytes | None = None) -> None:
        self.outcome, self.error, self.state, self.note = outcome, error, state, note
        self.revision: int | None = None


class MemoryStore:
    """Writes one memory root; many snapshots may be read from it meanwhile.

    Args:
        options: the validated options.
        now_iso: the clock, returning ISO-8601 UTC with milliseconds (``updated`` of writes).
        lock: a context manager factory serializing writers; by default the
            root's :class:`WriteLock`, waited for at most :data:`LOCK_TIMEOUT_S`. A process that already holds the lock
            for its whole life (the daemon) passes ``contextlib.nullcontext``.
        screen: finds secrets in a write's fields (:data:`.screening.SecretScreen`); None: hidden text only.
        versions: the version history (default ``<root>/.mmd/versions.db`` with its default bounds).
    """

    def __init__(self, options: MemoryOptions, now_iso: Callable[[], str],
                 lock: Callable[[], AbstractContextManager[Any]] | None = None, *, screen: SecretScreen | None = None,
                 versions: VersionLog | None = None) -> None:
        self.options = options
        self.root = options.root
        self._now_iso = now_iso
        self._lock = lock or (lambda: WriteLock(self.root, timeout_s=LOCK_TIMEOUT_S))
        self.screen = screen
        self._versions = versions
        self._state: IndexState | None = None
        self._header = index_header(memory_id=options.memory_id, index_lines=options.index_lines,
                                    index_bytes=options.index_bytes)

    @property
    def versions(self) -> VersionLog:
        """The root's version history (:class:`.versions.VersionLog`; SQLite loads with the first write)."""
        if self._versions is None:
            from .versions import VersionLog

            self._versions = VersionLog(self.root)
        return self._versions

    def _default_number(self) -> int:
        """A direct-mode writer's next revision: the root's mark plus one (:func:`.revision_mark.bump_mark` raises
        the mark to it when the lock is released)."""
        from .revision_mark import read_mark

        return read_mark(self.root) + 1

    def _keep_replaced(self, replaced: dict[str, IndexEntry], revision: int) -> None:
        """Keep the texts about to be replaced that the history lacks; raises MMError(E_IO) (write nothing then)."""
        if replaced:
            from .versions import keep_replaced

            keep_replaced(self.versions, self.root, replaced, self._now_iso(), revision)

    def _keep(self, versions: list[NewVersion]) -> None:
        """Keep what the change left. A failure loses nothing: the next change finds the text on disk unkept."""
        try:
            self.versions.keep(versions, self._now_iso())
        except MMError:
            pass

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

    def _write_files(self, notes: dict[str, bytes], state: IndexState) -> None:
        """Write the notes ``memories/<name>`` and MEMORY.md all or nothing (:func:`.rootfs.replace_together`).

        Raises:
            MMError(E_IO): if any step fails (ENOSPC included); every file is then as before.
        """
        replace_together(self.root, notes, state.data)
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
              tags: str | None = None, updated: str | None = None, review_after: str | None = None,
              allow_hidden: bool = False, allow_secret: bool = False, cause: str = "write",
              number: Number | None = None) -> dict[str, Any]:
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
            allow_hidden: a person lets hidden text into the body. allow_secret: a person lets a secret into the body,
                summary or tags (never the topic); both are recorded in the version history.
            cause: what the version history calls the write (``write``, ``accept``, ``restore``, ``undo`` …).
            number: hands out the write's revision (default: the root's mark plus one).

        Returns:
            ``{ok: True, topic, uri, action: created|updated, usage, allowed?}`` or
            ``{ok: False, code, message, reason, usage, topic}``; ``usage`` is
            ``{bodyChars, writeBudget, overflow, noteBytes, noteMaxBytes, index}``; ``allowed`` says what a person
            let through (:func:`.screening.check_carried`).

        Raises:
            MMError(E_INVALID): for a bad topic; NUL or a lone surrogate in any text;
                a line break (CR, LF, VT, FF, NEL, U+2028, U+2029) in summary, tags or updated;
                a ``review_after`` that is not a date nor a relative span (prose is refused);
                hidden text in summary or tags, or in the body without ``allow_hidden``.
            MMError(E_SECRET): for a secret in the topic, or elsewhere without ``allow_secret``.
            MMError(E_CONFLICT): for a new topic differing from an indexed one only by case.
            MMError(E_PARSE): if the live MEMORY.md is not mm v1 (it is never overwritten then).
            MMError(E_IO): if the files cannot be written, or the text it replaces cannot be kept; neither
                file is then torn.
        """
        done = self.write_many([(topic, content, {"budget": budget, "summary": summary, "tags": tags,
                                                  "updated": updated, "review_after": review_after,
                                                  "allow_hidden": allow_hidden, "allow_secret": allow_secret,
                                                  "cause": cause})], number=number)[0]
        if done.outcome is None:
            raise done.error or MMError(ErrorCode.E_IO, "the write was not applied")
        return done.outcome

    def write_many(self, writes: Sequence[tuple[str, Any, Mapping[str, Any]]], *,
                   number: Number | None = None) -> list[BatchedWrite]:
        """Apply ``writes`` (``(topic, content, keyword arguments of write)``) in order as one group commit.

        Each write is checked as :meth:`write` checks it, against the index as the writes
        before it in the list left it (budgets in arrival order); the accepted ones land
        together: one index rewrite, one fsync of each file and folder
        (:meth:`_write_files`). A refused or invalid write takes nothing else down. If
        the group's files cannot be written (``E_IO``), nothing of it is, and each
        write is tried again alone, so a failure names only the writes it belongs to.
        ``number`` hands out each accepted write's revision, in order (:attr:`BatchedWrite.revision`).

        Returns:
            One :class:`BatchedWrite` per write, in order.
        """
        number = number or self._default_number
        results: list[BatchedWrite] = []
        notes: dict[str, bytes] = {}
        replaced: dict[str, IndexEntry] = {}
        kept: list[tuple[BatchedWrite, NewVersion]] = []
        checked: list[tuple[str, Any, dict[str, Any]] | MMError] = []
        for topic, content, kwargs in writes:
            try:
                checked.append(self._door(topic, content, kwargs))
            except MMError as error:
                checked.append(error)
        with self._lock():
            try:
                state = self.live_state()
            except MMError as error:
                return [BatchedWrite(None, c if isinstance(c, MMError) else error) for c in checked]
            for one in checked:
                try:
                    if isinstance(one, MMError):
                        raise one
                    outcome, after, note = self._plan(state, one[0], one[1], **one[2])
                except MMError as error:
                    results.append(BatchedWrite(None, error))
                    continue
                results.append(BatchedWrite(outcome, None, after, note))
                if after is not None:
                    self._note_change(state, after, one, outcome, replaced, kept, results[-1])
                    state = after
                    notes[f"{outcome['topic']}.md"] = note
            failed: MMError | None = None
            if notes:
                numbers = [number() for _ in kept]
                try:
                    self._keep_replaced(replaced, numbers[0] - 1)
                    self._write_files(notes, state)
                except MMError as error:
                    failed = error
                else:
                    for (done, version), revision in zip(kept, numbers, strict=True):
                        done.revision = version.revision = revision
                    self._keep([version for _, version in kept])
        if failed is None:
            return results
        if len(notes) > 1:
            return [self.write_many([one], number=number)[0] for one in writes]
        return [BatchedWrite(None, failed) if r.state is not None else r for r in results]

    @staticmethod
    def _note_change(before: IndexState, after: IndexState, one: tuple[str, Any, dict[str, Any]],
                     outcome: dict[str, Any], replaced: dict[str, IndexEntry],
                     kept: list[tuple[BatchedWrite, NewVersion]], done: BatchedWrite) -> None:
        """Record an accepted write of a group for the history: the entry it replaces (the first time the group
        touches the topic) and the version it leaves."""
        from .versions import NewVersion

        topic = outcome["topic"]
        old = next((e for e in before.entries if e.topic == topic), None)
        if old is not None and topic not in replaced and all(v.topic != topic for _, v in kept):
            replaced[topic] = old
        entry = next(e for e in after.entries if e.topic == topic)
        kept.append((done, NewVersion(topic, None, one[2].get("cause", "write"), one[1], entry.summary,
                                      ", ".join(entry.tags), entry.write_budget, outcome.get("allowed"))))

    def _door(self, topic: str, content: Any, kwargs: Mapping[str, Any]) -> tuple[str, Any, dict[str, Any]]:
        """``(topic, content, keyword arguments of _plan)`` of a write that may be planned (no lock needed).

        Raises:
            MMError(E_INVALID | E_SECRET): as :meth:`write`, for a bad topic or field, hidden text or a secret.
        """
        topic = validate_topic(topic)
        planned = {k: v for k, v in kwargs.items() if k not in ("review_after", "allow_hidden", "allow_secret")}
        check_write_fields(content, **{k: planned.get(k) for k in ("summary", "tags", "updated")})
        from .screening import check_carried  # loaded by writes, never by a one-shot read

        planned["allowed"] = check_carried(
            {"topic": topic, "content": content if isinstance(content, str) else None,
             "summary": planned.get("summary"), "tags": planned.get("tags")}, screen=self.screen,
            allow_hidden=bool(kwargs.get("allow_hidden")), allow_secret=bool(kwargs.get("allow_secret")))
        review_after = kwargs.get("review_after")
        planned["review_line"] = None if review_after is None else self._review_date(review_after)
        return topic, content, planned

    def _plan(self, state: IndexState, topic: str, content: Any, *, budget: Any = None, summary: str | None = None,
              tags: str | None = None, updated: str | None = None, review_line: str | None = None,
              allowed: dict[str, Any] | None = None,
              cause: str = "write") -> tuple[dict[str, Any], IndexState | None, bytes]:
        """One write (past :meth:`_door`) checked against ``state``: ``(outcome, the index after it or None when
        refused, the note's bytes)``.

        Raises:
            MMError(E_CONFLICT): as :meth:`write`, before anything is written.
        """
        o = self.options
        entries = state.entries
        if not isinstance(content, str) or not js_trim(content):
            usage0 = self._write_usage(0, o.default_write_budget, 0, state.usage)
            return _failure(topic, "E_INVALID", "content must be a non-empty string", usage0), None, b""
        body_chars = len(content)
        write_budget = int(budget) if is_js_integer(budget) and budget > 0 else o.default_write_budget
        usage = self._write_usage(body_chars, write_budget, 0, state.usage)
        if body_chars > write_budget:
            return _failure(topic, BudgetCode.E_WRITE_BUDGET_EXCEEDED,
                            "content exceeds its write budget; compress it to fit (see usage)", usage), None, b""
        file = detail_rel(topic)
        note_text = serialize_note(topic=topic, memory_id=o.memory_id, file=file, body=content)
        usage["noteBytes"] = byte_length(note_text)
        if usage["noteBytes"] > o.detail_max_bytes:
            return _failure(topic, BudgetCode.E_FILE_BUDGET_EXCEEDED,
                            "detail memory exceeds its byte cap; split or condense it (see usage)", usage), None, b""
        existing = next((e for e in entries if e.topic == topic), None)
        if existing is None:
            refuse_case_twin(topic, (e.topic for e in entries))
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
                "(never truncate) (see usage.index)", usage), None, b""
        done: dict[str, Any] = {"ok": True, "topic": topic, "uri": uri_for(o.memory_id, topic),
                                "action": "updated" if existing else "created", "usage": usage}
        if allowed:
            done["allowed"] = allowed
        return done, after, note_text.encode()

    def merge(self, topics: list[str], into: str, *, summary: str | None = None, allow_hidden: bool = False,
              allow_secret: bool = False, number: Number | None = None) -> dict[str, Any]:
        """Consolidate notes into ``into`` (issue 13, mm v1 §6), one revision (``number``): see
        :func:`.merge.merge_notes` for what it writes, returns and raises."""
        from .merge import merge_notes

        return merge_notes(self, topics, into, summary=summary, allow_hidden=allow_hidden, allow_secret=allow_secret,
                           number=number or self._default_number)

    def rename(self, old: str, new: str) -> dict[str, Any]:
        """Rename the topic ``old`` to ``new`` (issue 30) in one write of the index, links following: see
        :func:`.rename.rename_topic` for what it writes, returns and raises."""
        from .rename import rename_topic

        return rename_topic(self, old, new)

    def _review_date(self, value: object) -> str:
        """``value`` resolved to ``YYYY-MM-DD`` against today's UTC date ('' stays ''); raises E_INVALID."""
        if value == "":
            return ""
        from datetime import date

        from .review_date import resolve_review_after  # loaded only by writes that set a date

        return resolve_review_after(value, date.fromisoformat(self._now_iso()[:10])).isoformat()

    def _write_usage(self, body_chars: int, write_budget: int, note_bytes: int,
                     index: IndexUsage) -> dict[str, Any]:
        return {"bodyChars": body_chars, "writeBudget": write_budget,
                "overflow": max(0, body_chars - write_budget), "noteBytes": note_bytes,
                "noteMaxBytes": self.options.detail_max_bytes, "index": index}

    def delete(self, topic: str, *, number: Number | None = None) -> dict[str, Any]:
        """Remove ``topic``'s entry and detail file; always allowed, even over budget (mm v1 §6).

        The index is rewritten first, then the file removed: a crash between
        leaves an orphan file, never a lost entry pointing at nothing. A symlink
        is removed itself; its target is never touched. The deleted text stays in
        the version history (the delete is revision ``number()`` there).

        Returns:
            ``{ok: True, removed, topic, existed, usage}``; ``removed`` says a
            detail file was deleted, ``existed`` that an entry or file was there,
            ``usage`` is the index usage after the delete.

        Raises:
            MMError(E_INVALID): for a bad topic.
            MMError(E_PARSE): if the live MEMORY.md is not mm v1.
            MMError(E_IO): if the files cannot be changed, or the text deleted cannot be kept.

        An entry whose ``file`` is not a note under ``memories/`` (MEMORY.md, ``.mmd/…``,
        a folder, a path through a symlink) loses its entry; that file stays (``removed: False``).
        A hand-edited line break in another entry never blocks a delete.
        """
        validate_topic(topic)
        with self._lock():
            state = self.live_state()
            entry = next((e for e in state.entries if e.topic == topic), None)
            rel = entry.file if entry else detail_rel(topic)
            revision = (number or self._default_number)() if entry is not None else 0
            if entry is not None:
                self._keep_replaced({topic: entry}, revision - 1)
            after = self._next_state(state, topic, None)
            self._write_index(after)
            removed = self._remove_note(rel)
            if entry is not None:
                from .versions import NewVersion

                self._keep([NewVersion(topic, revision, "delete", None)])
        return {"ok": True, "removed": removed, "topic": topic, "existed": entry is not None or removed,
                "usage": after.usage}

    def _remove_note(self, rel: str) -> bool:
        """Remove the note ``rel`` (:func:`.rootfs.remove_note`): whether a file was removed; raises MMError(E_IO)."""
        return remove_note(self.root, rel)

    def budget(self) -> dict[str, Any]:
        """The live budget figures (mm v1 §6): see :func:`.live_budget.live_budget`.

        Raises:
            MMError(E_PARSE) / MMError(E_IO): if MEMORY.md cannot be parsed or read.
        """
        from .live_budget import live_budget

        return live_budget(self.options, self.live_state())


def _failure(topic: str, code: str, message: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"ok": False, "code": str(code), "message": message, "reason": str(code), "usage": usage, "topic": topic}
