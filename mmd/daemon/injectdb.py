"""Injection state in ``state.db``: what each client was shown, injections awaiting confirmation, due announcements.

A client's view is a topic → content-hash map (:class:`mmd.inject.delta.ClientView`).
Every view a client commits is the whole map of one prepared snapshot, so maps
are stored once each in ``inject_views`` under a random key, and a client row
points at its map: confirming an injection rewrites one small row however many
topics the root holds. Maps are cached in memory by key (the current one
always, a few older ones read back after a restart).

Tables (see :mod:`.statedb`): ``inject_views``, ``inject_clients``,
``inject_pending``, ``due_announced``; and ``note_uses`` (created here on first use, issue 28): per root and topic,
how many times agents read the note (a baseline's order). Times are ISO-8601 UTC strings, compared as text.

Owns: those rows and the map cache. Never: plans an injection (:mod:`mmd.inject.delta`
does), reads a clock (times are passed in), or touches a socket. Each method
runs in whatever thread calls it (the database hands each thread its own
connection); :attr:`InjectDB.lock` serializes the read-plan-write of one
injection against another.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from .statedb import StateDB

__all__ = ["ClientRow", "InjectDB"]

CACHED_MAPS = 8
"""How many stored maps stay decoded in memory (the current snapshot's is always among them)."""
PENDING_PER_CLIENT = 8
"""Unconfirmed injections kept per client; older ones are dropped (a client confirms its newest)."""


@dataclass(frozen=True, slots=True)
class ClientRow:
    """A client's committed state.

    Attributes:
        client: the client key.
        view_key: the key of its map in ``inject_views``.
        reminded: topic → review date (``YYYY-MM-DD``) it was reminded of.
        token: the token of the injection it last confirmed.
        committed_at: when it last confirmed, ISO-8601 UTC.
    """

    client: str
    view_key: str
    reminded: dict[str, str]
    token: str
    committed_at: str


class InjectDB:
    """The injection rows of one root's state database.

    Args:
        db: the open state database.
    """

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self.lock = threading.Lock()
        self._maps: OrderedDict[str, Mapping[str, str]] = OrderedDict()
        self._stored: set[str] = set()
        self._current: dict[str, str] = {}
        """``{root scope: the key of its current revision's map}``: never evicted (each root of the home has one)."""

    # --- maps -------------------------------------------------------------------------------------

    def remember(self, key: str, hashes: Mapping[str, str], current_of: str | None = None) -> None:
        """Cache ``hashes`` under ``key`` (not stored yet: :meth:`store_map` does that when a client needs it);
        ``current_of``: the scope of the root whose current revision this map is (kept cached however many roots
        share these rows, beyond the :data:`CACHED_MAPS` older ones)."""
        self._maps[key] = hashes
        self._maps.move_to_end(key)
        if current_of is not None:
            self._current[current_of] = key
        keep = set(self._current.values())
        for old in [k for k in self._maps if k not in keep][:max(0, len(self._maps) - len(keep) - CACHED_MAPS)]:
            del self._maps[old]

    def store_map(self, key: str, now_iso: str) -> None:
        """Write the cached map ``key`` to ``inject_views`` once (a no-op when it is there already).

        Raises:
            KeyError: if ``key`` was never :meth:`remember`-ed.
            sqlite3.Error: if the row cannot be written.
        """
        if key in self._stored:
            return
        data = json.dumps(dict(self._maps[key]), ensure_ascii=False, separators=(",", ":"))
        conn = self.db.conn()
        with conn:
            conn.execute("INSERT OR IGNORE INTO inject_views (key, hashes, created_at) VALUES (?, ?, ?)",
                         (key, data, now_iso))
        self._stored.add(key)

    def hashes(self, key: str) -> Mapping[str, str] | None:
        """The map stored under ``key`` (cached, else read back), or None when it is gone."""
        cached = self._maps.get(key)
        if cached is not None:
            return cached
        row = self.db.conn().execute("SELECT hashes FROM inject_views WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        value = json.loads(row["hashes"])
        self.remember(key, value)
        self._stored.add(key)
        return value  # type: ignore[no-any-return]

    # --- clients ------------------------------------------------------------------------------------

    def client(self, client: str) -> ClientRow | None:
        """The client's committed state, or None for a client never confirmed (or forgotten)."""
        row = self.db.conn().execute(
            "SELECT view_key, reminded, token, committed_at FROM inject_clients WHERE client = ?",
            (client,)).fetchone()
        if row is None:
            return None
        return ClientRow(client, row["view_key"], json.loads(row["reminded"]), row["token"], row["committed_at"])

    def commit(self, client: str, token: str, view_key: str, reminded: Mapping[str, str], now_iso: str) -> None:
        """Make ``view_key`` the client's view and drop its unconfirmed injections (one transaction).

        Raises:
            sqlite3.Error: if the rows cannot be written.
        """
        conn = self.db.conn()
        with conn:
            conn.execute("INSERT OR REPLACE INTO inject_clients (client, view_key, reminded, token, committed_at)"
                         " VALUES (?, ?, ?, ?, ?)", (client, view_key, _dump(reminded), token, now_iso))
            conn.execute("DELETE FROM inject_pending WHERE client = ?", (client,))

    def put_pending(self, client: str, token: str, view_key: str, reminded: Mapping[str, str],
                    now_iso: str) -> None:
        """Record an injection given to ``client`` that waits for :meth:`confirm`; keeps the newest few per client.

        Raises:
            sqlite3.Error: if the row cannot be written.
        """
        conn = self.db.conn()
        with conn:
            conn.execute("INSERT INTO inject_pending (token, client, view_key, reminded, created_at)"
                         " VALUES (?, ?, ?, ?, ?)", (token, client, view_key, _dump(reminded), now_iso))
            conn.execute("DELETE FROM inject_pending WHERE client = ? AND token NOT IN (SELECT token FROM"
                         " inject_pending WHERE client = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                         (client, client, PENDING_PER_CLIENT))

    def confirm(self, client: str, token: str, now_iso: str) -> bool:
        """Commit the pending injection ``token`` of ``client``.

        Returns:
            True when the client's view now is that injection's: it was pending
            (and is committed now) or is the one last committed (a resent confirmation);
            False when no such injection is known (never given, superseded by a
            newer confirmation, or expired).

        Raises:
            sqlite3.Error: if the rows cannot be written.
        """
        conn = self.db.conn()
        row = conn.execute("SELECT view_key, reminded FROM inject_pending WHERE token = ? AND client = ?",
                           (token, client)).fetchone()
        if row is None:
            current = self.client(client)
            return current is not None and current.token == token
        self.commit(client, token, row["view_key"], json.loads(row["reminded"]), now_iso)
        return True

    def expire(self, cutoff_iso: str) -> int:
        """Forget clients that last confirmed before ``cutoff_iso``, older pending injections, and maps no
        row points at any more. Returns how many clients were forgotten.

        Raises:
            sqlite3.Error: if the rows cannot be deleted.
        """
        conn = self.db.conn()
        with conn:
            gone = conn.execute("DELETE FROM inject_clients WHERE committed_at < ?", (cutoff_iso,)).rowcount
            conn.execute("DELETE FROM inject_pending WHERE created_at < ?", (cutoff_iso,))
            dropped = [r["key"] for r in conn.execute(
                "SELECT key FROM inject_views WHERE key NOT IN (SELECT view_key FROM inject_clients)"
                " AND key NOT IN (SELECT view_key FROM inject_pending)")]
            conn.executemany("DELETE FROM inject_views WHERE key = ?", ((k,) for k in dropped))
        self._stored.difference_update(dropped)
        return int(gone)

    def any_clients(self) -> bool:
        """Whether any client has a committed or pending view (worth storing a new map eagerly)."""
        conn = self.db.conn()
        return (conn.execute("SELECT 1 FROM inject_clients LIMIT 1").fetchone() is not None
                or conn.execute("SELECT 1 FROM inject_pending LIMIT 1").fetchone() is not None)

    # --- note uses (issue 28) ---------------------------------------------------------------------------

    def uses(self, scope: str) -> dict[str, int]:
        """topic → reads of the root ``scope`` as last saved (:meth:`save_uses`).

        Raises:
            sqlite3.Error: if the table cannot be made or read.
        """
        conn = self.db.conn()
        with conn:
            conn.execute(_USES)
        rows = conn.execute("SELECT topic, reads FROM note_uses WHERE scope = ?", (scope,)).fetchall()
        return {r["topic"]: int(r["reads"]) for r in rows}

    def save_uses(self, scope: str, reads: Mapping[str, int]) -> None:
        """Store the read counts of the root ``scope`` (one transaction; topics not given are left as they are).

        Raises:
            sqlite3.Error: if the rows cannot be written.
        """
        conn = self.db.conn()
        with conn:
            conn.execute(_USES)
            conn.executemany("INSERT OR REPLACE INTO note_uses (scope, topic, reads) VALUES (?, ?, ?)",
                             ((scope, topic, count) for topic, count in reads.items()))

    # --- due announcements ----------------------------------------------------------------------------

    def announce(self, topic: str, review_after: str, now_iso: str) -> bool:
        """Record that ``memory/due`` was sent for ``(topic, review_after)``; False if it already was.

        Raises:
            sqlite3.Error: if the row cannot be written.
        """
        conn = self.db.conn()
        with conn:
            cursor = conn.execute("INSERT OR IGNORE INTO due_announced (topic, review_after, announced_at)"
                                  " VALUES (?, ?, ?)", (topic, review_after, now_iso))
        return cursor.rowcount == 1


_USES = ("CREATE TABLE IF NOT EXISTS note_uses (scope TEXT NOT NULL, topic TEXT NOT NULL, reads INTEGER NOT NULL,"
         " PRIMARY KEY (scope, topic))")


def _dump(value: Mapping[str, str]) -> str:
    return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
