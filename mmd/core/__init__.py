"""mm v1, the Memory Standard, in Python: the grammar, budgets, durable writes, snapshots, search, digest.

Standard library only. Byte-compatible with the TypeScript reference
(``dsh-memory-standard``) except where it breaks its own spec; those
deviations are listed in ``tests/test_conformance.py``.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .errors import BudgetCode, ErrorCode, MMError
    from .memory import Memory, nudge_report, search_snapshot
    from .model import IndexEntry, Note
    from .options import MemoryOptions
    from .snapshot import Snapshot, load_snapshot
    from .store import MemoryStore

# Names load on first use (PEP 562): `import mmd.core.text` must not pay for the whole core.
_HOME = {
    "BudgetCode": "errors", "ErrorCode": "errors", "MMError": "errors", "Memory": "memory",
    "nudge_report": "memory", "search_snapshot": "memory", "IndexEntry": "model", "Note": "model",
    "MemoryOptions": "options", "Snapshot": "snapshot", "load_snapshot": "snapshot", "MemoryStore": "store",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BudgetCode",
    "ErrorCode",
    "IndexEntry",
    "MMError",
    "Memory",
    "MemoryOptions",
    "MemoryStore",
    "Note",
    "Snapshot",
    "load_snapshot",
    "nudge_report",
    "search_snapshot",
]
