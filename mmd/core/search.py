"""Search over a frozen snapshot (mm v1 §8): the ``scan`` engine, and the names of the FTS5 one.

This module owns tokenization, snippets, engine selection and the scan engine;
the optional FTS5 engine (:class:`Fts5Index`, :func:`search_fts5`) lives in
:mod:`.fts5` and is imported from here on first use. It
never reads the disk: callers hand it the snapshot's :class:`~mmd.core.model.Note`
objects, so a search always serves the frozen snapshot.

Both engines return the reference's ``SearchResult`` shape::

    {"query": str, "engine": "scan" | "fts5", "total": int, "truncated": bool,
     "matches": [{"topic": str, "uri": str, "updated": str, "score": int | float,
                  "snippet": str}, ...]}

Lengths are Unicode code points throughout. Deliberate deviations from the
TypeScript reference (``src/core/search.ts``):

* :func:`tokenize` folds with NFKC + lower case, keeps every Unicode letter/digit
  run (not only ``[a-z0-9]``), and makes CJK unigrams + bigrams for Han (all
  planes), Hiragana, Katakana and Hangul (the reference: U+3400–U+9FFF only).
* Scan weights are topic x3, summary x2, tags x2, body x1 (reference: topic x2,
  the rest x1), so summary and tags really rank above the body as §8 says.
* A match's ``uri`` is ``note.uri`` (one memory id per snapshot).
* :func:`make_snippet` uses a real ``…`` (the reference emits mojibake ``â€¦``) and
  never exceeds ``max_chars``.
"""

from __future__ import annotations

import heapq
import operator
import unicodedata
from _thread import allocate_lock
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import repeat

from .engine import choose_engine, fts5_available
from .lazyre import lazy_compile
from .model import Note
from .text import JS_WS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from .fts5 import Fts5Index, search_fts5

__all__ = [
    "ELLIPSIS",
    "SUMMARY_WEIGHT",
    "TAGS_WEIGHT",
    "TOPIC_WEIGHT",
    "BODY_WEIGHT",
    "Fts5Index",
    "ScanIndex",
    "choose_engine",
    "fts5_available",
    "make_snippet",
    "search_fts5",
    "search_scan",
    "tokenize",
]

ELLIPSIS = "\u2026"
"""The one-code-point ellipsis that marks a cut in a snippet."""

TOPIC_WEIGHT = 3
"""Scan score per occurrence of a query token in the topic."""
SUMMARY_WEIGHT = 2
"""Scan score per occurrence of a query token in the summary."""
TAGS_WEIGHT = 2
"""Scan score per occurrence of a query token in the tags."""
BODY_WEIGHT = 1
"""Scan score per occurrence of a query token in the body."""

_MIN_WINDOW = 8
"""Below this many code points a snippet is the head only (the reference's minimum window)."""

# CJK scripts cut into unigrams + bigrams: Han (CJK Ext A, URO incl. the Yijing block the
# reference also covers, compatibility ideographs, iteration marks 々〆〇, the astral
# ideograph planes), Hiragana, Katakana (without the ゠ and ・ punctuation), halfwidth
# Katakana, and Hangul (Jamo, compatibility Jamo, syllables, extensions).
_CJK = (
    "\u1100-\u11ff"
    "\u3005-\u3007"
    "\u3040-\u309f"
    "\u30a1-\u30fa\u30fc-\u30ff"
    "\u3130-\u318f"
    "\u31f0-\u31ff"
    "\u3400-\u9fff"
    "\ua960-\ua97f"
    "\uac00-\ud7af\ud7b0-\ud7ff"
    "\uf900-\ufaff"
    "\uff66-\uff9f"
    "\U00020000-\U0003ffff"
)
_WORD_RE = lazy_compile(f"[^\\W_{_CJK}]+")
"""A run of Unicode letters/digits (``\\p{L}\\p{N}``) that are not CJK."""
_CJK_RUN_RE = lazy_compile(f"[{_CJK}]+")
_ASCII_WORD_RE = lazy_compile("[a-z0-9]+")
_WS_SPLIT_RE = lazy_compile(f"[{JS_WS}]+")


