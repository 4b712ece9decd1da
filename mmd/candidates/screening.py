"""The review queue's door: every candidate screened before it is stored, whoever made it (issue 29).

Owns: :func:`screen_candidate` — the one function the queue calls on every candidate it is handed
(session logs, ``mm:`` lines, the extractor's output, a sync's conflicts and held topics, outside
edits, an agent's proposals), so nothing reaches ``state.db``, an event or a surface unscreened:

- **secrets** (:mod:`mmd.screen.secrets`) in the topic, summary, body, evidence quotes and a held topic's
  diff are replaced by ``‹secret: <kind>›``; a topic made of the value's words loses them
  (``staging-db-password-hunter2`` → ``staging-db-password``); the statement's identity (``norm``) is the
  redacted text's, so no key carries a value either; ``redacted`` marks it;
- **hidden text** (:mod:`mmd.screen.hidden`) is escaped (``\\u{202E}``) where it is stored and shown;
- **instructions aimed at an agent** (:mod:`mmd.screen.instructions`) are read in what the text says once its
  hidden text is revealed (tag characters spell ASCII), so a smuggled "ignore all previous instructions" is seen;
- ``flags`` lists what was found, ``{kind, why}`` each (an instruction's kind, ``secret``, ``hidden text``);
- ``speaker`` says who said it (:data:`SPEAKERS`, :func:`speaker_of`); an agent's marked line is visible but never
  pinned or scored as the person's own words (:data:`AGENT_MARK_SCORE`).

:func:`text_flags` is the same screen for a note's text (a synced or outside-edited topic, :mod:`mmd.daemon.holds`).
Pure functions over values: never stores, reads files or decides (a flag is a fact about the words: the queue
sorts flagged ones last and keeps them out of bulk accepts, a person decides).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Sequence

from mmd.core.text import TOPIC_MAX_LENGTH, TOPIC_RE
from mmd.screen.hidden import Hidden, escape_hidden, find_hidden, reveal
from mmd.screen.instructions import KINDS as INSTRUCTION_KINDS
from mmd.screen.instructions import flags as instruction_flags
from mmd.screen.secrets import MARKER_RE, Finding, find_secrets, marker, redact
from mmd.screen.spans import replace_spans

from .model import NewCandidate
from .pipeline import MARKED_SCORE
from .score import WHO_FACTOR

__all__ = ["AGENT_MARK_SCORE", "FLAG_KINDS", "SPEAKERS", "screen_candidate", "shown", "speaker_of", "text_flags"]

SPEAKERS = ("person", "agent", "summary", "remote", "outside-edit")
"""Who said a candidate: the person, the agent (its reply, its proposal), a compaction summary or an extractor's
distillation, a remote (a sync's conflict or held topic), an edit of the files made outside mmd."""
FLAG_KINDS = (*INSTRUCTION_KINDS, "secret", "hidden text")
"""The kinds of a candidate's flags: the instructions' kinds, then ``secret`` (redacted) and ``hidden text``
(escaped)."""
AGENT_MARK_SCORE = round(MARKED_SCORE * WHO_FACTOR["assistant"], 4)
"""The most an agent's marked line (rule ``mm.*``) scores: its words weigh as the assistant's do (1.4), below every
line the person marked (2.0), above every rule's draft."""
_WHO = {"human": "person", "assistant": "agent", "summary": "summary", "text": "person"}
"""An utterance's ``who`` → a speaker (a file in the sessions folder that is no agent log counts as the person's:
whoever keeps it there wrote it)."""


def speaker_of(c: NewCandidate) -> str:
    """Who said ``c``: its own :attr:`~.model.NewCandidate.speaker` when a producer set one, ``remote`` for a sync's
    candidate (kind ``conflict``, a ``git.*`` rule), else its evidence's: ``person`` when the person said it anywhere,
    else who said it first (an extractor's statement is its ``summary``, unless it quotes the agent)."""
    if c.speaker in SPEAKERS:
        return c.speaker
    if c.kind == "conflict" or c.rule.startswith("git."):
        return "remote"
    whos = [e.who for e in c.evidence]
    if "human" in whos and c.rule != "extractor":
        return "person"
    first = whos[0] if whos else c.source_kind
    if c.rule == "extractor":
        return "agent" if first == "assistant" else "summary"
    return _WHO.get(first, "person")


def shown(text: str) -> str:
    """``text`` as every surface may show it: secrets redacted, hidden text escaped."""
    return escape_hidden(redact(text))


class _Memo:
    """What the screen finds in each distinct text of one candidate, found once (a body, its summary and its quotes
    are often the same words)."""

    def __init__(self) -> None:
        self._secrets: dict[str, list[Finding]] = {}
        self._hidden: dict[str, list[Hidden]] = {}

    def secrets(self, text: str) -> list[Finding]:
        if text not in self._secrets:
            self._secrets[text] = find_secrets(text)
        return self._secrets[text]

    def hidden(self, text: str) -> list[Hidden]:
        if text not in self._hidden:
            self._hidden[text] = find_hidden(text)
        return self._hidden[text]

    def shown(self, text: str) -> str:
        """:func:`shown` of ``text``, from what was found."""
        found = self.secrets(text)
        out = replace_spans(text, ((f.start, f.end, marker(f.kind)) for f in found)) if found else text
        return escape_hidden(out) if self.hidden(text) else out


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def text_flags(texts: Iterable[str], *, already: Sequence[dict[str, str]] = (),
               memo: _Memo | None = None) -> list[dict[str, str]]:
    """The flags of ``texts`` (raw or already screened; each distinct one read once): each instruction aimed at an
    agent in what they say once hidden text is revealed, then one ``secret`` flag naming the kinds found (or
    already redacted), then one ``hidden text`` flag; ``already`` (flags found before, kept) first, each
    ``(kind, why)`` once.

    Returns:
        ``[{kind, why}]`` (:data:`FLAG_KINDS`), empty when nothing was found.
    """
    memo = memo or _Memo()
    out: list[dict[str, str]] = [dict(f) for f in already]
    seen = {(f.get("kind"), f.get("why")) for f in out}
    secrets: list[str] = []
    hidden: dict[str, int] = {}
    most = 0

    def add(kind: str, why: str) -> None:
        if (kind, why) not in seen and all(f["kind"] != kind for f in out if kind in ("secret", "hidden text")):
            seen.add((kind, why))
            out.append({"kind": kind, "why": why})

    for text in dict.fromkeys(texts):
        if not text:
            continue
        for flag in instruction_flags(reveal(text) if memo.hidden(text) else text):
            add(flag.kind, flag.why)
        secrets += [f.kind for f in memo.secrets(text)] + [m.group()[10:-1] for m in MARKER_RE.finditer(text)]
        found = memo.hidden(text)
        most = max(most, len(found))
        for h in found:
            hidden[h.kind] = 1
    if secrets:
        kinds = list(dict.fromkeys(secrets))
        add("secret", f"held {'a secret' if len(kinds) == 1 else 'secrets'} ({', '.join(kinds)}): kept as "
                      "‹secret: …›, never the value")
    if hidden:
        add("hidden text", f"holds {_plural(most, 'hidden character')} ({', '.join(hidden)}): shown escaped as "
                           "\\u{…}")
    return out


def _topic(topic: str, raw: Sequence[str], body: str, memo: _Memo) -> str:
    """``topic`` without the words of any secret in ``raw`` (a proposal made a slug of them, maybe cut short); a
    topic left blank, a slug no more, or still holding a secret becomes ``memo-<8 hex of the redacted body>``."""
    words = {w for text in dict.fromkeys(raw) for f in memo.secrets(text)
             for w in re.split(r"[^a-z0-9]+", text[f.start:f.end].lower()) if w}
    kept = "-".join(w for w in topic.split("-") if w not in words) if words else topic
    if kept == topic and not find_secrets(topic) and not find_secrets(topic.replace("-", " ")):
        return topic
    kept = re.sub(r"-{2,}", "-", kept).strip("-._")
    if not kept or not TOPIC_RE.fullmatch(kept) or len(kept) > TOPIC_MAX_LENGTH or find_secrets(kept) or \
            find_secrets(kept.replace("-", " ")):
        return f"memo-{hashlib.sha256(body.encode()).hexdigest()[:8]}"
    return kept


def screen_candidate(c: NewCandidate) -> NewCandidate:
    """``c`` as the queue stores it: its text redacted and escaped, its topic clean of secrets, its ``speaker`` and
    ``flags`` set, ``redacted`` when a value was taken out, and an agent's marked line unpinned (visible still)
    and scored at most :data:`AGENT_MARK_SCORE`. Idempotent: a screened candidate screened again is unchanged
    (the flags found the first time are kept: an escaped character is no hidden text any more)."""
    speaker, memo = speaker_of(c), _Memo()
    raw = [c.summary, c.body, *(e.quote for e in c.evidence), *([c.diff] if c.diff else [])]
    flags = text_flags(raw, already=c.flags, memo=memo)
    body = memo.shown(c.body)
    evidence = tuple(e if memo.shown(e.quote) == e.quote else dataclasses.replace(e, quote=memo.shown(e.quote))
                     for e in c.evidence)
    redacted = c.redacted or any(f["kind"] == "secret" for f in flags)
    pinned, visible, score = c.pinned, c.visible, c.score
    if speaker == "agent" and pinned:  # the agent marked it: visible, never pinned or scored as the person's words
        pinned, visible = False, True
        if c.rule.startswith("mm."):
            score = min(score, AGENT_MARK_SCORE)
    return dataclasses.replace(
        c, topic=_topic(c.topic, raw, body, memo), summary=memo.shown(c.summary), body=body, chars=len(body),
        evidence=evidence, speaker=speaker, flags=tuple(flags), redacted=bool(redacted), pinned=pinned,
        visible=visible, score=score, diff=memo.shown(c.diff) if c.diff else c.diff)
