"""The live budget report of a root (mm v1 §6): the index against its caps, every note's size and budget.

Owns: :func:`live_budget`, read from the live files (never a snapshot). Never writes.
"""

from __future__ import annotations

from pathlib import Path

from .budget import budget_pct
from .errors import ErrorCode, MMError
from .index_state import IndexState
from .model import IndexEntry
from .options import MemoryOptions
from .snapshot import MalformedNote, malformed_entries, orphan_files, read_note_sized
from .uri import uri_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["live_budget"]


def live_budget(options: MemoryOptions, state: IndexState) -> dict[str, Any]:
    """The live budget figures (mm v1 §6): ``{index, detail, perTopic, anomalies}``.

    ``state`` is MEMORY.md as on disk now (``MemoryStore.live_state``). ``anomalies`` is
    ``{danglingEntries, orphanFiles, malformedNotes?}`` as in a snapshot. ``perTopic`` rows are
    sorted by topic: ``{topic, uri, bodyChars, noteBytes (on-disk size), writeBudget (0 in the
    index → default), budgetUsedPct}``.
    """
    o = options
    entries = state.entries
    per_topic: list[dict[str, Any]] = []
    dangling = total_chars = total_bytes = 0
    malformed: list[MalformedNote] = []
    for entry in sorted(entries, key=lambda e: e.topic):
        size, problem = _note_size(o.root, entry)
        if problem is not None:
            malformed.append(problem)
        elif size is None:
            dangling += 1
        write_budget = entry.write_budget if entry.write_budget > 0 else o.default_write_budget
        total_chars += entry.body_chars
        total_bytes += size or 0
        per_topic.append({"topic": entry.topic, "uri": uri_for(o.memory_id, entry.topic),
                          "bodyChars": entry.body_chars, "noteBytes": size or 0, "writeBudget": write_budget,
                          "budgetUsedPct": budget_pct(entry.body_chars, write_budget)})
    anomalies: dict[str, Any] = {"danglingEntries": dangling, "orphanFiles": orphan_files(o.root, entries)}
    if malformed:
        anomalies["malformedNotes"] = malformed
    bad_entries = malformed_entries(entries)
    if bad_entries:
        anomalies["malformedEntries"] = bad_entries
    return {
        "index": state.usage,
        "detail": {"noteCount": len(entries), "totalBodyChars": total_chars, "totalBytes": total_bytes,
                   "maxBytes": o.detail_max_bytes},
        "perTopic": per_topic,
        "anomalies": anomalies,
    }


def _note_size(root: Path, entry: IndexEntry) -> tuple[int | None, MalformedNote | None]:
    """``(on-disk size in bytes or None when missing, the problem if malformed)``, read the one checked way."""
    try:
        read = read_note_sized(root, entry.file)
    except MMError as error:
        return None, {"topic": entry.topic, "file": entry.file, "code": error.code.value, "message": error.message}
    except OSError as error:
        return None, {"topic": entry.topic, "file": entry.file, "code": ErrorCode.E_IO.value,
                      "message": f"read {entry.file} failed: {error.strerror}"}
    return (None, None) if read is None else (read[1], None)