def tokenize(text: str) -> list[str]:
    """Scan-engine tokens of ``text`` (mm v1 §8), in the reference's order.

    The text is NFKC-normalized and lower-cased. First come the non-CJK
    letter/digit runs (Unicode ``\\p{L}``/``\\p{N}``) in order, then for every run
    of CJK characters each code point followed by its bigram with the next one
    (``部署`` -> ``部``, ``部署``, ``署``). Tokens may repeat.

    Args:
        text: any text.

    Returns:
        The token list (empty when nothing is a letter, digit or CJK).
    """
    if text.isascii():  # NFKC is the identity on ASCII, and there is no CJK
        return _ASCII_WORD_RE.findall(text.lower())
    folded = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = _WORD_RE.findall(folded)
    for run in _CJK_RUN_RE.findall(folded):
        grams = [run] * (2 * len(run) - 1)
        grams[0::2] = run  # unigrams at even places ...
        grams[1::2] = map(operator.add, run, run[1:])  # ... each followed by its bigram
        tokens += grams
    return tokens


def _find_folded(haystack: str, needle: str) -> int:
    """Index (code points) of ``needle`` in ``haystack``, ignoring case; -1 when absent."""
    low = haystack.lower()
    found = low.find(needle.lower())
    if found <= 0 or len(low) == len(haystack):
        return found
    # lower() changed some lengths (e.g. U+0130): map the folded offset back.
    pos = 0
    for k, ch in enumerate(haystack):
        if pos >= found:
            return k
        pos += len(ch.lower())
    return len(haystack)


