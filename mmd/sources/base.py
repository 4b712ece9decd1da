"""The source contract: what an agent-log adapter gives the rest of mmd.

Owns: :class:`Utterance` (one piece of model-visible text, the only thing
ingestion sees of a log), :class:`Position` (where it was said), :class:`Slice`
(one bounded read of one log by cursor) and the :class:`Source` protocol that
every adapter (``dsh``, ``claude-code``, ``codex``, ``other``) implements.

Never: decides what is worth remembering (``mmd.candidates`` does), stores
cursors (the caller persists :attr:`Slice.cursor` as opaque JSON), reads
``os.environ`` (the composition root hands ``env`` in), or imports anything
outside the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

__all__ = ["WHO", "Position", "Slice", "Source", "Utterance", "Who", "text_blocks"]

Who = Literal["human", "assistant", "summary", "text"]
WHO: tuple[Who, ...] = ("human", "assistant", "summary", "text")
"""Who said an utterance:

- ``human``: typed by the person (never injected context, hook output or tool results);
- ``assistant``: the agent's visible reply text (never reasoning, tool calls or their output);
- ``summary``: a compaction summary the agent wrote of its own session;
- ``text``: a file that is not an agent log (``other`` source): the mm v1 rules apply to it
  as the reference applies them.
"""


@dataclass(frozen=True, slots=True)
class Position:
    """A stable place in a log, for evidence and for deduplication of replays.

    Attributes:
        file: the log's path as the daemon found it (POSIX string).
        line: 0-based line index of the record in the file (JSONL), or None (a whole-file read).
        seq: the format's own sequence number (DSH ``seq``), or None.
        uuid: the record's own id where the format has one (Claude Code ``uuid``,
            DSH message id or compaction id), or None.
    """

    file: str
    line: int | None = None
    seq: int | None = None
    uuid: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{file, line?, seq?, uuid?}`` (absent keys omitted)."""
        out: dict[str, Any] = {"file": self.file}
        if self.line is not None:
            out["line"] = self.line
        if self.seq is not None:
            out["seq"] = self.seq
        if self.uuid is not None:
            out["uuid"] = self.uuid
        return out


@dataclass(frozen=True, slots=True)
class Utterance:
    """One piece of model-visible text of a session (DESIGN "Sources and utterances").

    Attributes:
        who: see :data:`WHO`.
        text: the text as the model saw it, whitespace-trimmed, never empty.
        agent: the source's name (``dsh``, ``claude-code``, ``codex``, ``other``).
        session_id: the agent's session id, or None when the format has none.
        project: the working directory the session ran in, or None when unknown.
        at: when it was said, ISO-8601 UTC (``2026-11-30T20:05:08.000Z``), or None when unknown.
        position: where in the log.
    """

    who: Who
    text: str
    agent: str
    session_id: str | None
    project: str | None
    at: str | None
    position: Position


@dataclass(frozen=True, slots=True)
class Slice:
    """The result of one :meth:`Source.read`: utterances and the cursor after them.

    Attributes:
        utterances: in log order.
        cursor: opaque JSON-able value to persist and hand back to the next read.
        consumed: bytes of the log file consumed by this read (for progress and health figures).
        more: True when the read stopped at its byte or character cap: call again with ``cursor``.
        restarted: True when the file was read again from its start (replaced, truncated, a new
            generation); the utterances may repeat earlier ones and the caller dedupes them.
        session_id: the session the log belongs to, as far as known after this read.
        project: the session's working directory, as far as known after this read.
        warnings: one line each, what was skipped and why (a malformed line, a cut frame).
    """

    utterances: list[Utterance]
    cursor: dict[str, Any]
    consumed: int = 0
    more: bool = False
    restarted: bool = False
    session_id: str | None = None
    project: str | None = None
    warnings: list[str] = field(default_factory=list)


class Source(Protocol):
    """An agent-log format: where its logs live, which files are logs, how to read one by cursor.

    Implementations hold no per-file state: everything a read needs comes from
    the cursor handed in, so one instance serves every file and thread.
    """

    name: str
    """The source's kind, as in config and utterances: ``dsh``, ``claude-code``, ``codex``, ``other``."""

    def default_dir(self, env: Mapping[str, str], home: Path) -> Path:
        """The folder this agent writes its logs to, from ``env`` (never ``os.environ``) and the home folder."""
        ...

    def classify(self, path: Path, root: Path) -> bool:
        """Whether ``path`` (under the source folder ``root``) is a log this source reads now.

        Doubles as the watch filter: cheap, no reads beyond a ``stat``/``listdir``.
        """
        ...

    def is_live(self, path: Path) -> bool:
        """Whether the log's writer is known to still be running (DSH: ``session.lock`` held).

        False when the format gives no such signal; quiet time alone then ends a session.
        """
        ...

    def read(self, path: str, cursor: dict[str, Any] | None, *, max_bytes: int, max_chars: int) -> Slice:
        """Read what follows ``cursor`` in ``path`` (from the start when None): complete lines only.

        Stops after about ``max_bytes`` bytes of log or ``max_chars`` code points of utterance
        text (then ``more`` is True). A torn last line is never read; a file replaced or truncated
        since ``cursor`` is read again from its start (``restarted``).

        Raises:
            OSError: if the file cannot be read (FileNotFoundError when it vanished).
        """
        ...


def text_blocks(content: Any) -> list[str]:
    """The texts of a message's ``content``: the string itself, or each ``{"type": "text", "text": …}`` block of
    a block list (the Anthropic message shape, which DSH and Claude Code logs share); ``[]`` for anything else."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
