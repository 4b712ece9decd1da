"""MEMORY.md as the writer holds it between writes: bytes, text, entries, usage.

Re-parsing and re-serializing a large index on every write dominated the
write's cost. An :class:`IndexState` read from disk is reused while the file's
bytes are unchanged; one the writer built itself also keeps each entry's
serialized section, so the next write replaces one section instead of
re-serializing them all. The result is byte for byte what
``format.serialize_index`` would produce. Nothing here touches the disk.
"""

from __future__ import annotations

import bisect

from .budget import IndexUsage, index_usage
from .format import entry_block, join_index
from .model import IndexEntry
from .record import Record

__all__ = ["IndexState"]


class IndexState(Record):
    """One version of MEMORY.md.

    Attributes:
        data: the file's bytes (b"" when absent).
        text: ``data`` decoded.
        entries: parsed entries, in file order.
        usage: ``text`` against the caps (lines, UTF-8 bytes).
        topics: the entries' topics, sorted, when ``text`` is our own serialization; else None.
        blocks: each entry's serialized section, aligned with ``topics``; else None.
    """

    __slots__ = ("data", "text", "entries", "usage", "topics", "blocks")

    def __init__(self, data: bytes, text: str, entries: tuple[IndexEntry, ...], usage: IndexUsage,
                 topics: tuple[str, ...] | None = None, blocks: tuple[str, ...] | None = None) -> None:
        self.data = data
        self.text = text
        self.entries = entries
        self.usage = usage
        self.topics = topics
        self.blocks = blocks

    def replacing(self, topic: str, entry: IndexEntry | None, *, header: str, index_lines: int,
                  index_bytes: int) -> IndexState:
        """The state after every section of ``topic`` is replaced by ``entry`` (None: removed).

        Args:
            header: ``format.index_header(...)`` for the configured id and caps.
            index_lines: cap in lines; index_bytes: cap in UTF-8 bytes.

        Sections of other topics are written back as read (``entry_block(strict=False)``):
        a hand-edited field there never blocks this write.

        Raises:
            MMError(E_INVALID): if ``entry`` holds a line break in a one-line field.
        """
        if self.topics is not None and self.blocks is not None:
            topics, blocks, entries = list(self.topics), list(self.blocks), list(self.entries)
            start = bisect.bisect_left(topics, topic)
            end = bisect.bisect_right(topics, topic, lo=start)
            new = [] if entry is None else [entry]
            topics[start:end] = [e.topic for e in new]
            blocks[start:end] = [entry_block(e) for e in new]
            entries[start:end] = new
        else:
            entries = sorted([*(e for e in self.entries if e.topic != topic), *([entry] if entry else [])],
                             key=lambda e: e.topic)
            topics = [e.topic for e in entries]
            blocks = [entry_block(e, e is entry) for e in entries]
        text = join_index(header, blocks)
        data = text.encode()
        # Each section holds exactly one `## <topic>` line: bodies cannot (they would parse as headings).
        usage = index_usage(text, index_lines, index_bytes, size=len(data), entries=len(blocks))
        return IndexState(data, text, tuple(entries), usage, tuple(topics), tuple(blocks))
