"""The daemon's SQLite database ``<root>/.mmd/state.db``: schema, connections, ingest cursors.

Owns: opening the database (WAL, ``busy_timeout``, ``synchronous=NORMAL``),
the versioned schema (``PRAGMA user_version``), one connection per thread
(SQLite connections must not be shared between threads), and the per-file
ingest cursors. The review queue's rows live in the same database; their
queries are in :mod:`.queue`.

Tables (schema version 2; version 1 lacked the ``inject_*`` and ``due_announced`` tables, which an
upgrade adds)::

    candidates  the review queue: one row per candidate ever seen (the whole history)
    cursors     one row per ingested file: where reading stopped (JSON cursor + its key fields)
    journal     every change the daemon saw or made: each new revision of the memory
                (``memory.write`` / ``memory.delete`` / ``memory.external`` / ``memory.config``)
                and each queue decision (``queue.accept`` / ``queue.reject``)
    inject_views    the topic → content-hash maps clients were shown (one row per map, shared by clients)
    inject_clients  per client key: the view it last confirmed, the reminders it got, when it confirmed
    inject_pending  injections given but not yet confirmed (``memory.injected`` moves one to inject_clients)
    due_announced   (topic, review date) pairs already announced as ``memory/due`` events

Never: reads session logs or memory files, or touches a socket.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmd.core.paths import STATE_DIR

__all__ = ["BUSY_TIMEOUT_MS", "DB_NAME", "SCHEMA_VERSION", "CursorRow", "StateDB"]

DB_NAME = "state.db"
"""The database file, inside ``<root>/.mmd/``."""
SCHEMA_VERSION = 2
"""``PRAGMA user_version`` of the schema this module creates."""
BUSY_TIMEOUT_MS = 5000
"""How long a connection waits for another one's write lock, milliseconds."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
    kind TEXT NOT NULL,
    topic TEXT NOT NULL,
    summary TEXT NOT NULL,
    body TEXT NOT NULL,
    chars INTEGER NOT NULL,
    over_budget INTEGER NOT NULL,
    session_id TEXT,
    file TEXT NOT NULL,
    seq INTEGER,
    message_id TEXT,
    source_kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decided_at TEXT,
    reason TEXT,
    written_topic TEXT,
    written_revision INTEGER
);
CREATE INDEX IF NOT EXISTS candidates_by_status ON candidates (status, id);
CREATE TABLE IF NOT EXISTS cursors (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    session_id TEXT,
    inode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    frames INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    cursor TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    candidate_id INTEGER,
    detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inject_views (
    key TEXT PRIMARY KEY,
    hashes TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inject_clients (
    client TEXT PRIMARY KEY,
    view_key TEXT NOT NULL,
    reminded TEXT NOT NULL,
    token TEXT NOT NULL,
    committed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inject_pending (
    token TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    view_key TEXT NOT NULL,
    reminded TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS inject_pending_by_client ON inject_pending (client, created_at);
CREATE TABLE IF NOT EXISTS due_announced (
    topic TEXT NOT NULL,
    review_after TEXT NOT NULL,
    announced_at TEXT NOT NULL,
    PRIMARY KEY (topic, review_after)
);
"""


class SchemaError(Exception):
    """Raised by :meth:`StateDB.open` when the database was written by a newer mmd (higher user_version)."""


@dataclass(frozen=True)
class CursorRow:
    """One file's ingest cursor.

    Attributes:
        path: the file (absolute).
        kind: the name of the source that reads the file (a key of :data:`mmd.sources.SOURCES`).
        session_id: the agent's session id, when known.
        cursor: the source's opaque JSON cursor (:attr:`mmd.sources.Slice.cursor`), stored as it is; the
            ``inode``/``size``/``offset``/``frames``/``last_seq`` columns copy those fields when the
            cursor has them (at the top or under ``log``/``state``), for a person reading the table.
    """

    path: str
    kind: str
    session_id: str | None
    cursor: dict[str, Any]


class StateDB:
    """The state database of one root; hands each thread its own connection.

    Args:
        root: the memory root; the file is ``<root>/.mmd/state.db``.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / STATE_DIR / DB_NAME
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self.closed = False

    def open(self) -> None:
        """Create or upgrade the schema (in the calling thread).

        Raises:
            SchemaError: if the file's ``user_version`` is newer than :data:`SCHEMA_VERSION`.
            sqlite3.Error: if the file cannot be opened or is not a database.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self.conn()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaError(f"{self.path} has schema version {version}; this mmd knows up to {SCHEMA_VERSION}")
        if version < SCHEMA_VERSION:
            with conn:
                conn.executescript(_SCHEMA)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use: WAL, busy timeout, NORMAL sync).

        Raises:
            sqlite3.ProgrammingError: after :meth:`close`.
        """
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self.closed:
            raise sqlite3.ProgrammingError("the state database is closed")
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)  # still one thread each: see _local
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.row_factory = sqlite3.Row
        self._local.conn = conn
        with self._guard:
            self._all.append(conn)
        return conn

    def journal(self, at: str, action: str, detail: dict[str, Any], candidate_id: int | None = None) -> None:
        """Append one journal row (``detail`` stored as JSON).

        Raises:
            sqlite3.Error: if the row cannot be written.
        """
        conn = self.conn()
        with conn:
            conn.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, ?, ?, ?)",
                         (at, action, candidate_id, json.dumps(detail, ensure_ascii=False)))

    def close(self) -> None:
        """Close every connection (call once no thread uses the database any more)."""
        self.closed = True
        with self._guard:
            for conn in self._all:
                conn.close()
            self._all.clear()

    # --- ingest cursors -------------------------------------------------------------------------

    def cursors(self) -> dict[str, CursorRow]:
        """Every stored cursor by path."""
        rows = self.conn().execute("SELECT path, kind, session_id, cursor FROM cursors").fetchall()
        return {r["path"]: CursorRow(r["path"], r["kind"], r["session_id"], json.loads(r["cursor"])) for r in rows}

    def put_cursor(self, row: CursorRow, now_iso: str) -> None:
        """Insert or replace one cursor (run inside the caller's transaction when it has one)."""
        c = row.cursor
        log = c.get("log", c)
        state = c.get("state") or {}
        self.conn().execute(
            "INSERT OR REPLACE INTO cursors (path, kind, session_id, inode, size, offset, frames, last_seq, cursor,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.path, row.kind, row.session_id, int(log.get("inode", 0)), int(log.get("size", 0)),
             int(log.get("offset", 0)), int(log.get("frames", 0)), int(state.get("last_seq", -1)),
             json.dumps(c, separators=(",", ":")), now_iso))

    def drop_cursor(self, path: str) -> None:
        """Forget one file's cursor (the file is gone, or no source reads it any more)."""
        self.conn().execute("DELETE FROM cursors WHERE path = ?", (path,))
