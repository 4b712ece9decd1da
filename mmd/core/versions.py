"""Every version of every note, without git too: ``<root>/.mmd/versions.db`` (issue 29).

Owns: the version history the core store writes (so direct-mode ``mmctl`` writes keep versions as the
daemon's do): each write, merge and delete of a topic is one row holding the text it left (a delete: a
row without a body), and a note whose text on disk is not the latest row (an outside edit, a note older
than the history, a write that crashed before its row) is kept first as a ``found`` row, so the text a
write replaces is always kept before it is replaced. Rows name the revision that wrote them
(``found``: the last revision the root knew), what a person let through (``allowed``: the kinds of the
secrets and hidden text, never a value), and answer ``mmctl log`` (:meth:`VersionLog.log`, shaped as
the git history's commits) and ``mmctl restore TOPIC --at rN`` (:meth:`VersionLog.at`).

Bounded: at most :data:`MAX_PER_TOPIC` versions of a topic and :data:`MAX_BYTES` of text (UTF-8 bytes of
body, summary and tags) per root, pruned oldest first, never a topic's latest version.

Durable and private: SQLite in WAL mode with ``synchronous = FULL`` (a kept row survives a crash once
:meth:`VersionLog.keep` returned), each batch one transaction; the file and its WAL are 0600 in the
0700 ``.mmd/``. SQLite is imported by writes and history reads only, never by a one-shot read.
Threading: one connection per call, or (``keep_open``, the daemon) one per history, opened on first
use and kept (a write then costs one WAL append and its fsync, not a checkpoint), used by one thread
at a time and opened again when the file was removed or replaced meanwhile. Callers hold the root's
write lock for :meth:`~VersionLog.keep`. Never: reads or writes notes (the store hands the texts in).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import ErrorCode, MMError
from .paths import STATE_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from .model import IndexEntry

__all__ = ["MAX_BYTES", "MAX_PER_TOPIC", "VERSIONS_NAME", "NewVersion", "Version", "VersionLog", "body_sha",
           "keep_replaced", "restoring"]

VERSIONS_NAME = "versions.db"
"""The history's file name inside ``.mmd/``."""
MAX_PER_TOPIC = 50
"""Most versions kept of one topic (its latest always among them)."""
MAX_BYTES = 20 * 1024 * 1024
"""Most text kept per root, UTF-8 bytes of body, summary and tags (20 MiB); the oldest versions go first."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY,
    topic TEXT NOT NULL,
    revision INTEGER,
    at TEXT NOT NULL,
    cause TEXT NOT NULL,
    body TEXT,
    summary TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '',
    write_budget INTEGER,
    sha256 TEXT,
    bytes INTEGER NOT NULL DEFAULT 0,
    allowed TEXT
);
CREATE INDEX IF NOT EXISTS versions_topic ON versions (topic, id);
"""


def body_sha(body: str) -> str:
    """sha256 (hex) of a note's body as UTF-8: how a kept version is told from the text on disk."""
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


class NewVersion:
    """A version to keep: ``topic``, the ``revision`` that wrote it, its ``cause`` (``write`` | ``merge`` | ``delete``
    | ``restore`` | ``found`` | …), ``body`` (None: the topic was deleted), ``summary``, ``tags`` (comma-separated),
    ``write_budget`` and ``allowed`` (``{secrets: [{field, kind, line}], hidden: [{field, code, line}]}`` or None)."""

    __slots__ = ("allowed", "body", "cause", "revision", "summary", "tags", "topic", "write_budget")

    def __init__(self, topic: str, revision: int | None, cause: str, body: str | None, summary: str = "",
                 tags: str = "", write_budget: int | None = None, allowed: Mapping[str, Any] | None = None) -> None:
        self.topic, self.revision, self.cause, self.body = topic, revision, cause, body
        self.summary, self.tags, self.write_budget, self.allowed = summary, tags, write_budget, allowed


class Version:
    """One kept version (a row of the history): the :class:`NewVersion` fields plus ``id``, ``at`` (ISO-8601 UTC),
    ``sha256`` of the body and ``chars`` (code points of the body)."""

    __slots__ = ("allowed", "at", "body", "cause", "chars", "id", "revision", "sha256", "summary", "tags", "topic",
                 "write_budget")

    def __init__(self, row: sqlite3.Row) -> None:
        self.id, self.topic, self.revision, self.at, self.cause = (row["id"], row["topic"], row["revision"],
                                                                   row["at"], row["cause"])
        self.body, self.summary, self.tags = row["body"], row["summary"], row["tags"]
        self.write_budget, self.sha256 = row["write_budget"], row["sha256"]
        self.allowed = json.loads(row["allowed"]) if row["allowed"] else None
        self.chars = len(self.body) if self.body is not None else 0

    @property
    def ref(self) -> str:
        """``v17``: the version's own name, which ``restore --at`` takes beside ``r42``."""
        return f"v{self.id}"

    def to_commit(self) -> dict[str, Any]:
        """The version as one of ``memory.log``'s commits (the git history's shape): ``{commit, parents, date, author,
        subject, revisions, topics, root, otherRoot}`` plus ``version``, ``cause``, ``chars``, ``deleted`` and
        ``allowed`` (when a person let secrets or hidden text through)."""
        what = "delete" if self.body is None else self.cause
        rev = f" (r{self.revision})" if self.revision is not None else ""
        out: dict[str, Any] = {
            "commit": self.ref, "parents": [], "date": self.at, "author": "mmd", "subject": f"{what} {self.topic}{rev}",
            "revisions": [self.revision] if self.revision is not None else [], "topics": [self.topic],
            "root": None, "otherRoot": False, "version": self.id, "cause": self.cause, "chars": self.chars,
            "deleted": self.body is None}
        if self.allowed:
            out["allowed"] = self.allowed
        return out