def make_snippet(haystack: str, needle: str, max_chars: int) -> str:
    """A snippet of at most ``max_chars`` code points around the first ``needle`` (mm v1 §8).

    The reference's window: when ``haystack`` fits it is returned unchanged;
    when ``needle`` (case-insensitive) is absent or empty, the head is cut to
    ``max_chars - 1`` code points plus ``…``; otherwise the window starts
    ``max_chars // 3`` code points before the match, and each cut side gets a
    ``…`` that counts toward ``max_chars``. Deviations from the reference: the
    ellipsis is U+2026 (not the mojibake ``â€¦``); the result never exceeds
    ``max_chars`` (below 8 the head is shown, ``""`` for ``max_chars <= 0``); a
    window that reaches the end shows its last code point or ends in ``…``.

    Args:
        haystack: the text to excerpt (a note body, or its summary).
        needle: the term to centre on; ``""`` means none.
        max_chars: the cap, in code points.

    Returns:
        The snippet.
    """
    if len(haystack) <= max_chars:
        return haystack
    if max_chars <= 0:
        return ""
    index = _find_folded(haystack, needle) if needle else -1
    if index < 0 or max_chars < _MIN_WINDOW:
        return haystack[: max_chars - 1] + ELLIPSIS
    start = max(0, index - max_chars // 3)
    prefix = ELLIPSIS if start > 0 else ""
    room = max_chars - len(prefix)
    if start + room >= len(haystack):
        return prefix + haystack[start:]
    return prefix + haystack[start : start + room - 1] + ELLIPSIS


def _match_row(note: Note, score: int | float, needle: str, max_snippet_chars: int) -> dict[str, Any]:
    body = note.body
    return {
        "topic": note.topic,
        "uri": note.uri,
        "updated": note.entry.updated,
        "score": score,
        "snippet": make_snippet(body if body else note.entry.summary, needle, max_snippet_chars),
    }


def _result(query: str, engine: str, total: int, truncated: bool, matches: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``SearchResult`` dict, keys in the reference's order."""
    return {"query": query, "engine": engine, "total": total, "truncated": truncated, "matches": matches}


def _weighted_counts(note: Note, canonical: dict[str, str]) -> dict[str, int]:
    """Token -> weighted occurrences in ``note``; keys are shared through ``canonical``."""
    counts = Counter(tokenize(note.body))
    entry = note.entry
    for text, weight in (
        (entry.topic, TOPIC_WEIGHT),
        (entry.summary, SUMMARY_WEIGHT),
        (" ".join(entry.tags), TAGS_WEIGHT),
    ):
        for token in tokenize(text):
            counts[token] += weight
    share = canonical.setdefault
    return {share(token, token): count for token, count in counts.items()}


_COUNTS_MEMO: dict[tuple[str, str, tuple[str, ...], str], dict[str, int]] = {}
"""Weighted counts of the notes indexed lately, by ``(topic, summary, tags, body)``; never mutated.

Trigger: the daemon loads a new snapshot after every write, and the first search of each snapshot
tokenized every note again (~30 us a note: 0.6 s at 20,000 topics). Why: between two snapshots nearly
every note is unchanged. Outcome: an unchanged note reuses its counts; the memo starts over past
:data:`_COUNTS_MEMO_NOTES` entries or twice the notes being indexed (most of its dicts are the live
index's own).
"""
_COUNTS_MEMO_NOTES = 60_000
"""Notes :data:`_COUNTS_MEMO` may remember beyond twice the notes of the index being built."""


def _all_weighted_counts(notes: Sequence[Note], vocabulary: dict[str, str]) -> list[dict[str, int]]:
    """:func:`_weighted_counts` of every note (from :data:`_COUNTS_MEMO` when unchanged); fills ``vocabulary``."""
    memo = _COUNTS_MEMO
    if len(memo) > max(_COUNTS_MEMO_NOTES, 2 * len(notes)):
        memo.clear()
    out = []
    for note in notes:
        entry = note.entry
        key = (entry.topic, entry.summary, entry.tags, note.body)
        counts = memo.get(key)
        if counts is None:
            memo[key] = counts = _weighted_counts(note, vocabulary)
        else:
            vocabulary.update(zip(counts, counts, strict=True))
        out.append(counts)
    return out


_COLUMN_CACHE_CELLS = 4_000_000
"""Most cached column cells (one per note and token, ~32 MB) a :class:`ScanIndex` keeps."""


class _ScanData:
    """What :class:`ScanIndex` builds once from its notes."""

    __slots__ = ("by_topic", "counts", "tie_bonus", "vocabulary")

    vocabulary: dict[str, str]
    """Every token of the snapshot, mapped to the one string object the counts use."""
    counts: list[dict[str, int]]
    """Per note position: token -> weighted count."""
    by_topic: list[int]
    """Note positions in ranking tie order: topic ascending, then position."""
    tie_bonus: list[int]
    """Per note position: ``n - 1 - `` its index in :attr:`by_topic` (earlier topic, bigger bonus)."""

    def __init__(self, vocabulary: dict[str, str], counts: list[dict[str, int]], by_topic: list[int],
                 tie_bonus: list[int]) -> None:
        self.vocabulary, self.counts, self.by_topic, self.tie_bonus = vocabulary, counts, by_topic, tie_bonus


class ScanIndex:
    """The scan engine over one snapshot's notes (mm v1 §8), built once per snapshot.

    On the first search (or :meth:`prepare`) every note is tokenized once into
    a plain ``token -> weighted count`` dict, and the vocabulary of all tokens
    is kept (token strings are shared between notes). A query token that no
    note holds costs nothing; otherwise one C-level pass over the notes gives
    its *column* (its weighted count in every note), which is cached. A query
    adds up its tokens' columns and ranks the notes by one integer key each.
    Thread-safe: the data is built under a lock and the cache only ever gains
    or drops whole columns.

    Args:
        notes: the snapshot's notes; the sequence is copied.
    """

    __slots__ = ("_cache", "_data", "_lock", "_notes", "_postings")

    def __init__(self, notes: Sequence[Note]) -> None:
        self._notes: tuple[Note, ...] = tuple(notes)
        self._data: _ScanData | None = None
        self._cache: dict[str, list[int]] = {}
        self._postings: dict[str, list[int]] | None = None
        self._lock = allocate_lock()

    @property
    def notes(self) -> tuple[Note, ...]:
        """The indexed notes, in the order given."""
        return self._notes

    def prepare(self) -> ScanIndex:
        """Tokenize every note now instead of on the first search; returns ``self``."""
        self._build()
        return self

    def _build(self) -> _ScanData:
        data = self._data
        if data is None:
            with self._lock:
                if self._data is None:
                    notes = self._notes
                    vocabulary: dict[str, str] = {}
                    counts = _all_weighted_counts(notes, vocabulary)
                    by_topic = sorted(range(len(notes)), key=lambda pos: (notes[pos].topic, pos))
                    tie_bonus = [0] * len(notes)
                    for rank, pos in enumerate(by_topic):
                        tie_bonus[pos] = len(notes) - 1 - rank
                    self._data = _ScanData(vocabulary, counts, by_topic, tie_bonus)
                data = self._data
        return data

    def lengths(self) -> list[int]:
        """Each note's length in weighted tokens (the sum of its weighted counts), by position."""
        return [sum(counts.values()) for counts in self._build().counts]

    def postings(self, token: str) -> list[int]:
        """The positions (ascending) of the notes that hold ``token``; shared, never change the list.

        The first call inverts the whole index once (token -> positions).
        """
        data = self._build()
        postings = self._postings
        if postings is None:
            with self._lock:
                if self._postings is None:
                    inverted: dict[str, list[int]] = {}
                    get = inverted.get
                    for pos, counts in enumerate(data.counts):
                        for key in counts:
                            found = get(key)
                            if found is None:
                                inverted[key] = [pos]
                            else:
                                found.append(pos)
                    self._postings = inverted
                postings = self._postings
        return postings.get(token, [])

    def counts(self, token: str, positions: Iterable[int]) -> list[int]:
        """``token``'s weighted count in the notes at ``positions`` (each must hold it)."""
        data = self._build()
        return list(map(dict.__getitem__, map(data.counts.__getitem__, positions), repeat(token)))

    def column(self, token: str) -> list[int] | None:
        """``token``'s weighted count in every note (by position), or None when no note has it.

        ``token`` must be one :func:`tokenize` token; the list is cached and shared, never change it.
        """
        column = self._cache.get(token)
        if column is None:
            data = self._build()
            shared = data.vocabulary.get(token)
            if shared is None:
                return None
            column = list(map(dict.get, data.counts, repeat(shared), repeat(0)))
            if (len(self._cache) + 1) * len(column) > _COLUMN_CACHE_CELLS:
                self._cache.clear()
            self._cache[token] = column
        return column

    def _ranked(self, tokens: list[str], count: int) -> tuple[int, list[tuple[int, int]]]:
        """``(total, [(position, score), ...])``: the best ``count`` notes, score desc then topic asc."""
        totals: list[int] | None = None
        for token in tokens:
            column = self.column(token)
            if column is not None:
                totals = column if totals is None else list(map(operator.add, totals, column))
        if totals is None or count <= 0:
            return (0 if totals is None else len(totals) - totals.count(0)), []
        data = self._build()
        n = len(totals)
        # One sortable int per note: score * n + tie_bonus. A higher score always wins,
        # equal scores go to the earlier topic, and a zero score stays below n.
        keys = map(operator.add, map(operator.mul, totals, repeat(n)), data.tie_bonus)
        ranked = []
        for key in heapq.nlargest(count, keys):
            score, bonus = divmod(key, n)
            if score == 0:
                break
            ranked.append((data.by_topic[n - 1 - bonus], score))
        return n - totals.count(0), ranked

    def search(self, query: str, limit: int, max_snippet_chars: int) -> dict[str, Any]:
        """Rank the notes for ``query`` (mm v1 §8): score descending, then topic ascending.

        A note's score sums, over the distinct tokens of ``query``, each token's
        occurrences weighted topic x3, summary x2, tags x2, body x1.

        Args:
            query: free text; tokenized with :func:`tokenize`.
            limit: most matches returned (the caller ensures ``limit >= 1``).
            max_snippet_chars: snippet cap in code points (see :func:`make_snippet`).

        Returns:
            The ``SearchResult`` dict with ``engine: "scan"``; ``total`` counts every
            note with a positive score and ``truncated`` is ``total > limit``. The
            snippet centres on the first query token in the body (or the summary
            when the body is empty).
        """
        tokens = list(dict.fromkeys(tokenize(query)))
        total, ranked = self._ranked(tokens, limit)
        return _result(query, "scan", total, total > limit, [
            _match_row(self._notes[pos], score, tokens[0], max_snippet_chars) for pos, score in ranked])


def search_scan(notes: Sequence[Note], query: str, limit: int, max_snippet_chars: int) -> dict[str, Any]:
    """One-off scan search (mm v1 §8); see :meth:`ScanIndex.search` for the result.

    Builds a throw-away :class:`ScanIndex`; keep one per snapshot to search repeatedly.
    """
    return ScanIndex(notes).search(query, limit, max_snippet_chars)


def __getattr__(name: str) -> Any:
    """``Fts5Index`` and ``search_fts5`` live in :mod:`.fts5` (imported on first use, it needs this module)."""
    if name in ("Fts5Index", "search_fts5"):
        from . import fts5

        return getattr(fts5, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
