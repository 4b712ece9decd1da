"""The output schemas of the MCP tools (:mod:`.server`): one pydantic model a tool, whose JSON schema the server
declares and whose shape every tool's ``structuredContent`` has (extra keys are refused, so a drift shows in the
tests that validate real results against them).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["BudgetOut", "DeleteOut", "DigestOut", "DueOut", "InjectOut", "ProposeOut", "QueueOut", "ReadOut",
           "ReloadOut", "SearchOut", "WriteOut", "usage_text"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadOut(_Out):
    """``mem_read``: ``note`` for a topic, ``index`` without one, ``index`` + ``notes`` with ``all``."""

    found: bool
    topic: str | None = None
    uri: str | None = None
    note: dict[str, Any] | None = None
    index: dict[str, Any] | None = None
    notes: list[dict[str, Any]] | None = None


class WriteOut(_Out):
    """``mem_write``: the mm write outcome; ``ok: false`` carries ``code``, ``message`` and ``usage``."""

    ok: bool
    topic: str
    uri: str | None = None
    action: str | None = None
    code: str | None = None
    message: str | None = None
    reason: str | None = None
    usage: dict[str, Any] | None = None
    pendingWrites: int | None = None
    revision: int | None = None
    proposal: dict[str, Any] | None = None
    """Under ``[agents] writes = "propose"``: ``{status, id, scope}`` of the proposal the write became (no usage)."""


class SearchOut(_Out):
    """``mem_search``: ``{query, engine, total, truncated, matches, note?}`` (mm v1 §8)."""

    query: str
    engine: str
    total: int
    truncated: bool
    matches: list[dict[str, Any]]
    note: str | None = None


class BudgetOut(_Out):
    """``mem_budget``: the live budget report (mm v1 §6)."""

    root: str
    memoryId: str
    loadedAt: str
    snapshotAgeMs: int
    pendingWrites: int
    index: dict[str, Any]
    detail: dict[str, Any]
    perTopic: list[dict[str, Any]]
    anomalies: dict[str, Any]
    search: dict[str, Any]
    scope: str | None = None
    """The root reported: ``user`` or a project key (``docs/projects.md``), through a daemon."""


class DigestOut(_Out):
    """``mem_digest``: candidate memories; nothing is written."""

    source: str
    sourceKind: str
    candidates: list[dict[str, Any]]
    usage: dict[str, Any]
    note: str | None = None


class DeleteOut(_Out):
    """``mem_delete``: ``removed`` says whether a note was there; deletes are always allowed."""

    ok: bool
    removed: bool
    topic: str
    usage: dict[str, Any] | None = None
    pendingWrites: int | None = None
    revision: int | None = None
    proposal: dict[str, Any] | None = None
    """Under ``[agents] writes = "propose"``: ``{status, id, scope}`` of the proposal the delete became."""


class ReloadOut(_Out):
    """``mem_reload``: when the new snapshot was taken (and its revision, with a daemon)."""

    loadedAt: str
    revision: int | None = None
    pendingWrites: int | None = None


class DueOut(_Out):
    """``mem_due``: ``{today, due: [{topic, reviewAfter, daysLeft}], invalid: [{topic, value}]}``."""

    today: str
    due: list[dict[str, Any]]
    invalid: list[dict[str, Any]]


class InjectOut(_Out):
    """``mem_inject``: the injection (``baseline`` | ``delta`` | ``reminder`` | ``none``), already committed."""

    mode: str
    text: str
    added: list[str]
    updated: list[str]
    removed: list[str]
    unchanged: int
    reminded: list[str]
    bytes: int
    token: str | None
    revision: int | None = None
    committed: bool
    scope: str | None = None
    """The root injected: ``user`` or a project key, through a daemon."""


class ProposeOut(_Out):
    """``mem_propose``: ``status`` queued | merged | accepted | rejected | held, the candidate ``id`` (null when held),
    the ``topic`` proposed and the root it waits for (``scope``)."""

    ok: bool
    status: str
    id: int | None = None
    topic: str | None = None
    scope: str | None = None


class QueueOut(_Out):
    """``mem_queue_*``: ``candidates`` for a list, ``result`` (the daemon's answer) for accept/reject."""

    ok: bool
    candidates: list[dict[str, Any]] | None = None
    result: Any = None


def usage_text(usage: dict[str, Any]) -> str:
    """A write outcome's ``usage`` as the model reads it: characters against the write budget, the note's bytes,
    the index's lines and bytes against their caps."""
    index = usage.get("index", {})
    return (f"{usage.get('bodyChars')}/{usage.get('writeBudget')} chars (overflow {usage.get('overflow', 0)}), "
            f"note {usage.get('noteBytes')}/{usage.get('noteMaxBytes')} bytes, index {index.get('lines')}/"
            f"{index.get('lineCap')} lines and {index.get('bytes')}/{index.get('byteCap')} bytes")
