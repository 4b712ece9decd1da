"""Topics held out of injection: what a sync or an outside edit brought, flagged, until a person accepts it (issue 29).

A topic that arrives by ``mmctl sync`` or by an edit made outside mmd and that the screen flags (a secret, an
instruction aimed at an agent, hidden text) waits in the review queue; meanwhile every injection (a baseline, a
delta, the daemon's and ``mmctl``'s on the files, a hook's) and every ``AGENTS.md`` export shows it as a line
saying it is held, never its text. The daemon decides what is held (:mod:`mmd.daemon.holds`) and records it in
``<root>/.mmd/held.json``; this module reads and writes that file and makes the view injections are planned on.

A hold names the text it holds (:func:`mmd.inject.delta.content_hash` of summary, tags and body): once the note's
text is another (a person or an agent wrote it through mmd, which screens writes), the hold no longer applies.

Owns: :class:`Hold`, :class:`HeldTopics` (the file, cached by its identity), :func:`held_view` and
:data:`PLACEHOLDER`. Standard library and :mod:`mmd.core` only, so ``mmctl`` holds what the daemon holds.
Never: screens text or decides a hold (the daemon does), stores client views.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from mmd.core.durable import atomic_write
from mmd.core.model import Note
from mmd.core.paths import STATE_DIR
from mmd.core.record import Record
from mmd.core.rootfs import make_folders
from mmd.core.snapshot import Snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:  # no typing or dataclasses at run time: the hook without a daemon reads the holds (issue 31)
    from collections.abc import Mapping
    from typing import Any

__all__ = ["HELD_NAME", "PLACEHOLDER", "Hold", "HeldTopics", "held_view", "is_held"]

HELD_NAME = "held.json"
"""The holds' file, inside ``<root>/.mmd/``."""
PLACEHOLDER = "held for review, not shown until a person accepts it (flagged: {kinds}; {how})"
"""The summary a held topic shows in injections and exports (``how``: ``by a sync`` | ``an outside edit``); what
matters comes first, as a line of 120 code points clips its end."""
_HOW = {"remote": "by a sync", "outside-edit": "an outside edit"}


class Hold(Record):
    """One held topic.

    Attributes:
        topic: the note's topic (as on disk). text: the content hash of the text held (summary, tags, body).
        speaker: ``remote`` (a sync) | ``outside-edit``. candidate: its review candidate's id (None: no queue).
        kinds: the flags' kinds. at: when it was held (ISO-8601 UTC). revision: the revision that brought it;
        before: the revision before it (the version a rejection brings back); existed: the topic had a note then.
    """

    __slots__ = ("topic", "text", "speaker", "candidate", "kinds", "at", "revision", "before", "existed")

    def __init__(self, topic: str, text: str, speaker: str, candidate: int | None, kinds: tuple[str, ...], at: str,
                 revision: int, before: int, existed: bool = True) -> None:
        self.topic, self.text, self.speaker, self.candidate, self.kinds = topic, text, speaker, candidate, kinds
        self.at, self.revision, self.before, self.existed = at, revision, before, existed

    def to_json(self) -> dict[str, Any]:
        """``{topic, text, speaker, candidate, kinds, at, revision, before, existed}``."""
        return {"topic": self.topic, "text": self.text, "speaker": self.speaker, "candidate": self.candidate,
                "kinds": list(self.kinds), "at": self.at, "revision": self.revision, "before": self.before,
                "existed": self.existed}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Hold:
        """The inverse of :meth:`to_json`.

        Raises:
            KeyError, TypeError, ValueError: for another shape.
        """
        candidate = raw.get("candidate")
        return cls(str(raw["topic"]), str(raw["text"]), str(raw["speaker"]),
                   int(candidate) if candidate is not None else None, tuple(str(k) for k in raw.get("kinds") or ()),
                   str(raw.get("at") or ""), int(raw.get("revision") or 0), int(raw.get("before") or 0),
                   bool(raw.get("existed", True)))


class HeldTopics:
    """The holds of one root (``<root>/.mmd/held.json``), read again only when the file changed (its inode, size and
    modification time; one ``stat`` a call). Thread-safe.

    A file that is missing holds nothing; one that cannot be read or parsed holds nothing either (``error`` says
    why): the daemon writes it whole and atomically, so only an outside hand damages it.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / STATE_DIR / HELD_NAME
        self._seen: tuple[int, int, int] | None = None
        self._holds: dict[str, Hold] = {}
        self._lock = threading.Lock()
        self.error: str | None = None

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def get(self) -> Mapping[str, Hold]:
        """``{topic: hold}`` as the file says now."""
        with self._lock:
            seen = self._stat()
            if seen != self._seen:
                self._seen, self._holds, self.error = seen, {}, None
                if seen is not None:
                    try:
                        raw = json.loads(self.path.read_bytes())
                        self._holds = {h.topic: h for h in (Hold.from_json(t) for t in raw["topics"])}
                    except (OSError, ValueError, KeyError, TypeError) as error:
                        self.error = f"{self.path}: {error}"
            return self._holds

    @property
    def key(self) -> tuple[int, int, int] | None:
        """The file's identity as last read (a cache of a view planned on the holds keys on it)."""
        return self._seen

    def put(self, holds: Mapping[str, Hold]) -> None:
        """Write ``holds`` (the file goes when there is none), atomically, 0600 in the 0700 ``.mmd/``.

        Raises:
            MMError(E_IO): if it cannot be written (the file is as it was).
        """
        with self._lock:
            if not holds:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
            else:
                make_folders(self.path.parent)
                data = {"topics": [h.to_json() for h in sorted(holds.values(), key=lambda h: h.topic)]}
                atomic_write(self.path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))
            self._seen, self._holds = self._stat(), dict(holds)


def is_held(note: Note, hold: Hold | None) -> bool:
    """Whether ``hold`` holds ``note``'s text as it is (a text written since is not held)."""
    from .delta import content_hash

    return hold is not None and content_hash(note.entry.summary, note.entry.tags, note.body) == hold.text


def held_view(snapshot: Snapshot, holds: Mapping[str, Hold]) -> Snapshot:
    """``snapshot`` as injections and exports see it: each held note's summary is :data:`PLACEHOLDER`, its tags and
    body empty (its entry, uri and dates kept, so a client that saw its earlier text is told it changed); the
    snapshot itself when nothing it holds is held."""
    if not holds:
        return snapshot
    held = {n.topic for n in snapshot.notes if is_held(n, holds.get(n.topic))}
    if not held:
        return snapshot

    def placeholder(note: Note) -> Note:
        hold = holds[note.topic]
        summary = PLACEHOLDER.format(how=_HOW.get(hold.speaker, "an outside change"),
                                     kinds=", ".join(hold.kinds) or "flagged")
        entry = note.entry.replace(summary=summary, tags=())
        return Note(entry, note.uri, "", note.missing_file)

    notes = tuple(placeholder(n) if n.topic in held else n for n in snapshot.notes)
    changed = {n.entry.topic: n.entry for n in notes if n.topic in held}
    entries = tuple(changed.get(e.topic, e) if e.topic in held else e for e in snapshot.entries)
    return Snapshot(snapshot.revision, snapshot.loaded_at, snapshot.memory_id, snapshot.root,
                    snapshot.index_line_count, snapshot.index_byte_count, snapshot.index_over_budget, entries, notes,
                    snapshot.anomalies, snapshot.engine)
