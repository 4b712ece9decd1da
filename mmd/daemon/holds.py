"""Held topics, daemon side: what a sync or an outside edit brought, flagged, waits for a person (issue 29).

A topic added or changed by a sync (revision cause ``sync``) or by an edit made outside mmd (``external``; at
start, a note whose text on disk is not its latest kept version: an edit made while no daemon ran) is screened
like a candidate (:func:`mmd.candidates.screening.text_flags`: instructions aimed at an agent, secrets, hidden
text; a note no version of which is kept is screened once at start, then kept). Unflagged, it flows as before (a
delta names where it came from). Flagged, it is **held**: recorded in the
root's ``.mmd/held.json`` (:mod:`mmd.inject.held`), so every injection and export shows a "held for review" line
instead of its text, and queued as a ``held`` candidate (speaker ``remote`` or ``outside-edit``, its diff, its
text redacted and escaped by the queue's door) until a person decides:

- **accept** writes the text the candidate shows (secrets redacted, hidden text escaped) through the write door,
  under the topic the door gave it (a topic that carried a secret's words is renamed: the old one is deleted), and
  releases the hold;
- **reject** brings back the version before it (or deletes a topic it created) and releases the hold;
- **undo** of either brings back the text that arrived and holds it again.

A topic changed again meanwhile supersedes its pending held candidate (rejected, saying why). Every text a sync or
an outside edit brings is kept in the version history (cause ``sync`` | ``external``, the text before it first
when the history lacks it), so ``mmctl log`` lists it and a rejection can restore what came before.

Threading: :meth:`Holds.changed` runs on the loop in the revision's ``on_change`` (the root's write lock held),
before the injector hears of the revision, so no injection is ever planned on it unscreened; its queue and file
writes are small and synchronous. The decisions are awaited by :class:`.review.Review` (its lock held). Never:
renders injections (:mod:`mmd.inject`), reads session logs.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from mmd.core.errors import MMError
from mmd.core.model import Note
from mmd.core.snapshot import Snapshot
from mmd.core.versions import NewVersion, body_sha
from mmd.inject.delta import content_hash
from mmd.inject.held import HeldTopics, Hold, is_held
from mmd.wire.events import QUEUE_ADDED
from mmd.wire.protocol import CandidateJson, DaemonCode, DaemonError, QueueAcceptResult

from .queue import HELD

if TYPE_CHECKING:
    from .home import Home, Root
    from .queue import ReviewQueue
    from .review import Review
    from .revision import Revision

__all__ = ["DIFF_MAX_CHARS", "Holds"]

log = logging.getLogger("mmd.daemon")

DIFF_MAX_CHARS = 20_000
"""Longest diff a held candidate keeps, in code points (a longer one is cut at a line, saying how many are left)."""
_HOW = {"remote": "a sync", "outside-edit": "an outside edit"}
_CAUSE = {"remote": "sync", "outside-edit": "external"}

Text = tuple[str, tuple[str, ...], str]
"""A note's text: summary, tags, body."""


def _text(note: Note) -> Text:
    return note.entry.summary, note.entry.tags, note.body


def _shown(text: Text | None) -> list[str]:
    """A note's text as the diff shows it: its summary and tags lines, a blank line, its body."""
    if text is None:
        return []
    summary, tags, body = text
    return [f"summary: {summary}\n", f"tags: {', '.join(tags)}\n", "\n", *(line + "\n" for line in body.split("\n"))]


def diff_of(topic: str, before: Text | None, after: Text, how: str) -> str:
    """The unified diff of ``topic`` from ``before`` (None: it did not exist) to ``after``, at most
    :data:`DIFF_MAX_CHARS` (raw: the queue's door redacts and escapes it)."""
    lines = list(difflib.unified_diff(_shown(before), _shown(after), f"{topic} (before)", f"{topic} (by {how})"))
    out, size = [], 0
    for i, line in enumerate(lines):
        if size + len(line) > DIFF_MAX_CHARS:
            out.append(f"… {len(lines) - i} more lines\n")
            break
        out.append(line)
        size += len(line)
    return "".join(out)


