"""The ``codex`` source: OpenAI Codex CLI rollouts as utterances (agent-session-formats.md §2, §3).

Owns: where Codex keeps rollouts (``$CODEX_HOME/sessions``, else
``~/.codex/sessions``), which files are rollouts (``YYYY/MM/DD/rollout-*.jsonl``),
both line formats (the ``{timestamp, type, payload}`` envelope, and the legacy
bare header + bare response items of mid-2025), and which items are text:
typed prompts from ``event_msg`` ``user_message`` (envelope; ``kind`` ``plain``
when present) or from ``response_item`` user messages (legacy files, and envelope
files until their first ``user_message`` event: an export that dropped the events
keeps its prompts) — never both, since every prompt is logged twice —, assistant
``output_text`` of ``response_item`` messages, and ``compacted`` summaries
(the handoff sentence cut) as ``summary``.

Never: emits developer or system messages, context Codex injects as role
``user`` (AGENTS.md, ``<environment_context>``, ``<turn_aborted>``, …, §2.7),
the IDE-context preamble, reasoning, tool calls and their output,
``agent_message`` / ``task_complete`` mirrors, ``turn_context``, a prompt re-sent
after ``turn_aborted`` a second time, or anything of a subagent / review /
compaction worker rollout (``session_meta.source`` is an object); decodes JSON
of a line whose raw bytes show it cannot hold such text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import Position, Slice, Utterance, Who
from .jsonl import SeenKeys, digest, is_compact, iso_utc, read_jsonl, string_after

__all__ = ["CodexSource", "typed_prompt"]

NAME = "codex"
_ROLLOUT = re.compile(r"^rollout-.+\.jsonl$")
_DAY_PARTS = (re.compile(r"^\d{4}$"), re.compile(r"^\d{2}$"), re.compile(r"^\d{2}$"))

_INJECTED = (
    "# agents.md instructions for", "<user_instructions>", "<environment_context>", "<turn_aborted>",
    "<user_shell_command>", "<skill>", "<subagent_notification>", "<goal_context>",
    "<recommended_plugins>", "<codex_internal_context", "<hook_prompt", "<agents_instructions>",
    "<multiagent_context>", "<permissions instructions>", "<collaboration_mode>", "<model_switch>",
)
"""Openings (lower case) of text Codex itself puts into user-role messages (§2.7)."""
_IDE_PREAMBLE = "# Context from my IDE setup:"
_IDE_REQUEST = re.compile(r"^## My request for Codex:[ \t]*\n?", re.M)
_HANDOFF = "Another language model started to solve this problem"
_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")

# Raw-byte tests; a quote inside a JSON string is escaped, so these match structure only.
_SKIPPED_TYPES = (b'"type":"turn_context"', b'"type":"function_call', b'"type":"custom_tool_call',
                  b'"type":"reasoning"', b'"type":"token_count"', b'"type":"agent_reasoning',
                  b'"type":"agent_message"', b'"type":"ghost_snapshot"', b'"type":"local_shell_call',
                  b'"type":"web_search_call"', b'"type":"task_started"')
"""Item types no utterance comes from: a line naming one and no message is skipped undecoded."""
_WANTED = (b'"type":"message"', b'"type":"user_message"', b'"type":"turn_aborted"', b'"type":"compacted"',
           b'"type":"session_meta"', b'"type":"task_complete"', b'"type":"turn_complete"')


def typed_prompt(text: str) -> str | None:
    """What a human typed in one user text (§2.7), or None when Codex injected it.

    Injected context is recognised by its opening marker, case-insensitively on the
    trimmed text; an IDE-context preamble is cut down to the part after ``## My request for Codex:``.
    """
    text = text.strip()
    if not text or text.lower().startswith(_INJECTED):
        return None
    if text.startswith(_IDE_PREAMBLE):
        m = _IDE_REQUEST.search(text)
        if m is None:
            return None
        text = text[m.end():].strip()
    return text or None


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c["text"] for c in content
            if isinstance(c, dict) and c.get("type") in kinds and isinstance(c.get("text"), str)]


def _stem(path: str) -> str:
    """A rollout's file name without ``rollout-`` and ``.jsonl``: the session id of a file that names none."""
    name = Path(path).name
    return name.removeprefix("rollout-").removesuffix(".jsonl")