def _size(one: NewVersion) -> int:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in (one.body or "", one.summary, one.tags))


class VersionLog:
    """The version history of one root.

    Args:
        root: the memory root (``.mmd/`` is created inside it when missing, never the root itself).
        max_per_topic: versions kept of a topic (≥ 1). max_bytes: text kept per root, UTF-8 bytes.
        keep_open: keep the connection between calls (a long-lived writer; :meth:`close` ends it).
    """

    def __init__(self, root: Path, *, max_per_topic: int = MAX_PER_TOPIC, max_bytes: int = MAX_BYTES,
                 keep_open: bool = False) -> None:
        self.path = root / STATE_DIR / VERSIONS_NAME
        self.root = root
        self.max_per_topic, self.max_bytes = max(1, max_per_topic), max_bytes
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None
        self._guard = threading.Lock()
        self.keep_open = keep_open

    @contextmanager
    def _connect(self, create: bool) -> Iterator[sqlite3.Connection | None]:
        """The connection, held by this thread meanwhile (None when the history does not exist and ``create`` is
        false); a missing file is made 0600 first, a file replaced since the connection opened is opened anew."""
        with self._guard:
            try:
                st = os.stat(self.path)
                found: tuple[int, int] | None = (st.st_dev, st.st_ino)
            except FileNotFoundError:
                found = None
            if found is None or found != self._file:
                self.close()
            if found is None:
                if not create:
                    yield None
                    return
                (self.root / STATE_DIR).mkdir(mode=0o700, exist_ok=True)
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            if self._conn is None:
                self._conn = self._open()
                st = os.stat(self.path)
                self._file = (st.st_dev, st.st_ino)
            try:
                yield self._conn
            finally:
                if not self.keep_open:
                    self.close()

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        conn = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        """Close the connection (the next use opens it again)."""
        conn, self._conn, self._file = self._conn, None, None
        if conn is not None:
            conn.close()

    def latest(self, topics: Sequence[str]) -> dict[str, Version]:
        """The latest kept version of each of ``topics`` that has one.

        Raises:
            MMError(E_IO): if the history cannot be read.
        """
        try:
            with self._connect(False) as conn:
                if conn is None or not topics:
                    return {}
                marks = ",".join("?" * len(topics))
                rows = conn.execute(f"SELECT * FROM versions WHERE id IN (SELECT MAX(id) FROM versions WHERE topic IN "
                                    f"({marks}) GROUP BY topic)", list(topics)).fetchall()
                return {r["topic"]: Version(r) for r in rows}
        except Exception as error:  # sqlite3.Error or OSError: the history is unreadable
            raise _io("read", self.path, error) from error

    def keep(self, versions: Sequence[NewVersion], at: str) -> None:
        """Keep ``versions`` (in order, one transaction, durable on return), then prune to the bounds.

        Raises:
            MMError(E_IO): if they cannot be kept (nothing of the batch is then).
        """
        if not versions:
            return
        try:
            with self._connect(True) as conn:
                assert conn is not None
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(
                        "INSERT INTO versions (topic, revision, at, cause, body, summary, tags, write_budget, sha256,"
                        " bytes, allowed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(v.topic, v.revision, at, v.cause, v.body, v.summary, v.tags, v.write_budget,
                          body_sha(v.body) if v.body is not None else None, _size(v),
                          json.dumps(v.allowed, ensure_ascii=False) if v.allowed else None) for v in versions])
                    self._prune(conn, {v.topic for v in versions})
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        except MMError:
            raise
        except Exception as error:  # sqlite3.Error or OSError
            raise _io("write", self.path, error) from error

    def _prune(self, conn: sqlite3.Connection, topics: set[str]) -> None:
        """Drop the versions past :attr:`max_per_topic` of ``topics``, then the oldest ones past :attr:`max_bytes`;
        never a topic's latest."""
        for topic in topics:
            conn.execute("DELETE FROM versions WHERE topic = ? AND id NOT IN (SELECT id FROM versions WHERE topic = ?"
                         " ORDER BY id DESC LIMIT ?)", (topic, topic, self.max_per_topic))
        total = conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM versions").fetchone()[0]
        if total <= self.max_bytes:
            return
        rows = conn.execute("SELECT id, bytes FROM versions WHERE id NOT IN (SELECT MAX(id) FROM versions GROUP BY "
                            "topic) ORDER BY id").fetchall()
        gone = []
        for row in rows:
            if total <= self.max_bytes:
                break
            gone.append((row["id"],))
            total -= row["bytes"]
        conn.executemany("DELETE FROM versions WHERE id = ?", gone)

    def log(self, topic: str | None = None, limit: int = 100) -> list[Version]:
        """The newest ``limit`` versions (of ``topic`` when given), newest first; [] without a history.

        Raises:
            MMError(E_IO): if the history cannot be read.
        """
        try:
            with self._connect(False) as conn:
                if conn is None:
                    return []
                where, args = ("WHERE topic = ?", [topic]) if topic is not None else ("", [])
                rows = conn.execute(f"SELECT * FROM versions {where} ORDER BY id DESC LIMIT ?", [*args, limit])
                return [Version(r) for r in rows.fetchall()]
        except Exception as error:
            raise _io("read", self.path, error) from error

    def at(self, topic: str, ref: str) -> Version | None:
        """``topic`` as it was at ``ref``: ``rN`` is the newest version of the topic written at or before revision N
        (so ``rN`` of a write of the topic is the text it wrote), ``vN`` the version N itself (of that topic); None
        when none is kept (never existed then, or pruned). A version without a body says the topic was deleted.

        Raises:
            MMError(E_INVALID): if ``ref`` is neither ``rN`` nor ``vN``.
            MMError(E_IO): if the history cannot be read.
        """
        kind, number = ref[:1], ref[1:]
        if kind not in ("r", "v") or not number.isdigit() or len(number) > 18:
            raise MMError(ErrorCode.E_INVALID, f"{ref!r} names no version: use r42 (a revision) or v17 (a version "
                                               "that `mmctl log TOPIC` lists)")
        try:
            with self._connect(False) as conn:
                if conn is None:
                    return None
                if kind == "v":
                    row = conn.execute("SELECT * FROM versions WHERE topic = ? AND id = ?", (topic, int(number)))
                else:
                    row = conn.execute("SELECT * FROM versions WHERE topic = ? AND revision <= ? ORDER BY revision "
                                       "DESC, id DESC LIMIT 1", (topic, int(number)))
                found = row.fetchone()
                return Version(found) if found is not None else None
        except Exception as error:
            raise _io("read", self.path, error) from error


