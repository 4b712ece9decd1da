"""Frozen snapshots: one immutable, self-consistent view of a memory root (mm v1 §7).

``load_snapshot`` reads MEMORY.md and every detail file once; readers then
share the resulting :class:`Snapshot` without locks. One malformed detail file
(bad title, invalid UTF-8, a NUL byte, a symlink, a ``file:`` outside
``memories/`` or no safe path at all, such as ``../x``) is recorded in
``anomalies["malformedNotes"]`` and served with an empty body
(``Snapshot.note_checked`` raises for it); the rest of the root loads. An entry
with a line break in a one-line field is listed in ``anomalies["malformedEntries"]``.
An unparsable MEMORY.md is an error: nothing can be served from it safely.
"""

from __future__ import annotations

import os
from _thread import allocate_lock
from collections.abc import Callable, Mapping
from pathlib import Path

from .errors import ErrorCode, MMError
from .format import entry_problems, parse_index, parse_note, safe_rel_path
from .model import IndexEntry, Note
from .options import MemoryOptions
from .paths import DETAIL_DIR, INDEX_NAME
from .rootfs import MAX_NOTE_READ_BYTES, read_index_bytes, read_note_bytes
from .text import js_trim
from .uri import uri_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypedDict

    from .budget import IndexUsage

__all__ = [
    "Anomalies",
    "MalformedNote",
    "Snapshot",
    "build_snapshot",
    "load_snapshot",
    "malformed_entries",
    "note_body",
    "orphan_files",
    "parse_index_text",
    "parse_live_index",
    "read_note_checked",
    "read_note_file",
    "read_note_sized",
    "MAX_NOTE_READ_BYTES",
]



if TYPE_CHECKING:
    class MalformedNote(TypedDict):
        """A detail file that could not be loaded: its topic, file, the error code and message."""

        topic: str
        file: str
        code: str
        message: str

else:
    MalformedNote = dict

if TYPE_CHECKING:
    class Anomalies(TypedDict, total=False):
        """Root anomalies: dangling entries (count), orphan ``memories/*.md`` names, malformed notes.

        ``malformedNotes`` (and ``malformedEntries``: index entries with a line break
        in a one-line field, code ``E_INVALID``) are present only when there is at
        least one, so a clean root reports exactly the reference's shape.
        """

        danglingEntries: int
        orphanFiles: list[str]
        malformedNotes: list[MalformedNote]
        malformedEntries: list[MalformedNote]

else:
    Anomalies = dict

def read_index_text(root: Path) -> str:
    """MEMORY.md's text ('' when absent), UTF-8 with replacement characters as Node reads it.

    Raises:
        MMError(E_PARSE): if MEMORY.md is a symlink or not a regular file (see :func:`.rootfs.read_index_bytes`).
        MMError(E_IO): if the file exists but cannot be read.
    """
    return read_index_bytes(root).decode("utf-8", "replace")


def parse_live_index(root: Path, memory_id: str) -> tuple[str, tuple[IndexEntry, ...]]:
    """MEMORY.md's text and entries, each entry carrying ``memory_id`` (one id per snapshot).

    Raises:
        MMError(E_PARSE): naming the file, if MEMORY.md is not mm v1.
        MMError(E_IO): if it cannot be read.
    """
    return parse_index_text(read_index_text(root), root, memory_id)


def parse_index_text(text: str, root: Path, memory_id: str) -> tuple[str, tuple[IndexEntry, ...]]:
    """``text`` (MEMORY.md of ``root``) and its entries, each carrying ``memory_id``.

    An entry whose ``file`` is not a safe path is kept as written (``strict_files=False``): reading
    its note fails for that topic alone (see :func:`read_note_sized`), every other topic reads.

    Raises:
        MMError(E_PARSE): naming the file, if ``text`` is not mm v1 (a heading that is not a topic).
    """
    if not js_trim(text):
        return text, ()
    try:
        parsed = parse_index(text, memory_id, strict_files=False)
    except MMError as error:
        raise MMError(error.code, f"{root / INDEX_NAME}: {error.message}", details=str(root / INDEX_NAME)) from None
    return text, tuple(e if e.memory_id == memory_id else e.replace(memory_id=memory_id) for e in parsed.entries)


def read_note_sized(root: Path, rel: str) -> tuple[str, int] | None:
    """The body of the note at ``rel`` and the file's size in bytes, or None when it is missing.

    The one checked way every reader (snapshot load, budget, doctor through the
    budget) reads a note: see :func:`.rootfs.read_note_bytes`.

    Raises:
        MMError(E_PARSE): if ``rel`` may not name a note (not under ``memories/``, a
            symlink on the way, not a regular file), the file holds invalid UTF-8 or
            NUL bytes, or is larger than 16 MiB.
        MMError(E_INVALID): if its title or ``mm-topic`` is not a topic slug.
        OSError: if the OS refuses the read.
    """
    read = read_note_bytes(root, safe_rel_path(rel))
    if read is None:
        return None
    data, size = read
    return note_body(rel, data), size


