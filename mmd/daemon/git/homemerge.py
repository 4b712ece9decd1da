"""Taking a remote's version of the memory home root by root: merge each root by topic, weigh each one alone.

Owns: :func:`weigh`, which finds the roots a remote commit changes (the user root, and each project root
``projects/<key>/``, :mod:`.layout`), merges each one topic by topic against its OWN index (:mod:`.merge`;
a root only the remote changed is taken as it is) and weighs it against its own caps (:func:`~.admit.hold`:
a root the remote would leave unusable is held back, its incoming topics review candidates in its scope);
:func:`refusal_of`, the one refusal of a commit that holds a root back (named per root: the user root and
the other projects stay as they are and usable, and nothing of the commit is written, so the remote keeps
every version and nothing is undone on the machine that wrote it); :func:`compose` and :func:`merge_commit`,
the tree and the merge commit of a commit taken whole; and :func:`conflict_record`. Never does: the network,
the working files (:func:`~.tree.checkout` does), the review queue.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mmd.core.budget import index_usage
from mmd.core.errors import MMError
from mmd.core.format import parse_index, parse_note
from mmd.core.model import DEFAULT_INDEX_BYTES, DEFAULT_INDEX_LINES
from mmd.core.options import MemoryOptions
from mmd.core.paths import DETAIL_DIR, INDEX_NAME

from .admit import hold
from .contain import SHOWN, Refusal
from .history import GitHistory, RootAt, commit_message, machine_name
from .layout import USER_SCOPE, by_scope, prefix, scoped_topic
from .merge import TopicConflict, merge_index, parse_caps
from .tree import TreeEntry, commit_tree, hash_blob, read_blobs, write_tree
from .versions import Made, candidate, made_at, note_path, trailers

__all__ = ["NotMemory", "RootTaken", "compose", "conflict_record", "merge_commit", "refusal_of", "weigh"]


class NotMemory(Exception):
    """A root's MEMORY.md in a commit is not mm v1 (``path``: where, ``why``: the parser's message)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


@dataclass
class RootTaken:
    """What taking the remote does to one root it changes.

    Attributes:
        scope: ``user`` or the project key.
        files: the root's files afterwards (``{root-relative path: entry}``) when taken.
        index: its MEMORY.md afterwards.
        conflicts: one record per topic changed on both sides (:func:`conflict_record`, with ``scope``).
        topics: its topics whose version changes locally (root-relative).
        over_budget: ``index`` breaks the root's caps (allowed: it was over them before, or it is the user
            root's and writes stay refused until it fits).
        refusal: the hold of this root (:func:`~.admit.hold`, topics named in the home's way), or None: it may
            be taken.
        held: the review candidates of a root held back (each with ``scope``).
    """

    scope: str
    files: dict[str, TreeEntry]
    index: str
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    over_budget: bool = False
    refusal: Refusal | None = None
    held: list[dict[str, Any]] = field(default_factory=list)


def conflict_record(conflict: TopicConflict, bodies: Mapping[Hashable, str], commits: Mapping[str, str | None],
                    made: Mapping[str, Made | None] | None = None, scope: str = USER_SCOPE) -> dict[str, Any]:
    """A topic conflict as JSON, with both whole notes and a ready ``kind: "conflict"`` review candidate.

    Args:
        bodies: ``{note blob id: note body}`` for the notes of both versions.
        commits: ``{"ours"|"theirs"|"base": commit id or None}``.
        made: ``{"ours"|"theirs": who made that side's version}`` (:func:`~.versions.made_at`); default: each
            side's head, no machine known.
        scope: the root of the topic (``user`` or a project key).

    Returns:
        ``{topic, kind, kept, other, keptEntry, otherEntry, keptBody, otherBody, keptCommit,
        otherCommit, baseCommit, scope, candidate}``, the candidate :func:`~.versions.candidate`'s with its
        ``scope`` (the same on the machine that did not merge); the commits are those that made each version.
    """
    kept_body = bodies.get(conflict.kept_version.note) if conflict.kept_version.note is not None else None
    other_body = bodies.get(conflict.other_version.note) if conflict.other_version.note is not None else None
    made = made or {}
    kept, lost = (made.get(side) or Made(commits.get(side) or "-") for side in (conflict.kept, conflict.other))
    record = conflict.to_json()
    record.update(keptBody=kept_body, otherBody=other_body, keptCommit=kept.commit, otherCommit=lost.commit,
                  baseCommit=commits.get("base"), scope=scope)
    record["candidate"] = {**candidate(conflict.topic, lost, kept,
                                       other_body if conflict.other_version.present else None, kept_body,
                                       record["otherEntry"], record["keptEntry"]), "scope": scope}
    return record


def _memory_paths(state: RootAt) -> set[str]:
    paths = {INDEX_NAME, *(e.file for e in state.entries.values())}
    paths.update(p for p in state.tree if p.startswith(f"{DETAIL_DIR}/") and p.endswith(".md"))
    return paths


