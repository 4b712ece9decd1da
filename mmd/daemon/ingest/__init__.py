"""Session-log ingestion: follow the source folders (:mod:`.follow`, :mod:`.folders`), harvest each log into the queue
(:mod:`.harvest`).

Arrows: → :mod:`mmd.sources` (the registry; no format is named here),
:mod:`mmd.candidates`, :mod:`mmd.core`, and the daemon's ``queue`` / ``statedb``.
Health is typed (:mod:`.health`).
"""

from __future__ import annotations

from .folders import EndedSession
from .follow import Ingestor
from .harvest import AddedBatch
from .health import IngestHealth, SourceHealth

__all__ = ["AddedBatch", "EndedSession", "IngestHealth", "Ingestor", "SourceHealth"]
