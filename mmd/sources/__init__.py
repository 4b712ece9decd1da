"""Agent session logs as utterances: one adapter per format behind one contract, and their registry.

Owns: :data:`SOURCES` (source name → adapter, the one place a format is named
for the rest of mmd) and :data:`SESSIONS_FOLDER` (the sources read from the
configured sessions folder). The contract is :mod:`.base` (:class:`Utterance`,
:class:`Position`, :class:`Slice`, :class:`Source`); the adapters are
:mod:`.dsh` (with :mod:`.logio`, plain and zstd JSONL reading) and :mod:`.other`.

Arrows: ``mmd.sources`` → the standard library only (``zstandard`` imported
lazily by :mod:`.logio.decode`, when a zstd log is read). Never: imports
``mmd.daemon`` or ``mmd.core``, watches files, or stores state — cursors are
JSON-able values the caller persists. Warnings go to the ``mmd.sources``
logger and to each slice's ``warnings``.
"""

from __future__ import annotations

from .base import WHO, Position, Slice, Source, Utterance, Who
from .dsh.source import DshSource
from .other import OtherSource

__all__ = ["SESSIONS_FOLDER", "SOURCES", "WHO", "Position", "Slice", "Source", "Utterance", "Who"]

SOURCES: dict[str, Source] = {
    "dsh": DshSource(),
    "other": OtherSource(),
    # Claude Code and Codex adapters register here (mmd/sources/claude_code.py, mmd/sources/codex.py).
}
"""Every source by name, in the order a path is offered to them (the first whose ``classify`` is true reads it)."""

SESSIONS_FOLDER: tuple[str, ...] = ("dsh", "other")
"""The sources that read the configured sessions folder (``daemon.sessions``, default ``$DSH_HOME/sessions``)."""
