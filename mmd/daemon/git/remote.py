"""Syncing a memory root with a git remote: commit, fetch, merge by topic, push (issue 18, "Sync").

Owns: :func:`sync` and :class:`SyncResult`. The merge of two diverged
histories is computed here, object by object, with the rule of :mod:`.merge`
(never git's line merge): the result is committed with both parents and the
working files move onto it atomically (:func:`~.tree.checkout`), so no
conflict marker ever reaches the disk. Offline, auth and hook failures come
back as ``SyncResult.error`` values; every local revision is committed before
anything touches the network, and nothing here ever rewrites or drops a
local commit. Never does: retries with back-off, events, reloads (the
daemon's part), or history rewriting.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Hashable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmd.core.budget import index_usage
from mmd.core.durable import WriteLock
from mmd.core.errors import MMError
from mmd.core.format import parse_index, parse_note
from mmd.core.model import DEFAULT_DETAIL_MAX_BYTES, DEFAULT_INDEX_BYTES, DEFAULT_INDEX_LINES
from mmd.core.options import MemoryOptions
from mmd.core.paths import DETAIL_DIR, INDEX_NAME
from mmd.core.store import LOCK_TIMEOUT_S

from .admit import hold
from .contain import FETCH_CHECKS, Refusal, check_incoming, incoming
from .history import GitHistory, RootAt, commit_message, machine_name
from .merge import TopicConflict, merge_index, parse_caps
from .runner import NETWORK_TIMEOUT_S, Git, GitError
from .tree import TreeEntry, checkout, commit_tree, hash_blob, read_blobs, read_tree, write_tree
from .versions import Made, candidate, made_at, note_path, received, trailers

__all__ = ["DEFAULT_REMOTE", "PUSH_ATTEMPTS", "SyncResult", "conflict_record", "merge_commits", "repo_status", "sync"]

DEFAULT_REMOTE = "origin"
"""The remote name synced with when none is configured."""
PUSH_ATTEMPTS = 3
"""Fetch-merge-push rounds tried when the remote moved between our fetch and our push."""

_REMOTE_MOVED = ("[rejected]", "fetch first", "non-fast-forward", "cannot lock ref")
"""Signs in git push's message that the remote branch moved since our fetch (fetch, merge, push again)."""
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)([^@/]*)@", re.IGNORECASE)


@dataclass
class SyncResult:
    """What one :func:`sync` did, JSON-able with :meth:`to_json`.

    Attributes:
        remote, branch: what was synced (``branch`` None when HEAD is detached).
        committed: the commit made of uncommitted local files first, if any.
        fetched: the fetch succeeded (False when there is no remote or it is unreachable).
        merged: ``none`` (nothing fetched), ``up-to-date`` (nothing new on the remote),
            ``fast-forward`` or ``merge`` (a merge commit of both sides).
        head: the local branch's commit afterwards.
        pushed: the remote branch now holds ``head``.
        conflicts: one record per topic (or other path) changed on both sides, see :func:`conflict_record`.
        changed: root-relative paths whose working files changed (the daemon reloads when non-empty).
        topics: topics whose version changed locally by the merge.
        index_over_budget: the merged MEMORY.md breaks its caps (allowed; writes stay refused until it fits).
        ahead, behind: commits only local / only on the remote afterwards (None when unknown).
        error: ``{stage: commit|fetch|merge|push|branch, message}`` when a step failed; the
            steps before it stand and no local revision is lost.
        note: a remark that is not an error, e.g. that no remote is configured.
        refused: the remote commit this sync did not take (:class:`~.contain.Refusal`; ``error`` says
            so at the ``merge`` stage, and nothing is pushed), or None.
        held: the review candidates of a remote held back just now (``refused.kind == "hold"``), for the
            caller to queue; empty when the same refusal was only reported again. Not in :meth:`to_json`.
        received: the review candidates of the conflicts another machine's merge commits taken by this sync
            decided about this root's versions (:func:`~.versions.received`), for the caller to queue, so both
            machines hold the version that lost. Not in :meth:`to_json`.
    """

    remote: str
    branch: str | None
    committed: str | None = None
    fetched: bool = False
    merged: str = "none"
    head: str | None = None
    pushed: bool = False
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    index_over_budget: bool = False
    ahead: int | None = None
    behind: int | None = None
    error: dict[str, str] | None = None
    note: str | None = None
    refused: Refusal | None = None
    held: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No step failed."""
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The camelCase wire shape of every attribute but ``held``, plus ``ok``."""
        return {"ok": self.ok, "remote": self.remote, "branch": self.branch, "committed": self.committed,
                "fetched": self.fetched, "merged": self.merged, "head": self.head, "pushed": self.pushed,
                "conflicts": self.conflicts, "changed": self.changed, "topics": self.topics,
                "indexOverBudget": self.index_over_budget, "ahead": self.ahead, "behind": self.behind,
                "error": self.error, "note": self.note,
                "refused": self.refused.to_json() if self.refused else None}


