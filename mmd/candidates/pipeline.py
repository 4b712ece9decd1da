"""Utterances to review candidates: the one pipeline every source and ``mmctl digest`` go through.

Owns: :func:`candidates_from` (per utterance: the rules' prefilter, the mm v1
rules, :func:`proposed_topic`, provenance from the utterance, then
:func:`~.dedupe.fresh`) and :func:`proposed_topic`.

An agent's utterance (``human``, ``assistant``, ``summary``) is digested as
model-visible text, once per message, so each candidate's provenance is
exact. A ``text`` utterance (a file that is no agent log) is digested as the
reference digests a source: classified ``text`` / ``session-log`` and, for
a session log, flattened first; there is no prefilter (raw JSON may spell a
colon as ``\\u003a``).

Never: reads files, stores candidates, or looks anything up: what counts as
seen is handed in.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from mmd.core.digest import digest
from mmd.core.text import js_trim, slug_for_topic
from mmd.sources.base import Utterance

from .dedupe import Seen, fresh
from .model import SOURCE_KINDS, NewCandidate
from .rules import Found, apply, may_hold_candidates

__all__ = ["candidates_from", "proposed_topic"]

_NUMBERED = re.compile(r"(memo|summary)-\d+", re.ASCII)
_TOPIC_WORDS = 6


def proposed_topic(kind: str, topic: str, body: str) -> str:
    """The topic a candidate is proposed under.

    The digest rules number ``explicit`` and ``summary`` candidates per text
    (``memo-1``, ``summary-1``), so every message proposes the same topics and
    accepting two of them would overwrite one note with the other. Those get a
    topic from the body's first words instead (``memo-<8 hex of the body>``
    when no ASCII slug can be made, e.g. for CJK text); other topics stay.
    """
    match = _NUMBERED.fullmatch(topic)
    if kind not in ("explicit", "summary") or match is None:
        return topic
    words = re.findall(r"[A-Za-z0-9]+", body)[:_TOPIC_WORDS]
    slug = slug_for_topic(" ".join(words)) if len(words) >= 2 else None
    if slug is not None:
        return slug[:48].rstrip("-._")
    return f"{match.group(1)}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"


def _found(u: Utterance, budget: int) -> tuple[list[Found], str]:
    """The rules' candidates of one utterance and its ``source_kind``."""
    if u.who == "text":
        if not js_trim(u.text):
            return [], "text"  # blank to the reference: digest() would go looking for a log of its own
        result = digest(text=u.text, default_write_budget=budget, dsh_home="")
        return list(result["candidates"]), str(result["sourceKind"])
    if not may_hold_candidates(u.text):
        return [], SOURCE_KINDS[u.who]
    return apply(u.text, budget), SOURCE_KINDS[u.who]


def candidates_from(utterances: Iterable[Utterance], *, write_budget: int,
                    seen: Seen | None = None) -> list[NewCandidate]:
    """The candidates of ``utterances`` not in ``seen``, in utterance order.

    Args:
        utterances: from any source (:meth:`mmd.sources.base.Source.read`).
        write_budget: the default write budget, code points: bodies are cut to it (``over_budget``).
        seen: what to drop (note bodies, known candidate keys); None drops nothing.

    Returns:
        One :class:`~.model.NewCandidate` per candidate, with ``session_id``, ``file``, ``seq``,
        ``message_id`` (the position's ``uuid``) and ``source_kind`` from the utterance.
    """
    out: list[NewCandidate] = []
    for u in utterances:
        found, source_kind = _found(u, write_budget)
        pos = u.position
        out.extend(NewCandidate(c["kind"], proposed_topic(c["kind"], c["topic"], c["body"]), c["summary"], c["body"],
                                c["chars"], c["overBudget"], u.session_id, pos.file, pos.seq, pos.uuid, source_kind)
                   for c in found)
    return fresh(out, seen) if out and seen is not None else out
