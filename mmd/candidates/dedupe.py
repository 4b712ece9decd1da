"""Dropping candidates the caller has already seen: equal to a note, or known to the queue's history.

Owns: :class:`Seen` (what the caller hands in: body keys of the notes, candidate
keys it already holds) and :func:`fresh`.

Never: looks anything up itself; the daemon's queue also drops known keys in
its own transaction, so a key missing here is never a duplicate there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .identity import body_key
from .model import NewCandidate

__all__ = ["Seen", "fresh"]


@dataclass(frozen=True)
class Seen:
    """What counts as seen.

    Attributes:
        note_bodies: :func:`~.identity.body_key` of every existing note's body.
        candidate_keys: :func:`~.identity.candidate_key` of candidates already known (e.g. the queue's history).
    """

    note_bodies: frozenset[str] = frozenset()
    candidate_keys: frozenset[str] = frozenset()

    @classmethod
    def of_notes(cls, bodies: Iterable[str]) -> Seen:
        """A :class:`Seen` holding the body keys of ``bodies`` (the notes' bodies)."""
        return cls(frozenset(body_key(b) for b in bodies))


def fresh(candidates: Iterable[NewCandidate], seen: Seen) -> list[NewCandidate]:
    """``candidates`` minus those whose body equals a note's or whose key is known, in order."""
    notes, known = seen.note_bodies, seen.candidate_keys
    return [c for c in candidates if body_key(c.body) not in notes and (not known or c.key not in known)]
