"""What an acceptance replaces, as the journal keeps it for ``queue.undo`` (:mod:`.review`'s helper, issue 29).

Owns: :func:`previous` — the note's text before an accept, or, when that text holds a secret (a person let it
in), the version that holds it (``{version: "r42"}``): the journal in ``state.db`` never keeps a value; and
:func:`kept`, the text back from the version history for an undo. Never: writes a note or the journal.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mmd.screen.secrets import find_secrets
from mmd.wire.protocol import DaemonCode, DaemonError

from .state import MemoryState

__all__ = ["kept", "previous"]


def previous(state: MemoryState, topic: str) -> dict[str, Any] | None:
    """What an acceptance may replace: the note's ``{body, summary, tags, writeBudget}``, or None; a text holding a
    secret (a person let it in) is named by its version instead (``{version: "r42", writeBudget}``): the journal
    in ``state.db`` never keeps a value (issue 29), the version history has the text."""
    before = state.current.note(topic)
    if before is None:
        return None
    if find_secrets("\n".join((before.body, before.entry.summary, ", ".join(before.entry.tags)))):
        return {"version": f"r{state.current.revision}", "writeBudget": before.entry.write_budget}
    return {"body": before.body, "summary": before.entry.summary, "tags": list(before.entry.tags),
            "writeBudget": before.entry.write_budget}


async def kept(state: MemoryState, topic: str, before: dict[str, Any]) -> dict[str, Any]:
    """``before`` as :func:`previous` gave it, its text taken from the version history when it names a version.

    Raises:
        DaemonError(E_CONFLICT): when that version is no longer kept.
    """
    ref = before.get("version")
    if not isinstance(ref, str):
        return before
    version = await asyncio.to_thread(state.store.versions.at, topic, ref)
    if version is None or version.body is None:
        raise DaemonError(DaemonCode.E_CONFLICT, f"{topic}: the text before the acceptance ({ref}) is no longer kept "
                          f"(`mmctl log {topic}`); undo refused", topic=topic)
    return {"body": version.body, "summary": version.summary,
            "tags": [t.strip() for t in version.tags.split(",") if t.strip()],
            "writeBudget": before.get("writeBudget") or version.write_budget}
