"""Options of one memory (the reference's ``MemoryOptions``), validated once.

Every size is a positive integer: lines, UTF-8 bytes or code points as named.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from .errors import ErrorCode, MMError
from .model import (
    DEFAULT_DETAIL_MAX_BYTES,
    DEFAULT_INDEX_BYTES,
    DEFAULT_INDEX_LINES,
    DEFAULT_MEMORY_ID,
    DEFAULT_SEARCH_LIMIT,
    DEFAULT_SNIPPET_CHARS,
    DEFAULT_WRITE_BUDGET,
)
from .paths import INDEX_NAME, dsh_home, resolve_root
from .record import Record
from .text import TOPIC_RE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SEARCH_MODES", "MemoryOptions", "is_js_integer", "recorded_header"]

SEARCH_MODES = ("auto", "scan", "fts5")
"""Accepted ``search.mode`` values (mm v1 §8)."""


def is_js_integer(value: object) -> bool:
    """JavaScript ``Number.isInteger``: an int (not bool) or an integral float."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


_HEAD_BYTES = 4096
"""How much of ``MEMORY.md`` :func:`recorded_header` reads, in bytes (the header comes first)."""
_CAPS = re.compile(r"^(\d{1,9}) lines / (\d{1,12}) bytes$")


def recorded_header(root: Path) -> dict[str, Any]:
    """What the root's index header records (mm v1 §3): ``{"memory_id": slug, "index_lines": int,
    "index_bytes": int}``, each key present only when its ``> mm-id:`` / ``> mm-caps: N lines / M bytes`` line
    is there before the first entry and well-formed (a slug; positive integers).

    Reads at most the first :data:`_HEAD_BYTES` bytes of the index; never raises (no index: ``{}``).
    """
    try:
        with open(root / INDEX_NAME, "rb") as index:
            head = index.read(_HEAD_BYTES)
    except OSError:
        return {}
    found: dict[str, Any] = {}
    for line in head.decode("utf-8", "replace").splitlines():
        if line.startswith("## "):
            break
        if line.startswith("> mm-id:"):
            value = line[len("> mm-id:"):].strip()
            if TOPIC_RE.fullmatch(value):
                found["memory_id"] = value
        elif line.startswith("> mm-caps:"):
            caps = _CAPS.match(line[len("> mm-caps:"):].strip())
            if caps and int(caps.group(1)) > 0 and int(caps.group(2)) > 0:
                found["index_lines"], found["index_bytes"] = int(caps.group(1)), int(caps.group(2))
    return found


def _positive(name: str, value: Any, default: int) -> int:
    value = default if value is None else value
    if not is_js_integer(value) or value < 1:
        raise MMError(ErrorCode.E_INVALID, f"{name} must be a positive integer")
    return int(value)


