"""Candidate identity: the keys the review queue and the notes are matched by.

Owns: :func:`normalized` (NFKC, casefold, punctuation and whitespace folded),
:func:`norm_key` (a statement's identity across the queue's whole history,
never its seq, file or topic, so a log read again, a copy of a log or the same
words in another session meet the candidate already there, and a rejected one
never returns), :func:`shingles` / :func:`near_duplicate` (word or CJK-bigram
Jaccard ≥ :data:`NEAR_DUPLICATE`), and the older :func:`candidate_key` /
:func:`body_key` (schema-1 rows and exact note bodies). Issue 13 "Dedupe and
repetition".

Never: touches a database or a file.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

__all__ = ["NEAR_DUPLICATE", "body_key", "candidate_key", "contained", "near_duplicate", "norm_key", "normalized",
           "shingles"]

NEAR_DUPLICATE = 0.8
"""Jaccard similarity of :func:`shingles` at or above which two statements are one."""

_PUNCT_OR_SPACE = re.compile(r"[\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+")


def _normalize(body: str) -> str:
    """Whitespace runs to one space, trimmed: re-wrapped text keeps its identity."""
    return " ".join(body.split())


def normalized(text: str) -> str:
    """``text`` NFKC-normalized, casefolded, every run of punctuation, symbols and whitespace one space, trimmed."""
    return _PUNCT_OR_SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def norm_key(text: str) -> str:
    """sha256 (hex) of :func:`normalized`: a statement's identity in the queue (any kind, any topic)."""
    return hashlib.sha256(normalized(text).encode("utf-8", "replace")).hexdigest()


def shingles(text: str) -> frozenset[str]:
    """The words of :func:`normalized` text, CJK runs as their bigrams (a lone CJK character as itself)."""
    out: set[str] = set()
    for word in _WORD.findall(normalized(text)):
        if not _CJK.search(word):
            out.add(word)
            continue
        for run in re.split(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)", word):
            if not run:
                continue
            if _CJK.match(run):
                out.update(run[i:i + 2] for i in range(max(1, len(run) - 1)))
            else:
                out.add(run)
    return frozenset(out)


def near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two :func:`shingles` sets are one statement: Jaccard ≥ :data:`NEAR_DUPLICATE` (empty sets never)."""
    if not a or not b:
        return False
    small, large = sorted((len(a), len(b)))
    if small < NEAR_DUPLICATE * large:
        return False  # the Jaccard index cannot reach the threshold
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE


def contained(text: str, notes: Iterable[str]) -> bool:
    """Whether :func:`normalized` ``text`` is inside one of ``notes`` (each already :func:`normalized`)."""
    needle = normalized(text)
    return bool(needle) and any(needle in note for note in notes)


def body_key(body: str) -> str:
    """sha256 (hex) of the whitespace-normalized body: matches a candidate against existing notes exactly."""
    return hashlib.sha256(_normalize(body).encode("utf-8", "replace")).hexdigest()


def candidate_key(kind: str, topic: str, body: str) -> str:
    """A schema-1 candidate's identity: sha256 (hex) of kind, topic and whitespace-normalized body."""
    data = "\0".join((kind, topic, _normalize(body))).encode("utf-8", "replace")
    return hashlib.sha256(data).hexdigest()
