"""An agent's proposal: a candidate the agent itself marked as worth keeping, for a person to decide (issue 28).

Every way an agent proposes — ``memory.propose`` (RPC, ``mmctl propose``, the MCP tool ``mem_propose``, an
MCP ``mem_write``/``mem_delete`` under ``[agents] writes = "propose"``) and a line ``mm: …`` (or
``mm://<id>/<topic> …``, ``MEMO: …``) in the agent's own reply — makes the same thing, :func:`make_proposal`:
a :class:`~.model.NewCandidate` of kind :data:`PROPOSAL_KIND` and rule :data:`PROPOSAL_RULE`, of speaker ``agent``
(always visible, never capped by a session's budget; the queue's door never pins it as the person's: issue 29),
scored :data:`PROPOSAL_SCORE` (above every draft of the rules and every line a person marked), with the agent,
its session, the folder it worked in and its one-line reason in its evidence. The review queue deduplicates it
like any candidate (the same statement merges, a rejected one never comes back); here it is dropped when a note
already holds it.

A proposal may target a note: ``create`` it, ``append`` to it, ``replace`` its text (the review shows the
difference) or ``delete`` it.

:func:`proposal_text` is the one place a proposal's text enters mmd; the screen for secrets, hidden text and
instructions is the queue's door (:func:`mmd.candidates.screening.screen_candidate`), which every proposal passes.

Owns: the proposal's kind, rule, score, actions and limits; turning a proposal into a candidate. Never: stores it
(the daemon's queue does), reads files, or decides where it is stored (the daemon picks the root).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mmd.core.errors import ErrorCode, MMError
from mmd.core.text import validate_topic

from .dedupe import Seen
from .identity import normalized
from .model import Evidence, NewCandidate
from .statements import summary_line

__all__ = ["ACTIONS", "PROPOSAL_KIND", "PROPOSAL_RULE", "PROPOSAL_SCORE", "REASON_MAX", "delete_statement",
           "derived_summary", "is_proposal", "make_proposal", "proposal_reason", "proposal_text", "summary_to_write"]

PROPOSAL_KIND = "proposal"
"""The kind of every agent's proposal."""
PROPOSAL_RULE = "agent.propose"
"""The rule of every agent's proposal: how the queue, the review and the events tell one from a draft."""
PROPOSAL_SCORE = 10.0
"""A proposal's score: above every draft of the rules (below 1 alone, +0.4 for each further session that says it)
and every line a person marked (2.0), so a reviewer sees what the agent proposed first."""
ACTIONS = ("create", "append", "replace", "delete")
"""What a proposal does to its topic once accepted."""
REASON_MAX = 300
"""Longest reason kept, in code points (one line)."""


def is_proposal(rule: object) -> bool:
    """Whether a candidate's ``rule`` marks it as an agent's proposal."""
    return rule == PROPOSAL_RULE


def proposal_text(text: object, *, what: str = "content") -> str:
    """A proposal's text as it enters mmd: CRLF and CR read as LF, trailing blank space dropped.

    The one function every proposal's text passes (the content, the summary, the reason); the secret, hidden
    text and instruction screen is the queue's door (:func:`mmd.candidates.screening.screen_candidate`).

    Raises:
        MMError(E_INVALID): if ``text`` is not a string, is blank, or holds a NUL or another control character
            than tab and newline (naming ``what``).
    """
    if not isinstance(text, str) or not text.strip():
        raise MMError(ErrorCode.E_INVALID, f"a proposal's {what} must be non-blank text")
    clean = text.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    bad = next((c for c in clean if (ord(c) < 0x20 and c not in "\t\n") or ord(c) == 0x7F), None)
    if bad is not None:
        raise MMError(ErrorCode.E_INVALID, f"a proposal's {what} holds the control character U+{ord(bad):04X}")
    return clean


def proposal_reason(reason: object) -> str | None:
    """The agent's reason as kept: one line (line breaks become spaces), at most :data:`REASON_MAX` code points;
    None when none was given.

    Raises:
        MMError(E_INVALID): as :func:`proposal_text`.
    """
    if reason is None or (isinstance(reason, str) and not reason.strip()):
        return None
    line = " ".join(proposal_text(reason, what="reason").split())
    return line if len(line) <= REASON_MAX else line[:REASON_MAX - 1].rstrip() + "…"


