"""The DSH adapter: DSH session logs as :class:`~mmd.sources.base.Utterance` slices (dsh-session-format.md).

Owns: :class:`DshSource` — which files under the sessions folder are the DSH
logs to read now (the newest generation of each session directory, plain or
zstd), the liveness probe (``session.lock`` held), and the sliced read by an
opaque cursor: :func:`~.session.read_session` underneath, each record one
utterance (``user`` → ``human``, ``compaction`` → ``summary``). A file with a
DSH name whose first line is not a DSH header is read as the ``other`` source
reads it (whole text, ``who="text"``) and its cursor says so from then on.

Cursor JSON (the shape ``state.db`` has always held): ``{"log": LogCursor,
"state": ExtractState}`` for a DSH log; a bare ``LogCursor`` object for a
DSH-named file read as text. Any other value starts the file over.

Never: stores cursors, watches files, decides what is worth remembering, or
reads ``os.environ``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base import Position, Slice, Utterance, Who
from ..jsonl import iso_utc
from ..other import read_text_slice
from .extract import RecordKind
from .layout import LogKind, classify_path, default_sessions_dir, is_session_live, parse_generation, session_identity
from .session import SessionCursor, read_session

__all__ = ["DshSource"]

log = logging.getLogger("mmd.ingest")

_WHO: dict[RecordKind, Who] = {RecordKind.USER: "human", RecordKind.ASSISTANT: "assistant",
                               RecordKind.COMPACTION: "summary"}


class DshSource:
    """The ``dsh`` source (see the module docstring); stateless, one instance serves every file and thread."""

    name = "dsh"

    def default_dir(self, env: Mapping[str, str], home: Path) -> Path:
        """``$DSH_HOME/sessions``, else ``<home>/.dsh/sessions`` (§1)."""
        return default_sessions_dir(env.get("DSH_HOME"), home)

    def classify(self, path: Path, root: Path) -> bool:
        """Whether ``path`` is the newest generation file of its session directory under ``root`` (§1).

        Costs nothing for a name that is no generation file; else one ``stat`` and one listing.
        """
        if parse_generation(path.name) is None:
            return False
        info = classify_path(path, root)
        return info.kind is LogKind.DSH and info.newest

    def is_live(self, path: Path) -> bool:
        """Whether a DSH writer holds the session's ``session.lock`` (§8); False when it cannot be told."""
        return is_session_live(path.parent) is True

    def read(self, path: str, cursor: dict[str, Any] | None, *, max_bytes: int, max_chars: int) -> Slice:
        """One slice of a DSH log after ``cursor`` (see :meth:`mmd.sources.base.Source.read`).

        Raises:
            OSError: if the file cannot be read (FileNotFoundError when it vanished).
        """
        if cursor is not None and "log" not in cursor and "offset" in cursor:
            return read_text_slice(path, cursor, self.name, max_bytes=max_bytes)  # known not to be DSH
        start = SessionCursor.from_json(cursor) if cursor is not None and "log" in cursor else None
        r = read_session(path, start, max_bytes=max_bytes, max_chars=max_chars)
        if r.not_dsh:
            log.info("ingest.not_dsh file=%s (read as an other log)", path)
            return read_text_slice(path, None, self.name, max_bytes=max_bytes, warnings=r.warnings)
        session_id = r.header.session_id if r.header is not None else session_identity(path).session_id
        project = r.header.cwd if r.header is not None else None
        utterances = [
            Utterance(_WHO[rec.kind], rec.text, self.name, rec.session_id, project, iso_utc(rec.time),
                      Position(path, seq=rec.seq, uuid=rec.message_id))
            for rec in r.records if rec.text and not rec.text.isspace()]
        return Slice(utterances, r.cursor.to_json(), r.consumed, r.more, bool(r.restarted),
                     session_id, project, r.warnings)
