"""``Memory``: one agent session's view of a memory root (mm v1 §7; reference ``memory.ts``).

Reads (``read_index``, ``read_topic``, ``list_notes``, ``search``) are served
from the snapshot taken at ``open``/``ensure``/``reload`` and never see this
session's writes; writes go to disk at once, durably, and count in
``pending_writes`` until the next reload. ``budget`` reads the live files.

The CLI and the daemon use the same pieces: :class:`~.store.MemoryStore`
writes, :func:`~.snapshot.load_snapshot` reads, :func:`search_snapshot` searches.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager

from .clock import Clock, now_iso, parse_iso_ms, system_clock
from .engine import choose_engine, fts5_available
from .errors import ErrorCode, MMError
from .model import Note
from .options import MemoryOptions, is_js_integer
from .snapshot import Snapshot, load_snapshot
from .store import MemoryStore
from .text import js_trim, validate_topic
from .uri import uri_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Memory", "merge_searches", "nudge_report", "search_snapshot"]

FTS5_FALLBACK_NOTE = "fts5 requested but node:sqlite/FTS5 unavailable; used scan"


def merge_searches(results: list[tuple[str, dict[str, Any]]], limit: int) -> dict[str, Any]:
    """One search result from the results of several roots (a project root and the user root, ``docs/projects.md``).

    Args:
        results: ``(scope, search_snapshot result)`` pairs, the scope's own root first.
        limit: most matches kept.

    Returns:
        The first result's shape, its ``matches`` every root's, each with its ``scope``, best score first (ties
        keep the roots' order, then topic); ``total`` the sum; ``truncated`` when any root's was or matches were cut.
    """
    first = results[0][1]
    matches = [{**m, "scope": scope} for scope, r in results for m in r["matches"]]
    order = {scope: i for i, (scope, _) in enumerate(results)}
    matches.sort(key=lambda m: (-m["score"], order[m["scope"]], m["topic"]))
    out = {**first, "total": sum(r["total"] for _, r in results),
           "truncated": any(r["truncated"] for _, r in results) or len(matches) > limit, "matches": matches[:limit]}
    return out


def search_snapshot(snapshot: Snapshot, query: Any, *, mode: Any = None, limit: Any = None,
                    options: MemoryOptions, fts5_available: bool) -> dict[str, Any]:
    """Search a snapshot (mm v1 §8).

    Args:
        query: non-blank text.
        mode: ``auto`` | ``scan`` | ``fts5``; None = configured; anything else acts as ``auto``.
        limit: most matches, a positive integer; None = configured.
        fts5_available: whether SQLite FTS5 may be used.

    Returns:
        ``{query, engine, total, truncated, matches: [{topic, uri, updated, score, snippet}], note?}``;
        ``note`` only when an ``fts5`` request fell back to scan.

    Raises:
        MMError(E_INVALID): for a blank or non-string query, or a limit that is
            not a positive integer (the reference silently misbehaves there).
    """
    if not isinstance(query, str) or not js_trim(query):
        raise MMError(ErrorCode.E_INVALID, "search query must be a non-empty string")
    if limit is None:
        limit = options.search_limit
    elif not is_js_integer(limit) or limit < 1:
        raise MMError(ErrorCode.E_INVALID, f"search limit must be a positive integer, got {limit!r}")
    requested = options.search_mode if mode is None else mode
    engine = choose_engine(requested, fts5_available)
    index = snapshot.search_index(engine)
    result: dict[str, Any] = index.search(query, int(limit), options.max_snippet_chars)
    if engine == "scan" and requested == "fts5":
        result["note"] = FTS5_FALLBACK_NOTE
    return result


def nudge_report(snapshot: Snapshot, pending_writes: int, at: str, *, digest_hint: bool = True) -> dict[str, Any]:
    """The reference's nudge report (``digest_hint`` False leaves out its "mem_digest can distill…" action:
    a daemon that digests the sessions itself suggests the review instead).

    Returns:
        ``{at, pendingWrites, noteCount, indexOverBudget, needsCommit, suggestedActions}``.
    """
    actions = []
    if pending_writes > 0:
        actions.append(
            f"commit {pending_writes} staged memory write(s): they persist to disk and will load next session")
    if not snapshot.notes:
        actions.append("no memories yet: use mem_write to record durable context")
    if snapshot.index_over_budget:
        actions.append("index over budget: consolidate MEMORY.md (mem_budget shows exact usage)")
    if digest_hint:
        actions.append("mem_digest can distill the latest session log into candidate memories")
    return {
        "at": at,
        "pendingWrites": pending_writes,
        "noteCount": len(snapshot.notes),
        "indexOverBudget": snapshot.index_over_budget,
        "needsCommit": pending_writes > 0 or snapshot.index_over_budget,
        "suggestedActions": actions,
    }


class Memory:
    """A session on one memory root: a frozen snapshot plus a durable writer.

    Build it with :meth:`ensure` (create the root if missing) or :meth:`open`.

    Args:
        options: validated options (:meth:`MemoryOptions.create`).
        now: the clock (``loadedAt``, ``updated``, nudges); default the wall clock.
        fts5: force SQLite FTS5 on/off; None probes it.
        lock: writer serialization, see :class:`~.store.MemoryStore`.
        screen: finds secrets in writes, see :class:`~.store.MemoryStore` (None: hidden text alone is refused).
    """

    def __init__(self, options: MemoryOptions, *, now: Clock | None = None, fts5: bool | None = None,
                 lock: Callable[[], AbstractContextManager[Any]] | None = None,
                 screen: Callable[[str], Any] | None = None) -> None:
        self.options = options
        self.root = options.root
        self.memory_id = options.memory_id
        self._now = now or system_clock
        self.fts5_available = fts5_available() if fts5 is None else fts5
        self.store = MemoryStore(options, lambda: now_iso(self._now), lock, screen=screen)
        self._snapshot: Snapshot | None = None
        self.pending_writes = 0

    @classmethod
    def ensure(cls, options: MemoryOptions, **kwargs: Any) -> Memory:
        """Create the root, ``memories/`` and an empty index if missing, then load.

        Raises:
            MMError: as :meth:`load`, or E_IO if the root cannot be created.
        """
        memory = cls(options, **kwargs)
        memory.store.ensure_root()
        return memory.load()

    @classmethod
    def open(cls, options: MemoryOptions, **kwargs: Any) -> Memory:
        """Load an existing root.

        Raises:
            MMError(E_NOT_INITIALIZED): if the root does not exist; others as :meth:`load`.
        """
        return cls(options, **kwargs).load()

    @property
    def engine(self) -> str:
        """The search engine of the configured mode (``scan`` | ``fts5``)."""
        return choose_engine(self.options.search_mode, self.fts5_available)

    @property
    def snapshot(self) -> Snapshot:
        """The current snapshot.

        Raises:
            MMError(E_SNAPSHOT): if none is loaded.
        """
        if self._snapshot is None:
            raise MMError(ErrorCode.E_SNAPSHOT, "memory is not loaded; call ensure()/open()/reload() first")
        return self._snapshot

    @property
    def loaded_at(self) -> str | None:
        return self._snapshot.loaded_at if self._snapshot else None

    def load(self) -> Memory:
        """(Re)load the snapshot from disk and reset ``pending_writes``.

        Raises:
            MMError(E_NOT_INITIALIZED | E_PARSE | E_IO): see :func:`load_snapshot`;
                the previous snapshot then stays current.
        """
        self._snapshot = load_snapshot(self.options, loaded_at=now_iso(self._now), engine=self.engine,
                                       live_index=self.store.live_index)
        self.pending_writes = 0
        return self

    reload = load

    def uri_for(self, topic: str) -> str:
        """``mm://<memoryId>/<topic>``; raises MMError(E_INVALID) for a bad topic."""
        return uri_for(self.memory_id, topic)

    def read_index(self) -> dict[str, Any]:
        """The snapshot's index view.

        Returns:
            ``{memoryId, root, loadedAt, lineCount, byteCount, overBudget, lineCap, byteCap, entries}``.
        """
        snap = self.snapshot
        return {
            "memoryId": snap.memory_id,
            "root": str(snap.root),
            "loadedAt": snap.loaded_at,
            "lineCount": snap.index_line_count,
            "byteCount": snap.index_byte_count,
            "overBudget": snap.index_over_budget,
            "lineCap": self.options.index_lines,
            "byteCap": self.options.index_bytes,
            "entries": [e.to_json() for e in snap.entries],
        }

    def read_topic(self, topic: str) -> Note | None:
        """The snapshot's note for ``topic``, or None.

        Raises:
            MMError(E_INVALID): for a bad topic.
            MMError(E_PARSE | E_INVALID | E_IO): if the note is broken (bad title,
                invalid UTF-8, a symlink, ...): see :meth:`Snapshot.note_checked`.
        """
        validate_topic(topic)
        return self.snapshot.note_checked(topic)

    def list_notes(self) -> list[Note]:
        """Every note of the snapshot, sorted by topic (stable for duplicates)."""
        return sorted(self.snapshot.notes, key=lambda n: n.topic)

    def write(self, topic: str, content: Any, **kwargs: Any) -> dict[str, Any]:
        """Write through :meth:`MemoryStore.write` (``budget``, ``summary``, ``tags``, ``updated``,
        ``review_after``, ``allow_hidden``, ``allow_secret``); adds ``pendingWrites`` to a success."""
        self.snapshot  # noqa: B018 - a write needs a loaded session, as in the reference
        outcome = self.store.write(topic, content, **kwargs)
        if outcome["ok"]:
            self.pending_writes += 1
            outcome["pendingWrites"] = self.pending_writes
        return outcome

    def delete(self, topic: str) -> dict[str, Any]:
        """Delete through :meth:`MemoryStore.delete`: ``{ok, removed, topic, pendingWrites, usage}``."""
        self.snapshot  # noqa: B018
        outcome = self.store.delete(topic)
        if outcome.pop("existed"):
            self.pending_writes += 1
        return {"ok": True, "removed": outcome["removed"], "topic": topic,
                "pendingWrites": self.pending_writes, "usage": outcome["usage"]}

    def search(self, query: Any, *, mode: Any = None, limit: Any = None) -> dict[str, Any]:
        """Search the snapshot; see :func:`search_snapshot`."""
        return search_snapshot(self.snapshot, query, mode=mode, limit=limit, options=self.options,
                               fts5_available=self.fts5_available)

    def budget(self) -> dict[str, Any]:
        """The live budget report (mm v1 §6), in the reference's key order."""
        snap = self.snapshot
        live = self.store.budget()
        age_ms = int((self._now() - parse_iso_ms(snap.loaded_at)).total_seconds() * 1000)
        return {
            "root": str(self.root),
            "memoryId": self.memory_id,
            "loadedAt": snap.loaded_at,
            "snapshotAgeMs": age_ms,
            "pendingWrites": self.pending_writes,
            **live,
            "search": {"configuredMode": self.options.search_mode, "engine": snap.engine},
        }

    def digest(self, *, text: str | None = None, file: str | os.PathLike[str] | None = None,
               max_items: int | None = None, topic_hint: str | None = None) -> dict[str, Any]:
        """Candidate memories from text, a file or the newest session log (mm v1 §9); never writes."""
        from .digest import digest

        self.snapshot  # noqa: B018
        return digest(text=text, file=file, max_items=max_items, topic_hint=topic_hint,
                                 default_write_budget=self.options.default_write_budget,
                                 dsh_home=self.options.dsh_home)

    def nudge(self) -> dict[str, Any]:
        """The session-end / periodic nudge report."""
        return nudge_report(self.snapshot, self.pending_writes, now_iso(self._now))
