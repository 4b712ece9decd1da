"""An agent's proposal under review (issue 28): what a review shows beside it, and what an accept of it may change.

Owns: ``proposal.current`` (the text of the note a proposal targets, as that note is now: :func:`with_current`);
the accept rules of the two actions that act on a note as it is — a ``delete`` is accepted as it is or not at
all (:func:`only_a_delete`: an edit that changes nothing is the deletion), a ``replace`` keeps the note's summary
unless the person or the agent gives another (:func:`replace_summary`). :mod:`.review`'s helper. Never: writes a
note, or decides a candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

from mmd.core.errors import ErrorCode
from mmd.wire.protocol import CandidateJson, DaemonError

from .home import USER, Home
from .previous import previous
from .state import MemoryState

__all__ = ["only_a_delete", "replace_summary", "with_current"]


def with_current(home: Home, cand: CandidateJson) -> CandidateJson:
    """An agent's proposal with ``proposal.current``: the text of the note it targets in the root it is proposed to,
    as that note is now (None when there is none), so a review shows what accepting changes; other candidates as
    they are."""
    from mmd.candidates.proposals import is_proposal  # loaded with the first candidate, not at the start

    proposal = cand.get("proposal") or {}
    if not is_proposal(cand.get("rule")):
        return cand
    root = home.get(str(cand.get("scope") or USER))
    note = root.state.current.note(str(proposal.get("topic"))) if root is not None else None
    return {**cand, "proposal": {**proposal, "current": note.body if note is not None else None}}


def only_a_delete(cand: CandidateJson, *, topic: str | None, into: str | None, content: str | None,
                  summary: str | None, tags: str | Sequence[str] | None) -> None:
    """Check that an accept of an agent's ``delete`` proposal asks for nothing but the deletion. An edit that changes
    nothing — its own topic, text and summary sent back as an editor or the page's form has them — is the deletion.

    Raises:
        DaemonError(E_INVALID): for another topic, ``into``, or a text, summary or tags of the person's own (a delete
            has no text to write; ``data: {topic, action: "delete"}``): nothing is changed, the candidate stays
            pending.
    """
    changed = [what for what, differs in (
        ("topic", topic not in (None, cand["topic"])), ("into", into is not None),
        ("text", content is not None and content.strip() != cand["body"].strip()),
        ("summary", summary not in (None, cand["summary"])), ("tags", bool(tags))) if differs]
    if changed:
        raise DaemonError(ErrorCode.E_INVALID, f"candidate {cand['id']} proposes to delete the note {cand['topic']}: "
                          f"accepting it deletes the note, so it takes no {', '.join(changed)} of its own; accept it "
                          "as it is, or reject it (nothing was changed)", topic=cand["topic"], action="delete")


def replace_summary(state: MemoryState, cand: CandidateJson, summary: str | None) -> str | None:
    """The index summary an accept of an agent's ``replace`` writes: ``summary`` when the person gave another than the
    candidate's own, else the agent's when it gave one (:func:`mmd.candidates.proposals.summary_to_write`), else the
    note's own (None when the note is gone meanwhile: the write derives one)."""
    from mmd.candidates.proposals import summary_to_write

    if summary not in (None, cand["summary"]):
        return summary
    return summary_to_write(cand["summary"], cand["body"]) or (previous(state, cand["topic"]) or {}).get("summary")
