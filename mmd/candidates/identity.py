"""Candidate identity: the keys the review queue and the notes are matched by.

Owns: :func:`normalized` (NFKC, casefold, punctuation and whitespace folded),
:func:`norm_key` (a statement's identity across the queue's whole history,
never its seq, file or topic, so a log read again, a copy of a log or the same
words in another session meet the candidate already there, and a rejected one
never returns), :func:`shingles` / :func:`near_duplicate` (word or CJK-bigram
Jaccard ≥ :data:`NEAR_DUPLICATE`, never across a differing particular: a number,
a version, a port, a path or a name, see :class:`Shingles`), and the older
:func:`candidate_key` / :func:`body_key` (schema-1 rows and exact note bodies).
Issue 13 "Dedupe and repetition", issue 29 "Nothing dropped silently".

Never: touches a database or a file.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from mmd.core.lazyre import lazy_compile

__all__ = ["NEAR_DUPLICATE", "Shingles", "body_key", "candidate_key", "contained", "near_duplicate", "norm_key",
           "normalized", "same_numbers", "same_particulars", "shingles"]

NEAR_DUPLICATE = 0.8
"""Jaccard similarity of :func:`shingles` at or above which two statements are one."""

_PUNCT_OR_SPACE = lazy_compile(r"[\W_]+")
_CJK = lazy_compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = lazy_compile(r"[^\W_]+")


def _normalize(body: str) -> str:
    """Whitespace runs to one space, trimmed: re-wrapped text keeps its identity."""
    return " ".join(body.split())


def normalized(text: str) -> str:
    """``text`` NFKC-normalized, casefolded, every run of punctuation, symbols and whitespace one space, trimmed."""
    return _PUNCT_OR_SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def norm_key(text: str) -> str:
    """sha256 (hex) of :func:`normalized`: a statement's identity in the queue (any kind, any topic)."""
    return hashlib.sha256(normalized(text).encode("utf-8", "replace")).hexdigest()


class Shingles(frozenset[str]):
    """The words of a statement (a frozenset, compared as one) with :attr:`particular`: those of its words that
    name one thing, so two statements differing in one of them are never one (issue 29: forty lines "service
    number N listens on port M" are forty statements).

    A word is particular when it holds a digit (a number, a version, a port: ``8003``, ``15`` of ``15.4``), or
    comes from a chunk of the text (a run without whitespace) that is code or a place: in backticks, or holding
    ``/``, ``\\``, ``_``, ``@``, ``::``, ``=``, a ``.`` between letters (``keys.py``) or a camelCase hump; or that
    is a name: capitalized inside a sentence (``Postgres``, ``Stripe``) or an acronym (``VPN``). CJK bigrams never are.
    """

    __slots__ = ("particular",)
    particular: frozenset[str]

    def __new__(cls, words: Iterable[str], particular: Iterable[str] = ()) -> Shingles:
        made = super().__new__(cls, words)
        made.particular = frozenset(particular) & made
        return made


_CHUNK = lazy_compile(r"`[^`\n]+`|\S+")
_CODE_OR_PLACE = lazy_compile(r"^`|[/\\_@=]|::|[^\W\d_]\.[^\W\d_]|[a-z][A-Z]")
_CAPITALIZED = lazy_compile(r"^[(\"'*]*[A-Z]")
_ACRONYM = lazy_compile(r"[A-Z]{2,}")


def _words(text: str) -> set[str]:
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
    return out


def _particular(text: str, words: set[str]) -> set[str]:
    """The particular words of ``text`` (see :class:`Shingles`), among ``words``."""
    out = {w for w in words if any(c.isdigit() for c in w)}
    opens = True  # the next chunk opens a sentence: its capital says nothing
    for m in _CHUNK.finditer(text):
        chunk = m.group(0)
        name = not opens and _CAPITALIZED.match(chunk) is not None and chunk.strip("(\"'*.,!?:;") != "I"
        if name or _CODE_OR_PLACE.search(chunk) or _ACRONYM.search(chunk):
            out.update(w for w in _words(chunk) if not _CJK.search(w))
        opens = chunk[-1] in ".!?:;。！？；"
    return out


def shingles(text: str) -> Shingles:
    """The words of :func:`normalized` text, CJK runs as their bigrams (a lone CJK character as itself), with the
    particular ones marked (:class:`Shingles`)."""
    words = _words(text)
    return Shingles(words, _particular(text, words))


def same_particulars(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether no word that only one of two :func:`shingles` sets holds is a particular of its statement (a number,
    a version, a port, a path or a name): sets without :attr:`Shingles.particular` have none."""
    either = getattr(a, "particular", frozenset()) | getattr(b, "particular", frozenset())
    return not either or either.isdisjoint(a ^ b)


def same_numbers(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two :func:`shingles` sets hold the same numbers (their words with a digit: numbers, versions, ports),
    or one of them holds none: the test for statements said in other words, whose names and paths may differ."""
    x, y = ({w for w in s if any(c.isdigit() for c in w)} for s in (a, b))
    return not x or not y or x == y


def near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two :func:`shingles` sets are one statement: Jaccard ≥ :data:`NEAR_DUPLICATE` and
    :func:`same_particulars` (empty sets never)."""
    if not a or not b:
        return False
    small, large = sorted((len(a), len(b)))
    if small < NEAR_DUPLICATE * large:
        return False  # the Jaccard index cannot reach the threshold
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE and same_particulars(a, b)


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
