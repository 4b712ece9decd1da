"""The candidate shape the review queue stores, and where its text came from.

Owns: :class:`Evidence` (one place a statement was seen: DESIGN "Sources and
utterances" ``evidence[]``), :class:`NewCandidate` (a candidate before it has
an id: kind, rule, score, visibility, proposal, summary, body and evidence)
and :data:`SOURCE_KINDS` (an utterance's ``who`` as the queue's older
``source.kind``).

Never: stores or publishes a candidate (the daemon's queue does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mmd.sources.base import Utterance

from .identity import candidate_key, norm_key

__all__ = ["QUOTE_MAX", "SOURCE_KINDS", "Evidence", "NewCandidate"]

SOURCE_KINDS = {"human": "user", "assistant": "assistant", "summary": "compaction"}
"""``Utterance.who`` → the candidate's ``source.kind`` (``text`` utterances take the digest's
``sourceKind``: ``text`` | ``session-log``)."""
QUOTE_MAX = 500
"""Longest evidence quote, in code points."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One place a candidate's statement was seen.

    Attributes:
        agent: the source (``dsh``, ``claude-code``, ``codex``, ``other``, or ``extractor``).
        session_id, project, at: of the utterance (None when unknown; ``at`` ISO-8601 UTC).
        file: the log, an absolute path.
        position: ``{file, line?, seq?, uuid?}`` (:meth:`mmd.sources.base.Position.to_json`).
        who: ``human`` | ``assistant`` | ``summary`` | ``text``.
        quote: the statement as said, at most :data:`QUOTE_MAX` code points.
        reason: why the agent proposed it (its one line, :mod:`.proposals`), else None.
    """

    agent: str
    session_id: str | None
    project: str | None
    file: str
    position: dict[str, Any]
    at: str | None
    who: str
    quote: str
    reason: str | None = None

    @classmethod
    def of(cls, u: Utterance, quote: str) -> Evidence:
        """The evidence of ``quote`` said in utterance ``u``."""
        return cls(u.agent, u.session_id, u.project, u.position.file, u.position.to_json(), u.at, u.who,
                   quote[:QUOTE_MAX])

    @property
    def place(self) -> str:
        """Identity of the place, so a log read again or copied adds no sighting: the record's uuid when the
        format has one, else session and line/seq, else file and line/seq; plus who said it."""
        p = self.position
        where = p.get("uuid") or f"{self.session_id or p['file']}:{p.get('line')}:{p.get('seq')}"
        return f"{self.agent}|{where}|{self.who}"

    def to_json(self) -> dict[str, Any]:
        """The wire shape: ``{agent, sessionId, project, file, position, at, who, quote, reason?}`` (``reason`` only
        when the agent gave one)."""
        out = {"agent": self.agent, "sessionId": self.session_id, "project": self.project, "file": self.file,
               "position": dict(self.position), "at": self.at, "who": self.who, "quote": self.quote}
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Evidence:
        """The inverse of :meth:`to_json`."""
        reason = raw.get("reason")
        return cls(str(raw.get("agent") or "other"), raw.get("sessionId"), raw.get("project"), str(raw["file"]),
                   dict(raw.get("position") or {"file": raw["file"]}), raw.get("at"), str(raw.get("who") or "text"),
                   str(raw.get("quote") or ""), reason if isinstance(reason, str) else None)


@dataclass(frozen=True)
class NewCandidate:
    """A candidate found by ingestion, before it has an id.

    Attributes:
        kind, topic, summary, body, chars, over_budget: the candidate (``chars`` in code points;
            ``over_budget`` when the body was cut; ``topic`` the proposed topic).
        session_id, file, seq, message_id, source_kind: where it was first seen (the older
            ``source`` shape, kept for clients that read it).
        rule: the rule that made it (``mm.explicit``, ``human-standing-rule``, ``extractor`` …).
        score: higher first; comparable across sessions.
        visible: within its session's budget (or marked on purpose); hidden candidates are listed on request.
        evidence: every place it was seen, in order.
        proposal_action: ``create`` a note ``topic`` or ``append`` to it; an agent's proposal (:mod:`.proposals`)
            may also ``replace`` its text or ``delete`` it.
        pinned: marked on purpose (``mm:``, ``MEMO:``, ``REMEMBER`` …): always visible, never capped.
        speaker: who said it (:data:`~.screening.SPEAKERS`: ``person``, ``agent``, ``summary``, ``remote``,
            ``outside-edit``); '' until the queue's door (:func:`~.screening.screen_candidate`) derives it from the
            evidence. A producer that knows better sets it (an agent's proposal: ``agent``).
        flags: what the screen found (``[{kind, why}]``: an instruction aimed at an agent, a secret, hidden text),
            set by the door. redacted: the door replaced a secret by ``‹secret: <kind>›`` somewhere in it.
        diff: a held topic's change (a sync's or an outside edit's), unified, as the door shows it; else None.
        scope: the root it is proposed to when its maker knows it (``user`` or a project key: an agent's proposal
            through the daemon, a sync conflict's or a held topic's root), else None (the daemon decides from the
            evidence).
    """

    kind: str
    topic: str
    summary: str
    body: str
    chars: int
    over_budget: bool
    session_id: str | None
    file: str
    seq: int | None
    message_id: str | None
    source_kind: str
    rule: str = ""
    score: float = 0.0
    visible: bool = True
    evidence: tuple[Evidence, ...] = field(default=())
    proposal_action: str = "create"
    pinned: bool = False
    scope: str | None = None
    speaker: str = ""
    flags: tuple[dict[str, str], ...] = ()
    redacted: bool = False
    diff: str | None = None

    @property
    def key(self) -> str:
        """See :func:`~.identity.candidate_key` (the schema-1 identity)."""
        return candidate_key(self.kind, self.topic, self.body)

    @property
    def norm(self) -> str:
        """See :func:`~.identity.norm_key`: the queue's identity of the statement; a sync's conflict's is its
        topic's too (forty topics a remote gave one text are forty decisions, not one)."""
        return norm_key(f"{self.topic}\n{self.body}" if self.kind == "conflict" else self.body)