def derived_summary(body: str) -> str:
    """The summary a proposal without one gets: the first words of its text, cut to a summary line."""
    return summary_line(" ".join(body.split()))


def summary_to_write(summary: str, body: str) -> str | None:
    """What accepting a ``replace`` writes as the index summary: the one the agent gave, or None (the note keeps its
    own) when the candidate's summary is only :func:`derived_summary` of its text."""
    return None if summary == derived_summary(body) else summary


def delete_statement(topic: str) -> str:
    """The statement a ``delete`` proposal stands for (its body and its identity in the queue)."""
    return f"Delete the note {topic}."


def make_proposal(seen: Seen, *, action: str, body: str, evidence: Sequence[Evidence], topic: str | None = None,
                  summary: str | None = None, note_body: str | None = None, max_chars: int = 4000,
                  taken: Collection[str] = (), scope: str | None = None) -> NewCandidate | None:
    """The candidate of one proposal, or None when it would change nothing: a ``create`` or ``append`` whose text a
    note already holds (``seen``), a ``replace`` with the note's own text.

    Args:
        seen: the notes of the root it is proposed to (texts, subjects).
        action: one of :data:`ACTIONS`.
        body: the text (for ``replace`` the note's whole new text; ignored for ``delete``).
        evidence: where the agent proposed it (at least one place; the first is the older ``source``).
        topic: the note it targets; None (``create`` only): as for a marked line, an append to a note on the same
            subject or of its category (:func:`.topics.proposal`), else a new topic.
        summary: the index summary to write (default: the first line of ``body``, cut).
        note_body: the target note's current body when it exists (``replace`` compares with it).
        max_chars: the most code points the text may have (the root's write budget, or the note's when larger).
        taken: topics proposed for other statements (a new topic avoids them).
        scope: the root it is proposed to (``user`` or a project key), when the proposer named it.

    Raises:
        MMError(E_INVALID): an unknown action, a topic that is no slug, an action that needs a topic without one,
            a text over ``max_chars`` (it is never cut: a cut replace would lose the end of the note), or a text
            :func:`proposal_text` refuses.
    """
    from .topics import proposal as topic_proposal

    if action not in ACTIONS:
        raise MMError(ErrorCode.E_INVALID, f"a proposal's action must be one of {', '.join(ACTIONS)}, got {action!r}")
    if topic is not None:
        topic = validate_topic(topic)
    elif action != "create":
        raise MMError(ErrorCode.E_INVALID, f"a proposal to {action} names the note's topic")
    if not evidence:
        raise MMError(ErrorCode.E_INVALID, "a proposal needs the place it was made")
    text = delete_statement(str(topic)) if action == "delete" else proposal_text(body)
    if len(text) > max_chars:
        raise MMError(ErrorCode.E_INVALID, f"the proposed text has {len(text)} characters, over the write budget of "
                                           f"{max_chars}: shorten it (nothing was queued)")
    if action == "replace" and note_body is not None and text == note_body.rstrip():
        return None
    if action in ("create", "append") and _held(text, seen):
        return None
    head = proposal_text(summary, what="summary") if summary is not None and summary.strip() else text
    line = derived_summary(head)
    if topic is None:  # as a mark's: appended to a note on the same subject or of its category, else a new topic
        chosen = topic_proposal(f"{head} {text}", seen.subjects, taken=taken, kind="explicit")
        action, topic = chosen["action"], chosen["topic"]
    first = evidence[0]
    return NewCandidate(PROPOSAL_KIND, topic, line, text, len(text), False,
                        first.session_id, first.file, first.position.get("seq"), first.position.get("uuid"),
                        "assistant", PROPOSAL_RULE, PROPOSAL_SCORE, True, tuple(evidence), action, True, scope,
                        speaker="agent")  # the queue's door screens it, and never pins it as the person's (issue 29)


def _held(text: str, seen: Seen) -> bool:
    needle = normalized(text)
    return bool(needle) and any(needle in note for note in seen.note_texts)
