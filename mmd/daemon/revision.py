"""Revisions: building the next immutable snapshot of a root, its file fingerprints, and what changed.

Two ways to build one. :func:`load_revision` reads the whole root with the
core's :func:`~mmd.core.snapshot.load_snapshot` (startup, external edits,
config reloads). :func:`patch_revision` follows one of the daemon's own
writes or deletes: it takes MEMORY.md as the store left it and the note the
write touched from the bytes just written (a delete: read back), reuses every
other note of the previous revision (the same objects, so the diff compares
only what changed) and carries the orphan list over, so a write reads nothing
and lists no folder however many notes the root holds. Files it does not
re-read keep the fingerprints they had, so an external edit to one of them
made meanwhile still shows up as a mismatch to the watcher. Pure I/O and data: safe
in a worker thread; nothing here touches a socket or the daemon's state.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mmd.core.budget import IndexUsage
from mmd.core.model import IndexEntry, Note
from mmd.core.options import MemoryOptions
from mmd.core.paths import DETAIL_DIR, INDEX_NAME
from mmd.core.snapshot import (
    MalformedNote,
    Snapshot,
    build_snapshot,
    load_snapshot,
    malformed_entries,
    read_note_checked,
)
from mmd.core.uri import uri_for
from mmd.wire.events import ChangedItem

__all__ = ["Fingerprints", "Revision", "diff_snapshots", "fingerprint_files", "load_revision", "patch_revision"]

LiveIndex = Callable[[], tuple[str, tuple[IndexEntry, ...]]]
"""Returns MEMORY.md's text and entries as on disk now (``MemoryStore.live_index``)."""

Fingerprints = dict[str, tuple[int, int, int]]
"""``{root-relative POSIX path: (inode, size in bytes, mtime in ns)}`` of the memory files."""


@dataclass(frozen=True, slots=True)
class Revision:
    """A prepared next revision: the snapshot, the file fingerprints it was read at, and the diff."""

    snapshot: Snapshot
    fingerprints: Fingerprints
    added: list[ChangedItem]
    updated: list[ChangedItem]
    removed: list[ChangedItem]

    @property
    def empty(self) -> bool:
        """No note was added, changed or removed."""
        return not (self.added or self.updated or self.removed)


def fingerprint_files(root: Path, extra: Iterable[str] = ()) -> Fingerprints:
    """Stat MEMORY.md, every ``memories/*.md`` and the ``extra`` relative paths (missing ones left out)."""
    rels = {INDEX_NAME, *extra}
    try:
        rels.update(f"{DETAIL_DIR}/{n}" for n in os.listdir(root / DETAIL_DIR) if n.endswith(".md"))
    except OSError:
        pass
    out: Fingerprints = {}
    for rel in rels:
        try:
            st = os.stat(root.joinpath(*rel.split("/")))
        except OSError:
            continue
        out[rel] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def _body_hash(note: Note) -> str:
    return hashlib.sha256(note.body.encode("utf-8", "surrogatepass")).hexdigest()


def diff_snapshots(old: Snapshot | None, new: Snapshot) -> tuple[list[ChangedItem], list[ChangedItem],
                                                                     list[ChangedItem]]:
    """Topics added, updated (entry or body changed) and removed from ``old`` to ``new``, sorted by topic."""
    before = {} if old is None else old.by_topic
    after = new.by_topic
    added = [{"topic": t, "sha256": _body_hash(after[t])} for t in sorted(after.keys() - before.keys())]
    removed: list[ChangedItem] = [{"topic": t} for t in sorted(before.keys() - after.keys())]
    updated: list[ChangedItem] = [
        {"topic": t, "sha256": _body_hash(after[t])} for t in sorted(after.keys() & before.keys())
        if after[t] is not before[t] and (after[t].body != before[t].body or after[t].entry != before[t].entry)
    ]
    return added, updated, removed  # type: ignore[return-value]


