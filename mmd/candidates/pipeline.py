"""Utterances to review candidates: the one pipeline every source and ``mmctl digest`` go through.

Owns: :func:`candidates_from` and :func:`proposed_topic`. Issue 13.

- Agent utterances (``human``, ``assistant``, ``summary``): the marks a person or agent made on
  purpose — every mm v1 §9 marker (``mm:`` / ``mm://`` URIs, ``MEMO:`` / ``REMEMBER`` / ``记忆：`` /
  ``记住：``, ``Summary:`` / ``Conclusion:`` / ``总结：`` / ``结论：``, in human text too) and a line
  opening with ``mm: …`` — plus our own rules through :func:`mmd.candidates.score.select` (one
  statement a candidate, scored, a visible budget per session). ``mm:`` and the explicit markers
  are *pinned*: always visible, never capped; a ``##`` heading is never a candidate here. In the
  agent's own reply they are the agent's proposal (:mod:`.proposals`).
- ``text`` utterances (a file that is no agent log): the mm v1 rules exactly as the reference
  applies them (classified ``text`` / ``session-log`` and, for a session log, flattened first;
  the conformance vectors pin those).

Every candidate gets its evidence (the utterances it was seen in), a proposal (a new topic of
whole words, or an append to a note on the same subject) and is dropped when a note already holds
its statement (:class:`~.dedupe.Seen`).

Never: reads files, stores candidates, or looks anything up: what counts as seen is handed in.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Sequence

from mmd.core.digest import digest
from mmd.core.errors import MMError
from mmd.core.lazyre import lazy_compile
from mmd.core.text import js_trim, slug_for_topic
from mmd.sources.base import Utterance

from .dedupe import Seen, fresh
from .identity import near_duplicate, normalized, shingles
from .model import SOURCE_KINDS, Evidence, NewCandidate
from .proposals import make_proposal
from .rules import MM_V1, Found, apply, may_hold_candidates
from .score import WHO_FACTOR, Draft, select
from .signals import standing
from .statements import MAX_STATEMENT, split, summary_line
from .topics import proposal

__all__ = ["MARKED_SCORE", "candidates_from", "make_candidate", "marks_from", "proposed_topic"]

_NUMBERED = lazy_compile(r"(memo|summary)-\d+", re.ASCII)
_TOPIC_WORDS = 6
# "mm: …" opening a line (a bullet's too) or a sentence ("Great. mm: the close job runs at 02:00.")
_MM_LINE = lazy_compile(r"(?:^[ \t]*(?:[-*+][ \t]+)?|(?<=[.!?。！？][ \t]))mm:[ \t]+(\S.*)$",
                      re.MULTILINE | re.IGNORECASE)
# mm v1 §9 names REMEMBER without a colon too ("REMEMBER the bucket is eu-west-1", "remember that …"): the
# reference's rule wants the colon, so such a line would be neither drafted (it is marked) nor marked
_REMEMBER_LINE = lazy_compile(r"^[ \t]*(?:[-*+][ \t]+)?remember\b[ \t]*[,–—-]?[ \t]*(?:that[ \t]+)?(\S.*)$",
                            re.MULTILINE | re.IGNORECASE)
_EMPHASIS_LEFT = lazy_compile(r"^[*_]+[ \t]*")
"""What ``**Conclusion:** the cause …`` leaves before the body: the bold's closing stars."""
_PINNED_KINDS = ("uri", "explicit")
_HEADING_LINE = lazy_compile(r"^[ \t]*#{2,}[ \t].*$", re.MULTILINE)
_WEIGHT = {r.kind: r.weight for r in MM_V1}
MARKED_SCORE = 2.0
"""Score of a candidate marked on purpose (``mm:``, ``MEMO:``, ``REMEMBER`` …): above any rule's."""
_WORDED_AS_RULE = 0.2
"""Added to a ``Summary:`` / ``Conclusion:`` / ``结论：`` line worded as a standing rule ("must", "必须" …): every
marker line is visible (mm v1 §9 makes each a candidate; 1 of the 51 labelled real sessions has one), this ranks."""


