"""Baseline, then only what changed: the per-client injection plan (issue 14; after ``dsh-memory-delta``).

A client (an agent session, a hook's session id) keeps a :class:`ClientView`:
the content hash of every topic it was last shown, and which review reminders
it was given. :func:`plan_injection` compares that view with a snapshot:

- no view yet → ``baseline``: the newest and most used notes with their text, the
  rest as a line each (see :mod:`.content`, :mod:`.baseline`); the new view records
  every topic, shown or named only by count;
- topics added / updated (hash changed) / removed → ``delta``: only those, each added
  or updated one with its text, and "N unchanged";
- nothing changed, and a topic's review date has come that this client was
  not yet reminded of → ``reminder``: one "may be stale" line per such topic,
  given once per topic and date;
- otherwise → ``none`` with empty text.

The returned :attr:`Injection.view` is what to store for the client — but
only once the caller knows the text reached the agent (commit). A dropped
text leaves the old view in place, so the same changes are given again.

Owns: the content hash, the view's JSON shape, the mode decision and the
delta / reminder text. Never: stores views, reads clocks (``today`` is passed
in) or touches files.
"""

from __future__ import annotations

import json
import threading

from mmd.core.errors import ErrorCode, MMError
from mmd.core.record import Record
from mmd.core.sha import sha256_hex

from .baseline import (
    DEFAULT_MAX_BYTES,
    command_for,
    fit_lines,
    list_hint,
    read_hint,
    recency_order,
    render_baseline,
)
from .content import note_block, use_order
from .due import parse_review_date

TYPE_CHECKING = False
if TYPE_CHECKING:  # plain classes and no typing at run time: the hook without a daemon plans here (issue 31)
    from collections.abc import Iterator, Mapping, Sequence
    from datetime import date
    from typing import Any, TypeGuard

    from mmd.core.model import IndexEntry
    from mmd.core.snapshot import Snapshot

__all__ = ["ClientView", "Injection", "Prepared", "content_hash", "plan_injection", "prepare"]

HASH_CHARS = 12
"""Length of a content hash, in hex digits."""
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def content_hash(summary: str, tags: Sequence[str], body: str) -> str:
    """12 hex of SHA-256 over a topic's summary, tags and note body.

    The hashed bytes are the UTF-8 of the compact JSON array
    ``[summary, [tags...], body]`` (no ASCII escaping), so no two different
    triples share an input. The entry's ``updated`` time is not hashed: a
    rewrite with the same text is no change.
    """
    data = _JSON.encode([summary, list(tags), body])
    return sha256_hex(data.encode("utf-8"))[:HASH_CHARS]


class ClientView(Record):
    """What one client was last shown.

    Attributes:
        hashes: topic → content hash of every topic in its last baseline/delta.
            Treat it as read-only: views share it with :class:`Prepared`.
        reminded: topic → review date (``YYYY-MM-DD``) it was reminded of.
    """

    __slots__ = ("hashes", "reminded")

    def __init__(self, hashes: Mapping[str, str], reminded: Mapping[str, str] | None = None) -> None:
        self.hashes = hashes
        self.reminded: Mapping[str, str] = {} if reminded is None else reminded

    def to_json(self) -> dict[str, Any]:
        """``{hashes: {topic: hash}, reminded: {topic: date}}`` (for state.db or a file)."""
        return {"hashes": dict(self.hashes), "reminded": dict(self.reminded)}

    @classmethod
    def from_json(cls, value: object) -> ClientView:
        """The view :meth:`to_json` gave.

        Raises:
            MMError(E_INVALID): if ``value`` is not that shape (both maps of strings to strings).
        """
        if isinstance(value, dict):
            hashes, reminded = value.get("hashes"), value.get("reminded", {})
            if _str_map(hashes) and _str_map(reminded):
                return cls(dict(hashes), dict(reminded))
        raise MMError(ErrorCode.E_INVALID, "a client view must be {hashes: {topic: hash}, reminded: {topic: date}}")


def _str_map(value: object) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


