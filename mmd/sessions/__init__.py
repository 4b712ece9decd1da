"""Agent session logs: find them, decode them (JSONL, zstd), follow them by cursor, extract model-visible text.

Implements ``dsh-session-format.md`` for the daemon's ingestion. The one call
for a DSH log is :func:`read_session` (records + next cursor); other logs go
through :func:`read_other_log`; :func:`scan_sessions` / :func:`classify_path`
say which files to read. Standard library and ``zstandard`` only; nothing here
imports ``mmd.daemon``, watches files, or stores state — cursors are JSON-able
values the caller persists. Warnings go to the ``mmd.sessions`` logger and to
the returned ``warnings`` lists.
"""

from .decode import CHUNK_BYTES, MAX_LINE_BYTES, LogCursor, LogReader, is_compressed_name
from .extract import ExtractState, RecordKind, SessionExtractor, TextRecord
from .frames import FrameScan, FrameStatus, scan_frame
from .header import SessionFormatError, SessionHeader, read_header
from .layout import (
    LogKind,
    LogPath,
    SessionIdentity,
    classify_path,
    decode_segment,
    default_sessions_dir,
    encode_segment,
    is_session_live,
    newest_generation,
    parse_generation,
    project_dir_name,
    project_key,
    scan_sessions,
    session_identity,
)
from .other import MAX_OTHER_BYTES, OtherRead, read_other_log
from .session import SessionCursor, SessionRead, read_session

__all__ = [
    "CHUNK_BYTES",
    "MAX_LINE_BYTES",
    "MAX_OTHER_BYTES",
    "ExtractState",
    "FrameScan",
    "FrameStatus",
    "LogCursor",
    "LogKind",
    "LogPath",
    "LogReader",
    "OtherRead",
    "RecordKind",
    "SessionCursor",
    "SessionExtractor",
    "SessionFormatError",
    "SessionHeader",
    "SessionIdentity",
    "SessionRead",
    "TextRecord",
    "classify_path",
    "decode_segment",
    "default_sessions_dir",
    "encode_segment",
    "is_compressed_name",
    "is_session_live",
    "newest_generation",
    "parse_generation",
    "project_dir_name",
    "project_key",
    "read_header",
    "read_other_log",
    "read_session",
    "scan_frame",
    "scan_sessions",
    "session_identity",
]