def conflict_record(conflict: TopicConflict, bodies: Mapping[Hashable, str], commits: Mapping[str, str | None],
                    made: Mapping[str, Made | None] | None = None) -> dict[str, Any]:
    """A topic conflict as JSON, with both whole notes and a ready ``kind: "conflict"`` review candidate.

    Args:
        bodies: ``{note blob id: note body}`` for the notes of both versions.
        commits: ``{"ours"|"theirs"|"base": commit id or None}``.
        made: ``{"ours"|"theirs": who made that side's version}`` (:func:`~.versions.made_at`); default: each
            side's head, no machine known.

    Returns:
        ``{topic, kind, kept, other, keptEntry, otherEntry, keptBody, otherBody, keptCommit,
        otherCommit, baseCommit, candidate}``, the candidate :func:`~.versions.candidate`'s (the same on the
        machine that did not merge); the commits are those that made each version.
    """
    kept_body = bodies.get(conflict.kept_version.note) if conflict.kept_version.note is not None else None
    other_body = bodies.get(conflict.other_version.note) if conflict.other_version.note is not None else None
    made = made or {}
    kept, lost = (made.get(side) or Made(commits.get(side) or "-") for side in (conflict.kept, conflict.other))
    record = conflict.to_json()
    record.update(keptBody=kept_body, otherBody=other_body, keptCommit=kept.commit, otherCommit=lost.commit,
                  baseCommit=commits.get("base"))
    record["candidate"] = candidate(conflict.topic, lost, kept, other_body if conflict.other_version.present else None,
                                    kept_body, record["otherEntry"], record["keptEntry"])
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


def merge_commits(history: GitHistory, base: str | None, ours: str, theirs: str, *, remote_ref: str,
                  options: MemoryOptions | None = None, states: tuple[RootAt, RootAt, RootAt] | None = None,
                  ) -> tuple[str, dict[str, TreeEntry], dict[str, Any]]:
    """Merge ``theirs`` into ``ours`` (``base``: their merge base, None when unrelated) as a new commit.

    Args:
        states: the three commits' :meth:`~.history.GitHistory.root_at`, when the caller has them.

    Returns:
        ``(merge commit id, its tree, {conflicts, topics, indexOverBudget, index})``, ``index`` the merged
        MEMORY.md; the working files are not touched (see :func:`~.tree.checkout`).

    Raises:
        MMError(E_PARSE): if a side's MEMORY.md is not mm v1.
        GitError: if git fails.
    """
    git = history.git
    states = states or (history.root_at(base), history.root_at(ours), history.root_at(theirs))
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
            path_conflicts.append({"path": path, "kind": "both-changed", "kept": "ours"})
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
    commits = {"ours": ours, "theirs": theirs, "base": base}
    made = {c.topic: {side: made_at(git, commits[side], note_path(by_side[c.kept], c.topic))
                      for side in ("ours", "theirs")} for c in merged.conflicts}
    records = [conflict_record(c, bodies, commits, made[c.topic]) for c in merged.conflicts]
    tree = write_tree(git, files)
    message = commit_message([], f"sync: merge {remote_ref}", topics, history.root_id, machine_name(),
                             trailers(records))
    commit = commit_tree(git, tree, [ours, theirs], message, env=history.identity)
    return commit, files, {"conflicts": records + path_conflicts, "topics": topics,
                           "indexOverBudget": merged.over_budget, "index": merged.text}


def _rev(history: GitHistory, ref: str) -> str | None:
    done = history.git.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def _is_ancestor(history: GitHistory, older: str, newer: str) -> bool:
    return history.git.ok("merge-base", "--is-ancestor", older, newer)


