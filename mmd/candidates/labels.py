"""Labels of a review-queue candidate's JSON that every review surface shows alike: project, score, who said it,
its flags, its place in the order, what besides the body is worth showing, and what accepting an agent's proposal
changes (the diff).

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

__all__ = ["FLAG_MARK", "action_words", "flag_lines", "is_flagged", "project_of", "proposal_lines", "quote_besides",
           "rank_key", "score_of", "speaker_of", "speaker_words", "summary_besides"]

FLAG_MARK = "⚑"
"""What marks a flagged candidate on every surface (then the flag's kind and why)."""
_SPEAKER_WORDS = {"person": "the person", "agent": "the agent", "summary": "a summary", "remote": "a remote (sync)",
                  "outside-edit": "an outside edit"}

_MARKS = str.maketrans("", "", "`*_~>#-")
"""Markdown marks left out when comparing what two texts say."""
_ACTION_WORDS = {"append": "append to", "replace": "replace", "delete": "delete"}


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


def speaker_of(candidate: dict[str, Any]) -> str:
    """Who said it (``person`` | ``agent`` | ``summary`` | ``remote`` | ``outside-edit``), ``?`` from a daemon that
    does not say (before issue 29)."""
    return str(candidate.get("speaker") or "?")


def speaker_words(candidate: dict[str, Any]) -> str:
    """Who said it, in words: ``said by the agent`` (a surface's line of who said it)."""
    speaker = speaker_of(candidate)
    return f"said by {_SPEAKER_WORDS.get(speaker, speaker)}"


def is_flagged(candidate: dict[str, Any]) -> bool:
    """Whether the queue's door flagged it (an instruction aimed at an agent, a secret, hidden text)."""
    return bool(candidate.get("flags"))


def flag_lines(candidate: dict[str, Any]) -> list[str]:
    """One line per flag: ``⚑ fetched script: runs a script fetched from the network: "curl … | sh"``."""
    return [f"{FLAG_MARK} {f.get('kind')}: {f.get('why')}" for f in candidate.get("flags") or [] if isinstance(f, dict)]


def rank_key(candidate: dict[str, Any]) -> tuple[bool, float, int]:
    """The queue's order of pending candidates: unflagged before flagged, then highest score, then oldest."""
    return is_flagged(candidate), -score_of(candidate), int(candidate.get("id") or 0)


def action_words(candidate: dict[str, Any]) -> str:
    """What accepting the candidate does to its topic, in a card's words: ``append to`` (its note), ``replace`` (its
    text), ``delete`` (the note), else ``new`` (a new note: a draft, or a proposal to create one)."""
    return _ACTION_WORDS.get(str((candidate.get("proposal") or {}).get("action")), "new")


def proposal_lines(candidate: dict[str, Any]) -> list[str]:
    """What a review shows of an agent's proposal (rule ``agent.propose``; ``[]`` for any other candidate): who
    proposed it and why, then what accepting changes — a unified diff of the note's text now (``proposal.current``)
    against the proposed one for ``replace``, the note's text for ``delete`` (gone once accepted), the note it adds to
    for ``append``."""
    proposal = candidate.get("proposal") or {}
    if candidate.get("rule") != "agent.propose":
        return []
    action, topic, current = proposal.get("action"), proposal.get("topic", ""), proposal.get("current")
    reason = proposal.get("reason")
    out = [f"proposed by {proposal.get('by') or 'an agent'}: {reason}" if reason else
           f"proposed by {proposal.get('by') or 'an agent'} (no reason given)"]
    if action == "replace" and isinstance(current, str):
        import difflib

        diff = difflib.unified_diff(current.splitlines(), str(candidate.get("body", "")).splitlines(),
                                    f"{topic} (now)", f"{topic} (proposed)", n=2, lineterm="")
        out += [f"replaces the text of {topic}:", *diff]
    elif action == "delete":
        out.append(f"deletes {topic}; its text now:")
        out += [f"- {line}" for line in (current or "").splitlines()] or ["(no note of that name now)"]
    elif action == "append":
        missing = "" if isinstance(current, str) else " (no note of that name now: accepting creates it)"
        out.append(f"appends to {topic}{missing}")
    return out
