"""The FTS5 search engine (mm v1 §8, optional): the reference's SQLite FTS5 bm25 plus every scan match.

Owns the in-memory SQLite FTS5 table of one snapshot, the reference's MATCH
phrases, and how their bm25 combines with the scan engine's tokens
(:class:`Fts5Index`). Never reads the disk, never passes query text to SQLite
as syntax (every term is a quoted phrase), and never finds less than the scan
engine. Deviation from the reference (``src/core/search.ts``): the reference
matches only ``unicode61`` tokens, which keep a run of CJK characters and the
letters glued to it whole, so it finds nothing for ``部署`` or for ``itgc`` in
``重跑gen-itgc后``; here the scan engine's tokens match too (issue 17).
"""

from __future__ import annotations

import operator
import sqlite3
from _thread import allocate_lock
from collections.abc import Sequence
from itertools import compress, repeat

from . import bm25
from .lazyre import lazy_compile
from .model import Note
from .search import _COLUMN_CACHE_CELLS, _WS_SPLIT_RE, ScanIndex, _match_row, _result, tokenize
from .text import js_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Fts5Index", "search_fts5"]

_SURROGATE_RE = lazy_compile("[\ud800-\udfff]")


def _sqlite_text(value: str) -> str:
    """``value`` with lone surrogates replaced by U+FFFD (sqlite3 cannot encode them)."""
    return _SURROGATE_RE.sub("\ufffd", value)


_ASCII_WORD = lazy_compile("[A-Za-z0-9]+")
"""A term ``unicode61`` reads as one token, its lower case."""


def _varint_sum(data: bytes) -> int:
    """The sum of the SQLite varints in ``data`` (an FTS5 ``docsize`` record: tokens per column)."""
    total = value = 0
    for byte in data:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            total += value
            value = 0
    return total


def _phrases(query: str) -> list[str]:
    """The reference's FTS5 phrases: each whitespace term of ``query`` double-quoted, in order."""
    return ['"' + _sqlite_text(t).replace('"', '""') + '"' for t in _WS_SPLIT_RE.split(js_trim(query)) if t]


