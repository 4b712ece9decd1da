"""Dropping candidates the caller has already seen: held by a note, or known to the queue's history.

Owns: :class:`Seen` (what the caller hands in: the notes' normalized texts and
subjects, their exact body keys, candidate keys it already holds) and
:func:`fresh`.

Never: looks anything up itself; the daemon's queue merges a statement seen
again (exact or near-duplicate) in its own transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .identity import body_key, normalized
from .model import NewCandidate
from .topics import NoteSubject

__all__ = ["Seen", "fresh"]


@dataclass(frozen=True)
class Seen:
    """What counts as seen.

    Attributes:
        note_bodies: :func:`~.identity.body_key` of every existing note's body.
        candidate_keys: :func:`~.identity.candidate_key` of candidates already known (e.g. the queue's history).
        note_texts: :func:`~.identity.normalized` body (and summary) of every note: a statement inside one is
            not queued.
        subjects: what each note is about, for append proposals.
    """

    note_bodies: frozenset[str] = frozenset()
    candidate_keys: frozenset[str] = frozenset()
    note_texts: tuple[str, ...] = ()
    subjects: tuple[NoteSubject, ...] = ()

    @classmethod
    def of_notes(cls, bodies: Iterable[str]) -> Seen:
        """A :class:`Seen` holding the body keys and normalized texts of ``bodies`` (the notes' bodies)."""
        texts = list(bodies)
        return cls(frozenset(body_key(b) for b in texts), note_texts=tuple(normalized(b) for b in texts))

    @classmethod
    def of_index(cls, notes: Iterable[tuple[str, Iterable[str], str, str]]) -> Seen:
        """A :class:`Seen` of notes given as ``(topic, tags, summary, body)``: bodies, texts and subjects."""
        rows = [(t, tuple(g), s, b) for t, g, s, b in notes]
        return cls(frozenset(body_key(b) for _, _, _, b in rows), frozenset(),
                   tuple(normalized(f"{s}\n{b}") for _, _, s, b in rows),
                   tuple(NoteSubject.of(t, g, b, s) for t, g, s, b in rows))


def fresh(candidates: Iterable[NewCandidate], seen: Seen) -> list[NewCandidate]:
    """``candidates`` minus those whose body equals a note's or whose key is known, in order."""
    notes, known = seen.note_bodies, seen.candidate_keys
    return [c for c in candidates if body_key(c.body) not in notes and (not known or c.key not in known)]
