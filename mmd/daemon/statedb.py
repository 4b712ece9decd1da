"""The daemon's SQLite database ``<root>/.mmd/state.db``: schema, connections, ingest cursors.

Owns: opening the database (WAL, ``busy_timeout``, ``synchronous=NORMAL``),
the versioned schema (``PRAGMA user_version``), one connection per thread
(SQLite connections must not be shared between threads), and the per-file
ingest cursors. The review queue's rows live in the same database; their
queries are in :mod:`.queue`.

Tables (schema version 6; version 5 lacked ``candidates.speaker``, ``flags``, ``flagged``, ``redacted`` and
``diff``; version 4 lacked the ``expired`` status, ``candidates.draft``, ``offered_by`` and
``queued_at`` and the ``budgets`` table; version 3 lacked ``candidates.scope``; version 1 lacked the
``inject_*`` and ``due_announced`` tables, versions 1 and 2 the review queue's columns of issue 13 and
``extractors``: an upgrade adds them in place)::

    candidates  the review queue: one row per candidate ever seen (the whole history); schema 3 added
                rule, score, seen, visible, pinned, norm (the statement's identity), proposal_action,
                evidence (JSON list), agents and projects (``\n``-framed sets, for filters); schema 5 added
                draft (a rule draft, inside its session's budget), offered_by (the session whose budget
                it took a place in) and queued_at (when it last entered the queue), and ``expired``; schema 6
                speaker, flags (JSON list of ``{kind, why}``), flagged, redacted and diff (issue 29)
    budgets     one row per agent session with rule drafts: the most it may offer (:mod:`.queue_offers`)
    extractors  one row per ended session the extractor command ran on (``session``: agent + id or file)
    cursors     one row per ingested file: where reading stopped (JSON cursor + its key fields)
    journal     every change the daemon saw or made: each new revision of the memory
                (``memory.write`` / ``memory.delete`` / ``memory.merge`` / ``memory.rename`` / ``memory.external`` /
                ``memory.config``)
                and each queue decision (``queue.accept`` / ``queue.reject``; ``queue.rename``: the proposals
                that followed a rename)
    inject_views    the topic → content-hash maps clients were shown (one row per map, shared by clients)
    inject_clients  per client key: the view it last confirmed, the reminders it got, when it confirmed
    inject_pending  injections given but not yet confirmed (``memory.injected`` moves one to inject_clients)
    due_announced   (topic, review date) pairs already announced as ``memory/due`` events

Never: reads session logs or memory files, or touches a socket.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmd.core.paths import STATE_DIR
from mmd.core.rootfs import FILE_MODE, make_folders

__all__ = ["BUSY_TIMEOUT_MS", "DB_NAME", "SCHEMA_VERSION", "CursorRow", "StateDB"]

DB_NAME = "state.db"
"""The database file, inside ``<root>/.mmd/``."""
SCHEMA_VERSION = 6
"""``PRAGMA user_version`` of the schema this module creates (1 to 5 are upgraded in place, see
:func:`_migrate_candidates` and :func:`_migrate_statuses`)."""
BUSY_TIMEOUT_MS = 5000
"""How long a connection waits for another one's write lock, milliseconds."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected', 'expired')),
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

_CANDIDATE_COLUMNS = (
    ("rule", "TEXT NOT NULL DEFAULT ''"),
    ("score", "REAL NOT NULL DEFAULT 0"),
    ("seen", "INTEGER NOT NULL DEFAULT 1"),
    ("visible", "INTEGER NOT NULL DEFAULT 1"),
    ("pinned", "INTEGER NOT NULL DEFAULT 0"),
    ("norm", "TEXT"),
    ("proposal_action", "TEXT NOT NULL DEFAULT 'create'"),
    ("evidence", "TEXT NOT NULL DEFAULT '[]'"),
    ("agents", "TEXT NOT NULL DEFAULT ''"),
    ("projects", "TEXT NOT NULL DEFAULT ''"),
    ("scope", "TEXT NOT NULL DEFAULT 'user'"),
    ("draft", "INTEGER NOT NULL DEFAULT 0"),
    ("offered_by", "TEXT"),
    ("queued_at", "TEXT"),
    ("speaker", "TEXT NOT NULL DEFAULT ''"),
    ("flags", "TEXT NOT NULL DEFAULT '[]'"),
    ("flagged", "INTEGER NOT NULL DEFAULT 0"),
    ("redacted", "INTEGER NOT NULL DEFAULT 0"),
    ("diff", "TEXT"),
)
"""Columns schemas 3 to 6 add to ``candidates`` (name, SQL type and default): 4 added ``scope``, the root a
candidate is proposed to (``user`` or a project key, ``docs/projects.md``); 5 added ``draft``, ``offered_by``
and ``queued_at`` (see :mod:`.queue_offers`; a NULL ``queued_at`` reads as ``created_at``); 6 added what the
queue's door found (:mod:`mmd.candidates.screening`): ``speaker``, ``flags`` and ``flagged`` (it has any),
``redacted`` and a held topic's ``diff`` (a row of an older schema has ``speaker`` '' until the queue screens it
at start)."""
_SCHEMA_3 = """
CREATE INDEX IF NOT EXISTS candidates_by_norm ON candidates (norm);
CREATE INDEX IF NOT EXISTS candidates_by_score ON candidates (status, visible, score);
CREATE INDEX IF NOT EXISTS candidates_by_offer ON candidates (offered_by);
CREATE TABLE IF NOT EXISTS budgets (
    session TEXT PRIMARY KEY,
    budget INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS extractors (
    session TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    ok INTEGER NOT NULL,
    added INTEGER NOT NULL,
    detail TEXT NOT NULL
);
"""
_RANKED = """
DROP INDEX IF EXISTS candidates_ranked;
DROP INDEX IF EXISTS candidates_ranked_all;
CREATE INDEX IF NOT EXISTS candidates_ranked_flagged ON candidates (status, visible, flagged, score DESC, id);
CREATE INDEX IF NOT EXISTS candidates_ranked_flagged_all ON candidates (status, flagged, score DESC, id)
"""
"""The queue's pages in their order (flagged ones last, best score first, then oldest), visible or all: a page of
100 out of 100,000 reads 100 rows instead of sorting them all (the review page, ``bench/web_bench.py``). Made on
every open (``IF NOT EXISTS``), so a database of this schema version gets them too (schema 4's, without
``flagged``, are dropped)."""
_WHO = {"user": "human", "assistant": "assistant", "compaction": "summary"}
_WEIGHTS = {"uri": 2.0, "explicit": 2.0, "summary": 0.6, "heading": 0.4}


