"""Merging two versions of a memory root by topic: the rule behind ``mmd merge-index`` and ``sync``.

Owns: the three-way merge of MEMORY.md entries and their notes, topic by
topic, and the serialization of the merged index exactly as a write produces
it (:func:`mmd.core.format.serialize_index`, sorted by topic, the configured
header). The rule, for each topic:

- changed on one side only (added, edited or deleted) → that side's version;
- changed the same way on both → that version;
- changed differently on both (modify/modify, add/add) → the newer ``updated``
  wins in the files (a tie goes to the greater serialized version, so both
  machines merging pick the same one); the other version is returned as a
  :class:`TopicConflict` (``kind: "both-changed"``), unless it differs only
  in ``updated`` (the same note written on both ends);
- deleted on one side, edited on the other → the edit stays, and the delete is
  returned as a :class:`TopicConflict` (``kind: "delete-vs-edit"``).

Nothing is silently dropped, and no conflict marker is ever produced. A
merged index over its caps is returned as it is (``over_budget``), as an
external edit would be (mm v1 §6). Pure: never touches the disk or git.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mmd.core.budget import IndexUsage, index_usage
from mmd.core.clock import parse_iso_ms
from mmd.core.format import entry_block, parse_index, serialize_index
from mmd.core.model import DEFAULT_INDEX_BYTES, DEFAULT_INDEX_LINES, IndexEntry

__all__ = ["IndexMerge", "Side", "TopicConflict", "TopicVersion", "decide", "entry_json", "merge_index", "merge_topics",
           "parse_caps"]

Side = Literal["ours", "theirs"]
"""Which version of a merge: ``ours`` (the local branch, git's ``%A``) or ``theirs`` (``%B``)."""

_CAPS = re.compile(r"^\s*(\d+)\s+lines\s*/\s*(\d+)\s+bytes", re.ASCII)


@dataclass(frozen=True, slots=True)
class TopicVersion:
    """One side's version of a topic: its index entry and its note (both may be absent).

    Attributes:
        entry: the MEMORY.md entry, or None.
        note: anything identifying the note's content (its text, or a git blob id); None when absent.
    """

    entry: IndexEntry | None
    note: Hashable | None = None

    @property
    def present(self) -> bool:
        """The topic exists on this side (an entry or a note file)."""
        return self.entry is not None or self.note is not None


_ABSENT = TopicVersion(None, None)


@dataclass(frozen=True, slots=True)
class TopicConflict:
    """A topic changed on both sides: the version kept in the files and the one that was not.

    Attributes:
        topic: the slug.
        kind: ``both-changed`` (modify/modify or add/add) | ``delete-vs-edit``.
        kept: the side whose version is in the merged files.
        kept_version / other_version: both versions (``other_version`` is absent for a delete).
        base_version: the common ancestor's version (absent for an add/add).
    """

    topic: str
    kind: Literal["both-changed", "delete-vs-edit"]
    kept: Side
    kept_version: TopicVersion
    other_version: TopicVersion
    base_version: TopicVersion = field(default=_ABSENT)

    @property
    def other(self) -> Side:
        """The side whose version is not in the files."""
        return "theirs" if self.kept == "ours" else "ours"

    def to_json(self) -> dict[str, Any]:
        """``{topic, kind, kept, other, keptEntry, otherEntry}``; entries in the reference's shape or null."""
        return {"topic": self.topic, "kind": self.kind, "kept": self.kept, "other": self.other,
                "keptEntry": entry_json(self.kept_version.entry),
                "otherEntry": entry_json(self.other_version.entry)}


@dataclass(frozen=True, slots=True)
class IndexMerge:
    """The merged MEMORY.md and how each topic was decided.

    Attributes:
        text: the merged MEMORY.md, exactly as a write of ``entries`` serializes it.
        entries: the merged entries, sorted by topic.
        picks: for every topic present after the merge, the side its version came from
            (``ours`` when both sides agree).
        conflicts: the topics changed on both sides, sorted by topic.
        usage: ``text`` against the caps (lines, UTF-8 bytes); ``usage["overBudget"]`` may be true.
    """

    text: str
    entries: tuple[IndexEntry, ...]
    picks: dict[str, Side]
    conflicts: tuple[TopicConflict, ...]
    usage: IndexUsage

    @property
    def over_budget(self) -> bool:
        """The merged index breaks its line or byte cap (allowed on disk; writes stay refused until it fits)."""
        return bool(self.usage["overBudget"])


def entry_json(entry: IndexEntry | None) -> dict[str, Any] | None:
    """``entry`` in the reference's JSON shape without its ``memoryId`` (a conflict record's), or None."""
    if entry is None:
        return None
    out = entry.to_json()
    out.pop("memoryId", None)
    return out


def _updated_key(entry: IndexEntry | None) -> tuple[int, float, str]:
    """Sort key of ``updated``: a parsable time beats an unparsable one, which beats none."""
    if entry is None or not entry.updated:
        return (0, 0.0, "")
    try:
        return (2, parse_iso_ms(entry.updated).timestamp(), entry.updated)
    except ValueError:
        return (1, 0.0, entry.updated)


def _order_key(version: TopicVersion) -> tuple[Any, ...]:
    """Newer ``updated`` first; then an entry beats none; then the greater serialized version (symmetric)."""
    block = entry_block(version.entry) if version.entry is not None else ""
    return (_updated_key(version.entry), version.entry is not None, block, repr(version.note))


def decide(topic: str, base: TopicVersion, ours: TopicVersion,
           theirs: TopicVersion) -> tuple[TopicVersion, Side, TopicConflict | None]:
    """Merge one topic's three versions by the module's rule.

    Returns:
        ``(version kept, side it came from, conflict or None)``; the version kept may be absent (deleted).
    """
    if ours == theirs or theirs == base:
        return ours, "ours", None
    if ours == base:
        return theirs, "theirs", None
    if not ours.present or not theirs.present:
        kept_side: Side = "theirs" if not ours.present else "ours"
        kept = theirs if kept_side == "theirs" else ours
        other = ours if kept_side == "theirs" else theirs
        return kept, kept_side, TopicConflict(topic, "delete-vs-edit", kept_side, kept, other, base)
    kept_side = "theirs" if _order_key(theirs) > _order_key(ours) else "ours"
    kept, other = (theirs, ours) if kept_side == "theirs" else (ours, theirs)
    if _same_but_time(kept, other):
        return kept, kept_side, None  # the same note written on both ends: nothing to review
    return kept, kept_side, TopicConflict(topic, "both-changed", kept_side, kept, other, base)


def _same_but_time(kept: TopicVersion, other: TopicVersion) -> bool:
    """Both versions hold the same note and entry but for ``updated``: the older loses nothing."""
    if kept.note != other.note or kept.entry is None or other.entry is None:
        return False
    return other.entry.replace(updated=kept.entry.updated) == kept.entry


def merge_topics(base: Mapping[str, TopicVersion], ours: Mapping[str, TopicVersion],
                 theirs: Mapping[str, TopicVersion]) -> tuple[dict[str, tuple[TopicVersion, Side]],
                                                              list[TopicConflict]]:
    """Apply :func:`decide` to every topic of the three maps (a missing topic is absent on that side).

    Returns:
        ``({topic: (version kept, side)} for the topics present after the merge, conflicts sorted by topic)``.
    """
    kept: dict[str, tuple[TopicVersion, Side]] = {}
    conflicts: list[TopicConflict] = []
    for topic in sorted(base.keys() | ours.keys() | theirs.keys()):
        version, side, conflict = decide(topic, base.get(topic, _ABSENT), ours.get(topic, _ABSENT),
                                         theirs.get(topic, _ABSENT))
        if conflict is not None:
            conflicts.append(conflict)
        if version.present:
            kept[topic] = (version, side)
    return kept, conflicts


def parse_caps(caps: str | None) -> tuple[int, int] | None:
    """``(lines, bytes)`` from an ``mm-caps`` value such as ``200 lines / 25600 bytes``; None if unreadable."""
    match = _CAPS.match(caps or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _entries_by_topic(text: str | None) -> dict[str, TopicVersion]:
    if not text:
        return {}
    # The last section of a topic wins, as a write replacing every section of it would leave one.
    return {e.topic: TopicVersion(e) for e in parse_index(text, strict_files=False).entries}


def merge_index(base: str | None, ours: str, theirs: str, *, memory_id: str | None = None,
                index_lines: int | None = None, index_bytes: int | None = None,
                notes: tuple[Mapping[str, Hashable], Mapping[str, Hashable], Mapping[str, Hashable]] | None = None,
                ) -> IndexMerge:
    """Merge three versions of MEMORY.md by topic (the ``mmd merge-index`` driver; git's ``%O %A %B``).

    Args:
        base, ours, theirs: the texts (``base`` None or '' when there is no common ancestor).
        memory_id, index_lines, index_bytes: the header to write (as the configured options of
            a write would give it); each defaults to ours' header (``mm-id``, ``mm-caps``), then
            theirs', then the mm v1 defaults.
        notes: optional ``(base, ours, theirs)`` maps ``{topic: note identity}``, so a topic whose
            note changed (with or without its entry) is decided as a whole; without them only
            the entries are compared.

    Returns:
        An :class:`IndexMerge`: the text a write of the merged entries produces, byte for byte.

    Raises:
        MMError(E_PARSE): if one of the texts is not mm v1 (a heading that is not a topic slug); the
            caller keeps ours then. An entry whose ``file`` is unsafe is merged as written (a sync holds
            such a remote back, :mod:`.admit`; a reader never follows it).
    """
    sides = [_entries_by_topic(base), _entries_by_topic(ours), _entries_by_topic(theirs)]
    if notes is not None:
        for versions, side_notes in zip(sides, notes, strict=True):
            for topic in versions.keys() | side_notes.keys():
                versions[topic] = TopicVersion(versions.get(topic, _ABSENT).entry, side_notes.get(topic))
    kept, conflicts = merge_topics(*sides)
    headers = [parse_index(text, strict_files=False).header for text in (ours, theirs) if text]
    caps = next((c for h in headers if (c := parse_caps(h.caps)) is not None),
                (DEFAULT_INDEX_LINES, DEFAULT_INDEX_BYTES))
    mid = memory_id or (headers[0].memory_id if headers else "local")
    lines = index_lines if index_lines is not None else caps[0]
    size = index_bytes if index_bytes is not None else caps[1]
    entries = tuple(v.entry for v, _ in kept.values() if v.entry is not None)
    text = serialize_index(entries, memory_id=mid, index_lines=lines, index_bytes=size)
    usage = index_usage(text, lines, size)
    return IndexMerge(text, tuple(sorted(entries, key=lambda e: e.topic)),
                      {t: side for t, (_, side) in kept.items()}, tuple(conflicts), usage)