def _resent(before: str, after: str) -> bool:
    """Whether ``after`` repeats ``before`` (whitespace aside), whole or as its start or extension."""
    a, b = " ".join(before.split()), " ".join(after.split())
    return a.startswith(b) or b.startswith(a)


class _Handler:
    """The per-read state of one rollout (see :class:`CodexSource`)."""

    def __init__(self, path: str, state: dict[str, Any]) -> None:
        self.path = path
        m = _UUID_TAIL.search(path)
        # a file named without its uuid and without a session_meta (an export) is its own session: its name
        self.session_id: str | None = state.get("session_id") or (m.group(1) if m else _stem(path))
        self.project: str | None = state.get("project")
        self.legacy = bool(state.get("legacy"))
        self.worker = bool(state.get("worker"))
        """A subagent, review or compaction rollout: nothing in it is read."""
        self.seen = SeenKeys(str(state.get("seen") or ""))
        self.events = state.get("events") is True
        """A ``user_message`` event was seen: prompts come from events only from then on."""
        self.aborted = state.get("aborted") is True
        """A ``turn_aborted`` came after the held prompt: the next prompt may be its re-send."""
        pending = state.get("pending")
        self.pending: dict[str, Any] | None = pending if isinstance(pending, dict) else None
        """The last prompt, ``{text, line, at}``, until its turn shows it stands (see :meth:`_prompt`)."""

    def state(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "project": self.project, "legacy": self.legacy,
                "worker": self.worker, "seen": self.seen.pack(), "events": self.events, "aborted": self.aborted,
                "pending": self.pending}

    def restart(self) -> None:
        self.legacy = self.worker = self.events = self.aborted = False
        self.pending = None

    def feed(self, index: int, line: bytes) -> list[Utterance]:
        if self.worker:
            return []
        if b'"type":"turn_context"' in line[:200]:
            cwd = string_after(line, b'"cwd":"')
            if cwd:
                self.project = cwd
            return []
        if is_compact(line) and self._cannot_hold_text(index, line):
            return []
        try:
            record = json.loads(line)
        except ValueError:
            return []
        if not isinstance(record, dict):
            return []
        if index == 0 and "type" not in record and "record_type" not in record:
            self._legacy_header(record)
            return []
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            self._meta(payload)
        elif kind == "response_item" and isinstance(payload, dict):
            return self._item(index, payload, record.get("timestamp"))
        elif kind == "event_msg" and isinstance(payload, dict):
            return self._event(index, payload, record.get("timestamp"))
        elif kind == "compacted" and isinstance(payload, dict):
            return self._compacted(index, payload, record.get("timestamp"))
        elif self.legacy and kind == "message":
            return self._item(index, record, None)
        return []

    @staticmethod
    def _cannot_hold_text(index: int, line: bytes) -> bool:
        if not any(n in line for n in _WANTED) and (index > 0 or b'"id"' not in line):
            return True
        return any(n in line for n in _SKIPPED_TYPES) and b'"type":"message"' not in line

    def _legacy_header(self, header: dict[str, Any]) -> None:
        self.legacy = True
        if isinstance(header.get("id"), str):
            self.session_id = header["id"]

    def _meta(self, meta: dict[str, Any]) -> None:
        if isinstance(meta.get("id"), str):
            self.session_id = meta["id"]
        if isinstance(meta.get("cwd"), str):
            self.project = meta["cwd"]
        if isinstance(meta.get("source"), dict):
            self.worker = True  # {"subagent": …}: its prompts were written by a model (§2.10)

    def _item(self, index: int, item: dict[str, Any], at: Any) -> list[Utterance]:
        if item.get("type") != "message":
            return []
        role = item.get("role")
        if role == "assistant":
            text = "\n\n".join(t.strip() for t in _texts(item.get("content"), ("output_text",)) if t.strip())
            return self._flush() + self._emit("assistant", text, index, at) if text else []
        if role == "user" and (self.legacy or not self.events):  # then only the events' copies
            texts = _texts(item.get("content"), ("input_text",))
            if self.project is None:
                self._cwd_from_context(texts)
            return self._prompt("\n\n".join(t for t in map(typed_prompt, texts) if t), index, at, item=True)
        return []

    def _cwd_from_context(self, texts: list[str]) -> None:
        for text in texts:
            m = re.search(r"<cwd>([^<\n]+)</cwd>", text)
            if text.lstrip().startswith("<environment_context>") and m:
                self.project = m.group(1).strip()
                return

    def _event(self, index: int, event: dict[str, Any], at: Any) -> list[Utterance]:
        kind = event.get("type")
        if kind == "turn_aborted":
            self.aborted = True
            return []
        if kind in ("task_complete", "turn_complete"):
            return self._flush()
        if kind != "user_message" or event.get("kind") not in (None, "plain"):
            return []
        message = event.get("message")
        text = typed_prompt(message) if isinstance(message, str) else None
        self.events = True
        held = self.pending
        if text and held is not None and held.get("item") and _resent(str(held.get("text")), text):
            self.pending = None  # the same prompt, held from its response item just before: the event's copy stands
        return self._prompt(text or "", index, at)

    def _prompt(self, text: str, index: int, at: Any, *, item: bool = False) -> list[Utterance]:
        """Hold a prompt until its turn shows it stands: a reply, the turn's end, or the next prompt.

        A prompt whose turn was aborted and that the user sends again (the same words, maybe
        re-wrapped or extended) is one prompt: only the longer of the two is emitted. ``item``:
        the prompt comes from a response item (its event, if one follows, replaces it).
        """
        if not text:
            return []
        out: list[Utterance] = []
        held = self.pending
        if held is not None and self.aborted and _resent(str(held.get("text")), text):
            if len(str(held.get("text"))) > len(text):
                text, index, at = str(held.get("text")), int(held.get("line", index)), held.get("at")
            self.pending = None
        out.extend(self._flush())
        self.aborted = False
        self.pending = {"text": text, "line": index, "at": at, **({"item": True} if item else {})}
        return out

    def _flush(self) -> list[Utterance]:
        held, self.pending = self.pending, None
        if held is None:
            return []
        return self._emit("human", str(held.get("text") or ""), int(held.get("line") or 0), held.get("at"))

    def _compacted(self, index: int, payload: dict[str, Any], at: Any) -> list[Utterance]:
        message = payload.get("message")
        if not isinstance(message, str):
            return []
        text = message.strip()
        if text.startswith(_HANDOFF):
            text = text.partition("\n")[2].strip()
        return self._emit("summary", text, index, at)

    def _emit(self, who: Who, text: str, index: int, at: Any) -> list[Utterance]:
        if not text or not self.seen.add(digest(who, str(at), text)):
            return []
        return [Utterance(who=who, text=text, agent=NAME, session_id=self.session_id, project=self.project,
                          at=iso_utc(at), position=Position(self.path, line=index))]


