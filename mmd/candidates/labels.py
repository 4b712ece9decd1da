"""Labels of a review-queue candidate's JSON that every review surface shows alike: project and score.

Owns: reading them from a candidate as the daemon answers it (``queue.list`` /
``queue.get``), with the fallbacks a queue from an older daemon needs. Pure
functions over JSON values (stdlib only, so ``mmctl`` and the daemon's page both
use them). Never: reads a file or the queue.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

__all__ = ["project_of", "score_of"]


def project_of(candidate: dict[str, Any]) -> str:
    """The candidate's project: its ``project``, else its first evidence's, else the log's project folder
    (DSH layout ``<project>/<session>/<log>``), else ``"(unknown)"``."""
    if candidate.get("project"):
        return str(candidate["project"])
    for quote in candidate.get("evidence") or []:
        if isinstance(quote, dict) and quote.get("project"):
            return str(quote["project"])
    file = (candidate.get("source") or {}).get("file") or ""
    parts = PurePath(file).parts
    return parts[-3] if len(parts) >= 3 else "(unknown)"


def score_of(candidate: dict[str, Any]) -> float:
    """The candidate's ``score`` (0 when it has none)."""
    score = candidate.get("score")
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else 0.0
