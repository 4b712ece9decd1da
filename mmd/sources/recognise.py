"""Which agent wrote a log file, told from its content wherever it lies, and the whole file as utterances.

Owns: :func:`recognise` (a file handed in by a person, e.g. ``mmctl digest
--file F``, is a DSH, Claude Code or Codex log when its first records have
that format's shape — its place on disk does not matter, unlike
:meth:`~.base.Source.classify`, which the daemon's folder watching uses) and
:func:`read_whole` (every utterance of one log through its adapter, slice by
slice, as the daemon reads it).

Never: reads more than :data:`SNIFF_LINES` lines to recognise a file, decides
what is worth remembering (``mmd.candidates``), or stores a cursor.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .base import Utterance
from .dsh.header import SessionFormatError, SessionHeader, read_header
from .logio.decode import LogReader

__all__ = ["SNIFF_BYTES", "SNIFF_LINES", "read_whole", "recognise", "recognise_text"]

SNIFF_LINES = 16
"""Most complete lines :func:`recognise` decodes."""
SNIFF_BYTES = 256 * 1024
"""Longest line :func:`recognise` reads, in bytes (a longer one is not decoded)."""
_CLAUDE_TYPES = frozenset({"user", "assistant", "queue-operation", "system", "progress", "attachment"})
_CLAUDE_HEADS = frozenset({"summary", "file-history-snapshot"})
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def _dsh(path: str) -> bool:
    try:
        header = read_header(path)
        if header is None:
            return False
        SessionHeader.from_record(header)
    except (OSError, SessionFormatError):
        return False
    return True


def _records(lines: list[bytes]) -> list[dict[str, Any] | None]:
    """Each line as a JSON object, or None."""
    out: list[dict[str, Any] | None] = []
    for line in lines:
        try:
            value = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            value = None
        out.append(value if isinstance(value, dict) else None)
    return out


def _first_lines(path: str) -> list[bytes]:
    """The first :data:`SNIFF_LINES` complete lines of a (plain or zstd) JSONL file."""
    out: list[bytes] = []
    with LogReader(path, max_line_bytes=SNIFF_BYTES, chunk_bytes=64 * 1024, warnings=[]) as reader:
        for _, line in reader:
            out.append(line)
            if len(out) >= SNIFF_LINES:
                break
    return out


def _claude_code(records: list[dict[str, Any] | None]) -> bool:
    """A ``user``/``assistant``/… record with ``sessionId`` and ``uuid`` (a ``queue-operation`` has no ``uuid``;
    agent-session-formats.md §1), after at most title and snapshot records."""
    for record in records:
        if record is None:
            return False
        kind = record.get("type")
        if kind in _CLAUDE_TYPES:
            return isinstance(record.get("sessionId"), str) and ("uuid" in record or kind == "queue-operation")
        if kind not in _CLAUDE_HEADS:
            return False
    return False


def _codex(records: list[dict[str, Any] | None]) -> bool:
    """A rollout: ``session_meta`` (or another rollout item) first, or the legacy ``{id, timestamp, …}`` header
    followed by ``record_type`` / ``message`` lines (agent-session-formats.md §2)."""
    first = records[0] if records else None
    if first is None:
        return False
    if first.get("type") in _CODEX_TYPES:
        return isinstance(first.get("payload"), dict)
    legacy = "type" not in first and isinstance(first.get("id"), str) and "timestamp" in first
    return legacy and any(r is not None and ("record_type" in r or r.get("type") == "message") for r in records[1:])


def recognise(path: str | os.PathLike[str]) -> str | None:
    """The name (a key of :data:`mmd.sources.SOURCES`) of the agent that wrote the log at ``path``, or None.

    ``dsh`` when line 1 is a DSH session header (plain or zstd); ``claude-code`` and ``codex`` by the shape of
    the first :data:`SNIFF_LINES` JSONL records. Any other file (text, Markdown, JSON, JSONL of another kind)
    is None: the reference's generic digest reads it.

    Raises:
        OSError: if the file cannot be opened or read.
    """
    name = os.fspath(path)
    return "dsh" if _dsh(name) else _by_records(_records(_first_lines(name)))


def recognise_text(text: str) -> str | None:
    """:func:`recognise` for the text of a (plain) file."""
    lines = [line.encode("utf-8") for line in text.split("\n") if line.strip()][:SNIFF_LINES]
    records = _records(lines)
    if records and records[0] is not None:
        try:
            SessionHeader.from_record(records[0])
            return "dsh"
        except SessionFormatError:
            pass
    return _by_records(records)


def _by_records(records: list[dict[str, Any] | None]) -> str | None:
    if _claude_code(records):
        return "claude-code"
    if _codex(records):
        return "codex"
    return None


def read_whole(path: str | os.PathLike[str], source: str, *, slice_bytes: int = 32 * 1024 * 1024,
               slice_chars: int = 1_000_000) -> tuple[list[Utterance], list[str]]:
    """Every utterance of the log at ``path`` through the adapter ``source``, read slice by slice from the start
    as the daemon reads a new log (a torn last line is left out), and the adapter's warnings.

    Args:
        slice_bytes, slice_chars: one read's caps (UTF-8 bytes of log, code points of utterance text).

    Raises:
        OSError: if the file cannot be read.
    """
    from . import SOURCES

    adapter = SOURCES[source]
    name = os.fspath(path)
    cursor: dict[str, Any] | None = None
    utterances: list[Utterance] = []
    warnings: list[str] = []
    while True:
        s = adapter.read(name, cursor, max_bytes=slice_bytes, max_chars=slice_chars)
        utterances.extend(s.utterances)
        warnings.extend(s.warnings)
        if not s.more or s.cursor == cursor:
            return utterances, warnings
        cursor = s.cursor
