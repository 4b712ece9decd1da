"""The candidate shape the review queue stores, and where its text came from.

Owns: :class:`NewCandidate` (a candidate before it has an id: the mm digest
candidate plus its provenance) and :data:`SOURCE_KINDS` (an utterance's
``who`` as the queue's ``source.kind``).

Never: stores or publishes a candidate (the daemon's queue does).
"""

from __future__ import annotations

from dataclasses import dataclass

from .identity import candidate_key

__all__ = ["SOURCE_KINDS", "NewCandidate"]

SOURCE_KINDS = {"human": "user", "assistant": "assistant", "summary": "compaction"}
"""``Utterance.who`` → the candidate's ``source_kind`` (``text`` utterances take the digest's
``sourceKind``: ``text`` | ``session-log``)."""


@dataclass(frozen=True)
class NewCandidate:
    """A candidate found by ingestion, before it has an id.

    Attributes:
        kind, topic, summary, body, chars, over_budget: the mm digest candidate
            (``chars`` in code points; ``over_budget`` when the body was cut to the write budget).
        session_id: the agent's session id (None for other logs).
        file: the log it came from (absolute path).
        seq: the event seq of the message (None for other logs).
        message_id: the message ``id`` (or compaction id), when known.
        source_kind: what the text was: ``user`` | ``assistant`` | ``compaction`` (agent logs),
            ``text`` | ``session-log`` (other logs).
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

    @property
    def key(self) -> str:
        """See :func:`~.identity.candidate_key`."""
        return candidate_key(self.kind, self.topic, self.body)
