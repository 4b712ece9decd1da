"""Session-log ingestion: follow the source folders (:mod:`.follow`), harvest each log into the queue (:mod:`.harvest`).

Arrows: → :mod:`mmd.sources` (the registry; no format is named here),
:mod:`mmd.candidates`, :mod:`mmd.core`, and the daemon's ``queue`` / ``statedb``.
Health is typed (:mod:`.health`).
"""

from __future__ import annotations

from .follow import Ingestor
from .harvest import AddedBatch
from .health import IngestHealth

__all__ = ["AddedBatch", "IngestHealth", "Ingestor"]
