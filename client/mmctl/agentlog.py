"""``digest`` of a recognised agent log (DSH, Claude Code, Codex): the daemon's adapter and candidate pipeline.

Owns: :func:`digest_agent_log`, which reads a file handed in by a person
(``mmctl digest --file F``) as the daemon reads a log of that agent —
:func:`mmd.sources.recognise.recognise` tells which, :func:`~mmd.sources.recognise.read_whole`
gives its utterances through the adapter of :data:`mmd.sources.SOURCES`, and
:func:`mmd.candidates.candidates_from` turns them into candidates, dropping
what a note already holds — and shapes them as the reference's
``DigestResult``. Any other file is the reference's: this returns None and
:meth:`mmd.core.memory.Memory.digest` flattens its lines (conformance rule
``digest-agent-log``).

Never: writes (digest never writes), queues, or keeps a cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mmd.candidates import NewCandidate
    from mmd.core.memory import Memory

__all__ = ["DEFAULT_MAX_ITEMS", "digest_agent_log"]

DEFAULT_MAX_ITEMS = 50
"""Most candidates when ``max_items`` is not a positive integer (the reference's default)."""


def _candidate(c: NewCandidate, budget: int) -> dict[str, Any]:
    """One pipeline candidate as the reference's digest candidate plus where it came from."""
    out: dict[str, Any] = {"topic": c.topic, "kind": c.kind, "summary": c.summary, "body": c.body, "chars": c.chars,
                           "budget": budget, "overBudget": c.over_budget}
    source = {"kind": c.source_kind, "sessionId": c.session_id, "seq": c.seq, "messageId": c.message_id}
    out["source"] = {k: v for k, v in source.items() if v is not None}
    out["rule"], out["score"], out["pinned"] = c.rule, c.score, c.pinned
    out["proposal"] = {"action": c.proposal_action, "topic": c.topic}
    return out


def _by_score(found: Iterable[NewCandidate]) -> list[NewCandidate]:
    """One candidate per statement (the first of each :attr:`~mmd.candidates.NewCandidate.norm`, as the queue
    merges them), by score descending as ``queue list`` orders them (ties: pipeline order)."""
    first: dict[str, NewCandidate] = {}
    for c in found:
        first.setdefault(c.norm, c)
    return sorted(first.values(), key=lambda c: -c.score)


def digest_agent_log(path: str, memory: Memory, *, max_items: int | None = None,
                     topic_hint: str | None = None) -> dict[str, Any] | None:
    """The candidates of the agent log at ``path`` as the daemon would queue them, or None for another file.

    Args:
        path: the file, as given (echoed as ``source``).
        memory: the memory whose notes count as seen and whose ``defaultWriteBudget`` (code points) applies.
        max_items: most candidates (not a positive integer: :data:`DEFAULT_MAX_ITEMS`).
        topic_hint: the topic of the first ``explicit`` candidate; later ``explicit`` ones are dropped, as the
            reference does with a hint.

    Returns:
        ``{source, sourceKind: "session-log", agent, sessionId, project, candidates, usage, note, warnings}``:
        ``candidates`` as the reference's (``topic, kind, summary, body, chars, budget, overBudget``) plus
        ``source`` (``kind``: ``user`` | ``assistant`` | ``compaction``, ``sessionId``, ``seq``, ``messageId``),
        ``rule``, ``score``, ``pinned`` and ``proposal`` (``action``: ``create`` | ``append``, ``topic``); only
        the visible candidates (those the review queue lists by default), one per statement (a prompt
        whose statements share one body is listed once, as the queue merges it), by score descending as
        ``queue list`` orders them (marked ones score highest).
        None as well for a file that cannot be opened.

    Raises:
        MMError(E_DIGEST_SOURCE): a recognised log cannot be read to its end.
    """
    from mmd.core.digest import DIGEST_NOTE
    from mmd.core.errors import ErrorCode, MMError
    from mmd.sources.recognise import read_whole, recognise

    try:
        agent = recognise(path)
    except OSError:
        return None  # missing, a folder, unreadable: the reference's digest says so in its words
    if agent is None:
        return None
    try:
        utterances, warnings = read_whole(path, agent)
    except OSError as error:
        raise MMError(ErrorCode.E_DIGEST_SOURCE, f"digest source file cannot be read: {path}: "
                                                 f"{error.strerror or error}") from None
    from mmd.candidates import Seen, candidates_from

    budget = memory.options.default_write_budget
    # the notes as the daemon's candidacy sees them (mmd.daemon.ingest.candidacy.seen_of_snapshot)
    seen = Seen.of_index((n.topic, n.entry.tags, n.entry.summary, n.body) for n in memory.list_notes())
    found = _by_score(c for c in candidates_from(utterances, write_budget=budget, seen=seen) if c.visible)
    if topic_hint:
        explicit = [c for c in found if c.kind == "explicit"][1:]
        found = [c for c in found if c not in explicit]
    limit = max_items if isinstance(max_items, int) and max_items > 0 else DEFAULT_MAX_ITEMS
    candidates = [_candidate(c, budget) for c in found[:limit]]
    if topic_hint:
        for c in candidates:
            if c["kind"] == "explicit":
                c["topic"] = topic_hint
    chars = sum(c["chars"] for c in candidates)
    first = utterances[0] if utterances else None
    return {"source": path, "sourceKind": "session-log", "agent": agent,
            "sessionId": first.session_id if first else None, "project": first.project if first else None,
            "candidates": candidates, "usage": {"chars": chars, "budget": budget, "overflow": max(0, chars - budget)},
            "note": DIGEST_NOTE, "warnings": warnings}
