"""mm v1, the Memory Standard, in Python: the grammar, budgets, durable writes, snapshots, search, digest.

Standard library only. Byte-compatible with the TypeScript reference
(``dsh-memory-standard``) except where it breaks its own spec; those
deviations are listed in ``tests/test_conformance.py``.
"""

from .errors import BudgetCode, ErrorCode, MMError
from .memory import Memory, nudge_report, search_snapshot
from .model import IndexEntry, Note
from .options import MemoryOptions
from .snapshot import Snapshot, load_snapshot
from .store import MemoryStore

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