def _io(what: str, path: Path, error: BaseException) -> MMError:
    detail = getattr(error, "strerror", None) or str(error)
    return MMError(ErrorCode.E_IO, f"{what} the version history {path} failed: {detail}", details=str(path))


def keep_replaced(log: VersionLog, root: Path, replaced: Mapping[str, IndexEntry], at: str, revision: int) -> None:
    """Keep as ``found`` versions the notes about to be replaced or deleted (``replaced``: their index entries) whose
    text on disk is not their latest kept version (an outside edit, a note older than the history); ``revision``:
    the last one the root knew. A note that cannot be read has nothing to keep.

    Raises:
        MMError(E_IO): if they cannot be kept: the caller then writes nothing, so no text is lost.
    """
    from .snapshot import read_note_sized

    if not replaced:
        return
    latest = log.latest(list(replaced))
    rows = []
    for topic, entry in replaced.items():
        try:
            read = read_note_sized(root, entry.file)
        except (MMError, OSError):
            continue
        if read is None:
            continue
        body, tags = read[0], ", ".join(entry.tags)
        last = latest.get(topic)
        if last is not None and last.body is not None and (last.sha256, last.summary, last.tags) == (
                body_sha(body), entry.summary, tags):
            continue
        rows.append(NewVersion(topic, revision, "found", body, entry.summary, tags, entry.write_budget))
    log.keep(rows, at)


def restoring(version: Version | None, topic: str, at: str, revision: int | None = None) -> dict[str, Any]:
    """The write that brings back ``version`` of ``topic`` (found at ``at``): keyword arguments of
    :meth:`.store.MemoryStore.write` past the topic (``content``, ``summary``, ``tags``, ``budget``, ``cause``, and
    the leave a person gave the version: ``allow_secret``, ``allow_hidden``). ``revision``: the root's revision now,
    when known (an ``rN`` past it names no state the root was ever in).

    Raises:
        LookupError: naming what is missing, when no version is kept at ``at``, ``at`` is a revision the root has
            not reached, or it deleted the topic (a restore never deletes).
    """
    if revision is not None and at[:1] == "r" and at[1:].isdigit() and int(at[1:]) > revision:
        raise LookupError(f"{at} is after the root's newest revision, r{revision}: nothing was written then; "
                          f"`mmctl log {topic}` lists the kept versions")
    if version is None:
        raise LookupError(f"no version of {topic} is kept at {at} (not written by then, or pruned): "
                          f"`mmctl log {topic}` lists the kept ones")
    if version.body is None:
        raise LookupError(f"{topic} was deleted at {at} ({version.ref}); a restore never deletes: "
                          f"`mmctl delete {topic}` does")
    allowed = version.allowed or {}
    return {"content": version.body, "summary": version.summary, "tags": version.tags,
            "budget": max(version.write_budget or 0, len(version.body)) or None, "cause": "restore",
            "allow_secret": bool(allowed.get("secrets")), "allow_hidden": bool(allowed.get("hidden"))}
