"""Conflicts seen on both sides (issue 30): which machine and commit made each version of a topic a sync decided.

Owns: who made a version (:func:`made_at`: the commit that last changed the topic's note on that side, its time,
root and machine), the ``Mmd-Conflict: <topic> <lost commit> <kept commit>`` trailers a merge commit carries
(:func:`trailers`; a project root's topic named ``<key>/<topic>``), and the conflicts another machine's merge
commits record (:func:`received`), so the machine that did not merge queues the version that lost too, in the
root it belongs to (``scope``). The review candidate of a conflict is the same on both machines: the lost
version's whole note, its summary and evidence naming both versions (:func:`candidate`).

What a remote commit says is weighed as an attacker's: a trailer names a topic slug and two commits that are
ancestors of the commit holding it (anything else is skipped), at most :data:`MOST_RECEIVED` per sync, a note
read only when its blob is at most the root's note cap, a machine name as :func:`~.history.machine_name` cleans
it, a root id only when it is one.
Never does: commits, merges, queue rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmd.core.errors import MMError
from mmd.core.format import parse_note
from mmd.core.paths import DETAIL_DIR
from mmd.core.text import TOPIC_MAX_LENGTH, TOPIC_RE

from .history import GitHistory, RootAt, clean_name
from .layout import USER_SCOPE, prefix, scoped_topic, split_topic
from .merge import entry_json
from .runner import Git
from .tree import read_blobs

__all__ = ["CONFLICT_TRAILER", "MOST_RECEIVED", "Made", "candidate", "made_at", "note_path", "received", "trailers"]

CONFLICT_TRAILER = "Mmd-Conflict"
"""The merge commit's trailer naming a topic it decided: ``<topic> <lost version's commit> <kept one's>`` (a project
root's topic as ``<key>/<topic>``)."""
MOST_RECEIVED = 100
"""Most conflicts taken from the merge commits of one sync."""
_COMMIT = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_ROOT = re.compile(r"^[0-9a-f]{8,64}$")
_FIELDS = ("%H%x1f%cI%x1f%(trailers:key=Mmd-Root,valueonly,separator=%x20)"
           "%x1f%(trailers:key=Mmd-Machine,valueonly,separator=%x20)")


@dataclass(frozen=True, slots=True)
class Made:
    """Who made one version of a topic.

    Attributes:
        commit: the commit that last changed the topic's note on that side (or the side's head).
        at: its committer time, ISO-8601 (None when unknown).
        root: the ``Mmd-Root`` id of the root that made it (None: not recorded, or not an id).
        machine: its ``Mmd-Machine`` (None: not recorded).
    """

    commit: str
    at: str | None = None
    root: str | None = None
    machine: str | None = None

    @property
    def who(self) -> str:
        """``box (root 3f2a1b9c)``, the machine alone, the root alone, or ``another machine``."""
        root = f"root {self.root[:8]}" if self.root else ""
        if self.machine:
            return f"{self.machine} ({root})" if root else self.machine
        return root or "another machine"

    def to_json(self) -> dict[str, Any]:
        """``{commit, at, root, machine}``."""
        return {"commit": self.commit, "at": self.at, "root": self.root, "machine": self.machine}


def _parse(line: str) -> Made | None:
    parts = line.split("\x1f")
    if len(parts) != 4 or not _COMMIT.match(parts[0]):
        return None
    root, machine = parts[2].strip().split(" ")[0], clean_name(parts[3].strip().split(" ")[0])
    return Made(parts[0], parts[1].strip() or None, root if _ROOT.match(root) else None, machine or None)


def made_at(git: Git, side: str | None, path: str) -> Made | None:
    """Who made the version of the note at ``path`` that commit ``side`` holds: the last commit at or below
    ``side`` that changed the path (or ``side`` itself when none did); None for no commit."""
    if side is None:
        return None
    for args in (("-1", side, "--", path), ("-1", side)):
        done = git.run("log", f"--format={_FIELDS}", *args, check=False)
        found = _parse(done.stdout.decode("utf-8", "replace").strip()) if done.returncode == 0 else None
        if found is not None:
            return found
    return None


def note_path(state: RootAt, topic: str) -> str:
    """Where ``state`` keeps ``topic``'s note: its entry's ``file``, else ``memories/<topic>.md``."""
    entry = state.entries.get(topic)
    return entry.file if entry else f"{DETAIL_DIR}/{topic}.md"


def trailers(records: list[dict[str, Any]]) -> list[str]:
    """The ``Mmd-Conflict`` trailer lines of a merge's topic conflicts (records of
    :func:`~.homemerge.conflict_record` that name both commits; a project root's topic as ``<key>/<topic>``)."""
    return [f"{CONFLICT_TRAILER}: {scoped_topic(r.get('scope') or USER_SCOPE, r['topic'])} {r['otherCommit']} "
            f"{r['keptCommit']}" for r in records if r.get("otherCommit") and r.get("keptCommit") and "candidate" in r]


