"""``mmctl rename OLD NEW``: a topic renamed in one revision; its note, index entry, links and proposals follow.

Through the daemon when one owns the root (``memory.rename``: the pending candidates proposing
OLD propose NEW, in its queue); else on the files under the root's lock
(:meth:`mmd.core.store.MemoryStore.rename`), then the pending candidates of the queue a daemon
left in ``<root>/.mmd/state.db`` follow too, with the daemon's own ``UPDATE`` of its
``candidates`` table (:func:`follow_in_state_db`; SQLite's locking holds should a daemon start
meanwhile). Refused, nothing changed, when NEW has a note or is not a slug, or OLD has none (the
near topics named).
"""

from __future__ import annotations

from typing import Any

from mmd.core.errors import MMError
from mmd.core.paths import STATE_DIR

from ..errors import RpcError
from .output import EXIT_FAILED, EXIT_OK, Ctx
from .parser import UsageError

__all__ = ["cmd_rename", "follow_in_state_db"]

STATE_DB = "state.db"
"""The daemon's state database, under ``<root>/.mmd/``."""


def cmd_rename(ctx: Ctx) -> int:
    """``rename OLD NEW``: see the module docstring; ``--json`` the ``memory.rename`` outcome."""
    if len(ctx.rest) != 2:
        raise UsageError("rename requires the topic and its new name (mmctl rename deploy-regoin deploy-region)")
    old, new = ctx.rest
    root = ctx.need_root()
    daemon = ctx.daemon()
    try:
        if daemon is not None:
            outcome: dict[str, Any] = daemon.client.rename(old, new)
        else:
            outcome = ctx.direct().memory().store.rename(old, new)
            if outcome.get("ok"):
                outcome["proposals"] = follow_in_state_db(root / STATE_DIR / STATE_DB, outcome["from"], new)
    except (RpcError, MMError) as error:
        ctx.error(f"rename: {error.message}{_near(ctx, error, old)}")
        return EXIT_FAILED
    if ctx.json:
        ctx.print_json(outcome)
    elif outcome.get("ok"):
        ctx.write(said(outcome) + "\n")
    else:
        ctx.error(f"rename: {outcome.get('message')} ({outcome.get('code')}); nothing changed")
    return EXIT_OK if outcome.get("ok") else EXIT_FAILED


def said(outcome: dict[str, Any]) -> str:
    """A rename's outcome in a line: the new URI, the notes whose links followed, the proposals that did."""
    linked = outcome.get("linked") or []
    links = f"links followed in {len(linked)} note(s): {', '.join(linked)}" if linked else "no note linked to it"
    proposals = outcome.get("proposals") or 0
    queued = f"; {proposals} pending candidate(s) now propose {outcome['topic']}" if proposals else ""
    return f"renamed {outcome['from']} to {outcome['topic']} ({outcome['uri']}); {links}{queued}"


def _near(ctx: Ctx, error: RpcError | MMError, old: str) -> str:
    """The near topics, when the refusal is that ``old`` has no note."""
    if not str(error.message).startswith(f"no note {old} "):
        return ""
    from .suggest import did_you_mean

    try:
        return did_you_mean(old, [e.topic for e in ctx.direct().memory().snapshot.entries])
    except MMError:
        return ""


def follow_in_state_db(path: Any, old: str, new: str) -> int:
    """Pending candidates of the queue in ``path`` (a daemon's ``state.db``) proposing ``old`` propose ``new``; how
    many. 0 when there is no such database or queue (or it cannot be written: the files are renamed either way).
    The statement is the daemon's own (``ReviewQueue.rename_topic``)."""
    import sqlite3
    from pathlib import Path

    if not Path(path).is_file():
        return 0
    conn = sqlite3.connect(path, timeout=5)
    try:
        with conn:
            return int(conn.execute("UPDATE candidates SET topic = ? WHERE status = 'pending' AND topic = ?",
                                    (new, old)).rowcount)
    except sqlite3.Error:
        return 0
    finally:
        conn.close()
