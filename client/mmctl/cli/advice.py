"""What a person is told when the index is near or at its caps: one wording for write, accept, nudge and status.

Owns: the warning threshold (:data:`NEAR_CAPS`: 90 % of the index's lines or bytes), the
sentence that says the index is near its caps with its figures (:func:`near_caps`), and the
way out of a full index (:func:`index_full_way_out`): append to a note (the index keeps its
size), or consolidate notes first (``mmctl merge``), never truncate. Pure functions over the
figures; never reads the memory.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["NEAR_CAPS", "index_full_way_out", "near_caps"]

NEAR_CAPS = 0.9
"""Share of the index's line cap or byte cap from which ``nudge`` and ``status`` warn."""

MERGE = "or consolidate notes first (`mmctl merge A B --into C`; `mmctl delete TOPIC` frees lines too)"


def near_caps(lines: int, line_cap: int, size: int, byte_cap: int) -> str | None:
    """The warning for an index at :data:`NEAR_CAPS` of its line or byte cap (not over them), else None.

    Args:
        lines, line_cap: MEMORY.md's lines (mm v1 §1) and their cap. size, byte_cap: its UTF-8 bytes and their cap.
    """
    if line_cap <= 0 or byte_cap <= 0 or lines > line_cap or size > byte_cap:
        return None
    if lines < NEAR_CAPS * line_cap and size < NEAR_CAPS * byte_cap:
        return None
    return (f"MEMORY.md is near its caps: {lines}/{line_cap} lines ({100 * lines // line_cap}%), {size}/{byte_cap} "
            f"bytes ({100 * size // byte_cap}%), warned from {round(100 * NEAR_CAPS)}% of either; a new topic takes "
            "about 7 lines: append to notes (`mmctl queue accept ID --into TOPIC`), " + MERGE)


def index_full_way_out(command: str, near: Iterable[str] = ()) -> str:
    """The way out of a full index for ``command`` (``accept``: its ``--into``; ``write``: rewriting a note),
    naming the notes ``near`` the refused topic when there are some."""
    named = list(near)
    where = f" — near it: {', '.join(named)}" if named else ""
    if command == "accept":
        return f"append it to a note with --into TOPIC (the index keeps its size){where}; {MERGE}"
    return (f"append it to a note (the index keeps its size): `mmctl read TOPIC`, then `mmctl write TOPIC` with both "
            f"texts{where}; {MERGE}")
