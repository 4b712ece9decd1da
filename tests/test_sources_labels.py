"""The claude-code and codex sources over the shared samples (skipped visibly when ../shared is absent).

- ``sessions-other``: every *hidden* noise item of ``labels.json`` is in no utterance, and every
  labelled memory's quote is inside some utterance.
- ``real-sessions``: no utterance comes from a record holding tool output (``toolUseResult``,
  ``tool_result``, function-call output) or holds ``N→`` read prefixes, an injected skill /
  AGENTS.md body, a system reminder or (prompts and summaries) a command or notification wrapper.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mmd.sources.base import Source, Utterance
from mmd.sources.claude_code import ClaudeCodeSource
from mmd.sources.codex import CodexSource
from tests.conftest import shared_path
from tests.test_sources_claude_code import read_all


def _utterances(home: Path) -> dict[str, list[Utterance]]:
    """Every utterance of every log the two sources classify under ``home``, by path relative to it."""
    out: dict[str, list[Utterance]] = {}
    sources: list[tuple[Source, Path]] = [(ClaudeCodeSource(), home / "claude" / "projects"),
                                          (CodexSource(), home / "codex" / "sessions")]
    for source, root in sources:
        for path in sorted(root.rglob("*.jsonl")):
            if source.classify(path, root):
                out[path.relative_to(home).as_posix()], _, _ = read_all(source, path)
    return out


def test_labelled_noise_is_never_emitted_and_every_memory_is() -> None:
    home = shared_path("sessions-other")
    labels = json.loads((home / "labels.json").read_text(encoding="utf-8"))
    by_file = _utterances(home)
    everything = [u.text for texts in by_file.values() for u in texts]
    hidden = [n for f in labels["files"] for n in f["noise"] if not n["visible_to_correct_reader"]]
    assert len(hidden) > 30
    leaks = [(n["id"], n["quote"]) for n in hidden if any(n["quote"] in text for text in everything)]
    assert leaks == []
    memories = [(f["path"], m) for f in labels["files"] for m in f["memories"]]
    assert len(memories) == 24
    missing = [m["id"] for path, m in memories if not any(m["quote"] in u.text for u in by_file.get(path, []))]
    assert missing == []
    assert "claude/projects/-home-mara-code-teashop-django/7c1e5a92-3b4d-4f0e-9a61-2d8f0b6c4e13/subagents/" \
           "agent-a5c1e07.jsonl" not in by_file


_READ_PREFIX = re.compile(r"^\s*\d+→", re.M)
_ANYWHERE = ("<system-reminder>", "</system-reminder>", "# AGENTS.md instructions for", "<INSTRUCTIONS>",
             "<environment_context>", "<user_instructions>", "Base directory for this skill:")
_NOT_TYPED = ("<command-name>", "<local-command-stdout>", "<task-notification>", "<local-command-caveat>",
              "Caveat: The messages below were generated", "[Request interrupted by user", "<turn_aborted>",
              "Operation stopped by hook")
"""Wrappers a reply may discuss but no prompt or summary may hold."""


def _not_text(record: Any) -> str:
    """Why the record an utterance came from cannot hold model-visible text, or ``""``."""
    if not isinstance(record, dict):
        return "not an object"
    if "toolUseResult" in record or record.get("isMeta") or record.get("isSidechain"):
        return "tool result, meta or sidechain record"
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in message["content"]):
        return "tool_result block"
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else record
    kind = str(payload.get("type", ""))
    if kind.endswith(("_output", "_call")) or kind in ("reasoning", "agent_reasoning", "progress"):
        return f"a {kind} item"
    return ""


def test_real_transcripts_yield_no_tool_output_reminders_or_injected_bodies() -> None:
    home = shared_path("real-sessions")
    by_file = _utterances(home)
    assert len(by_file) == 18
    assert sum(len(v) for v in by_file.values()) > 900
    bad: list[tuple[str, int | None, str]] = []
    for rel, utterances in by_file.items():
        lines = (home / rel).read_bytes().splitlines()
        for u in utterances:
            assert u.position.line is not None
            hits = [m for m in _ANYWHERE if m in u.text]
            if u.who != "assistant":
                hits += [m for m in _NOT_TYPED if m in u.text]
            if _READ_PREFIX.search(u.text):
                hits.append("N→")
            why = _not_text(json.loads(lines[u.position.line]))
            bad += [(rel, u.position.line, h) for h in hits + ([why] if why else [])]
    assert bad == []