def _integrate(history: GitHistory, result: SyncResult, theirs: str, ref: str, options: MemoryOptions | None,
               refused: Refusal | None) -> None:
    """Bring ``theirs`` into the local branch ``ref`` (fast-forward or merge); fills ``result``.

    First :func:`~.contain.check_incoming` (only memory comes from a remote), then :func:`~.admit.hold`
    (a remote cannot make the root unusable): a refused commit sets ``result.refused`` and nothing is
    written. ``refused``: the previous sync's refusal; the same remote commit against the same HEAD
    is not weighed again, and against a HEAD that moved it is weighed again (it may fit now) but its
    topics are not returned as candidates again.
    """
    git = history.git
    ours = history.head()
    if ours is not None and (ours == theirs or _is_ancestor(history, theirs, ours)):
        result.merged = "up-to-date"
        return
    remote_ref = f"{result.remote}/{result.branch}"
    if refused is not None and (refused.commit, refused.ours) == (theirs, ours):
        result.refused = refused
        return
    forward = ours is None or _is_ancestor(history, ours, theirs)
    if forward or ours is None:
        base = ours
    else:
        base = git.run("merge-base", ours, theirs, check=False).stdout.decode().strip() or None
    trees = [read_tree(git, commit) for commit in (base, ours, theirs)]
    note_cap = options.detail_max_bytes if options else DEFAULT_DETAIL_MAX_BYTES
    result.refused = check_incoming(git, theirs, incoming(*trees), remote_ref=remote_ref, ours=ours,
                                    note_max_bytes=note_cap)
    if result.refused is not None:
        return
    mine = history.root_at(base), history.root_at(ours)
    try:
        states = (*mine, history.root_at(theirs))
    except MMError as error:  # the remote's MEMORY.md has a heading that is no topic: nothing can be taken
        result.refused = Refusal(theirs, ours, remote_ref, "contain", f"its {INDEX_NAME} is not mm v1 "
                                 f"({error.message})", paths=(INDEX_NAME,), count=1)
        return
    if forward or ours is None:
        target, tree, text = theirs, trees[2], states[2].index_text
        info: dict[str, Any] = {"conflicts": [], "topics": history.changed_topics(states[1], states[2])}
    else:
        target, tree, info = merge_commits(history, base, ours, theirs, remote_ref=remote_ref, options=options,
                                           states=states)
        text = info["index"]
    caps = _caps(options, states[1].index_text)
    held = hold(git, states, (states[1].index_text, text), caps=caps, remote_ref=remote_ref)
    if held is not None:
        result.refused, candidates = held
        # this remote commit's topics were queued when it was first held back: weighed again, never queued twice
        result.held = [] if refused is not None and refused.commit == theirs else candidates
        return
    result.merged = "fast-forward" if forward else "merge"
    # A second round (the remote moved before our push) adds to the first round's report.
    result.conflicts += info["conflicts"]
    result.index_over_budget = bool(index_usage(text, *caps)["overBudget"])
    result.topics = sorted(set(result.topics) | set(info["topics"]))
    result.changed = sorted(set(result.changed) | set(checkout(git, trees[1], tree, target, ref, ours)))
    result.received += received(history, ours, theirs, own_root=history.root_id, note_max_bytes=note_cap)


def _caps(options: MemoryOptions | None, ours_index: str) -> tuple[int, int]:
    """The root's index caps ``(lines, UTF-8 bytes)``: the options', else ours' ``mm-caps``, else mm v1's."""
    if options is not None:
        return options.index_lines, options.index_bytes
    header = parse_index(ours_index, strict_files=False).header if ours_index else None
    return (header and parse_caps(header.caps)) or (DEFAULT_INDEX_LINES, DEFAULT_INDEX_BYTES)


def _fetch(history: GitHistory, remote: str, branch: str) -> str | None:
    """Fetch ``branch`` into ``refs/remotes/<remote>/<branch>``; its commit, or None if the remote has no such branch.

    Raises:
        GitError: if the remote cannot be reached or refuses us.
    """
    tracking = f"refs/remotes/{remote}/{branch}"
    done = history.git.run(*FETCH_CHECKS, "fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{tracking}",
                           check=False, timeout_s=NETWORK_TIMEOUT_S, abortable=True)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in err:
            return None
        raise GitError(["fetch", remote], done.returncode, err)
    return _rev(history, tracking)


