"""Following one DSH log: the persisted cursor and the read call ingestion makes (dsh-session-format.md §8).

Owns: :class:`SessionCursor` (byte cursor + extraction state, JSON-able),
:class:`SessionRead`, and :func:`read_session`, which glues ``decode`` (complete
lines after a cursor) to ``extract`` (model-visible records).

Never: stores cursors, watches files, or decides when a session ended; the
daemon does, with ``SessionRead.turn_open`` and ``layout.is_session_live``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .decode import MAX_LINE_BYTES, LogCursor, LogReader
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
        warnings: what was skipped or looked wrong (also logged to ``mmd.sessions``).
        restarted: ``""``, or why the log was read again from byte 0
            (``replaced``, ``shrunk``, ``rewritten``): records may repeat, dedupe them.
        header: the session header, when read.
        turn_open: a turn is open: the session is live, or it crashed (§8).
    """

    records: list[TextRecord]
    cursor: SessionCursor
    warnings: list[str]
    restarted: str
    header: SessionHeader | None
    turn_open: bool


def read_session(
    path: str | os.PathLike[str],
    cursor: SessionCursor | None = None,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> SessionRead:
    """Read the new model-visible text of one DSH generation file (§2–§8).

    Reads every complete line after ``cursor`` (plain, or zstd when the name
    ends in ``.zstd``), never a torn tail or an incomplete last frame, and
    returns the records with the next cursor. Memory is bounded by
    ``max_line_bytes`` (bytes) per line plus the records themselves. A log
    whose first line is not a DSH header produces no records and a warning.

    Raises:
        OSError: if the file cannot be opened or read (e.g. it vanished).
    """
    current = cursor if cursor is not None else SessionCursor.start(path)
    warnings: list[str] = []
    records: list[TextRecord] = []
    with LogReader(path, current.log, max_line_bytes=max_line_bytes, warnings=warnings) as reader:
        state = ExtractState() if reader.restarted else current.state
        extractor = SessionExtractor(state, warn=reader.warn)
        for index, line in reader:
            records.extend(extractor.feed(index, line))
        records.extend(extractor.finish())
    st = extractor.state
    return SessionRead(records, SessionCursor(reader.cursor, st), warnings, reader.restarted, st.header,
                       st.turn_open)