class MemoryOptions(Record):
    """Resolved, validated options of one memory root.

    Attributes:
        root: absolute memory root (mm v1 §2).
        dsh_home: the ``$DSH_HOME`` folder (digest looks for logs in its ``sessions/``).
        memory_id: slug used in URIs.
        index_lines: MEMORY.md cap in lines.
        index_bytes: MEMORY.md cap in UTF-8 bytes.
        detail_max_bytes: cap of one serialized detail file in UTF-8 bytes.
        default_write_budget: per-write budget in code points.
        search_mode: ``auto`` | ``scan`` | ``fts5``.
        search_limit: default number of matches.
        max_snippet_chars: snippet cap in code points.
        nudge_enabled: periodic nudges on (the daemon's schedule).
        nudge_interval_ms: period of the nudge, in milliseconds.
    """

    __slots__ = ("root", "dsh_home", "memory_id", "index_lines", "index_bytes", "detail_max_bytes",
                 "default_write_budget", "search_mode", "search_limit", "max_snippet_chars", "nudge_enabled",
                 "nudge_interval_ms")

    def __init__(self, root: Path, dsh_home: Path, memory_id: str = DEFAULT_MEMORY_ID,
                 index_lines: int = DEFAULT_INDEX_LINES, index_bytes: int = DEFAULT_INDEX_BYTES,
                 detail_max_bytes: int = DEFAULT_DETAIL_MAX_BYTES, default_write_budget: int = DEFAULT_WRITE_BUDGET,
                 search_mode: str = "auto", search_limit: int = DEFAULT_SEARCH_LIMIT,
                 max_snippet_chars: int = DEFAULT_SNIPPET_CHARS, nudge_enabled: bool = False,
                 nudge_interval_ms: int = 30 * 60 * 1000) -> None:
        self.root = root
        self.dsh_home = dsh_home
        self.memory_id = memory_id
        self.index_lines = index_lines
        self.index_bytes = index_bytes
        self.detail_max_bytes = detail_max_bytes
        self.default_write_budget = default_write_budget
        self.search_mode = search_mode
        self.search_limit = search_limit
        self.max_snippet_chars = max_snippet_chars
        self.nudge_enabled = nudge_enabled
        self.nudge_interval_ms = nudge_interval_ms

    @classmethod
    def create(
        cls,
        *,
        root: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        memory_id: Any = None,
        index_lines: Any = None,
        index_bytes: Any = None,
        detail_max_bytes: Any = None,
        default_write_budget: Any = None,
        search_mode: Any = None,
        search_limit: Any = None,
        max_snippet_chars: Any = None,
        nudge_enabled: Any = None,
        nudge_interval_ms: Any = None,
    ) -> MemoryOptions:
        """Validate raw values (None = default) and resolve the root against ``env``.

        ``memory_id`` None is the id the root's ``MEMORY.md`` records (:func:`recorded_header`), else ``local``;
        ``index_lines`` and ``index_bytes`` both None are the caps it records, else 200 / 25600.

        ``env`` defaults to ``os.environ``; pass a mapping to resolve elsewhere.

        Raises:
            MMError(E_INVALID): naming the first bad option, with the reference's message.
        """
        environ: Mapping[str, str] = os.environ if env is None else env
        resolved = resolve_root(root, environ)
        # unset: what the root's header records (a root made as "work" with 5000-line caps stays so whoever writes
        # it next; the reference rewrites the header with its own options, "local" and 200 / 25600 by default)
        recorded = recorded_header(resolved) if None in (memory_id, index_lines, index_bytes) else {}
        mid = recorded.get("memory_id", DEFAULT_MEMORY_ID) if memory_id is None else memory_id
        if index_lines is None and index_bytes is None:
            index_lines, index_bytes = recorded.get("index_lines"), recorded.get("index_bytes")
        if not isinstance(mid, str) or not TOPIC_RE.fullmatch(mid):
            raise MMError(ErrorCode.E_INVALID, f"memoryId {_quote(mid)} is not a valid slug")
        mode = "auto" if search_mode is None else search_mode
        if mode not in SEARCH_MODES:
            raise MMError(ErrorCode.E_INVALID, f"search.mode must be one of auto, scan, fts5 (got {_quote(mode)})")
        interval = _positive("nudge.intervalMs", nudge_interval_ms, 30 * 60 * 1000)
        return cls(
            root=resolved,
            dsh_home=dsh_home(environ),
            memory_id=mid,
            index_lines=_positive("indexLines", index_lines, DEFAULT_INDEX_LINES),
            index_bytes=_positive("indexBytes", index_bytes, DEFAULT_INDEX_BYTES),
            detail_max_bytes=_positive("detailMaxBytes", detail_max_bytes, DEFAULT_DETAIL_MAX_BYTES),
            default_write_budget=_positive("defaultWriteBudget", default_write_budget, DEFAULT_WRITE_BUDGET),
            search_mode=mode,
            search_limit=_positive("search.limit", search_limit, DEFAULT_SEARCH_LIMIT),
            max_snippet_chars=_positive("search.maxSnippetChars", max_snippet_chars, DEFAULT_SNIPPET_CHARS),
            nudge_enabled=bool(nudge_enabled),
            nudge_interval_ms=interval,
        )


def _quote(value: object) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