def _three_way(base: TreeEntry | None, ours: TreeEntry | None, theirs: TreeEntry | None) -> tuple[TreeEntry | None,
                                                                                                   bool]:
    """Path-level merge of a file outside the memory: ``(result, conflict)``; a conflict keeps ours."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return (ours if ours is not None else theirs), True


def _caps(options: MemoryOptions | None, ours_index: str) -> tuple[int, int]:
    """A root's index caps ``(lines, UTF-8 bytes)``: its options', else ours' ``mm-caps``, else mm v1's (never the
    remote's: a root new here is weighed against mm v1's caps)."""
    if options is not None:
        return options.index_lines, options.index_bytes
    header = parse_index(ours_index, strict_files=False).header if ours_index else None
    return (header and parse_caps(header.caps)) or (DEFAULT_INDEX_LINES, DEFAULT_INDEX_BYTES)


def _merge_root(view: GitHistory, states: tuple[RootAt, RootAt, RootAt], options: MemoryOptions | None,
                commits: Mapping[str, str | None]) -> RootTaken:
    """Merge one root changed on both sides, topic by topic (the rule of :mod:`.merge`); files outside the memory
    path by path."""
    git, scope = view.git, view.scope
    b, o, t = states
    index_text = [state.index_text for state in states]
    notes = tuple({topic: s.note_oid(topic) for topic in s.topics() if s.note_oid(topic)} for s in states)
    merged = merge_index(index_text[0], index_text[1], index_text[2], notes=notes,  # type: ignore[arg-type]
                         memory_id=options.memory_id if options else None,
                         index_lines=options.index_lines if options else None,
                         index_bytes=options.index_bytes if options else None)
    memory = _memory_paths(b) | _memory_paths(o) | _memory_paths(t)
    files: dict[str, TreeEntry] = {}
    path_conflicts = []
    for path in sorted((b.tree.keys() | o.tree.keys() | t.tree.keys()) - memory):
        kept, clash = _three_way(b.tree.get(path), o.tree.get(path), t.tree.get(path))
        if kept is not None:
            files[path] = kept
        if clash:
            path_conflicts.append({"path": prefix(scope) + path, "kind": "both-changed", "kept": "ours",
                                   "scope": scope})
    by_side = {"ours": o, "theirs": t}
    entries = {e.topic: e for e in merged.entries}
    for topic, side in merged.picks.items():
        state = by_side[side]
        entry = entries.get(topic)
        where = entry.file if entry else f"{DETAIL_DIR}/{topic}.md"
        if where in state.tree:
            files[where] = state.tree[where]
    data = merged.text.encode()
    ours_index = o.tree.get(INDEX_NAME)
    same = ours_index is not None and index_text[1].encode() == data
    files[INDEX_NAME] = ours_index if same and ours_index else TreeEntry("100644", hash_blob(git, data))
    topics = sorted(x for x in o.topics() | set(merged.picks)
                    if (x in merged.picks) != (x in o.topics()) or merged.picks.get(x) == "theirs")
    note_oids = [v.note for c in merged.conflicts for v in (c.kept_version, c.other_version) if v.note]
    blobs = read_blobs(git, note_oids)  # type: ignore[arg-type]
    bodies: dict[Hashable, str] = {oid: parse_note(raw.decode("utf-8", "replace")).body for oid, raw in blobs.items()}
    made = {c.topic: {side: made_at(git, commits[side], prefix(scope) + note_path(by_side[c.kept], c.topic))
                      for side in ("ours", "theirs")} for c in merged.conflicts}
    records = [conflict_record(c, bodies, commits, made[c.topic], scope) for c in merged.conflicts]
    return RootTaken(scope, files, merged.text, records + path_conflicts, topics, merged.over_budget)


def _changed(trees: tuple[Mapping[str, TreeEntry], ...]) -> tuple[list[str], list[dict[str, dict[str, TreeEntry]]]]:
    """The scopes whose files the remote (``trees[2]``) changes since the base that ours does not hold already
    (the user root first, then keys sorted), and the three trees split by root."""
    groups = [by_scope(tree) for tree in trees]
    b, o, t = groups
    keys = sorted(b.keys() | o.keys() | t.keys(), key=lambda s: (s != USER_SCOPE, s))
    return [s for s in keys if t.get(s, {}) != b.get(s, {}) and t.get(s, {}) != o.get(s, {})], groups


def weigh(history: GitHistory, commits: tuple[str | None, str | None, str], trees: tuple[Mapping[str, TreeEntry], ...],
          *, forward: bool, options: Mapping[str, MemoryOptions], remote_ref: str) -> list[RootTaken]:
    """Each root the remote commit changes, merged (a fast-forward: the remote's files) and weighed on its own.

    Args:
        commits: ``(merge base, ours, theirs)``; ``trees``: their whole trees (:func:`~.tree.read_tree`).
        forward: ours is an ancestor of theirs.
        options: ``{scope: options}`` of the roots served here (their memory id and caps); a root without
            any uses ours' header, else mm v1's caps.

    Returns:
        One :class:`RootTaken` per changed root, the user root first.

    Raises:
        NotMemory: if a changed root's MEMORY.md in one of the commits is not mm v1 (nothing can be taken).
        GitError: if git fails.
    """
    scopes, groups = _changed(trees)
    named = {"base": commits[0], "ours": commits[1], "theirs": commits[2]}
    out = []
    for scope in scopes:
        view = history.scoped(scope)
        try:
            b, o, t = (_root_of(view, commit, groups[i].get(scope, {})) for i, commit in enumerate(commits))
        except MMError as error:
            raise NotMemory(prefix(scope) + INDEX_NAME, error.message) from error
        own = options.get(scope)
        if forward or o.tree == b.tree:  # only the remote changed this root: its files as they are
            taken = RootTaken(scope, dict(t.tree), t.index_text, topics=view.changed_topics(o, t))
        else:
            taken = _merge_root(view, (b, o, t), own, named)
        caps = _caps(own, o.index_text)
        taken.over_budget = bool(index_usage(taken.index, *caps)["overBudget"])
        held = hold(view.git, (b, o, t), (o.index_text, taken.index), caps=caps, remote_ref=remote_ref)
        if held is not None:
            taken.refusal, taken.held = _in_scope(scope, *held)
        out.append(taken)
    return out


def _root_of(view: GitHistory, commit: str | None, files: dict[str, TreeEntry]) -> RootAt:
    """One root at ``commit`` from its files already split (:func:`~.layout.by_scope`): reads its MEMORY.md only.

    Raises:
        MMError(E_PARSE): if that MEMORY.md is not mm v1.
    """
    index = files.get(INDEX_NAME)
    text = read_blobs(view.git, [index.oid])[index.oid].decode("utf-8", "replace") if index else ""
    entries = {e.topic: e for e in parse_index(text, strict_files=False).entries} if text else {}
    return RootAt(commit, files, entries, text)


def _in_scope(scope: str, refusal: Refusal, held: list[dict[str, Any]]) -> tuple[Refusal, list[dict[str, Any]]]:
    """A hold of the root ``scope`` as the home names it: a project root's reason says which root, its topics
    ``<key>/<topic>``; each candidate carries the scope."""
    if scope == USER_SCOPE:
        return refusal, [{**c, "scope": scope} for c in held]
    named = Refusal(refusal.commit, refusal.ours, refusal.remote_ref, refusal.kind,
                    f"in the project root {scope}, {refusal.reason}",
                    topics=tuple(scoped_topic(scope, t) for t in refusal.topics), count=refusal.count)
    return named, [{**c, "scope": scope} for c in held]


def refusal_of(held: list[RootTaken]) -> Refusal:
    """The one refusal of a remote commit that holds the roots ``held`` back: the roots' reasons, their first
    topics (``<key>/<topic>`` for a project root's) and how many in all."""
    first = held[0].refusal
    assert first is not None
    if len(held) == 1:
        return first
    found = [r.refusal for r in held if r.refusal is not None]
    topics = tuple(t for r in found for t in r.topics)[:SHOWN]
    return Refusal(first.commit, first.ours, first.remote_ref, "hold", "; ".join(r.reason for r in found),
                   topics=topics, count=sum(r.count for r in found))


def compose(ours: Mapping[str, TreeEntry], roots: list[RootTaken]) -> dict[str, TreeEntry]:
    """The home's tree after taking ``roots`` (the roots the remote changes, merged): ours' files for every other
    root, the merged roots' files in their place."""
    merged = {r.scope: r for r in roots}
    out = {}
    for scope, files in by_scope(ours).items():
        if scope not in merged:
            out.update({prefix(scope) + path: entry for path, entry in files.items()})
    for root in merged.values():
        out.update({prefix(root.scope) + path: entry for path, entry in root.files.items()})
    return out


def merge_commit(history: GitHistory, ours: str, theirs: str, files: Mapping[str, TreeEntry],
                 roots: list[RootTaken], remote_ref: str) -> str:
    """The merge commit of ``files`` (:func:`compose`) with parents ``ours`` and ``theirs``: its topics those the
    merged roots change (``<key>/<topic>`` in a project root), an ``Mmd-Conflict`` trailer per conflict.

    Raises:
        GitError: if git fails.
    """
    git = history.git
    topics = [scoped_topic(r.scope, t) for r in roots for t in r.topics]
    records = [c for r in roots for c in r.conflicts]
    message = commit_message([], f"sync: merge {remote_ref}", topics, history.root_id, machine_name(),
                             trailers(records))
    return commit_tree(git, write_tree(git, files), [ours, theirs], message, env=history.identity)