class CodexSource:
    """The ``codex`` :class:`~mmd.sources.base.Source` (agent-session-formats.md §2).

    Cursor: ``{"log": line-reader cursor, "state": {session_id, project, legacy, worker, seen,
    events, aborted, pending}}``: ``pending`` is the last prompt, held until its turn shows it stands;
    ``seen`` holds digests of the last 512 utterances (who, time, text), so a file read again
    from its start yields nothing twice.
    """

    name = NAME

    def default_dir(self, env: Mapping[str, str], home: Path) -> Path:
        """``$CODEX_HOME/sessions`` when that variable is set and not empty, else ``home/.codex/sessions``."""
        base = env.get("CODEX_HOME")
        return (Path(base) if base else home / ".codex") / "sessions"

    def classify(self, path: Path, root: Path) -> bool:
        """True for ``root/YYYY/MM/DD/rollout-*.jsonl`` (day folders in local time, §2.1)."""
        try:
            rel = path.relative_to(root)
        except ValueError:
            return False
        parts = rel.parts
        return (len(parts) == 4 and _ROLLOUT.match(parts[3]) is not None
                and all(p.match(part) for p, part in zip(_DAY_PARTS, parts[:3], strict=True)))

    def is_live(self, path: Path) -> bool:
        """Always False: Codex leaves no lock or end record; quiet time ends a session (§2.11)."""
        return False

    def read(self, path: str, cursor: dict[str, Any] | None, *, max_bytes: int, max_chars: int) -> Slice:
        """Utterances after ``cursor`` in one rollout (see :meth:`mmd.sources.base.Source.read`).

        Raises:
            OSError: the file cannot be read (FileNotFoundError when it vanished).
        """
        return read_jsonl(path, cursor, lambda state: _Handler(path, state), max_bytes=max_bytes, max_chars=max_chars)
