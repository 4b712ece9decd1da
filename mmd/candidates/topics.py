"""Topics that fit: a readable slug for a new note, or a proposal to append to a note on the same subject.

Owns: :func:`topic_slug` (whole words, at most :data:`TOPIC_SLUG_MAX` characters, never a clipped
word), :class:`NoteSubject` (what a note is about: its topic words, tags and body words) and
:func:`proposal` (``{"action": "create" | "append", "topic"}``). Issue 13 "Topics that fit".

Never: reads the memory root (the caller hands the notes in) or writes anything.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Sequence
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


_APOSTROPHE = re.compile(r"(?<=[A-Za-z])['\u2019](?=[A-Za-z])")
_PRONOUN_CONTRACTION = re.compile(
    r"\b(?:i|you|we|they|he|she|it|that|there|here|what|let)['\u2019](?:d|ll|ve|re|m|s)\b", re.IGNORECASE)
"""``I'd``, ``you're``, ``it's`` …: left out whole (``I'd`` folded would read as the word ``id``)."""
_FILLER = frozenset("""
also just so no yes ok okay then but because why actually really maybe well right sure hmm like not do does did
good great thanks point since says said see try
can could would should will what how when where which who all any some here now still again very too yet if else
dont doesnt didnt cant wont isnt arent wasnt werent shouldnt wouldnt couldnt havent hasnt youre youve youll youd
im ive ill its thats theres heres lets whats hes shes theyre theyve weve were re ll ve these those
please pls want wants wanted need needs ask asked has have had was bit
""".split())
"""Filler a slug leaves out: contractions (apostrophe folded: ``don't`` → ``dont``), their fragments, hedges,
and the words of asking (``please``, ``want``, ``need``, ``ask``): a note is named for its subject."""
_SLUG_WORDS = 5


def _slug_words(text: str) -> list[str]:
    """Whole words of ``text`` for a slug, in order, once each: apostrophes folded into their word, function
    words, filler and one-letter fragments (``s`` of ``it's``) left out; numbers kept (``15-4``)."""
    folded = normalized(_APOSTROPHE.sub("", _PRONOUN_CONTRACTION.sub(" ", text)))
    words = (w for w in _ASCII_WORD.findall(folded)
             if (len(w) > 1 or w.isdigit()) and w not in _FUNCTION and w not in _FILLER)
    return list(dict.fromkeys(words))


def topic_slug(text: str, *, limit: int = TOPIC_SLUG_MAX, taken: Collection[str] = ()) -> str:
    """A readable topic slug from ``text``: its first whole words but function words and filler, joined by ``-``.

    At most ``limit`` characters (ASCII) and at most five words, never a clipped word: a word that does not fit
    is skipped. ``don't`` folds to ``dont`` and is left out as filler, with ``also``, ``just``, ``you're`` and
    the like. A slug in ``taken`` (topics proposed for other statements) is made distinct by a later word of the
    text, else by 4 hex of its normalized text. Text without ASCII content words (e.g. only CJK) gives
    ``memo-<8 hex of its normalized text>``. Issue 13 "Topics that fit".
    """
    digest = hashlib.sha256(normalized(text).encode()).hexdigest()
    pool = _slug_words(text)
    if not pool or all(w.isdigit() for w in pool):
        return f"memo-{digest[:8]}"
    words = _fit(pool, limit, _SLUG_WORDS)
    slug = "-".join(words)
    if slug not in taken:
        return slug
    for extra in pool:
        if extra not in words:
            longer = "-".join(_fit([*words[:_SLUG_WORDS - 1], extra], limit, _SLUG_WORDS))
            if longer not in taken and longer != slug:
                return longer
    while words and len(slug) + 5 > limit:
        words = words[:-1]
        slug = "-".join(words)
    return f"{slug}-{digest[:4]}" if slug else f"memo-{digest[:8]}"


def _fit(pool: Sequence[str], limit: int, most: int) -> list[str]:
    """The first words of ``pool`` whose ``-``-joined length stays within ``limit``, at most ``most`` of them."""
    words: list[str] = []
    size = 0
    for word in pool:
        extra = len(word) + (1 if words else 0)
        if size + extra > limit:
            continue
        words.append(word)
        size += extra
        if len(words) == most:
            break
    return words


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


def proposal(text: str, notes: Sequence[NoteSubject], *, fallback: str | None = None,
             taken: Collection[str] = ()) -> dict[str, str]:
    """Where a candidate should go: ``{"action": "append", "topic"}`` or ``{"action": "create", "topic"}``.

    A note shares the candidate's subject when the candidate's content words hit the note's topic
    words or tags (2 points each) and its body words (1 point each) for at least 4 points with at
    least one topic-word or tag hit, or at least :data:`_BODY_ONLY` body hits; the best-scoring
    note wins (ties: the first).
    Else the proposal creates ``fallback`` or :func:`topic_slug` of ``text`` (distinct from ``taken``).
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
    return {"action": "create", "topic": fallback or topic_slug(text, taken=taken)}
