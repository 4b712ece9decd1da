"""The header line of a DSH session log, v0–v4 (dsh-session-format.md §3).

Owns: :class:`SessionHeader`, read from line 1 of a generation file,
:class:`SessionFormatError` for a first line that is not a header, and
:func:`read_header`, the bounded read of that first line.

Never: interprets events.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any

from ..logio.decode import LogReader

__all__ = ["SessionFormatError", "SessionHeader", "read_header"]

_HEADER_MAX_BYTES = 64 * 1024


class SessionFormatError(ValueError):
    """Raised by :meth:`SessionHeader.from_record` when a line is not a DSH session header."""


def _opt_str(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


def _opt_int(record: dict[str, Any], key: str) -> int | None:
    value = record.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class SessionHeader:
    """A session log header (§3).

    Attributes:
        session_id: ``id``, e.g. ``session-<uuid>``.
        version: format version (0–4 known).
        created_at_ms: ``createdAt``, epoch milliseconds.
        cwd: working directory; None for ``_no-cwd`` sessions.
        parent_session: the session this one was forked or delegated from.
        seeded: the log starts with events inherited from the parent: v2+
            ``isSeeded``; v0/v1 ``seedLength > 0``.
        seed_length: v0/v1 only: how many leading events (seqs ``0 … n-1``) are inherited.
        origin: ``"subagent"`` for a delegated child (its "user" prompts come
            from the parent agent), else None.
        delegation_depth: 0 for a top-level session.
        agent_preset: the preset name, when recorded.
    """

    session_id: str
    version: int
    created_at_ms: int | None = None
    cwd: str | None = None
    parent_session: str | None = None
    seeded: bool = False
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int | None = None
    agent_preset: str | None = None

    @classmethod
    def from_record(cls, record: Any) -> SessionHeader:
        """Build from the decoded first line.

        Raises:
            SessionFormatError: if it is not an object with ``type == "session"``,
                a string ``id`` and a non-negative integer ``version``.
        """
        if not isinstance(record, dict) or record.get("type") != "session":
            raise SessionFormatError('not an object with "type":"session"')
        session_id, version = record.get("id"), _opt_int(record, "version")
        if not isinstance(session_id, str) or not session_id:
            raise SessionFormatError("header has no string id")
        if version is None or version < 0:
            raise SessionFormatError("header has no valid version")
        seed_length = _opt_int(record, "seedLength") if version < 2 else None
        seeded = bool(seed_length) if version < 2 else record.get("isSeeded") is True
        return cls(
            session_id=session_id,
            version=version,
            created_at_ms=_opt_int(record, "createdAt"),
            cwd=_opt_str(record, "cwd"),
            parent_session=_opt_str(record, "parentSession"),
            seeded=seeded,
            seed_length=seed_length,
            origin=_opt_str(record, "origin"),
            delegation_depth=_opt_int(record, "delegationDepth"),
            agent_preset=_opt_str(record, "agentPreset"),
        )

    def to_json(self) -> dict[str, Any]:
        """All fields, snake_case."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionHeader:
        """Rebuild from :meth:`to_json` output; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def read_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The decoded first line of a log when it is complete JSON, else None (§2, §3).

    Reads at most 64 KiB of line (one frame for zstd); no validation beyond
    "a JSON object".

    Raises:
        OSError: if the file cannot be opened or read.
    """
    with LogReader(path, max_line_bytes=_HEADER_MAX_BYTES, chunk_bytes=_HEADER_MAX_BYTES,
                   warnings=[]) as reader:
        for index, line in reader:
            if index != 0:
                return None
            try:
                value = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None
