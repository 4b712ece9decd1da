"""Topics that fit: a readable slug for a new note, or a proposal to append to a note on the same subject.

Owns: :func:`topic_slug` (whole words, at most :data:`TOPIC_SLUG_MAX` characters, never a clipped
word), :class:`NoteSubject` (what a note is about: its topic words, tags and body words) and
:func:`proposal` (``{"action": "create" | "append", "topic"}``). Issue 13 "Topics that fit".

Never: reads the memory root (the caller hands the notes in) or writes anything.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .identity import normalized

__all__ = ["TOPIC_SLUG_MAX", "NoteSubject", "proposal", "subject_words", "topic_slug"]

TOPIC_SLUG_MAX = 40
"""Longest proposed slug, in characters (ASCII)."""

_STOP = frozenset("""
a an and are as at be been but by can could did do does don for from had has have how i if in into is it its
just let like may me might must my no not of on once only or our out over please same should so some such than
that the their them then there these they this those to too up us use used using very was we were what when
where which while who why will with would you your yet also all any each every here now still always never
make sure run runs want need needs get got going one two via per new old else instead rather
""".split())
_FUNCTION = frozenset("a an and are as at be by for from in into is it its of on or our so that the this to we with "
                      "you your i my me us them they there".split())
"""Function words a slug leaves out (a slug keeps verbs: ``run-tests-make-test-fast``)."""
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_BODY_ONLY = 5


def _content_words(text: str) -> list[str]:
    """ASCII words of :func:`~.identity.normalized` text, stop words and one-letter words dropped, in order."""
    return [w for w in _ASCII_WORD.findall(normalized(text)) if len(w) > 1 and w not in _STOP]


def subject_words(text: str) -> frozenset[str]:
    """The content words of ``text`` (see :func:`topic_slug`), as a set."""
    return frozenset(_content_words(text))


def topic_slug(text: str, *, limit: int = TOPIC_SLUG_MAX) -> str:
    """A readable topic slug from ``text``: its first words but function words, joined by ``-``, whole words only.

    At most ``limit`` characters and at most five words; a first word longer than ``limit`` is
    skipped rather than clipped. Text without ASCII content words (e.g. only CJK) gives
    ``memo-<8 hex of its normalized text>``.
    """
    words: list[str] = []
    size = 0
    for word in dict.fromkeys(w for w in _ASCII_WORD.findall(normalized(text)) if w not in _FUNCTION):
        extra = len(word) + (1 if words else 0)
        if size + extra > limit:
            continue
        words.append(word)
        size += extra
        if len(words) == 5:
            break
    if words and not (len(words) == 1 and words[0].isdigit()):
        return "-".join(words)
    return f"memo-{hashlib.sha256(normalized(text).encode()).hexdigest()[:8]}"


@dataclass(frozen=True, slots=True)
class NoteSubject:
    """What one note is about: ``topic``, its topic words and tags (``names``) and its body words."""

    topic: str
    names: frozenset[str]
    body: frozenset[str]

    @classmethod
    def of(cls, topic: str, tags: Iterable[str], body: str, summary: str = "") -> NoteSubject:
        """The subject of a note from its topic, tags, body and summary."""
        names = subject_words(" ".join([topic.replace("-", " ").replace("_", " "), *tags]))
        return cls(topic, names, subject_words(f"{summary} {body}"))


def proposal(text: str, notes: Sequence[NoteSubject], *, fallback: str | None = None) -> dict[str, str]:
    """Where a candidate should go: ``{"action": "append", "topic"}`` or ``{"action": "create", "topic"}``.

    A note shares the candidate's subject when the candidate's content words hit the note's topic
    words or tags (2 points each) and its body words (1 point each) for at least 4 points with at
    least one topic-word or tag hit, or at least :data:`_BODY_ONLY` body hits; the best-scoring
    note wins (ties: the first).
    Else the proposal creates ``fallback`` or :func:`topic_slug` of ``text``.
    """
    words = subject_words(text)
    best: tuple[int, str] | None = None
    for note in notes:
        names, body = len(words & note.names), len(words & note.body)
        points = 2 * names + body
        if (names >= 1 and points >= 4) or body >= _BODY_ONLY:
            if best is None or points > best[0]:
                best = (points, note.topic)
    if best is not None:
        return {"action": "append", "topic": best[1]}
    return {"action": "create", "topic": fallback or topic_slug(text)}
