"""What a remote commit may write into a memory root, checked before any byte is written (issue 26).

Owns: :func:`incoming`, the paths a remote commit would change in the root, and
:func:`check_incoming`, which refuses the whole commit unless every one of them is memory (the table
:func:`~.layout.memory_kind`: ``MEMORY.md``, ``memories/<topic>.md``, the same in the home's project
roots, and ``.gitattributes`` / ``.gitignore`` byte for byte as mmd writes them,
:data:`~.repo.ACCEPTED_FILES`). Refused: a ``..``, ``.git`` or ``.mmd`` path, any path outside the
table, a symlink, a submodule, a mode that is no regular file's, a blob over its cap (sizes come
from ``git cat-file --batch-check``: a refused blob is never read), more files or bytes than one
sync takes, or a tree git's own ``verify_path`` refuses (``git read-tree`` into a private index,
with ``core.protectNTFS`` and ``core.protectHFS``). A refusal is a :class:`Refusal` naming the path,
why, and the commit. A file of mode 100755 is refused too, memory or not: mmd never writes one
(its files are 0600, committed as 100644), so it comes from a hand-made or hostile commit, and
writing it 0600 would leave the working file and the commit disagreeing on its mode.

Never does: the network, merges, or any write to the root (the fetch's object checks are
:data:`FETCH_CHECKS`, passed by :mod:`.remote`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .layout import memory_kind
from .repo import ACCEPTED_FILES
from .runner import Git
from .tree import TreeEntry, blob_sizes, read_blobs

__all__ = ["FETCH_CHECKS", "INCOMING_MAX_BYTES", "INCOMING_MAX_FILES", "INDEX_MAX_BYTES", "SHOWN", "Refusal",
           "check_incoming", "incoming"]

INDEX_MAX_BYTES = 4 * 1024 * 1024
"""Largest MEMORY.md a remote may bring, in bytes (an index over its caps is allowed, to this size)."""
_GIT_FILE_MAX_BYTES = 4096
"""Largest ``.gitattributes`` / ``.gitignore`` read to compare with mmd's own, in bytes."""
INCOMING_MAX_FILES = 20_000
"""Most memory files one remote commit may change."""
INCOMING_MAX_BYTES = 64 * 1024 * 1024
"""Most bytes of memory files one remote commit may bring, in all."""
SHOWN = 5
"""Most paths or topics a refusal names; the count says how many there are."""

FETCH_CHECKS = ("-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true",
                *(arg for msg in ("hasDot", "hasDotdot", "hasDotgit", "emptyName", "fullPathname")
                  for arg in ("-c", f"fetch.fsck.{msg}=warn")),
                "-c", "core.bigFileThreshold=16m")
"""git's options for a fetch: every fetched object is checked (``fsck``), so a malformed or corrupt object is
never stored; the tree entry NAMES git would refuse (``..``, ``.git``, empty, a full path) are only warned
about there, since :func:`check_incoming` refuses them naming the path and the commit, once per commit
(git's refusal of the pack names neither, and a later clean commit on top of such one could never be
fetched again). A big blob is streamed, not held whole in git's memory."""
_GIT_CHECKS = ("-c", "core.protectNTFS=true", "-c", "core.protectHFS=true")


@dataclass(frozen=True)
class Refusal:
    """A remote commit a sync did not apply, and why.

    Attributes:
        commit: the remote commit (hex); ``ours``: the local HEAD it was weighed against. The next sync
            weighs it again only when either has moved.
        remote_ref: ``<remote>/<branch>``.
        kind: ``contain`` (it would write something that is not memory: nothing of it is taken) or
            ``hold`` (applying it would leave the root unusable: its topics became review candidates).
        reason: one sentence naming the first paths or topics and why.
        paths: at most :data:`SHOWN` paths; ``topics``: at most as many topics; ``count``: how many in all.
    """

    commit: str
    ours: str | None
    remote_ref: str
    kind: Literal["contain", "hold"]
    reason: str
    paths: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    count: int = 0

    @property
    def message(self) -> str:
        """What a person reads: the commit, the reason, what happened and what happens next."""
        after = ("nothing of it was written; the next sync takes the remote again once it changes"
                 if self.kind == "contain" else
                 "the root stays as it was and the incoming topics are review candidates (`mmctl queue`); "
                 "the next sync weighs the remote again once it, or this root, changes")
        return f"refused {self.remote_ref} at {self.commit[:12]}: {self.reason}; {after}"

    def to_json(self) -> dict[str, Any]:
        """``{commit, ours, remote, kind, reason, message, paths, topics, count}``."""
        return {"commit": self.commit, "ours": self.ours, "remote": self.remote_ref, "kind": self.kind,
                "reason": self.reason, "message": self.message, "paths": list(self.paths),
                "topics": list(self.topics), "count": self.count}


