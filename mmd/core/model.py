"""The mm v1 data model: index entries and notes (reference ``types.ts``).

Both are immutable; a snapshot can hand them to many readers. ``to_json``
gives the reference's wire shape with its camelCase keys in its key order, so
JSON output matches the reference byte for byte.
"""

from __future__ import annotations

import re

from .lazyre import lazy_compile
from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_DETAIL_MAX_BYTES",
    "DEFAULT_INDEX_BYTES",
    "DEFAULT_INDEX_LINES",
    "DEFAULT_MEMORY_ID",
    "DEFAULT_SEARCH_LIMIT",
    "DEFAULT_SNIPPET_CHARS",
    "DEFAULT_WRITE_BUDGET",
    "FORMAT_VERSION",
    "IndexEntry",
    "Note",
    "REVIEW_AFTER_KEY",
    "REVIEW_AFTER_LINE",
]

FORMAT_VERSION = 1
"""The ``mm-version`` this implementation reads and writes."""
DEFAULT_MEMORY_ID = "local"
"""Memory id used in ``mm://<memoryId>/<topic>`` when none is configured."""
DEFAULT_INDEX_LINES = 200
"""Hard cap on MEMORY.md, in lines (mm v1 §1 line rule)."""
DEFAULT_INDEX_BYTES = 25 * 1024
"""Hard cap on MEMORY.md, in UTF-8 bytes."""
DEFAULT_DETAIL_MAX_BYTES = 64 * 1024
"""Hard cap on one serialized detail file, in UTF-8 bytes."""
DEFAULT_WRITE_BUDGET = 4000
"""Per-write body budget, in code points."""
DEFAULT_SEARCH_LIMIT = 10
"""Most matches one search returns."""
DEFAULT_SNIPPET_CHARS = 160
"""Longest search snippet, in code points (ellipses included)."""

REVIEW_AFTER_KEY = "review-after"
"""The entry line ``- **review-after:** YYYY-MM-DD`` holding a topic's review date.

mm v1 §3 keeps every unknown ``- **key:** value`` line of an entry verbatim in its
body, so any compliant writer (the reference included) carries the date through
writes of other topics; :meth:`IndexEntry.review_after` reads it back.
"""
REVIEW_AFTER_LINE = lazy_compile(r"^-[ \t]*\*\*review-after:\*\*[ \t]*(.*?)[ \t]*$", re.MULTILINE)
"""Matches a review date line (one line, or each line of a body with ``search``); group 1 is the value."""


class IndexEntry(Record):
    """One ``## <topic>`` section of MEMORY.md (mm v1 §3).

    Attributes:
        topic: the slug.
        memory_id: the memory id of the snapshot that holds the entry.
        summary: one line, may be empty.
        tags: normalized tags, may be empty.
        file: detail file, a safe POSIX path relative to the root.
        updated: ISO-8601 UTC of the last write, verbatim from the file ('' when missing).
        body_chars: body size in code points recorded at write time.
        write_budget: the budget (code points) the body was admitted under; 0 when unknown.
        entry_body: other lines of the section (unknown keys, prose), trimmed.
    """

    __slots__ = ("topic", "memory_id", "summary", "tags", "file", "updated", "body_chars", "write_budget", "entry_body")

    def __init__(self, topic: str, memory_id: str, summary: str, tags: tuple[str, ...], file: str, updated: str,
                 body_chars: int, write_budget: int, entry_body: str) -> None:
        self.topic = topic
        self.memory_id = memory_id
        self.summary = summary
        self.tags = tags
        self.file = file
        self.updated = updated
        self.body_chars = body_chars
        self.write_budget = write_budget
        self.entry_body = entry_body

    def to_json(self) -> dict[str, Any]:
        """The reference's ``IndexEntry`` shape."""
        return {
            "topic": self.topic,
            "memoryId": self.memory_id,
            "summary": self.summary,
            "tags": list(self.tags),
            "file": self.file,
            "updated": self.updated,
            "bodyChars": self.body_chars,
            "writeBudget": self.write_budget,
            "entryBody": self.entry_body,
        }

    @property
    def review_after(self) -> str | None:
        """The first ``- **review-after:**`` value of the entry body, verbatim (unvalidated), or None."""
        if "review-after" not in self.entry_body:
            return None
        match = REVIEW_AFTER_LINE.search(self.entry_body)
        return match.group(1) if match else None


class Note(Record):
    """An index entry with its detail file loaded (mm v1 §4).

    Attributes:
        entry: the index entry.
        uri: ``mm://<memoryId>/<topic>``.
        body: the detail body ('' when the file is missing or malformed).
        missing_file: the index names a file that does not exist.
    """

    __slots__ = ("entry", "uri", "body", "missing_file")

    def __init__(self, entry: IndexEntry, uri: str, body: str, missing_file: bool) -> None:
        self.entry = entry
        self.uri = uri
        self.body = body
        self.missing_file = missing_file

    @property
    def topic(self) -> str:
        return self.entry.topic

    @property
    def review_after(self) -> str | None:
        """The entry's review date line value (see :attr:`IndexEntry.review_after`)."""
        return self.entry.review_after

    def to_json(self) -> dict[str, Any]:
        """The reference's ``Note`` shape: the entry's keys, then uri, body, missingFile."""
        out = self.entry.to_json()
        out["uri"] = self.uri
        out["body"] = self.body
        out["missingFile"] = self.missing_file
        return out