class Fts5Index:
    """The FTS5 engine over one snapshot (mm v1 §8): the reference's bm25 plus every scan match.

    Two indexes answer a query:

    * the reference's SQLite table ``memfts(topic UNINDEXED, body)`` (default
      ``unicode61`` tokenizer, ``body`` = ``"<topic> <summary> <tags> <body>"``),
      queried with each whitespace term of the query as a quoted phrase, so
      FTS5 syntax (quotes, ``-``, ``:``, ``*``, ``NEAR``, ``AND``/``OR``) is
      plain text and a query never raises;
    * the scan engine's token index (:class:`ScanIndex`: NFKC, Unicode
      letter/digit runs, CJK unigrams + bigrams), scored with FTS5's bm25
      formula over its weighted counts (:mod:`.bm25`).

    A note matches when a reference phrase or a scan token of the query is in
    it, so this engine never finds less than ``scan`` (nor than the reference).
    Its score is the sum of: the reference phrases' bm25 contributions (exactly
    the reference's score when nothing else applies); the non-ASCII scan
    tokens' contributions (CJK grams, other scripts' words: what ``unicode61``
    keeps glued to their neighbours); and, only for notes no reference phrase
    matched, the ASCII scan tokens' contributions (``itgc`` inside
    ``重跑gen-itgc后``, ``1`` of ``us-east-1``). Each phrase's and token's
    contributions are computed once per snapshot and cached, so a query costs
    a merge of cached columns. Thread-safe (one lock per index).

    Args:
        notes: the snapshot's notes.
        scan: the scan engine's index over the same notes, to share (its token index is built once per
            snapshot, whichever engine asks first); None builds one.

    Raises:
        RuntimeError: if SQLite has no FTS5 (check :func:`fts5_available` first).
    """

    def __init__(self, notes: Sequence[Note], scan: ScanIndex | None = None) -> None:
        self._lock = allocate_lock()
        self._notes: tuple[Note, ...] = tuple(notes)
        self._scan = scan if scan is not None and scan.notes is self._notes else ScanIndex(self._notes)
        self._phrase_columns: dict[str, list[float]] = {}
        self._grams: dict[str, tuple[list[int], list[float]]] = {}
        self._cells = 0
        self._norms: list[float] | None = None
        self._reference_norms: list[float] | None = None
        db = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            db.execute("CREATE VIRTUAL TABLE memfts USING fts5(topic UNINDEXED, body)")
        except sqlite3.Error as exc:
            db.close()
            raise RuntimeError("SQLite FTS5 unavailable") from exc
        rows = (
            (pos, _sqlite_text(n.topic),
             _sqlite_text(" ".join([n.topic, n.entry.summary, " ".join(n.entry.tags), n.body])))
            for pos, n in enumerate(self._notes)
        )
        with db:
            db.executemany("INSERT INTO memfts(rowid, topic, body) VALUES (?, ?, ?)", rows)
        try:  # each term's instances, to compute a one-word phrase's bm25 without bm25()
            db.execute("CREATE VIRTUAL TABLE memvocab USING fts5vocab(memfts, instance)")
            self._vocab = True
        except sqlite3.Error:
            self._vocab = False
        self._db: sqlite3.Connection | None = db

    @property
    def notes(self) -> tuple[Note, ...]:
        """The indexed notes, in the order given (a row's position is its rowid)."""
        return self._notes

    @property
    def scan(self) -> ScanIndex:
        """The scan engine's index this one matches with (shared with the snapshot's ``scan`` engine)."""
        return self._scan

    def _make_room(self, cells: int) -> None:
        """Drop every cached column when ``cells`` more would pass the cap; call locked."""
        if self._cells + cells > _COLUMN_CACHE_CELLS:
            self._phrase_columns.clear()
            self._grams.clear()
            self._cells = 0
        self._cells += cells

    def _phrase(self, phrase: str) -> list[float]:
        """The reference phrase's bm25 contribution per row (``-bm25`` of the phrase alone); call locked."""
        found = self._phrase_columns.get(phrase)
        if found is None:
            rows: dict[int, float] = {}
            try:
                if self._db is not None:
                    word = phrase[1:-1]
                    if self._vocab and _ASCII_WORD.fullmatch(word):
                        rows = self._word_contributions(self._db, word.lower())
                    else:
                        sql = "SELECT rowid, -bm25(memfts) FROM memfts WHERE memfts MATCH ?"
                        rows = dict(self._db.execute(sql, (phrase,)))
            except (sqlite3.Error, ValueError, OverflowError):
                rows = {}
            column = list(map(rows.get, range(len(self._notes)), repeat(0.0))) if rows else [0.0] * len(self._notes)
            self._make_room(len(column))
            self._phrase_columns[phrase] = found = column
        return found

    def _word_contributions(self, db: sqlite3.Connection, term: str) -> dict[int, float]:
        """``{rowid: contribution}`` of one ``unicode61`` term, from its instances: what ``-bm25()`` of the
        phrase alone gives, bit for bit (same formula and operation order as ``fts5_aux.c``), at a third
        of its cost; call locked."""
        if self._reference_norms is None:
            lengths = [0] * len(self._notes)
            for rowid, sizes in db.execute("SELECT id, sz FROM memfts_docsize"):
                lengths[rowid] = _varint_sum(sizes)
            self._reference_norms = bm25.length_norms(lengths)
        sql = "SELECT doc, COUNT(*) FROM memvocab WHERE term = ? GROUP BY doc"
        hits = db.execute(sql, (term,)).fetchall()
        if not hits:
            return {}
        positions, freqs = zip(*hits, strict=True)
        weight = bm25.idf(len(self._notes), len(positions))
        values = bm25.term_contributions(weight, positions, freqs, self._reference_norms)
        return dict(zip(positions, values, strict=True))

    def _token(self, token: str, referenced: list[float]) -> tuple[list[int], list[float]]:
        """``(positions, bm25 contributions)`` of the scan token over the scan engine's weighted counts, for
        the rows it adds to: every row that holds it, or for an ASCII token those no reference phrase
        matched; call locked."""
        positions = self._scan.postings(token)
        if not token.isascii():
            return self._gram(token, positions)
        missed = list(map(operator.not_, map(referenced.__getitem__, positions)))
        if not any(missed):  # the usual case for a Latin word: the reference's phrases scored every row
            return [], []
        positions, values = self._gram(token, positions)
        return list(compress(positions, missed)), list(compress(values, missed))

    def _gram(self, token: str, positions: list[int]) -> tuple[list[int], list[float]]:
        """``(positions, bm25 contributions)`` of the scan token in every row that holds it (cached); call locked."""
        found = self._grams.get(token)
        if found is None:
            if self._norms is None:
                self._norms = bm25.length_norms(self._scan.lengths())
            weight = bm25.idf(len(self._notes), len(positions))
            values = bm25.term_contributions(weight, positions, self._scan.counts(token, positions), self._norms)
            self._make_room(len(positions))
            self._grams[token] = found = (positions, values)  # two flat lists: nothing for the GC to walk
        return found

    def _scores(self, query: str) -> list[float]:
        """The score of every row (0.0 = no match; see the class docstring); call locked."""
        referenced: list[float] | None = None
        for phrase in _phrases(query):  # in query order: the sum is FTS5's own, bit for bit
            part = self._phrase(phrase)
            referenced = part if referenced is None else list(map(operator.add, referenced, part))
        if referenced is None:
            return []
        scores = referenced
        for token in dict.fromkeys(tokenize(query)):
            positions, values = self._token(token, referenced)
            if values:
                scores = list(scores) if scores is referenced else scores
                for pos, value in zip(positions, values, strict=True):
                    scores[pos] += value
        return scores

    def search(self, query: str, limit: int, max_snippet_chars: int) -> dict[str, Any]:
        """Rank the notes for ``query`` (mm v1 §8): bm25 score descending (ties in note order).

        Args:
            query: free text.
            limit: most matches returned (``>= 1``).
            max_snippet_chars: snippet cap in code points (see :func:`.search.make_snippet`).

        Returns:
            The ``SearchResult`` dict with ``engine: "fts5"``; ``score`` is a
            float > 0, ``total`` the number of matching notes (a superset of
            ``scan``'s), ``truncated`` is ``total > len(matches)``. The snippet
            centres on the first raw query term. Nothing is raised; after
            :meth:`close` nothing matches.
        """
        with self._lock:
            scores = self._scores(query) if self._db is not None else []
            total = len(scores) - scores.count(0.0)
            ranked = bm25.top_rows(scores, max(1, limit))
        terms = _WS_SPLIT_RE.split(js_trim(query))
        needle = terms[0] if terms else ""
        return _result(query, "fts5", total, total > len(ranked), [
            _match_row(self._notes[pos], score, needle, max_snippet_chars) for pos, score in ranked])

    def close(self) -> None:
        """Release the database; later queries return no rows."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._phrase_columns.clear()
            self._grams.clear()

    def __enter__(self) -> Fts5Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def search_fts5(
    index: Fts5Index, notes: Sequence[Note], query: str, limit: int, max_snippet_chars: int
) -> dict[str, Any]:
    """FTS5 search mapped onto the given notes (mm v1 §8); see :meth:`Fts5Index.search` for the result.

    Args:
        index: the snapshot's :class:`Fts5Index`.
        notes: the notes to keep: matches whose topic is not among them are dropped (``total`` is the index's).
        query, limit, max_snippet_chars: as for :meth:`Fts5Index.search`.
    """
    result = index.search(query, limit, max_snippet_chars)
    kept = {note.topic for note in notes}
    result["matches"] = [m for m in result["matches"] if m["topic"] in kept]
    return result
