"""The review queue's statement index: which candidates a new statement may repeat, without a full scan.

Owns: :class:`StatementIndex` — per candidate id its :func:`~mmd.candidates.identity.shingles` and
content words (:func:`~mmd.candidates.topics.subject_words`), and an inverted index token → ids, so
finding the near-duplicates (Jaccard ≥ 0.8) and the restatements (:func:`same_idea`) of a statement
costs the postings of its tokens, not the whole queue's history. Tokens held by more than
:data:`COMMON_SHARE` of the candidates (once there are :data:`COMMON_FLOOR` of them) are skipped
when gathering, so ``the`` or ``run`` never make a lookup scan everything; a pair that shares only
such words cannot reach either threshold unless both statements are made of them alone.

Never: touches the database (the queue builds and feeds it) or decides a candidate's status.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

# mmd.candidates is imported where first used (a daemon loads it with its first candidate, not at start)

__all__ = ["COMMON_FLOOR", "COMMON_SHARE", "SAME_IDEA_OVERLAP", "STATEMENT_WORDS", "StatementIndex", "same_idea"]

SAME_IDEA_OVERLAP = 0.35
"""Share of the smaller statement's content words two statements must have in common to say one thing."""
SAME_IDEA_WORDS = 4
"""Content words two statements must at least have in common to say one thing."""
STATEMENT_WORDS = 3
"""Content words two statements (not their contexts) must share for a restatement in other words to merge."""
COMMON_SHARE = 0.05
"""A token held by more than this share of the candidates is skipped when gathering (see the module doc)."""
COMMON_FLOOR = 200
"""Candidates below which no token counts as common."""


def same_idea(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two sets of content words say one thing in other words: at least :data:`SAME_IDEA_WORDS` words in
    common, and at least :data:`SAME_IDEA_OVERLAP` of the smaller set."""
    shared = len(a & b)
    return shared >= SAME_IDEA_WORDS and shared >= SAME_IDEA_OVERLAP * min(len(a), len(b))


class StatementIndex:
    """Shingles and content words of every candidate's statement and body, with postings. Not thread-safe: the
    queue locks it."""

    def __init__(self, rows: Iterable[tuple[int, str] | tuple[int, str, str]] = ()) -> None:
        self._words: dict[int, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}
        self._postings: dict[str, set[int]] = {}
        for row in rows:
            self.add(*row)

    def __len__(self) -> int:
        return len(self._words)

    def add(self, cid: int, body: str, statement: str | None = None) -> None:
        """Index candidate ``cid``: its ``statement`` (the sentence or bullet itself; default: ``body``) for
        near-duplicates, its ``body`` (the statement with its context) for restatements."""
        from mmd.candidates.identity import shingles
        from mmd.candidates.topics import subject_words

        said = shingles(body if statement is None else statement)
        body_words = shingles(body)
        self._words[cid] = (said, subject_words(body), subject_words(body if statement is None else statement))
        for token in said | body_words:
            self._postings.setdefault(token, set()).add(cid)

    def _gather(self, tokens: frozenset[str], need: float) -> list[int]:
        """Ids sharing at least ``need`` of ``tokens``, counting only the tokens not skipped as common (a skipped
        token lowers the bar by one: it may be shared without being counted)."""
        limit = max(COMMON_FLOOR, COMMON_SHARE * len(self._words))
        hits: Counter[int] = Counter()
        skipped = 0
        for token in tokens:
            ids = self._postings.get(token)
            if ids and (len(ids) <= limit or len(tokens) <= 2):
                hits.update(ids)
            elif ids:
                skipped += 1
        bar = max(1.0, need - skipped)
        return [cid for cid, n in hits.items() if n >= bar]

    def near(self, statement: str) -> list[int]:
        """Ids of the candidates whose statement is a near-duplicate of ``statement`` (Jaccard ≥ 0.8), ascending."""
        from mmd.candidates.identity import NEAR_DUPLICATE, near_duplicate, shingles

        words = shingles(statement)
        need = NEAR_DUPLICATE * len(words) - 1e-9  # |A ∩ B| ≥ 0.8 |A ∪ B| ≥ 0.8 |A|
        return sorted(cid for cid in self._gather(words, need) if near_duplicate(words, self._words[cid][0]))

    def restated(self, body: str, statement: str | None = None) -> list[int]:
        """Ids of the candidates that say what ``body`` says in other words (:func:`same_idea`), ascending; with
        ``statement``, only those whose own statement shares at least :data:`STATEMENT_WORDS` content words with
        it (a shared context alone never makes two statements one); never one whose statement holds other numbers
        (:func:`~mmd.candidates.identity.same_numbers`: "port 8003" is not "port 8004" in other words)."""
        from mmd.candidates.identity import same_numbers, shingles
        from mmd.candidates.topics import subject_words

        content = subject_words(body)
        if len(content) < SAME_IDEA_WORDS:
            return []
        said = subject_words(statement) if statement is not None else None
        own = shingles(body if statement is None else statement)
        return sorted(cid for cid in self._gather(content, SAME_IDEA_WORDS)
                      if same_idea(content, self._words[cid][1])
                      and (said is None or len(said & self._words[cid][2]) >= STATEMENT_WORDS)
                      and same_numbers(own, self._words[cid][0]))
