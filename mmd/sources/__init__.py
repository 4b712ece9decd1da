"""Agent session logs as utterances: one adapter per format behind one contract, and their registry.

Owns: :data:`SOURCES` (source name → adapter, the one place a format is named
for the rest of mmd), :data:`FOLDERS` (each configurable source kind → the
sources that read its folder) and :data:`SESSIONS_FOLDER` (the sources read
from the DSH sessions folder). The contract is :mod:`.base` (:class:`Utterance`,
:class:`Position`, :class:`Slice`, :class:`Source`); the adapters are
:mod:`.dsh` (with :mod:`.logio`, plain and zstd JSONL reading),
:mod:`.claude_code`, :mod:`.codex` (both over :mod:`.jsonl`) and :mod:`.other`.

Arrows: ``mmd.sources`` → the standard library only (``zstandard`` imported
lazily by :mod:`.logio.decode`, when a zstd log is read). Never: imports
``mmd.daemon`` or ``mmd.core``, watches files, or stores state — cursors are
JSON-able values the caller persists. Warnings go to the ``mmd.sources``
logger and to each slice's ``warnings``.
"""

from __future__ import annotations

from .base import WHO, Position, Slice, Source, Utterance, Who
from .claude_code import ClaudeCodeSource
from .codex import CodexSource
from .dsh.source import DshSource
from .other import OtherSource

__all__ = ["FOLDERS", "SESSIONS_FOLDER", "SESSIONS_KIND", "SOURCES", "WHO",
           "Position", "Slice", "Source", "Utterance", "Who"]

SOURCES: dict[str, Source] = {
    "dsh": DshSource(),
    "other": OtherSource(),
    "claude-code": ClaudeCodeSource(),
    "codex": CodexSource(),
}
"""Every source by name, in the order a path is offered to them (the first whose ``classify`` is true reads it)."""

SESSIONS_KIND = "dsh"
"""The configurable source kind whose folder is the daemon's sessions folder (``--sessions``,
``daemon.sessions``, default ``$DSH_HOME/sessions``): always enabled, as before other agents were read."""

SESSIONS_FOLDER: tuple[str, ...] = (SESSIONS_KIND, "other")
"""The sources that read the configured sessions folder (``daemon.sessions``, default ``$DSH_HOME/sessions``)."""

FOLDERS: dict[str, tuple[str, ...]] = {
    SESSIONS_KIND: SESSIONS_FOLDER,
    "claude-code": ("claude-code",),
    "codex": ("codex",),
}
"""The source kinds a user configures (``--source KIND=PATH``), each → the sources that read its folder, in the
order a path is offered to them. The first name is the kind's own adapter (its ``default_dir`` gives the folder)."""
