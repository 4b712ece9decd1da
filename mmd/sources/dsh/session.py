"""Following one DSH log: the persisted cursor and the one DSH read (dsh-session-format.md §8).

Owns: :class:`SessionCursor` (byte cursor + extraction state, JSON-able),
:class:`SessionRead`, and :func:`read_session`, which glues ``logio.decode``
(complete lines after a cursor) to ``extract`` (model-visible records), whole
or one bounded slice at a time; the adapter (:mod:`.source`) and the tests
both read through it.

Never: stores cursors, watches files, or decides when a session ended; the
daemon does, with :meth:`mmd.sources.Source.is_live` and quiet time.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, cast

from ..logio.decode import MAX_LINE_BYTES, LogCursor, LogReader
from .extract import ExtractState, SessionExtractor, TextRecord
from .header import SessionHeader

__all__ = ["SessionCursor", "SessionRead", "read_session"]


@dataclass
class SessionCursor:
    """Everything to persist per DSH log between reads: the byte cursor and the extraction state."""

    log: LogCursor
    state: ExtractState = field(default_factory=ExtractState)

    @classmethod
    def start(cls, path: str | os.PathLike[str]) -> SessionCursor:
        """A cursor at the beginning of ``path``."""
        return cls(LogCursor.start(path))

    @property
    def last_seq(self) -> int:
        """Highest event seq read so far (-1 before any)."""
        return self.state.last_seq

    def to_json(self) -> dict[str, Any]:
        """``{"log": {...}, "state": {...}}``."""
        return {"log": self.log.to_json(), "state": self.state.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionCursor:
        """Rebuild from :meth:`to_json` output."""
        return cls(LogCursor.from_json(data["log"]), ExtractState.from_json(data.get("state") or {}))


@dataclass(frozen=True)
class SessionRead:
    """The outcome of one :func:`read_session` call.

    Attributes:
        records: new records in log order.
        cursor: the cursor to persist and pass to the next call.
        warnings: what was skipped or looked wrong (also logged to ``mmd.sources``).
        restarted: ``""``, or why the log was read again from byte 0
            (``replaced``, ``shrunk``, ``rewritten``): records may repeat, dedupe them.
        header: the session header, when read.
        turn_open: a turn is open: the session is live, or it crashed (§8).
        consumed: bytes of the file this read moved past (from byte 0 after a restart).
        more: the read stopped at ``max_bytes`` / ``max_chars``: call again with :attr:`cursor`.
    """

    records: list[TextRecord]
    cursor: SessionCursor
    warnings: list[str]
    restarted: str
    header: SessionHeader | None
    turn_open: bool
    consumed: int = 0
    more: bool = False

    @property
    def not_dsh(self) -> bool:
        """The first line is not a DSH header: the file is some other log under a DSH name."""
        return self.header is None and bool(self.cursor.state.invalid)


def _settled(state: ExtractState) -> bool:
    """False while a seeded v2+ log's inherited prefix is not settled: such a read must not stop early."""
    h = state.header
    return not (h is not None and h.version >= 2 and h.seeded and not state.seed_resolved)


def read_session(
    path: str | os.PathLike[str],
    cursor: SessionCursor | None = None,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_bytes: int | None = None,
    max_chars: int | None = None,
) -> SessionRead:
    """Read the new model-visible text of one DSH generation file (§2–§8), whole or one slice.

    Reads every complete line after ``cursor`` (plain, or zstd when the name
    ends in ``.zstd``), never a torn tail or an incomplete last frame, and
    returns the records with the next cursor. With ``max_bytes`` (bytes of
    log) or ``max_chars`` (code points of record text) the read stops after
    the line that reaches either cap (``more`` is then True), except inside
    a seeded log's inherited prefix, which is read whole so the seed settles.
    Memory is bounded by ``max_line_bytes`` (bytes) per line plus the records
    themselves. A log whose first line is not a DSH header produces no
    records and a warning (:attr:`SessionRead.not_dsh`).

    Raises:
        OSError: if the file cannot be opened or read (e.g. it vanished).
    """
    current = cursor if cursor is not None else SessionCursor.start(path)
    byte_cap = max_bytes if max_bytes is not None else -1
    char_cap = max_chars if max_chars is not None else -1
    warnings: list[str] = []
    records: list[TextRecord] = []
    more = False
    with LogReader(path, current.log, max_line_bytes=max_line_bytes, warnings=warnings) as reader:
        start = 0 if reader.restarted else current.log.offset
        extractor = SessionExtractor(ExtractState() if reader.restarted else current.state, warn=reader.warn)
        chars = nbytes = 0
        lines = cast(Generator[tuple[int, bytes], None, None], iter(reader))
        try:
            for index, line in lines:
                nbytes += len(line) + 1
                for record in extractor.feed(index, line):
                    records.append(record)
                    chars += len(record.text)
                if (0 <= char_cap <= chars or 0 <= byte_cap <= nbytes) and _settled(extractor.state):
                    more = True
                    break
        finally:
            lines.close()  # runs the reader's bookkeeping now, so its cursor is final
        records.extend(extractor.finish())
    st = extractor.state
    return SessionRead(records, SessionCursor(reader.cursor, st), warnings, reader.restarted, st.header,
                       st.turn_open, max(0, reader.cursor.offset - start), more)
