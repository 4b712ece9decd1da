"""Whether a remote's memory may be applied to a root, and what a held-back one becomes (issue 26).

Owns: :func:`hold`, which weighs the tree a sync would move the root onto (a fast-forward's, or the
merge's, once :mod:`.contain` found only memory in it). It is held back, as a
:class:`~.contain.Refusal` of kind ``hold``, when it would take an index within its caps to over
them, or brings an index entry whose ``file`` names no note (``../x``, an absolute path, a file
outside ``memories/``: :func:`mmd.core.rootfs.note_problem`). Either would leave the root unusable:
every write refused as over budget, or an entry no reader may follow. The topics the remote brings
then become review candidates instead (kind ``conflict``, one per topic, the remote's whole note as
the body, in :func:`~.homemerge.conflict_record`'s shape), and the root stays as it was; the remote's
deletions are not candidates (the local topic simply stays). Never does: git writes, the review queue
(the daemon adds the candidates), the network.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from mmd.core.budget import index_usage
from mmd.core.format import parse_note
from mmd.core.model import IndexEntry
from mmd.core.rootfs import note_problem

from .contain import SHOWN, Refusal
from .history import RootAt
from .merge import entry_json
from .runner import Git
from .tree import read_blobs

__all__ = ["hold"]

Version = tuple[IndexEntry | None, str | None]


def _version(state: RootAt, topic: str) -> Version:
    return state.entries.get(topic), state.note_oid(topic)


def _named(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def hold(git: Git, states: tuple[RootAt, RootAt, RootAt], texts: tuple[str, str], *, caps: tuple[int, int],
         remote_ref: str) -> tuple[Refusal, list[dict[str, Any]]] | None:
    """Weigh moving the root from ``ours`` to the result of taking ``theirs``; None when it may.

    Args:
        states: the memory at the merge base (``ours`` for a fast-forward), at ``ours`` (the local HEAD)
            and at ``theirs`` (the remote commit).
        texts: ``(ours' MEMORY.md, the result's MEMORY.md)``: the remote's for a fast-forward, the merged one
            for a merge.
        caps: the root's index caps, ``(lines, UTF-8 bytes)``.

    Returns:
        ``(Refusal of kind hold, its review candidates)``: one candidate per topic the remote adds or changes
        (``{kind: "conflict", topic, summary, action: "write", body, entrySummary, tags, evidence}``).

    Raises:
        GitError: if a note cannot be read from git.
    """
    base, ours, theirs = states
    present = theirs.topics()
    topics = sorted(t for t in present | base.topics()
                    if _version(theirs, t) != _version(base, t) and _version(theirs, t) != _version(ours, t))
    brought = [t for t in topics if t in present]
    reasons = []
    before, after = (index_usage(text, *caps) for text in texts)
    if after["overBudget"] and not before["overBudget"]:
        reasons.append(f"it would take MEMORY.md from {before['lines']} lines, {before['bytes']} bytes to "
                       f"{after['lines']} lines, {after['bytes']} bytes, over its caps of {caps[0]} lines, "
                       f"{caps[1]} bytes")
    unsafe = [f"{t} names {e.file!r} ({why})" for t in brought
              if (e := theirs.entries.get(t)) is not None and (why := note_problem(e.file)) is not None]
    if unsafe:
        reasons.append(f"{len(unsafe)} entr{'y' if len(unsafe) == 1 else 'ies'} name no note: {_named(unsafe)}")
    if not reasons or theirs.commit is None:
        return None
    reason = "; ".join(reasons) + f" ({len(topics)} topic(s) from the remote: {_named(topics)})"
    refusal = Refusal(theirs.commit, ours.commit, remote_ref, "hold", reason, topics=tuple(topics[:SHOWN]),
                      count=len(topics))
    return refusal, _candidates(git, ours, theirs, brought, remote_ref, "; ".join(reasons))


def _candidates(git: Git, ours: RootAt, theirs: RootAt, topics: list[str], remote_ref: str,
                why: str) -> list[dict[str, Any]]:
    """One ``conflict`` candidate per topic of ``topics``: the remote's version to review, ours as the kept one."""
    oids = {o for t in topics for state in (ours, theirs) if (o := state.note_oid(t)) is not None}
    raw = read_blobs(git, oids)
    bodies: Mapping[Hashable, str] = {oid: parse_note(data.decode("utf-8", "replace")).body
                                      for oid, data in raw.items()}
    out = []
    for topic in topics:
        entry, note = _version(theirs, topic)
        kept_entry, kept_note = _version(ours, topic)
        body = bodies.get(note) if note is not None else None
        kept_body = bodies.get(kept_note) if kept_note is not None else None
        out.append({
            "kind": "conflict", "topic": topic, "action": "write",
            "summary": f"sync held back: the version of {topic} from {remote_ref} ({why})"[:400],
            "body": body or (entry.summary if entry else "") or topic,
            "entrySummary": entry.summary if entry else None, "tags": ", ".join(entry.tags) if entry else None,
            "evidence": {"kept": {"commit": ours.commit, "entry": entry_json(kept_entry), "body": kept_body},
                         "other": {"commit": theirs.commit, "entry": entry_json(entry), "body": body}},
        })
    return out