def sync(root: str | os.PathLike[str], *, remote: str = DEFAULT_REMOTE, branch: str | None = None,
         options: MemoryOptions | None = None, lock: Callable[[], AbstractContextManager[Any]] | None = None,
         history: GitHistory | None = None, env: Mapping[str, str] | None = None, refused: Refusal | None = None,
         progress: Callable[[str, str], None] | None = None) -> SyncResult:
    """Commit the root's files, fetch ``remote``, merge by topic, push; return what happened.

    A remote commit holding anything but memory, or whose merge would leave the root unusable, is
    refused (``result.refused``, an ``error`` at the ``merge`` stage) and nothing is pushed: see
    :func:`_integrate`.

    Args:
        root: a root prepared by :func:`~.repo.ensure_repo`.
        remote: a remote NAME (``git remote``); none configured is not an error (``note`` says so).
        branch: the branch on both sides; it must be the checked-out one (default: it).
        options: the root's options, for the merged index's header (id and caps); default ours' header.
        lock: serializes the steps that change files or the branch against writers (default the
            root's :class:`~mmd.core.durable.WriteLock`; the daemon, which holds that lock, passes
            its own). The network steps run outside it.
        history, env: a :class:`GitHistory` to reuse, or the environment for a new one.
        refused: the previous sync's ``result.refused``: that remote commit, against the same local HEAD,
            is reported again without being weighed again (or its candidates queued again).
        progress: called with each step as it starts, ``(stage, what)``: ``commit``, ``fetch``,
            ``merge`` or ``push``, and for the network steps the remote and its address
            (``origin (https://host/memory.git)``, any password in it left out).

    Returns:
        A :class:`SyncResult`; failures are in ``error``, never raised, except as below.

    Raises:
        GitMissing: if git is not on PATH.
    """
    history = history or GitHistory(root, env)
    path = Path(os.path.abspath(root))
    locked = lock or (lambda: WriteLock(path, timeout_s=LOCK_TIMEOUT_S))
    git = history.git
    current = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.decode().strip() or None
    result = SyncResult(remote, branch or current)
    stage = "commit"
    step = progress or (lambda stage, what: None)
    try:
        step(stage, "")
        with locked():
            result.committed = history.commit([], "external edit", [])
        if current is None or (branch is not None and branch != current):
            why = "HEAD is detached" if current is None else f"the current branch is {current}, not {branch}"
            result.error = {"stage": "branch", "message": f"{why}: sync works on the checked-out branch"}
            return result
        branch = current
        if remote not in git.out("remote").split():
            result.note = f"no remote {remote!r} is configured: revisions are committed locally only"
            return result
        where = f"{remote} ({_address(git, remote)})"
        for _ in range(PUSH_ATTEMPTS):
            stage = "fetch"
            step(stage, where)
            theirs = _fetch(history, remote, branch)
            result.fetched = True
            stage = "merge"
            step(stage, "")
            with locked():
                result.committed = history.commit([], "external edit", []) or result.committed
                if theirs is not None:
                    _integrate(history, result, theirs, f"refs/heads/{branch}", options, refused)
            if result.refused is not None:
                result.error = {"stage": stage, "message": result.refused.message}
                break  # the remote holds a commit we did not take: a push would be refused
            stage = "push"
            step(stage, where)
            done = git.run("push", "--quiet", remote, f"HEAD:refs/heads/{branch}", check=False,
                           timeout_s=NETWORK_TIMEOUT_S, abortable=True)
            if done.returncode == 0:
                result.pushed = True
                git.run("update-ref", f"refs/remotes/{remote}/{branch}", "HEAD")
                break
            err = done.stderr.decode("utf-8", "replace")
            if not any(sign in err for sign in _REMOTE_MOVED):
                raise GitError(["push", remote], done.returncode, err)
        else:
            result.error = {"stage": "push", "message": "the remote kept moving: try again"}
    except GitError as error:
        result.error = {"stage": stage, "message": error.stderr or str(error)}
    except MMError as error:
        result.error = {"stage": stage, "message": str(error)}
    finally:
        result.head = history.head()
        _ahead_behind(history, result)
    return result


def _address(git: Git, remote: str) -> str:
    """``remote``'s fetch URL as a person may read it: a password (``https://me:token@host/…``) is left out."""
    url = git.run("remote", "get-url", remote, check=False).stdout.decode("utf-8", "replace").strip() or "?"
    return _USERINFO.sub(lambda m: m.group(1) + (m.group(2).partition(":")[0] + "@" if m.group(2) else ""), url)


def _ahead_behind(history: GitHistory, result: SyncResult) -> None:
    tracking = f"refs/remotes/{result.remote}/{result.branch}"
    if result.head is None or result.branch is None or _rev(history, tracking) is None:
        return
    done = history.git.run("rev-list", "--left-right", "--count", f"HEAD...{tracking}", check=False)
    if done.returncode == 0:
        ahead, behind = done.stdout.decode().split()
        result.ahead, result.behind = int(ahead), int(behind)


def repo_status(root: str | os.PathLike[str], *, remote: str = DEFAULT_REMOTE,
                history: GitHistory | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What ``mmctl status`` shows of the repository, read locally (no network).

    Returns:
        ``{branch, head, remote, remoteConfigured, ahead, behind, uncommitted}``: ``ahead``/``behind``
        count commits against ``refs/remotes/<remote>/<branch>`` as of the last fetch (None before
        one); ``uncommitted`` counts files that differ from HEAD.

    Raises:
        GitMissing: if git is not on PATH.
    """
    history = history or GitHistory(root, env)
    git = history.git
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.decode().strip() or None
    result = SyncResult(remote, branch, head=history.head())
    _ahead_behind(history, result)
    dirty = git.run("status", "--porcelain", "-z", "--untracked-files=all", check=False).stdout
    return {"branch": branch, "head": result.head, "remote": remote,
            "remoteConfigured": remote in git.out("remote").split(), "ahead": result.ahead,
            "behind": result.behind, "uncommitted": len([r for r in dirty.split(b"\0") if r.strip()])}