def candidate(topic: str, lost: Made, kept: Made, lost_body: str | None, kept_body: str | None,
              lost_entry: dict[str, Any] | None, kept_entry: dict[str, Any] | None) -> dict[str, Any]:
    """The review candidate of a topic conflict, the same on every machine: the lost version's whole note
    (``action: write``: accepting writes it back over the kept one), or, when the lost version is the topic's
    deletion, the kept note (``action: delete``: accepting deletes it).

    Returns:
        ``{kind: "conflict", topic, summary, action, body, entrySummary, tags, evidence: {kept, other}}``,
        each side of the evidence ``{commit, at, root, machine, entry, body}``.
    """
    if lost_body is not None:
        summary = f"sync conflict: {topic} as {lost.who} wrote it lost to {kept.who}'s newer version"
        action = "write"
    else:
        summary = f"sync conflict: {topic} was deleted on {lost.who} and edited on {kept.who} (kept)"
        action = "delete"
    return {"kind": "conflict", "topic": topic, "summary": summary, "action": action,
            "body": lost_body if lost_body is not None else (kept_body or ""),
            "entrySummary": (lost_entry or {}).get("summary"),
            "tags": ", ".join((lost_entry or {}).get("tags") or []) or None,
            "evidence": {"kept": {**kept.to_json(), "entry": kept_entry, "body": kept_body},
                         "other": {**lost.to_json(), "entry": lost_entry, "body": lost_body}}}


def received(history: GitHistory, ours: str | None, theirs: str, *, own_root: str,
             note_max_bytes: int) -> list[dict[str, Any]]:
    """The conflicts the merge commits in ``ours..theirs`` record (another machine's merges this sync takes), as
    :func:`candidate` values with the ``scope`` of their root, those about this home's own versions only (its root
    made the lost or the kept one, or neither is known), oldest first; what does not check out is skipped (see
    the module doc)."""
    git = history.git
    span = [theirs, f"^{ours}"] if ours else [theirs]
    done = git.run("log", "--reverse", "--merges", "--format=%H%x1f%(trailers:key=Mmd-Conflict,valueonly,"
                   "separator=%x1e)", f"--max-count={MOST_RECEIVED * 4}", *span, "--", check=False)
    out: list[dict[str, Any]] = []
    for line in done.stdout.decode("utf-8", "replace").split("\n"):  # not splitlines(): \x1e breaks a line there
        merge, _, values = line.partition("\x1f")
        for value in (v.split() for v in values.split("\x1e") if v.strip()):
            if len(out) >= MOST_RECEIVED:
                return out
            found = _one(history, merge, value, own_root, note_max_bytes) if len(value) == 3 else None
            if found is not None:
                out.append(found)
    return out


def _one(history: GitHistory, merge: str, value: list[str], own_root: str,
         note_max_bytes: int) -> dict[str, Any] | None:
    named, lost_commit, kept_commit = value
    scoped = split_topic(named)
    if scoped is None:
        return None
    scope, topic = scoped
    git = history.git
    slug = len(topic) <= TOPIC_MAX_LENGTH and TOPIC_RE.fullmatch(topic) is not None
    if not slug or not _COMMIT.match(merge) or not all(_COMMIT.match(c) for c in (lost_commit, kept_commit)):
        return None
    if not all(git.ok("merge-base", "--is-ancestor", c, merge) for c in (lost_commit, kept_commit)):
        return None
    view = history.scoped(scope)
    try:
        states = {side: view.root_at(commit) for side, commit in (("lost", lost_commit), ("kept", kept_commit))}
    except MMError:  # that commit's MEMORY.md is not mm v1: nothing to take from it
        return None
    path = prefix(scope) + note_path(states["kept"], topic)
    made = {side: made_at(git, commit, path) for side, commit in (("lost", lost_commit), ("kept", kept_commit))}
    lost, kept = made["lost"], made["kept"]
    if lost is None or kept is None or (own_root not in (lost.root, kept.root) and (lost.root or kept.root)):
        return None
    bodies = _bodies(git, {side: states[side].note_oid(topic) for side in states}, note_max_bytes)
    if bodies is None:
        return None
    entries = {side: entry_json(states[side].entries.get(topic)) for side in states}
    return {**candidate(topic, lost, kept, bodies.get("lost"), bodies.get("kept"), entries["lost"], entries["kept"]),
            "scope": scope}


def _bodies(git: Git, oids: Mapping[str, str | None], note_max_bytes: int) -> dict[str, str] | None:
    """The notes' bodies by side; None when one is larger than ``note_max_bytes`` (never read)."""
    wanted = {side: oid for side, oid in oids.items() if oid}
    for oid in wanted.values():
        size = git.run("cat-file", "-s", oid, check=False).stdout.decode().strip()
        if not size.isdigit() or int(size) > note_max_bytes:
            return None
    blobs = read_blobs(git, wanted.values())
    return {side: parse_note(blobs[oid].decode("utf-8", "replace")).body for side, oid in wanted.items()
            if oid in blobs}
