"""Where a memory lives: root resolution and the layout under it (mm v1 §2).

Root resolution, highest first: an explicit root (``~``, ``$VAR`` and ``${VAR}``
expanded), ``$DSH_MEMORY_ROOT``, ``$DSH_HOME/memory``; ``$DSH_HOME`` defaults
to ``~/.dsh``. Callers pass the environment in; this module never reads
``os.environ`` itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .lazyre import lazy_compile

__all__ = [
    "INDEX_NAME",
    "DETAIL_DIR",
    "STATE_DIR",
    "detail_rel",
    "dsh_home",
    "expand_path",
    "resolve_root",
]

INDEX_NAME = "MEMORY.md"
"""The index file, relative to the root."""
DETAIL_DIR = "memories"
"""The detail folder, relative to the root."""
STATE_DIR = ".mmd"
"""mmd's own state (lock, database), relative to the root; every mm reader ignores it."""

_VAR = lazy_compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def expand_path(raw: str, env: Mapping[str, str]) -> str:
    """Expand ``$VAR``/``${VAR}`` (unknown ones become empty, as in the reference), then ``~``."""
    expanded = _VAR.sub(lambda m: env.get(m.group(1), ""), raw)
    if expanded == "~" or expanded.startswith("~/"):
        home = env.get("HOME") or os.path.expanduser("~")
        expanded = home + expanded[1:]
    return expanded


def dsh_home(env: Mapping[str, str]) -> Path:
    """``$DSH_HOME`` (trimmed) or ``~/.dsh`` when unset or blank."""
    value = env.get("DSH_HOME", "").strip()
    if value:
        return Path(value)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".dsh"


def resolve_root(explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    """The absolute memory root (mm v1 §2), not necessarily existing."""
    for raw in (os.fspath(explicit) if explicit is not None else "", env.get("DSH_MEMORY_ROOT", "")):
        if raw.strip():
            return Path(os.path.abspath(expand_path(raw.strip(), env)))
    return Path(os.path.abspath(dsh_home(env) / "memory"))


def detail_rel(topic: str) -> str:
    """``memories/<topic>.md``: the POSIX path a write of ``topic`` always uses."""
    return f"{DETAIL_DIR}/{topic}.md"