class Holds:
    """The held topics of every root of the home, and the decisions on them.

    Args:
        home: the roots served. queue: the review queue (None: ingestion and git off; a flagged topic is then held
            with no candidate, until a write through mmd replaces its text).
        publish: sends an event (``queue/added`` for the candidates queued).
    """

    def __init__(self, home: Home, queue: ReviewQueue | None, publish: Callable[[str, dict[str, Any]], Any]) -> None:
        self.home, self.queue, self._publish = home, queue, publish

    @staticmethod
    def held(root: Root) -> HeldTopics:
        """The root's holds (its injector's, so what is written here is what the next injection reads)."""
        if root.injector is not None:
            held: HeldTopics = root.injector.held
            return held
        return HeldTopics(root.path)

    # --- deciding holds ----------------------------------------------------------------------------

    def changed(self, root: Root, revision: Revision, cause: str) -> list[int]:
        """A revision a sync (``cause`` ``sync``) or an outside edit (``external``) made: keep each text it brought,
        hold the flagged ones and queue them; returns the new candidates' ids (nothing for another cause)."""
        if cause == "rename":
            self._renamed(root, revision)
        if cause not in ("sync", "external"):
            return []
        speaker = "remote" if cause == "sync" else "outside-edit"
        before, after = root.state.previous, revision.snapshot
        topics = [i["topic"] for i in (*revision.added, *revision.updated)]
        changes = []
        for topic in topics:
            note = after.note(topic)
            if note is not None:
                old = before.note(topic) if before is not None else None
                changes.append((topic, note, _text(old) if old is not None else None))
        gone = [i["topic"] for i in revision.removed]
        return self._screen(root, changes, gone, speaker, before.revision if before is not None else 0, after)

    def _renamed(self, root: Root, revision: Revision) -> None:
        """A rename through mmd (``mmctl rename``): a held topic's hold follows its text to the new name."""
        held = self.held(root)
        holds = dict(held.get())
        gone = [h for h in (holds.get(i["topic"]) for i in revision.removed) if h is not None]
        for item in revision.added if gone else ():
            note = revision.snapshot.note(item["topic"])
            hold = next((h for h in gone if note is not None and is_held(note, h)), None)
            if note is not None and hold is not None:
                del holds[hold.topic]
                holds[note.topic] = hold.replace(topic=note.topic)
        if holds != dict(held.get()):
            try:
                held.put(holds)
            except MMError as error:
                log.error("holds.write_failed scope=%s error=%s", root.scope, error.message)

    def at_start(self, root: Root, speaker: str = "outside-edit") -> list[int]:
        """The edits made while no daemon ran, screened as outside edits: each note whose text on disk is not its
        latest kept version, and each note no version of which is kept (made by hand while no daemon ran, or older
        than the history: screened once, then kept as ``found``, so it is never screened as new again).

        ``speaker`` ``remote``: the root is one a sync just made (``projects/<key>/`` from the remote), so every
        note in it is the remote's (held as a sync's, kept with cause ``sync``)."""
        snapshot = root.state.current
        try:
            latest = root.state.store.versions.latest([n.topic for n in snapshot.notes])
        except MMError as error:
            log.error("holds.history_unreadable scope=%s error=%s", root.scope, error.message)
            return []
        held, changes, unknown, since = self.held(root).get(), [], [], 0
        for note in snapshot.notes:
            last = latest.get(note.topic)
            if last is not None and last.body is not None and (last.sha256, last.summary, last.tags) == (
                    body_sha(note.body), note.entry.summary, ", ".join(note.entry.tags)):
                continue
            if is_held(note, held.get(note.topic)):
                continue  # held before the restart: still waiting
            if last is None:
                unknown.append((note.topic, note, None))
                continue
            was = (last.summary, tuple(t.strip() for t in last.tags.split(",") if t.strip()), last.body) \
                if last.body is not None else None
            changes.append((note.topic, note, was))
            since = max(since, last.revision or 0)
        ids = self._screen(root, changes, [], speaker, since, snapshot) if changes else []
        found = "found" if speaker == "outside-edit" else None
        return ids + (self._screen(root, unknown, [], speaker, 0, snapshot, found) if unknown else [])

    def _screen(self, root: Root, changes: Sequence[tuple[str, Note, Text | None]], gone: Sequence[str],
                speaker: str, before: int, after: Snapshot, cause: str | None = None) -> list[int]:
        """Keep (as ``cause``, default the speaker's: ``sync`` | ``external``), screen, hold and queue ``changes``
        (``(topic, note now, its text before or None)``); drop the holds of the ``gone`` topics and of every changed
        one (superseding their pending candidates)."""
        held = self.held(root)
        holds, superseded = dict(held.get()), []
        for topic in (*gone, *(c[0] for c in changes)):
            old = holds.pop(topic, None)
            if old is not None and old.candidate is not None:
                superseded.append(old.candidate)
        self._keep(root, changes, cause or _CAUSE[speaker], before, after.revision)
        from mmd.candidates.screening import text_flags  # loaded by the first screen, not at the daemon's start

        ids, at = [], root.state.now_iso()
        for topic, note, was in changes:
            flags = text_flags([note.entry.summary, ", ".join(note.entry.tags), note.body])
            if not flags:
                continue
            cid = self._queue(root, topic, note, was, speaker, flags, before, after.revision)
            holds[topic] = Hold(topic, content_hash(*_text(note)), speaker, cid,
                                tuple(dict.fromkeys(f["kind"] for f in flags)), at, after.revision, before,
                                was is not None)
            if cid is not None:
                ids.append(cid)
        for cid in superseded:
            self._supersede(cid)
        if ids or superseded or holds != dict(held.get()):
            try:
                held.put(holds)
            except MMError as error:  # the holds stay in memory: injections still show them held
                log.error("holds.write_failed scope=%s error=%s", root.scope, error.message)
        if ids:
            log.warning("holds.held scope=%s speaker=%s candidates=%s", root.scope, speaker, ",".join(map(str, ids)))
            self._publish(QUEUE_ADDED, {"ids": ids, "sessionId": None, "source": _HOW[speaker],
                                        "agent": "git" if speaker == "remote" else "files"})
        return ids

    def _keep(self, root: Root, changes: Sequence[tuple[str, Note, Text | None]], cause: str, before: int,
              revision: int) -> None:
        """Keep each text that arrived as a version (``sync`` | ``external``), the text before it first when the
        history's latest version of the topic is another (a rejection brings it back)."""
        if not changes:
            return
        versions = root.state.store.versions
        try:
            latest = versions.latest([c[0] for c in changes])
            rows = []
            for topic, note, was in changes:
                last = latest.get(topic)
                if was is not None and (last is None or last.sha256 != body_sha(was[2]) or last.summary != was[0]):
                    rows.append(NewVersion(topic, before, "found", was[2], was[0], ", ".join(was[1])))
                elif was is None and last is not None and last.body is not None:
                    rows.append(NewVersion(topic, before, "found", None))  # it did not exist before
                rows.append(NewVersion(topic, revision, cause, note.body, note.entry.summary,
                                       ", ".join(note.entry.tags), note.entry.write_budget))
            versions.keep(rows, root.state.now_iso())
        except MMError as error:  # the texts stay on disk; a rejection then finds no version before to restore
            log.error("holds.keep_failed scope=%s error=%s", root.scope, error.message)

    def _queue(self, root: Root, topic: str, note: Note, was: Text | None, speaker: str,
               flags: list[dict[str, str]], before: int, revision: int) -> int | None:
        """The held candidate of ``topic`` (its text, its diff; the door redacts and escapes them), or None."""
        if self.queue is None:
            return None
        from mmd.candidates import Evidence, NewCandidate
        from mmd.candidates.model import QUOTE_MAX
        from mmd.candidates.statements import summary_line

        how = _HOW[speaker]
        file = str(root.path / note.entry.file)
        body = note.body if note.body.strip() else note.entry.summary or topic
        evidence = Evidence("git" if speaker == "remote" else "files", None, None, file, {"file": file},
                            root.state.now_iso(), "text", body[:QUOTE_MAX])
        cand = NewCandidate(HELD, topic, note.entry.summary or summary_line(body), body, len(body),
                            False, None, file, None, f"r{before}..r{revision}", speaker, f"held.{speaker}", 2.0, True,
                            (evidence,), "create", True, speaker=speaker, flags=tuple(flags),
                            diff=diff_of(topic, was, _text(note), how), scope=root.scope)
        try:
            ids = self.queue.add([cand])
        except Exception as error:  # noqa: BLE001 - sqlite3.Error: the topic is held all the same
            log.error("holds.queue_failed scope=%s error=%r", root.scope, error)
            return None
        return ids[0] if ids else None

    def _supersede(self, cid: int) -> None:
        if self.queue is not None:
            self.queue.decide(cid, "rejected", reason="superseded: the topic changed again since")

    # --- the decisions ------------------------------------------------------------------------------

    def of(self, cand: CandidateJson) -> tuple[Root, Hold | None]:
        """The root a held candidate's topic is in, and its hold (None once released or superseded).

        Raises:
            DaemonError(E_CONFLICT): when its root is not served.
        """
        root = self.home.get(str(cand.get("scope") or "user"))
        if root is None:
            raise DaemonError(DaemonCode.E_CONFLICT, f"the root {cand.get('scope')} of candidate {cand['id']} is not "
                              "served", topic=cand["topic"])
        hold = next((h for h in self.held(root).get().values() if h.candidate == cand["id"]), None)
        return root, hold

    def release(self, root: Root, hold: Hold | None) -> None:
        """Drop ``hold`` from its root's holds (a person decided).

        Raises:
            MMError(E_IO): if the holds' file cannot be written.
        """
        if hold is None:
            return
        held = self.held(root)
        holds = dict(held.get())
        if holds.get(hold.topic) == hold:
            del holds[hold.topic]
            held.put(holds)

    async def accept(self, review: Review, cand: CandidateJson, *, topic: str | None, content: str | None,
                     summary: str | None, tags: str | Sequence[str] | None) -> QueueAcceptResult:
        """Accept a held candidate (``review``'s lock held): its text as shown (or as edited) written through the
        door to its topic (replacing the note there; a topic the door renamed deletes the one on disk), the hold
        released. The journal keeps no text of it (it may hold a secret): an undo takes it from the versions.

        Raises:
            DaemonError(E_CONFLICT): its root is not served. MMError: as the state's write or delete.
        """
        from mmd.candidates.screening import text_flags

        root, hold = self.of(cand)
        renamed = hold.topic if hold is not None and hold.topic != _disk_topic(cand) else None  # by mmctl rename
        state, topic = root.state, topic or renamed or cand["topic"]
        note = state.current.note(topic)
        kept = [t for t in (note.entry.tags if note is not None else ()) if not text_flags([t])]
        outcome = await state.write(topic, cand["body"] if content is None else content,
                                    if_revision=state.current.revision,
                                    summary=cand["summary"] if summary is None else summary,
                                    tags=kept if tags is None else tags, cause="accept")
        if outcome.get("ok"):
            on_disk = hold.topic if hold is not None else _disk_topic(cand)
            if on_disk != topic and state.current.note(on_disk) is not None:
                await state.delete(on_disk)  # its name carried a secret's words: the note lives on under the new one
            self.release(root, hold)
        return await review.accepted(state, cand, outcome, None)

    async def reject(self, cand: CandidateJson) -> None:
        """Before a held candidate is rejected: the version before it is brought back (a topic it created is
        deleted), when the note still holds the text that arrived; the hold is released.

        Raises:
            DaemonError(E_CONFLICT): its root is not served, or no version before it is kept. MMError: as the
                state's write or delete.
        """
        root, hold = self.of(cand)
        if hold is None:
            return
        state = root.state
        note = state.current.note(hold.topic)
        if note is not None and is_held(note, hold):
            before = state.store.versions.at(hold.topic, f"r{hold.before}") if hold.existed else None
            if hold.existed and (before is None or before.body is None):
                raise DaemonError(DaemonCode.E_CONFLICT, f"no version of {hold.topic} before r{hold.revision} is "
                                  "kept, so rejecting it cannot bring one back; write the note you want with "
                                  f"`mmctl write {hold.topic}`, then reject it", topic=hold.topic)
            if before is None or before.body is None:
                await state.delete(hold.topic)
            else:
                tags = [t.strip() for t in before.tags.split(",") if t.strip()]
                await state.write(hold.topic, before.body, summary=before.summary, tags=tags, cause="restore",
                                  budget=max(before.write_budget or 0, len(before.body)) or None)
        self.release(root, hold)

    async def undo(self, cand: CandidateJson) -> dict[str, Any]:
        """Undo the decision on a held candidate: the text that arrived is written back (as it was: a secret or
        hidden text with it, recorded as let through), a topic an accept renamed it to deleted, and it is held
        again. Returns ``{reverted: "restored", topic, revision}``.

        Raises:
            DaemonError(E_CONFLICT): its root is not served, or the text that arrived is no longer kept.
        """
        root, _ = self.of(cand)
        state, topic = root.state, _disk_topic(cand)
        span = str(cand["source"].get("messageId") or "r0..r0")
        before, _, arrived = span.partition("..")
        version = state.store.versions.at(topic, arrived)
        if version is None or version.body is None:
            raise DaemonError(DaemonCode.E_CONFLICT, f"the text of {topic} that arrived at {arrived} is no longer kept"
                              f" (`mmctl log {topic}`); undo refused", topic=topic)
        written = (cand.get("written") or {}).get("topic")
        if written and written != topic and state.current.note(written) is not None:
            await state.delete(written)
        tags = [t.strip() for t in version.tags.split(",") if t.strip()]
        done = await state.write(topic, version.body, summary=version.summary, tags=tags, cause="undo",
                                 budget=max(version.write_budget or 0, len(version.body)) or None,
                                 allow_secret=True, allow_hidden=True)
        if not done.get("ok"):
            raise DaemonError(DaemonCode.E_CONFLICT, f"{topic}: the text that arrived cannot be written back "
                              f"({done.get('message')})", topic=topic)
        kinds = tuple(dict.fromkeys(str(f.get("kind")) for f in cand.get("flags") or []))
        prior = state.store.versions.at(topic, before) if before[1:].isdigit() else None
        note = state.current.note(topic)
        if note is not None:
            held = self.held(root)
            held.put({**held.get(), topic: Hold(topic, content_hash(*_text(note)), cand["speaker"], cand["id"], kinds,
                                               state.now_iso(), int(arrived[1:] or 0), int(before[1:] or 0),
                                               prior is not None and prior.body is not None)})
        return {"reverted": "restored", "topic": topic, "revision": done["revision"]}


def _disk_topic(cand: CandidateJson) -> str:
    """The topic a held candidate's note has on disk (its file's name: the door may have renamed the candidate's)."""
    return PurePosixPath(str(cand["source"]["file"])).stem