class Prepared(Record):
    """A snapshot readied for injection; build it with :func:`prepare` (cached per snapshot).

    Attributes:
        memory_id: the snapshot's memory id.
        order: entries most recently updated first, one per topic.
        hashes: topic → :func:`content_hash`.
        rank: topic → its position in ``order``.
        reviews: ``(topic, stored review value)`` of the entries that carry one.
        command: how the texts name mmctl (:func:`~mmd.inject.baseline.command_for` the root).
        bodies: topic → note body (the snapshot's strings, shared): baselines and deltas carry the notes' text.
    """

    __slots__ = ("memory_id", "order", "hashes", "rank", "reviews", "command", "bodies")

    def __init__(self, memory_id: str, order: tuple[IndexEntry, ...], hashes: dict[str, str], rank: dict[str, int],
                 reviews: tuple[tuple[str, str], ...], command: str = "mmctl",
                 bodies: Mapping[str, str] | None = None) -> None:
        self.memory_id, self.order, self.hashes, self.rank, self.reviews = memory_id, order, hashes, rank, reviews
        self.command = command
        self.bodies: Mapping[str, str] = {} if bodies is None else bodies


_lock = threading.Lock()
_last: tuple[Snapshot, Prepared] | None = None
_memo: dict[tuple[str, tuple[str, ...], str], str] = {}


def prepare(snapshot: Snapshot) -> Prepared:
    """The :class:`Prepared` form of ``snapshot``; the last one is cached (thread-safe).

    Hashes of unchanged notes are reused from the previous call, so a new
    revision of a big root costs a dictionary look-up per topic, not a SHA-256.
    """
    global _last, _memo
    with _lock:
        if _last is not None and _last[0] is snapshot:
            return _last[1]
        memo: dict[tuple[str, tuple[str, ...], str], str] = {}
        hashes: dict[str, str] = {}
        bodies: dict[str, str] = {}
        for note in snapshot.notes:
            if note.topic in hashes:
                continue
            entry = note.entry
            key = (entry.summary, entry.tags, note.body)
            digest = _memo.get(key) or content_hash(*key)
            memo[key] = hashes[note.topic] = digest
            bodies[note.topic] = note.body
        order = tuple(recency_order(snapshot.entries))
        reviews = tuple((e.topic, value) for e in order if (value := e.review_after) is not None)
        prepared = Prepared(snapshot.memory_id, order, hashes, {e.topic: i for i, e in enumerate(order)}, reviews,
                            command_for(snapshot.root), bodies)
        _last, _memo = (snapshot, prepared), memo
        return prepared


class Injection(Record):
    """One injection plan.

    Attributes:
        mode: ``baseline`` | ``delta`` | ``reminder`` | ``none``.
        text: what to give the agent ('' for ``none``).
        added, updated, removed: topics of a delta (empty otherwise), in text order.
        unchanged: topics neither added nor updated nor removed (every topic for ``none``/``reminder``,
            0 for ``baseline``).
        reminded: topics of a reminder.
        view: the client's view once this text has reached the agent; store it only then.
    """

    __slots__ = ("mode", "text", "added", "updated", "removed", "unchanged", "reminded", "view")

    def __init__(self, mode: str, text: str, added: tuple[str, ...], updated: tuple[str, ...],
                 removed: tuple[str, ...], unchanged: int, reminded: tuple[str, ...], view: ClientView) -> None:
        self.mode, self.text, self.added, self.updated, self.removed = mode, text, added, updated, removed
        self.unchanged, self.reminded, self.view = unchanged, reminded, view

    @property
    def bytes(self) -> int:
        """Size of :attr:`text` in UTF-8 bytes."""
        return len(self.text.encode("utf-8"))

    def to_json(self) -> dict[str, Any]:
        """``{mode, text, added, updated, removed, unchanged, reminded, bytes}`` (no view: it stays server-side)."""
        return {"mode": self.mode, "text": self.text, "added": list(self.added), "updated": list(self.updated),
                "removed": list(self.removed), "unchanged": self.unchanged, "reminded": list(self.reminded),
                "bytes": self.bytes}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _delta_text(prep: Prepared, added: list[str], updated: list[str], removed: list[str], unchanged: int,
                max_bytes: int, origins: Mapping[str, str]) -> str:
    counts = ", ".join(f"{len(topics)} {word}" for topics, word in
                       ((added, "added"), (updated, "updated"), (removed, "removed")) if topics)
    header = (f"Memory mm://{prep.memory_id}/ changed since you last saw it: {counts}; {unchanged} unchanged "
              f"({read_hint(prep.command, changed=True)}):")

    def lines() -> Iterator[str]:
        for word, topics in (("added ", added), ("updated ", updated)):
            for topic in topics:
                origin = origins.get(topic)  # a sync's or an outside edit's change says so (issue 29)
                yield note_block(prep.order[prep.rank[topic]], prep.bodies.get(topic, ""), prep.memory_id,
                                 prep.command, f"{word}({origin}) " if origin else word)
        for topic in removed:
            yield f"- removed {topic}"

    total = len(added) + len(updated) + len(removed)
    hint = list_hint(prep.command)
    out, _ = fit_lines(header, lines(), total, lambda n: f"… {_plural(n, 'more change')} not shown; {hint}.", max_bytes)
    return "\n".join(out)


