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
from .errors import ErrorCode, MMError
from .format import entry_block, join_index, twin_entries
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
        encoded: each section's UTF-8 bytes, aligned with ``blocks``; else None (a write re-encodes
            only its own section: encoding a large index with any non-ASCII character in it costs
            about 1 ms a MB).
        breaks: how many line feeds the sections hold in all, when ``blocks`` is set (a write
            counts only its own section's: counting a large index's costs about 0.3 ms a MB).
    """

    __slots__ = ("data", "text", "entries", "usage", "topics", "blocks", "encoded", "breaks")

    def __init__(self, data: bytes, text: str, entries: tuple[IndexEntry, ...], usage: IndexUsage,
                 topics: tuple[str, ...] | None = None, blocks: tuple[str, ...] | None = None,
                 encoded: tuple[bytes, ...] | None = None, breaks: int = 0) -> None:
        self.data = data
        self.text = text
        self.entries = entries
        self.usage = usage
        self.topics = topics
        self.blocks = blocks
        self.encoded = encoded
        self.breaks = breaks

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
            MMError(E_CONFLICT): if the index holds more than one section of ``topic`` (a hand edit):
                replacing them would lose the others' text and note links, so nothing is written.
        """
        if self.topics is not None and self.blocks is not None and self.encoded is not None:
            topics, blocks, entries = list(self.topics), list(self.blocks), list(self.entries)
            encoded = list(self.encoded)
            start = bisect.bisect_left(topics, topic)
            end = bisect.bisect_right(topics, topic, lo=start)
            if end - start > 1:
                self._refuse_twins(topic)
            new = [] if entry is None else [entry]
            gone = sum(b.count("\n") for b in blocks[start:end])
            topics[start:end] = [e.topic for e in new]
            blocks[start:end] = [entry_block(e) for e in new]
            encoded[start:end] = [b.encode() for b in blocks[start:start + len(new)]]
            breaks = self.breaks - gone + sum(b.count("\n") for b in blocks[start:start + len(new)])
            entries[start:end] = new
        else:
            self._refuse_twins(topic)
            entries = sorted([*(e for e in self.entries if e.topic != topic), *([entry] if entry else [])],
                             key=lambda e: e.topic)
            topics = [e.topic for e in entries]
            blocks = [entry_block(e, e is entry) for e in entries]
            encoded = [b.encode() for b in blocks]
            breaks = sum(b.count("\n") for b in blocks)
        text = join_index(header, blocks)
        # text.encode(), section by section: UTF-8 of a concatenation is the concatenation of the UTF-8s
        data = header.encode() + b"\n".join(encoded)
        appended = not data.endswith(b"\n")
        data = data + b"\n" if appended else data
        # Each section holds exactly one `## <topic>` line: bodies cannot (they would parse as headings).
        # The text ends with a line feed, so its lines are its line feeds: the header's, the sections',
        # those joining the sections, and the final one if it was added.
        lines = header.count("\n") + breaks + max(len(blocks) - 1, 0) + appended
        usage = index_usage(text, index_lines, index_bytes, size=len(data), entries=len(blocks), lines=lines)
        return IndexState(data, text, tuple(entries), usage, tuple(topics), tuple(blocks), tuple(encoded), breaks)

    def _refuse_twins(self, topic: str) -> None:
        """Raise E_CONFLICT when ``topic`` has more than one section (our own serialization never does)."""
        files = twin_entries(self.entries).get(topic)
        if files:
            lines = [str(n) for n, line in enumerate(self.text.split("\n"), 1)
                     if line.startswith("##") and line[2:].strip() == topic]
            raise MMError(ErrorCode.E_CONFLICT,
                          f"MEMORY.md holds {len(files)} entries for topic {topic!r} (lines {', '.join(lines)}; "
                          f"notes {', '.join(dict.fromkeys(files))}): join them into one section by hand, then "
                          "try again; nothing was written", details=topic)
