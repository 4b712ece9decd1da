"""The ingestion's health: what ``daemon.status`` shows under ``ingest``.

Owns: :class:`IngestHealth` (the whole worker), :class:`SourceHealth` (one
source folder: ``ingest.sources[]``) and :class:`BackfillHealth`, written by
the ingestion thread only and read by the loop through
:meth:`IngestHealth.to_json` (each field is one attribute store, so a reader
sees each figure whole; a backfill summary is replaced as one frozen object).

Never: reads logs or the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mmd.wire.protocol import IngestSourceStatus

__all__ = ["BackfillHealth", "IngestHealth", "SourceHealth"]


@dataclass(frozen=True)
class BackfillHealth:
    """A backfill: ``done``, files read of ``files_total`` found, bytes read of ``bytes_total`` (the found files'
    sizes), candidates added, ``seconds`` it took (None before it is done)."""

    done: bool = False
    files: int = 0
    bytes: int = 0
    candidates: int = 0
    seconds: float | None = None
    files_total: int = 0
    bytes_total: int = 0


@dataclass
class SourceHealth:
    """One source folder (``ingest.sources[]`` of ``daemon.status``).

    Attributes:
        kind: the configured source kind (a key of :data:`mmd.sources.FOLDERS`).
        folder: the folder (absolute).
        enabled: not turned off (``--no-source``, ``enabled = false``); an enabled folder that is missing is
            waited for.
        phase: ``off`` | ``waiting`` (for the folder) | ``backfill`` | ``following`` | ``stopped``.
        folder_present: the folder exists.
        files: logs of this folder followed now.
        bytes_read: log bytes consumed since start, bytes.
        candidates_added: candidates the queue took from these logs since start.
        last_event_at: ISO-8601 UTC of the last file event in the folder, or None.
        errors: failures reading these logs since start; ``last_error`` the last one's text.
        backfill: the folder's last backfill (with totals, for progress).
    """

    kind: str
    folder: str
    enabled: bool = True
    phase: str = "stopped"
    folder_present: bool = False
    files: int = 0
    bytes_read: int = 0
    candidates_added: int = 0
    last_event_at: str | None = None
    errors: int = 0
    last_error: str | None = None
    backfill: BackfillHealth = field(default_factory=BackfillHealth)

    def to_json(self) -> IngestSourceStatus:
        """One ``ingest.sources[]`` object (camelCase keys)."""
        b = self.backfill
        return {"kind": self.kind, "folder": self.folder, "enabled": self.enabled, "phase": self.phase,
                "folderPresent": self.folder_present, "files": self.files, "bytesRead": self.bytes_read,
                "candidatesAdded": self.candidates_added, "lastEventAt": self.last_event_at, "errors": self.errors,
                "lastError": self.last_error,
                "backfill": {"done": b.done, "files": b.files, "bytes": b.bytes, "candidates": b.candidates,
                             "seconds": b.seconds, "filesTotal": b.files_total, "bytesTotal": b.bytes_total}}


@dataclass
class IngestHealth:
    """Counters and state of one ingestion worker.

    Attributes:
        running: the worker thread runs.
        phase: ``stopped`` | ``waiting`` (no source folder exists) | ``backfill`` | ``following``.
        mode: ``native`` (OS file events) | ``polling`` (the OS refused native watches).
        watch_error: why native watching was refused (the inotify watch limit…), or None.
        sessions_dir: the DSH sessions folder (absolute).
        folder_present: the DSH sessions folder exists.
        files_tracked: logs followed now, every source.
        bytes_read: log bytes consumed since start.
        candidates_added: candidates the queue took since start.
        last_event_at: ISO-8601 UTC of the last file event, or None.
        errors: failures (a log, the watch, the database) since start; ``last_error`` the last one's text.
        warnings: lines the sources skipped or flagged since start.
        sessions_ended: sessions reported ended since start.
        backfill: the last backfill, every source together.
        sources: each configured source folder, in :data:`mmd.sources.FOLDERS` order.
    """

    sessions_dir: str
    running: bool = False
    phase: str = "stopped"
    mode: str = "native"
    watch_error: str | None = None
    folder_present: bool = False
    files_tracked: int = 0
    bytes_read: int = 0
    candidates_added: int = 0
    last_event_at: str | None = None
    errors: int = 0
    last_error: str | None = None
    warnings: int = 0
    sessions_ended: int = 0
    backfill: BackfillHealth = field(default_factory=BackfillHealth)
    sources: list[SourceHealth] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``daemon.status`` ``ingest`` object (camelCase keys, ``backfill`` and ``sources`` nested)."""
        b = self.backfill
        return {
            "running": self.running, "phase": self.phase, "mode": self.mode, "watchError": self.watch_error,
            "sessionsDir": self.sessions_dir,
            "folderPresent": self.folder_present, "filesTracked": self.files_tracked, "bytesRead": self.bytes_read,
            "candidatesAdded": self.candidates_added, "lastEventAt": self.last_event_at, "errors": self.errors,
            "lastError": self.last_error, "warnings": self.warnings, "sessionsEnded": self.sessions_ended,
            "backfill": {"done": b.done, "files": b.files, "bytes": b.bytes, "candidates": b.candidates,
                         "seconds": b.seconds},
            "sources": [s.to_json() for s in self.sources],
        }