def _migrate_candidates(conn: sqlite3.Connection) -> None:
    """Schema 1 or 2 → 3 in place: the new columns, and for each old row its rule, score, identity and evidence.

    Old rows keep their ids, statuses and keys; their ``norm`` makes a statement read again merge into
    them (so an upgraded daemon queues nothing twice), and their one ``source`` becomes their evidence.
    """
    have = {r[1] for r in conn.execute("PRAGMA table_info(candidates)")}
    for name, kind in _CANDIDATE_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE candidates ADD COLUMN {name} {kind}")
    rows = conn.execute("SELECT id, kind, body, session_id, file, seq, message_id, source_kind, created_at"
                        " FROM candidates WHERE norm IS NULL").fetchall()
    if not rows:  # a new database: nothing to upgrade, and mmd.candidates stays unloaded until a candidate comes
        return
    from mmd.candidates.identity import norm_key  # the daemon may import the candidates floor
    from mmd.sources import SESSIONS_FOLDER

    # schema 1 and 2 read only the sessions folder: its own source's logs (they carry a session id), else the
    # other JSONL there, the two sources of SESSIONS_FOLDER in that order
    own, other = SESSIONS_FOLDER

    for r in rows:
        position: dict[str, Any] = {"file": r[4]}
        if r[5] is not None:
            position["seq"] = r[5]
        if r[6] is not None:
            position["uuid"] = r[6]
        agent = own if r[3] is not None else other
        evidence = [{"agent": agent, "sessionId": r[3], "project": None, "file": r[4], "position": position,
                     "at": None, "who": _WHO.get(r[7], "text"), "quote": r[2][:500]}]
        conn.execute("UPDATE candidates SET rule = ?, score = ?, pinned = ?, norm = ?, evidence = ?, agents = ?"
                     " WHERE id = ?",
                     (f"mm.{r[1]}", _WEIGHTS.get(r[1], 0.5), int(r[1] in ("uri", "explicit")), norm_key(r[2]),
                      json.dumps(evidence, ensure_ascii=False), f"\n{agent}\n", r[0]))


def _migrate_statuses(conn: sqlite3.Connection, version: int) -> None:
    """Schema 1 to 4 → 5 in place: ``candidates`` rebuilt with ``expired`` in its status CHECK (SQLite cannot
    alter a CHECK: a new table, every row copied with its id, the old one dropped), then each old row's
    ``draft`` and ``offered_by`` (a visible rule draft took a place in its session's budget) and, for a pending
    one, ``queued_at`` = now (its age counts from the upgrade, so an upgrade expires nothing at once)."""
    from mmd.core.clock import iso_ms, system_clock

    from .queue_offers import rule_names, session_of

    (table,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'candidates'").fetchone()
    if "'expired'" not in table:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(candidates)")]
        conn.execute(_SCHEMA.split(";")[0].replace("TABLE IF NOT EXISTS candidates", "TABLE candidates_v5"))
        have = {r[1] for r in conn.execute("PRAGMA table_info(candidates_v5)")}
        for name, kind in _CANDIDATE_COLUMNS:
            if name not in have:
                conn.execute(f"ALTER TABLE candidates_v5 ADD COLUMN {name} {kind}")
        listed = ", ".join(columns)
        conn.execute(f"INSERT INTO candidates_v5 ({listed}) SELECT {listed} FROM candidates")
        conn.execute("DROP TABLE candidates")
        conn.execute("ALTER TABLE candidates_v5 RENAME TO candidates")
    if version >= 5:
        return
    now = iso_ms(system_clock())
    rows = conn.execute("SELECT id, rule, pinned, visible, status, evidence FROM candidates").fetchall()
    for cid, rule, pinned, visible, status, evidence in rows:
        draft = not pinned and rule in rule_names()
        found = json.loads(evidence or "[]")
        offered = session_of(found[0]) if draft and visible and found else None
        conn.execute("UPDATE candidates SET draft = ?, offered_by = ?, queued_at = ? WHERE id = ?",
                     (int(draft), offered, now if status == "pending" else None, cid))


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
        make_folders(self.path.parent)
        # Created 0600 before SQLite opens it, whatever the umask: it holds text from session logs, and
        # SQLite gives its -wal and -shm files the database file's mode.
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE))
        conn = self.conn()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaError(f"{self.path} has schema version {version}; this mmd knows up to {SCHEMA_VERSION}")
        if version < SCHEMA_VERSION:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                _migrate_candidates(conn)
                _migrate_statuses(conn, version)
                for statement in (_SCHEMA + _SCHEMA_3).split(";"):  # the rebuilt table's indexes too
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        with conn:
            for statement in _RANKED.split(";"):
                if statement.strip():
                    conn.execute(statement)

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