def _reminder_text(prep: Prepared, due: list[tuple[str, str]], max_bytes: int) -> str:
    lines = (f"- may be stale: re-check {topic} <mm://{prep.memory_id}/{topic}> (review date {when}), "
             "then rewrite it with a new review date or delete it." for topic, when in due)
    out, _ = fit_lines("", lines, len(due),
                       lambda n: f"… {_plural(n, 'more topic')} due for review; `{prep.command} due` lists them.",
                       max_bytes)
    return "\n".join(out)


def plan_injection(view: ClientView | None, snapshot: Snapshot | Prepared, *, today: date,
                   max_bytes: int = DEFAULT_MAX_BYTES, uses: Mapping[str, int] | None = None,
                   origins: Mapping[str, str] | None = None) -> Injection:
    """What to inject for a client whose last committed view is ``view`` (None: never injected).

    A baseline carries the text of the newest and most used notes and names the rest
    (:func:`mmd.inject.content.render_with_text`); a delta carries the text of each note added or updated
    (:func:`mmd.inject.content.note_block`).

    Args:
        view: the client's stored view, or None for a new client.
        snapshot: the current snapshot (or its :func:`prepare` form).
        today: the date review dates are compared with (UTC, from the caller's clock).
        max_bytes: budget of the text in UTF-8 bytes (default :data:`~mmd.inject.baseline.DEFAULT_MAX_BYTES`);
            what does not fit is named by count, and the new view still records it.
        uses: topic → how often agents read the note: a baseline's order (:func:`mmd.inject.content.use_order`).
        origins: topic → where its last change came from when that was no write through mmd (``sync``,
            ``outside edit``): a delta's line says it (``- added (sync) build-setup: …``).

    Returns:
        The :class:`Injection`; see the module docstring for the modes.

    Raises:
        MMError(E_INVALID): if ``max_bytes`` is not a positive integer or too small for a heading.
    """
    prep = snapshot if isinstance(snapshot, Prepared) else prepare(snapshot)
    current = prep.hashes
    if view is None:
        base = render_baseline(use_order(prep.order, uses) if uses else prep.order, memory_id=prep.memory_id,
                               max_bytes=max_bytes, ordered=True, command=prep.command, bodies=prep.bodies)
        return Injection("baseline", base.text, (), (), (), 0, (), ClientView(current, {}))
    old = view.hashes
    reminded = {t: d for t, d in view.reminded.items() if t in current}
    if old != current:
        rank = prep.rank
        changed = sorted((t for t, h in current.items() if old.get(t) != h), key=rank.__getitem__)
        added = [t for t in changed if t not in old]
        updated = [t for t in changed if t in old]
        unchanged = len(current) - len(changed)
        gone = len(old) - (unchanged + len(updated))  # topics of the view that are no longer current
        removed = sorted(t for t in old if t not in current) if gone else []
        text = _delta_text(prep, added, updated, removed, unchanged, max_bytes, origins or {})
        return Injection("delta", text, tuple(added), tuple(updated), tuple(removed), unchanged, (),
                         ClientView(current, reminded))
    due = _due_unreminded(prep, reminded, today)
    if not due:
        fit_lines("", (), 0, str, max_bytes)  # the same refusal of a bad max_bytes in every mode
        return Injection("none", "", (), (), (), len(current), (), ClientView(current, reminded))
    text = _reminder_text(prep, due, max_bytes)
    reminded.update(due)
    return Injection("reminder", text, (), (), (), len(current), tuple(t for t, _ in due),
                     ClientView(current, reminded))


def _due_unreminded(prep: Prepared, reminded: Mapping[str, str], today: date) -> list[tuple[str, str]]:
    """``(topic, YYYY-MM-DD)`` due on or before ``today`` and not yet reminded at that date, most overdue first."""
    due: list[tuple[str, str]] = []
    for topic, value in prep.reviews:
        try:
            when = parse_review_date(value)
        except MMError:
            continue  # a hand-written prose value: `due` reports it, a reminder cannot resolve it
        if when <= today and reminded.get(topic) != when.isoformat():
            due.append((topic, when.isoformat()))
    due.sort(key=lambda pair: (pair[1], pair[0]))
    return due