def _stat(root: Path, rel: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(os.path.join(root, rel))  # POSIX: a root-relative path with "/" (pathlib costs more)
    except (OSError, ValueError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def load_revision(options: MemoryOptions, old: Snapshot | None, live_index: LiveIndex, *, number: int,
                  loaded_at: str, engine: str) -> Revision:
    """Read the whole root as revision ``number`` (files are stat'ed before they are read, so a
    concurrent edit shows up as a fingerprint mismatch later, never as a missed change).

    ``live_index`` returns MEMORY.md's text and entries (``MemoryStore.live_index``, which
    parses again only when the file's bytes changed).

    Raises:
        MMError(E_NOT_INITIALIZED | E_PARSE | E_IO): as :func:`load_snapshot`.
    """
    prints = fingerprint_files(options.root, (e.file for e in old.entries) if old else ())
    snapshot = load_snapshot(options, loaded_at=loaded_at, engine=engine, revision=number, live_index=live_index)
    # Entries outside memories/ that are new to this load can only be stat'ed after the read.
    for e in snapshot.entries:
        if e.file not in prints and (now := _stat(options.root, e.file)) is not None:
            prints[e.file] = now
    added, updated, removed = diff_snapshots(old, snapshot)
    return Revision(snapshot, prints, added, updated, removed)


def patch_revision(options: MemoryOptions, old: Snapshot, old_prints: Fingerprints, touched: str,
                   live_index: LiveIndex, *, number: int, loaded_at: str, written: bytes | None = None,
                   usage: IndexUsage | None = None) -> Revision:
    """Revision ``number`` after the daemon itself rewrote MEMORY.md and the detail file ``touched``.

    Every note whose file is neither ``touched`` nor new to the index is reused from
    ``old`` (the same :class:`Note` when its entry is the same object), with the entry as
    MEMORY.md now has it. ``written``: the bytes the daemon just wrote to ``touched``, so it
    is not read back; ``usage``: MEMORY.md's measure as the store made it (else measured
    here). Orphan files are carried over from ``old`` (files that left the index are
    stat'ed), not listed again: a file someone else adds meanwhile has no fingerprint yet,
    so the watcher's report of it reloads the root.

    Raises:
        MMError(E_PARSE | E_IO): if MEMORY.md cannot be read or parsed.
    """
    root = options.root
    prints = dict(old_prints)
    for rel in (INDEX_NAME, touched):
        now = _stat(root, rel)
        if now is None:
            prints.pop(rel, None)
        else:
            prints[rel] = now
    text, entries = live_index()
    previous = {n.entry.file: n for n in old.notes}
    was_bad = {m["file"]: m for m in old.anomalies.get("malformedNotes", [])}
    notes: list[Note] = []
    malformed: list[MalformedNote] = []
    reused: set[int] = set()  # ids of entries whose note is old's, unchanged
    for entry in entries:
        prev = previous.get(entry.file) if entry.file != touched else None
        if prev is not None:
            body: str | None = None if prev.missing_file else prev.body
            problem = was_bad.get(entry.file)
            problem = {**problem, "topic": entry.topic} if problem else None
        else:
            if entry.file != touched and (now := _stat(root, entry.file)) is not None:
                prints[entry.file] = now
            body, problem = read_note_checked(root, entry, written if entry.file == touched else None)
        if problem is not None:
            malformed.append(problem)
        if prev is not None and prev.entry is entry:
            notes.append(prev)
            reused.add(id(entry))
            continue
        uri = prev.uri if prev is not None and prev.topic == entry.topic else uri_for(options.memory_id, entry.topic)
        notes.append(Note(entry, uri, body or "", body is None))
    snapshot = build_snapshot(options, text=text, entries=entries, notes=notes, malformed=malformed,
                              loaded_at=loaded_at, engine=old.engine, revision=number,
                              orphans=_orphans(root, old, entries, touched, prints),
                              bad_entries=_bad_entries(old, entries, reused), usage=usage)
    added, updated, removed = diff_snapshots(old, snapshot)
    return Revision(snapshot, prints, added, updated, removed)


def _bad_entries(old: Snapshot, entries: tuple[IndexEntry, ...], reused: set[int]) -> list[MalformedNote]:
    """:func:`~mmd.core.snapshot.malformed_entries` of ``entries``: an entry ``old`` held (its id in
    ``reused``) whose topic had no problem there is clean still; every other entry is checked."""
    flagged = {problem["topic"] for problem in old.anomalies.get("malformedEntries", [])}
    out: list[MalformedNote] = []
    for entry in entries:
        if id(entry) not in reused or entry.topic in flagged:
            out.extend(malformed_entries((entry,)))
    return out


def _orphans(root: Path, old: Snapshot, entries: tuple[IndexEntry, ...], touched: str,
             prints: Fingerprints) -> list[str]:
    """The sorted ``memories/*.md`` names no entry names, after a write or delete of ``touched``:
    ``old``'s orphans (``touched`` checked again), plus files that left the index and still exist."""
    indexed = {e.file for e in entries}
    left = {e.file for e in old.entries} - indexed
    names = {f"{DETAIL_DIR}/{n}" for n in old.anomalies.get("orphanFiles", [])} - indexed - {touched}
    for rel in (left | {touched}) - indexed - names:
        folder, _, name = rel.rpartition("/")
        if folder == DETAIL_DIR and name.endswith(".md") and (now := _stat(root, rel)) is not None:
            prints[rel] = now
            names.add(rel)
    return sorted(rel.rpartition("/")[2] for rel in names)
