"""Syncing the memory home with a git remote: commit, fetch, merge by root and topic, push (issues 18, 27).

Owns: :func:`sync` and :class:`SyncResult`. The merge of two diverged
histories is computed here, object by object, root by root with the rule of
:mod:`.merge` (never git's line merge, :mod:`.homemerge`): the result is
committed with both parents and the working files move onto it atomically
(:func:`~.tree.checkout`), so no conflict marker ever reaches the disk. Offline,
auth and hook failures come back as ``SyncResult.error`` values; every local
revision is committed before anything touches the network, and nothing here
ever rewrites or drops a local commit. Never does: retries with back-off,
events, reloads (the daemon's part), or history rewriting.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmd.core.durable import WriteLock
from mmd.core.errors import MMError
from mmd.core.model import DEFAULT_DETAIL_MAX_BYTES
from mmd.core.options import MemoryOptions
from mmd.core.store import LOCK_TIMEOUT_S

from .contain import FETCH_CHECKS, Refusal, check_incoming, incoming
from .history import GitHistory
from .homemerge import NotMemory, compose, merge_commit, refusal_of, weigh
from .layout import USER_SCOPE, scoped_topic
from .runner import NETWORK_TIMEOUT_S, Git, GitError
from .tree import checkout, read_tree
from .versions import received

__all__ = ["DEFAULT_REMOTE", "PUSH_ATTEMPTS", "SyncResult", "repo_status", "sync"]

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
        conflicts: one record per topic (or other path) changed on both sides, see
            :func:`~.homemerge.conflict_record` (``scope``: its root).
        changed: repository paths whose working files changed (the daemon reloads their roots when non-empty).
        topics: topics whose version changed locally by the merge (a project root's as ``<key>/<topic>``).
        index_over_budget: a merged MEMORY.md breaks its caps (allowed; writes stay refused until it fits);
            ``over_budget``: the scopes of those roots.
        ahead, behind: commits only local / only on the remote afterwards (None when unknown).
        error: ``{stage: commit|fetch|merge|push|branch, message}`` when a step failed; the
            steps before it stand and no local revision is lost.
        note: a remark that is not an error, e.g. that no remote is configured.
        refused: the remote commit this sync did not take (:class:`~.contain.Refusal`; ``error`` says
            so at the ``merge`` stage, and nothing is pushed), or None.
        held: the review candidates of a remote held back just now (``refused.kind == "hold"``), each with its
            root's ``scope``, for the caller to queue; empty when the same refusal was only reported again. Not in
            :meth:`to_json`.
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
    over_budget: list[str] = field(default_factory=list)
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
        """The camelCase wire shape of every attribute but ``held`` and ``received``, plus ``ok``."""
        return {"ok": self.ok, "remote": self.remote, "branch": self.branch, "committed": self.committed,
                "fetched": self.fetched, "merged": self.merged, "head": self.head, "pushed": self.pushed,
                "conflicts": self.conflicts, "changed": self.changed, "topics": self.topics,
                "indexOverBudget": self.index_over_budget, "overBudget": self.over_budget,
                "ahead": self.ahead, "behind": self.behind,
                "error": self.error, "note": self.note,
                "refused": self.refused.to_json() if self.refused else None}


def _rev(history: GitHistory, ref: str) -> str | None:
    done = history.git.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def _is_ancestor(history: GitHistory, older: str, newer: str) -> bool:
    return history.git.ok("merge-base", "--is-ancestor", older, newer)


def _integrate(history: GitHistory, result: SyncResult, theirs: str, ref: str, options: Mapping[str, MemoryOptions],
               refused: Refusal | None) -> None:
    """Bring ``theirs`` into the local branch ``ref`` (fast-forward or merge); fills ``result``.

    First :func:`~.contain.check_incoming` (only memory comes from a remote: else nothing is taken), then
    each root it changes is merged and weighed on its own (:func:`~.homemerge.weigh`: a remote cannot make a
    root unusable, each root checked against its own caps). A root held back refuses the commit
    (``result.refused``, naming the root; its topics candidates in its scope) and nothing is written: the
    other roots stay as they are and usable. ``refused``: the previous sync's refusal; the same remote commit
    against the same HEAD is not weighed again, and against a HEAD that moved it is weighed again (it may fit
    now) but its topics are not returned as candidates again.
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
    trees = (read_tree(git, base), read_tree(git, ours), read_tree(git, theirs))
    user = options.get(USER_SCOPE)
    note_cap = user.detail_max_bytes if user else DEFAULT_DETAIL_MAX_BYTES
    result.refused = check_incoming(git, theirs, incoming(*trees), remote_ref=remote_ref, ours=ours,
                                    note_max_bytes=note_cap)
    if result.refused is not None:
        return
    try:
        roots = weigh(history, (base, ours, theirs), trees, forward=forward, options=options, remote_ref=remote_ref)
    except NotMemory as error:  # a remote's MEMORY.md has a heading that is no topic: nothing can be taken
        result.refused = Refusal(theirs, ours, remote_ref, "contain", f"its {error.path} is not mm v1 ({error.why})",
                                 paths=(error.path,), count=1)
        return
    held = [r for r in roots if r.refusal is not None]
    if held:
        result.refused = refusal_of(held)
        # this remote commit's topics were queued when it was first held back: weighed again, never queued twice
        result.held = [] if refused is not None and refused.commit == theirs else [c for r in held for c in r.held]
        return
    if forward or ours is None:
        target, tree = theirs, trees[2]
    else:
        tree = compose(trees[1], roots)
        target = merge_commit(history, ours, theirs, tree, roots, remote_ref)
    result.merged = "fast-forward" if forward else "merge"
    # A second round (the remote moved before our push) adds to the first round's report.
    result.conflicts += [c for r in roots for c in r.conflicts]
    result.over_budget = sorted(set(result.over_budget) | {r.scope for r in roots if r.over_budget},
                                key=lambda s: (s != USER_SCOPE, s))
    result.index_over_budget = bool(result.over_budget)
    result.topics = sorted(set(result.topics) | {scoped_topic(r.scope, t) for r in roots for t in r.topics})
    result.changed = sorted(set(result.changed) | set(checkout(git, trees[1], tree, target, ref, ours)))
    result.received += received(history, ours, theirs, own_root=history.root_id, note_max_bytes=note_cap)


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
         progress: Callable[[str, str], None] | None = None,
         roots: Mapping[str, MemoryOptions] | None = None) -> SyncResult:
    """Commit the home's files, fetch ``remote``, merge by root and topic, push; return what happened.

    A remote commit holding anything but memory, or whose merge would leave a root unusable (each root weighed
    against its own caps), is refused (``result.refused``, an ``error`` at the ``merge`` stage) and nothing is
    pushed: see :func:`_integrate`.

    Args:
        root: the user root, prepared by :func:`~.repo.ensure_repo` (the home's repository).
        remote: a remote NAME (``git remote``); none configured is not an error (``note`` says so).
        branch: the branch on both sides; it must be the checked-out one (default: it).
        options: the user root's options, for its merged index's header (id and caps); default ours' header.
        roots: ``{key: options}`` of the project roots served, likewise (a root without: ours' header).
        lock: serializes the steps that change files or the branch against writers (default the
            root's :class:`~mmd.core.durable.WriteLock`; the daemon passes its own, holding every root it
            serves, so that the commit of what is uncommitted may stage every file of the home). The network
            steps run outside it.
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
    every = {**(roots or {}), **({USER_SCOPE: options} if options is not None else {})}
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
                    _integrate(history, result, theirs, f"refs/heads/{branch}", every, refused)
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