def note_body(rel: str, data: bytes) -> str:
    """The body a snapshot holds for the note file ``rel`` whose bytes are ``data`` ('' for a blank file).

    Raises:
        MMError(E_PARSE): if ``data`` is not valid UTF-8 or holds a NUL byte.
        MMError(E_INVALID): if its title or ``mm-topic`` is not a topic slug.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MMError(ErrorCode.E_PARSE, f"{rel} is not valid UTF-8 (byte {error.start})", details=rel) from None
    if "\x00" in text:
        raise MMError(ErrorCode.E_PARSE, f"{rel} contains a NUL byte at {text.index(chr(0))}", details=rel)
    return parse_note(text).body if js_trim(text) else ""


def read_note_file(root: Path, rel: str) -> str | None:
    """The body of the note at ``rel``, or None when it is missing; raises as :func:`read_note_sized`."""
    read = read_note_sized(root, rel)
    return None if read is None else read[0]


def orphan_files(root: Path, entries: tuple[IndexEntry, ...]) -> list[str]:
    """Sorted names of ``memories/*.md`` that no entry's ``file`` names verbatim (reference rule)."""
    indexed = {e.file for e in entries}
    try:
        names = sorted(os.listdir(root / DETAIL_DIR))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [n for n in names if n.endswith(".md") and f"{DETAIL_DIR}/{n}" not in indexed]


class Snapshot:
    """An immutable view of a root at one instant (mm v1 §7).

    Attributes:
        revision: the daemon's revision number (0 outside the daemon).
        loaded_at: ISO-8601 UTC with milliseconds.
        memory_id, root: as configured.
        index_line_count, index_byte_count: MEMORY.md size in lines and UTF-8 bytes.
        index_over_budget: MEMORY.md exceeds a cap.
        entries: index entries in file order.
        notes: the entries with their bodies, in file order.
        anomalies: see :class:`Anomalies`.
        engine: the search engine resolved at load (``scan`` | ``fts5``).
    """

    __slots__ = ("_by_topic", "_search", "_search_lock", "anomalies", "engine", "entries", "index_byte_count",
                 "index_line_count", "index_over_budget", "loaded_at", "memory_id", "notes", "revision", "root")

    def __init__(self, revision: int, loaded_at: str, memory_id: str, root: Path, index_line_count: int,
                 index_byte_count: int, index_over_budget: bool, entries: tuple[IndexEntry, ...],
                 notes: tuple[Note, ...], anomalies: Anomalies, engine: str) -> None:
        self.revision, self.loaded_at, self.memory_id, self.root = revision, loaded_at, memory_id, root
        self.index_line_count, self.index_byte_count = index_line_count, index_byte_count
        self.index_over_budget, self.entries, self.notes = index_over_budget, entries, notes
        self.anomalies, self.engine = anomalies, engine
        self._by_topic: dict[str, Note] = {n.entry.topic: n for n in reversed(notes)}  # the first note wins
        self._search: dict[str, Any] = {}
        self._search_lock = allocate_lock()

    @property
    def by_topic(self) -> Mapping[str, Note]:
        """``{topic: its first note}`` (read only; duplicate sections keep file order)."""
        return self._by_topic

    def __repr__(self) -> str:
        return f"Snapshot(revision={self.revision}, loaded_at={self.loaded_at!r}, notes={len(self.notes)})"

    def note(self, topic: str) -> Note | None:
        """The first note of ``topic`` (duplicate sections keep file order), or None."""
        return self._by_topic.get(topic)

    def note_checked(self, topic: str) -> Note | None:
        """The first note of ``topic``, or None; a malformed one raises instead of reading as empty.

        Raises:
            MMError(E_PARSE | E_INVALID | E_IO): the code and message recorded in
                ``anomalies["malformedNotes"]`` for this topic's note.
        """
        note = self._by_topic.get(topic)
        if note is not None:
            for problem in self.anomalies.get("malformedNotes", ()):
                if problem["topic"] == topic and problem["file"] == note.entry.file:
                    raise MMError(ErrorCode(problem["code"]), f"note {topic} is broken: {problem['message']}",
                                  details=problem["file"])
        return note

    def search_index(self, engine: str) -> Any:
        """The engine's index over this snapshot, built once on first use (thread-safe); both engines
        share one scan token index, whichever asks first."""
        with self._search_lock:
            index = self._search.get(engine)
            if index is None:
                from . import search

                if engine == "fts5":
                    index = search.Fts5Index(self.notes, self._search.get("scan"))
                else:
                    fts5 = self._search.get("fts5")
                    index = fts5.scan if fts5 is not None else search.ScanIndex(self.notes)
                self._search[engine] = index
            return index

    def meta_json(self) -> dict[str, Any]:
        """``{loadedAt, memoryId, indexLineCount, indexByteCount, indexOverBudget, anomalies, engine, topics}``."""
        return {
            "loadedAt": self.loaded_at,
            "memoryId": self.memory_id,
            "indexLineCount": self.index_line_count,
            "indexByteCount": self.index_byte_count,
            "indexOverBudget": self.index_over_budget,
            "anomalies": self.anomalies,
            "engine": self.engine,
            "topics": [n.topic for n in self.notes],
        }


def read_note_checked(root: Path, entry: IndexEntry, data: bytes | None = None) \
        -> tuple[str | None, MalformedNote | None]:
    """An entry's body as a snapshot holds it: ``(body or None when missing, the problem if malformed)``.

    ``data``: the file's bytes when the caller has them (it just wrote them): nothing is read then.
    A malformed note (see :func:`read_note_file`) gives ``("", problem)``; nothing is raised.
    """
    try:
        return (read_note_file(root, entry.file) if data is None else note_body(entry.file, data)), None
    except MMError as error:
        return "", {"topic": entry.topic, "file": entry.file, "code": error.code.value, "message": error.message}
    except OSError as error:
        return "", {"topic": entry.topic, "file": entry.file, "code": ErrorCode.E_IO.value,
                    "message": f"read {entry.file} failed: {error.strerror}"}


def malformed_entries(entries: tuple[IndexEntry, ...]) -> list[MalformedNote]:
    """Entries with a line break or NUL in a one-line field (hand-edited), code ``E_INVALID``."""
    out: list[MalformedNote] = []
    for entry in entries:
        for message in entry_problems(entry):
            out.append({"topic": entry.topic, "file": entry.file, "code": ErrorCode.E_INVALID.value,
                        "message": message})
    return out


def build_snapshot(options: MemoryOptions, *, text: str, entries: tuple[IndexEntry, ...], notes: list[Note],
                   malformed: list[MalformedNote], loaded_at: str, engine: str, revision: int = 0,
                   orphans: list[str] | None = None, bad_entries: list[MalformedNote] | None = None,
                   usage: IndexUsage | None = None) -> Snapshot:
    """Assemble a :class:`Snapshot` from MEMORY.md's text, its entries and their loaded notes.

    ``orphans``, ``bad_entries``, ``usage``: the sorted orphan names, :func:`malformed_entries` and
    :func:`~.budget.index_usage` of ``text`` under the options' caps, when the caller knows them (a
    patched revision); by default ``memories/`` is listed, every entry checked and ``text`` measured.
    """
    from .budget import index_usage

    anomalies: Anomalies = {"danglingEntries": sum(n.missing_file for n in notes),
                            "orphanFiles": orphan_files(options.root, entries) if orphans is None else orphans}
    if malformed:
        anomalies["malformedNotes"] = malformed
    bad_entries = malformed_entries(entries) if bad_entries is None else bad_entries
    if bad_entries:
        anomalies["malformedEntries"] = bad_entries
    usage = index_usage(text, options.index_lines, options.index_bytes) if usage is None else usage
    return Snapshot(
        revision=revision,
        loaded_at=loaded_at,
        memory_id=options.memory_id,
        root=options.root,
        index_line_count=usage["lines"],
        index_byte_count=usage["bytes"],
        index_over_budget=usage["overBudget"],
        entries=entries,
        notes=tuple(notes),
        anomalies=anomalies,
        engine=engine,
    )


def load_snapshot(options: MemoryOptions, *, loaded_at: str, engine: str, revision: int = 0,
                  live_index: Callable[[], tuple[str, tuple[IndexEntry, ...]]] | None = None) -> Snapshot:
    """Read the root into a :class:`Snapshot`.

    ``live_index`` returns MEMORY.md's text and entries (``MemoryStore.live_index``
    caches the parse); by default the file is read and parsed here.

    Raises:
        MMError(E_NOT_INITIALIZED): if the root does not exist.
        MMError(E_PARSE): if MEMORY.md is not mm v1 (message names the file and line).
        MMError(E_IO): if MEMORY.md cannot be read.
    """
    root = options.root
    if not root.exists():
        raise MMError(ErrorCode.E_NOT_INITIALIZED, f"memory root does not exist: {root}")
    text, entries = live_index() if live_index else parse_live_index(root, options.memory_id)
    notes: list[Note] = []
    malformed: list[MalformedNote] = []
    for entry in entries:
        body, problem = read_note_checked(root, entry)
        if problem is not None:
            malformed.append(problem)
        notes.append(Note(entry, uri_for(options.memory_id, entry.topic), body or "", body is None))
    return build_snapshot(options, text=text, entries=entries, notes=notes, malformed=malformed,
                          loaded_at=loaded_at, engine=engine, revision=revision)