def incoming(base: Mapping[str, TreeEntry], ours: Mapping[str, TreeEntry],
             theirs: Mapping[str, TreeEntry]) -> dict[str, TreeEntry | None]:
    """The paths ``theirs`` changes since ``base`` that ``ours`` does not already hold as they are:
    ``{path: its entry in theirs, or None for a removal}``, sorted (a fast-forward's ``base`` is ``ours``)."""
    paths = sorted(theirs.keys() | base.keys() | ours.keys())
    return {p: theirs.get(p) for p in paths if theirs.get(p) != base.get(p) and theirs.get(p) != ours.get(p)}


def _path_problem(path: str) -> str | None:
    """Why a remote may not write ``path`` (the table's rule, said for people), or None when it may."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component (it would land outside its folder)"
    if any(p.lower().rstrip(". ") == ".git" or p.lower().startswith("git~") for p in parts):
        return "is inside .git (hooks and configuration are never synced)"
    if any(p == ".mmd" for p in parts):
        return "is mmd's own state (.mmd/ is never synced)"
    if memory_kind(path) is None:
        return ("is not a memory file (a remote may bring only MEMORY.md, memories/<topic>.md, the same in "
                "projects/<key>/, and mmd's own .gitattributes and .gitignore)")
    return None


def _entry_problem(path: str, entry: TreeEntry | None) -> str | None:
    if entry is None:
        return "would be removed (mmd's own .gitattributes and .gitignore stay)" if path in ACCEPTED_FILES else None
    if entry.mode == "120000":
        return "is a symbolic link (a root holds regular files only)"
    if entry.mode == "160000":
        return "is a submodule (a root holds regular files only)"
    if entry.mode == "100755":
        return "is executable (mode 100755): a memory file is a plain file, as mmd writes it (100644)"
    if entry.mode != "100644":
        return f"has mode {entry.mode}, not a plain file's (100644)"
    return None


def _cap(path: str, note_max_bytes: int) -> int:
    kind = memory_kind(path)
    return note_max_bytes if kind == "note" else INDEX_MAX_BYTES if kind == "index" else _GIT_FILE_MAX_BYTES


def check_incoming(git: Git, commit: str, changes: Mapping[str, TreeEntry | None], *, remote_ref: str,
                   ours: str | None, note_max_bytes: int) -> Refusal | None:
    """Refuse ``commit`` (whose tree holds ``changes``, see :func:`incoming`) if it would write anything
    but memory; None when every change is a memory file within its cap.

    Args:
        note_max_bytes: a note's byte cap (the root's ``detailMaxBytes``); MEMORY.md's is
            :data:`INDEX_MAX_BYTES`.

    Raises:
        GitError: if git fails for another reason than the tree's paths.
    """
    def refuse(found: list[tuple[str, str]], total: int | None = None) -> Refusal:
        shown = "; ".join(f"{path!r} {why}" for path, why in found[:SHOWN])
        more = f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        return Refusal(commit, ours, remote_ref, "contain", shown + more,
                       paths=tuple(p for p, _ in found[:SHOWN]), count=total or len(found))

    bad = [(p, why) for p, e in changes.items() if (why := _entry_problem(p, e) or _path_problem(p)) is not None]
    if bad:
        return refuse(bad)
    written = {p: e for p, e in changes.items() if e is not None}
    if len(written) > INCOMING_MAX_FILES:
        return refuse([(f"{len(written)} files", f"are more than the {INCOMING_MAX_FILES} one sync takes")],
                      len(written))
    sizes = blob_sizes(git, (e.oid for e in written.values()))
    big = [(p, f"is {sizes.get(e.oid, 0)} bytes, over its cap of {_cap(p, note_max_bytes)} bytes (not read)")
           for p, e in written.items() if sizes.get(e.oid, 0) > _cap(p, note_max_bytes)]
    if big:
        return refuse(big)
    total = sum(sizes.get(e.oid, 0) for e in written.values())
    if total > INCOMING_MAX_BYTES:
        return refuse([(f"{len(written)} files", f"hold {total} bytes, over the {INCOMING_MAX_BYTES} one sync "
                                                 "takes")], len(written))
    own = {p: e.oid for p, e in written.items() if p in ACCEPTED_FILES}
    texts = read_blobs(git, own.values())
    odd = [(p, "differs from the one mmd writes (a remote may bring only mmd's own)") for p, oid in own.items()
           if texts.get(oid) not in ACCEPTED_FILES[p]]
    if odd:
        return refuse(odd)
    refused = _git_verify(git, commit)
    return refuse([(commit[:12], f"is refused by git itself: {refused}")]) if refused else None


def _git_verify(git: Git, commit: str) -> str | None:
    """git's own ``verify_path`` over ``commit``'s whole tree (``read-tree`` into a private index, never the
    user's): its message, or None when git takes every path."""
    with tempfile.TemporaryDirectory(prefix="mmd-git-") as tmp:
        done = git.run(*_GIT_CHECKS, "read-tree", commit, env={"GIT_INDEX_FILE": os.path.join(tmp, "index")},
                       check=False)
    return done.stderr.decode("utf-8", "replace").strip() or "read-tree failed" if done.returncode else None
