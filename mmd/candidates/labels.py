"""Labels of a review-queue candidate's JSON that every review surface shows alike: project, score, and what
besides the body is worth showing.

Owns: reading them from a candidate as the daemon answers it (``queue.list`` /
``queue.get``), with the fallbacks a queue from an older daemon needs, and the
rule that a surface shows the body once: the summary and an evidence quote are
shown only when they say something the body does not (:func:`summary_besides`,
:func:`quote_besides`). Pure functions over JSON values (stdlib only, so
``mmctl`` and the daemon's page both use them). Never: reads a file or the queue.
"""

from __future__ import annotations

import unicodedata
from pathlib import PurePath
from typing import Any

__all__ = ["project_of", "quote_besides", "score_of", "summary_besides"]

_MARKS = str.maketrans("", "", "`*_~>#-")
"""Markdown marks left out when comparing what two texts say."""


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


def _plain(text: str) -> str:
    """``text`` for comparing what two texts say: NFKC, casefolded, markdown marks and whitespace dropped."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_MARKS).rstrip(".…:;,!? \t\r\n")
    return "".join(folded.split())


def summary_besides(candidate: dict[str, Any]) -> str | None:
    """The candidate's summary when the body does not begin with it (nor hold it whole), else None."""
    summary = str(candidate.get("summary") or "").strip()
    plain, body = _plain(summary), _plain(str(candidate.get("body") or ""))
    return summary if plain and not (body.startswith(plain) or plain in body) else None


def quote_besides(candidate: dict[str, Any]) -> str | None:
    """The first evidence quote that says more than the body, else None: a quote equal to the body, within it,
    or holding it whole (the statement in its own words, filler trimmed) is the body said again."""
    body = _plain(str(candidate.get("body") or ""))
    for evidence in candidate.get("evidence") or []:
        quote = str(evidence.get("quote") or "").strip() if isinstance(evidence, dict) else ""
        plain = _plain(quote)
        if plain and plain not in body and body not in plain:
            return quote
    return None