def proposed_topic(kind: str, topic: str, body: str) -> str:
    """The topic a candidate of a ``text`` utterance is proposed under (the reference's rules).

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


def _cut(body: str, limit: int) -> tuple[str, bool]:
    """``body`` trimmed, cut to ``limit`` code points at a word with ``…``; and whether it was cut."""
    body = js_trim(body)
    if len(body) <= limit:
        return body, False
    head = body[: limit - 1]
    at = max(head.rfind(" "), head.rfind("\n"))
    if at >= limit // 2:
        head = head[:at]
    return head.rstrip(" ,;:-–—\n") + "…", True


def make_candidate(seen: Seen, *, kind: str, rule: str, body: str, summary: str, score: float, visible: bool,
                   evidence: Sequence[Evidence], write_budget: int = MAX_STATEMENT, topic: str | None = None,
                   pinned: bool = False, taken: Collection[str] = ()) -> NewCandidate | None:
    """One candidate of a statement: body cut to min(``write_budget``, 500) code points at a word, summary to
    120, a proposal (``topic`` when given: appended to when that note exists, else created; else append to a note
    on the same subject, else a new topic: a slug of whole words, not one of ``taken``: the topics proposed for
    other statements).
    None when the body is blank or a note already holds it (``seen.note_texts``).

    ``evidence`` must hold at least one place (the first is the older ``source``).
    """
    cut, over = _cut(body, max(1, min(MAX_STATEMENT, write_budget)))
    if not normalized(cut) or _held(cut, seen.note_texts):
        return None
    first = evidence[0]
    if topic is not None:  # an mm://…/<topic> the person named wins: appended to when that note exists
        chosen = {"action": "append" if any(s.topic == topic for s in seen.subjects) else "create", "topic": topic}
    else:
        chosen = proposal(f"{summary} {cut}", seen.subjects, taken=taken, kind=kind)
    return NewCandidate(
        kind, chosen["topic"], summary_line(summary or cut), cut, len(cut), over, first.session_id, first.file,
        first.position.get("seq"), first.position.get("uuid"), SOURCE_KINDS.get(first.who, first.who), rule,
        round(score, 4), visible or pinned, tuple(evidence), chosen["action"], pinned)


class _Batch:
    """The candidates of one call, with what the notes already hold and what the notes are about."""

    def __init__(self, seen: Seen | None, write_budget: int) -> None:
        self.seen = seen or Seen()
        self.budget = write_budget
        self.out: list[NewCandidate] = []
        self.marked: list[frozenset[str]] = []
        self.topics: dict[str, str] = {}
        """Topic proposed → the normalized statement it was proposed for (one topic, one statement)."""

    def make(self, *, kind: str, rule: str, body: str, summary: str, score: float, visible: bool,
             evidence: Sequence[Evidence], topic: str | None = None, pinned: bool = False) -> None:
        norm = normalized(body)
        taken = {t for t, n in self.topics.items() if n != norm}
        made = make_candidate(self.seen, kind=kind, rule=rule, body=body, summary=summary, score=score,
                              visible=visible, evidence=evidence, write_budget=self.budget, topic=topic,
                              pinned=pinned, taken=taken)
        if made is not None:
            self.out.append(made)
            if made.proposal_action == "create":
                self.topics.setdefault(made.topic, norm)

    def marks(self, u: Utterance) -> None:
        """The mm v1 markers (no headings), ``mm: …`` and ``REMEMBER …`` lines of one agent utterance, every one
        visible: ``mm:`` / ``MEMO:`` / ``REMEMBER`` / ``记忆：`` / ``记住：`` pinned, ``Summary:`` / ``Conclusion:`` /
        ``总结：`` / ``结论：`` scored."""
        found: list[Found] = []
        if may_hold_candidates(u.text):
            # headings are never candidates here, and must not swallow the marker lines under them
            text = _HEADING_LINE.sub("", u.text)
            found = [c for c in apply(text, 1_000_000) if c["kind"] != "heading"]
        said = {normalized(c["body"]) for c in found}
        for line in (*_MM_LINE.finditer(u.text), *_REMEMBER_LINE.finditer(u.text)):
            body = line.group(1)
            if normalized(body) not in said and not body.rstrip().endswith("?"):
                said.add(normalized(body))
                found.append({"kind": "explicit", "topic": "", "summary": body, "body": body})
        for c in found:
            body = _EMPHASIS_LEFT.sub("", c["body"]) or c["body"]
            pinned = c["kind"] in _PINNED_KINDS
            if pinned and u.who == "assistant":  # the agent marked it: its proposal (issue 28)
                self.marked.append(shingles(c["body"]))
                self.propose(u, c)
                continue
            score = MARKED_SCORE if pinned else _WEIGHT["summary"] * WHO_FACTOR.get(u.who, 0.5) + \
                (_WORDED_AS_RULE if standing(body) else 0.0)
            self.marked.append(shingles(body))
            self.make(kind=c["kind"], rule=f"mm.{c['kind']}", body=body, summary=_EMPHASIS_LEFT.sub("", c["summary"]),
                      score=score, visible=True, evidence=[Evidence.of(u, body)],
                      topic=c["topic"] if c["kind"] == "uri" else None, pinned=pinned)

    def propose(self, u: Utterance, c: Found) -> None:
        """An ``mm:`` (``mm://…/<topic>``, ``MEMO:`` …) line of the agent's reply as its proposal
        (:func:`~.proposals.make_proposal`): appended to the note it names when that note exists, else created."""
        topic = c["topic"] if c["kind"] == "uri" else None
        action = "append" if topic is not None and any(s.topic == topic for s in self.seen.subjects) else "create"
        norm = normalized(c["body"])
        body = c["body"][:max(1, self.budget)]
        try:
            made = make_proposal(self.seen, action=action, body=body, topic=topic, summary=c["summary"],
                                 evidence=[Evidence.of(u, c["body"])], max_chars=max(1, self.budget),
                                 taken={t for t, n in self.topics.items() if n != norm})
        except MMError:
            return  # a line no note could hold (a topic that is no slug): it stays in the log, nothing is queued
        if made is not None:
            self.out.append(made)
            if made.proposal_action == "create":
                self.topics.setdefault(made.topic, norm)

    def draft(self, d: Draft) -> None:
        """One draft of our rules, unless it restates a marked candidate of this batch."""
        words = shingles(d.body)
        if any(near_duplicate(words, m) or (m and m <= words) for m in self.marked):
            return
        evidence = [Evidence.of(u, d.body if i == 0 else _quote(u, words)) for i, u in enumerate(d.evidence)]
        self.make(kind=d.kind, rule=d.rule, body=d.body, summary=d.summary, score=d.score, visible=d.visible,
                  evidence=evidence)


def _held(body: str, notes: Sequence[str]) -> bool:
    """Whether one of the notes (normalized texts) already holds ``body`` (normalized containment)."""
    needle = normalized(body)
    return bool(needle) and any(needle in note for note in notes)


def _quote(u: Utterance, words: frozenset[str]) -> str:
    """The statement of ``u`` that shares the most of ``words`` (a repetition's own wording)."""
    best, hits = u.text, -1
    for s in split(u.text):
        n = len(words & shingles(s.text))
        if n > hits:
            best, hits = s.text, n
    return best


def _text_candidates(u: Utterance, budget: int) -> list[NewCandidate]:
    """The reference's digest of a ``text`` utterance (a file that is no agent log)."""
    if not js_trim(u.text):
        return []  # blank to the reference: digest() would go looking for a log of its own
    result = digest(text=u.text, default_write_budget=budget, dsh_home="")
    kind_of_source = str(result["sourceKind"])
    pos = u.position
    out = []
    for c in result["candidates"]:
        pinned = c["kind"] in _PINNED_KINDS
        out.append(NewCandidate(
            c["kind"], proposed_topic(c["kind"], c["topic"], c["body"]), c["summary"], c["body"], c["chars"],
            c["overBudget"], u.session_id, pos.file, pos.seq, pos.uuid, kind_of_source, f"mm.{c['kind']}",
            MARKED_SCORE if pinned else _WEIGHT[c["kind"]], True, (Evidence.of(u, c["body"]),), "create", pinned))
    return out


def marks_from(utterances: Iterable[Utterance], *, write_budget: int, seen: Seen | None = None) -> list[NewCandidate]:
    """Only the candidates marked on purpose in agent utterances (every mm v1 §9 marker, ``mm: …`` lines), as
    :func:`candidates_from` makes them, none of the rules' drafts: for the utterances of a session that lie outside
    the window its rules look at, so no mark is ever dropped (issue 29 "Nothing dropped silently").

    Args:
        utterances: agent utterances (``text`` ones are skipped: :func:`candidates_from` digests them whole).
        write_budget, seen: as for :func:`candidates_from`.
    """
    batch = _Batch(seen, write_budget)
    for u in utterances:
        if u.who != "text":
            batch.marks(u)
    return fresh(batch.out, seen) if batch.out and seen is not None else batch.out


def candidates_from(utterances: Iterable[Utterance], *, write_budget: int, seen: Seen | None = None,
                    per_session: int | None = None) -> list[NewCandidate]:
    """The candidates of ``utterances`` not already in a note, marked ones first, then by score.

    Args:
        utterances: from any source (:meth:`mmd.sources.base.Source.read`), one or more sessions.
        write_budget: the default write budget, code points: agent statements are cut to
            min(it, 500) at a word, ``text`` bodies to it (``over_budget``).
        seen: the notes (texts, subjects, exact bodies) and known candidate keys; None: nothing.
        per_session: visible drafts of our rules per session (None: :func:`mmd.candidates.score.budget`).

    Returns:
        :class:`~.model.NewCandidate` list; hidden ones have ``visible=False``. A statement said
        again within the call is one candidate with every place in ``evidence``.
    """
    items = list(utterances)
    out: list[NewCandidate] = []
    agent = [u for u in items if u.who != "text"]
    notes = seen.note_texts if seen is not None else ()
    for u in items:
        if u.who == "text":
            out.extend(c for c in _text_candidates(u, write_budget) if not _held(c.body, notes))
    if agent:
        batch = _Batch(seen, write_budget)
        for u in agent:
            batch.marks(u)
        for d in select(agent, per_session=per_session):
            batch.draft(d)
        out.extend(batch.out)
    return fresh(out, seen) if out and seen is not None else out
