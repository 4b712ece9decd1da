"""The memory home's history in git: one commit per revision, and what the history can tell, per root.

Owns: :class:`GitHistory` — committing the home's files after revisions of its roots (message
``write deploy-region (r42)``, trailers of :mod:`.message` so ``r42`` can be found again), the log (per
root and topic, JSON-able), the diff between two revisions, a topic's note at a revision, and the plan a
revert needs. The home is one repository: the user root at its top, each project root its folder
``projects/<key>/`` (:mod:`.layout`); :meth:`GitHistory.scoped` is the view of one root, whose paths,
topics and revision numbers are that root's. Reverts and restores are NOT performed here: the daemon
performs them as new writes under every budget, never as a history rewrite. Never commits ``.mmd/``
(``.gitignore``, see :mod:`.repo`). Never does: sync.

Revision numbers are per root: two homes sharing a remote both make an ``r42``, and a project root numbers
its own. So ``r42`` of a root means the one commit recording revision 42 of THAT root (``Mmd-Revision`` for
the user root, ``Mmd-Project-Revision: <key> 42`` for a project's) made by THIS home (its ``Mmd-Root``
trailer is this home's id; a commit made before the trailer existed counts when it is the only candidate);
several or none: refused, naming the candidates by commit hash (a hash always works).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmd.core.errors import ErrorCode, MMError
from mmd.core.format import parse_index, parse_note
from mmd.core.model import IndexEntry
from mmd.core.paths import DETAIL_DIR, INDEX_NAME
from mmd.core.projects import PROJECTS_DIR

from .layout import USER_SCOPE, prefix, scoped_topic, split, split_topic, sub_tree
from .message import (
    MACHINE_TRAILER,
    NAME_MAX,
    PROJECT_REVISION_TRAILER,
    ROOT_ID_NAME,
    clean_name,
    commit_message,
    machine_name,
    project_revisions,
    root_id,
)
from .runner import Git, GitError
from .tree import TreeEntry, hash_blob, identity_env, read_blobs, read_tree

__all__ = ["CAUSES", "MACHINE_TRAILER", "NAME_MAX", "ROOT_ID_NAME", "GitHistory", "RootAt", "clean_name",
           "commit_message", "machine_name", "root_id"]

CAUSES = ("write", "delete", "external edit", "revert", "restore", "accept", "sync")
"""Usual commit causes; any short phrase is accepted."""

_SEP = "\x1d"
_TRAILERS = ("%(trailers:key=Mmd-Revision,valueonly,separator=%x20)%x1f"
             "%(trailers:key=Mmd-Root,valueonly,separator=%x20)%x1f"
             f"%(trailers:key={PROJECT_REVISION_TRAILER},valueonly,separator=%x1d)")


@dataclass(frozen=True, slots=True)
class RootAt:
    """One root's memory files at one commit: its files (``{path relative to the root: entry}``), the parsed
    index entries by topic, MEMORY.md's text ('' if none)."""

    commit: str | None
    tree: dict[str, TreeEntry]
    entries: dict[str, IndexEntry]
    index_text: str = ""

    def note_oid(self, topic: str) -> str | None:
        """The blob id of ``topic``'s note (at its entry's ``file``, else ``memories/<topic>.md``)."""
        entry = self.entries.get(topic)
        found = self.tree.get(entry.file if entry else f"{DETAIL_DIR}/{topic}.md")
        return found.oid if found else None

    def topics(self) -> set[str]:
        """Topics with an entry or a ``memories/<topic>.md`` file."""
        notes = {p[len(DETAIL_DIR) + 1:-3] for p in self.tree if p.startswith(f"{DETAIL_DIR}/") and p.endswith(".md")
                 and "/" not in p[len(DETAIL_DIR) + 1:]}
        return set(self.entries) | notes


class GitHistory:
    """Commits and reads the history of the memory home (the repository's top level is the user root), or, as
    :meth:`scoped`'s view, of one of its roots.

    Args:
        root: the user root, already prepared by :func:`~.repo.ensure_repo`.
        env: the environment git runs with (default ``os.environ``).

    Raises:
        GitMissing: if ``git`` is not on PATH.
    """

    def __init__(self, root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> None:
        self.root = Path(os.path.abspath(root))
        self.git = Git(self.root, env, alone=True)  # the root's own repository, never one around it
        self.scope = USER_SCOPE
        """Whose history this is: ``user``, or a project root's key (see :meth:`scoped`)."""
        self._identity: dict[str, str] | None = None
        self._root_id: str | None = None
        self.stand_in: Callable[[Sequence[str] | None], Mapping[str, bytes]] | None = None
        """Called with the scopes each :meth:`stage` (or :meth:`commit`) stages (None: every root): ``{path
        relative to the home: bytes}`` that the commit records in place of those files' text (the files stay as
        they are); the daemon's use: a secret an outside edit brought, held for review, is committed redacted."""

    def scoped(self, scope: str) -> GitHistory:
        """The view of the root ``scope`` (``user`` or a project key): its files, topics, revisions and log, paths
        relative to it; commits and the repository stay the home's."""
        view = copy.copy(self)
        view.scope = scope
        return view

    @property
    def prefix(self) -> str:
        """Where this view's root lives in the repository (``""``, or ``projects/<key>/``)."""
        return prefix(self.scope)

    @property
    def identity(self) -> dict[str, str]:
        """The author fallback variables (see :func:`~.tree.identity_env`), read once."""
        if self._identity is None:
            self._identity = identity_env(self.git)
        return self._identity

    @property
    def root_id(self) -> str:
        """This home's id (see :func:`~.message.root_id`, in the user root's ``.mmd/``), read or made once.

        Raises:
            MMError(E_IO): if a new id cannot be written.
        """
        if self._root_id is None:
            try:
                self._root_id = root_id(self.root)
            except OSError as error:
                raise MMError(ErrorCode.E_IO, f"recording the root id in {self.root}/.mmd failed: {error}") from error
        return self._root_id

    def head(self) -> str | None:
        """The commit HEAD points at, or None on an unborn branch."""
        done = self.git.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
        if done.returncode != 0:
            return None
        return done.stdout.decode().strip() or None

    def stage(self, scopes: Sequence[str] | None = None) -> None:
        """Stage the files of the roots ``scopes`` as they are now (``git add --all``; None: every file of the
        home): what :meth:`commit` with ``staged`` records, whatever the files become meanwhile. The user root's
        files are every path outside ``projects/``; a project root's, its folder.

        Raises:
            MMError(E_IO): if git fails.
        """
        try:
            self._add(scopes)
        except GitError as error:
            raise MMError(ErrorCode.E_IO, f"git add in {self.root} failed: {error.stderr}") from error

    def _add(self, scopes: Sequence[str] | None) -> None:
        if scopes is None:
            self.git.run("add", "--all", "--", ".")
            self._stand_in(None)
            return
        if USER_SCOPE in scopes:
            self.git.run("add", "--all", "--", ".", f":(exclude){PROJECTS_DIR}")
        folders = [prefix(s).rstrip("/") for s in sorted(set(scopes) - {USER_SCOPE})]
        gone = [f for f in folders if not (self.root / f).is_dir()]
        tracked = set(self.git.run("ls-files", "-z", "--", *gone).stdout.decode("utf-8", "surrogateescape")
                      .split("\0")) if gone else set()
        present = [f for f in folders if f not in gone or any(t.startswith(f + "/") for t in tracked)]
        if present:  # a root neither on disk nor in the index has nothing to stage (git refuses such a path)
            self.git.run("add", "--all", "--", *present)
        self._stand_in(scopes)

    def _stand_in(self, scopes: Sequence[str] | None) -> None:
        """Stage :attr:`stand_in`'s texts in place of the files just added."""
        texts = self.stand_in(scopes) if self.stand_in is not None else {}
        for path, data in sorted(texts.items()):
            oid = hash_blob(self.git, data)
            self.git.run("update-index", "--add", "--cacheinfo", f"100644,{oid},{path}")

    def commit(self, revisions: int | Sequence[int] | None, cause: str, topics: Sequence[str], *,
               staged: bool = False, scopes: Sequence[str] | None = None,
               projects: Mapping[str, Sequence[int]] | None = None) -> str | None:
        """Commit the files of the roots ``scopes`` as they are now (None: every file of the home; with
        ``staged``: as :meth:`stage` left them); None when nothing changed.

        Args:
            revisions: the user root's revision (or the batch of revisions of a group commit) the files hold.
            cause: what happened (``write``, ``delete``, ``external edit``, ``revert``, … see :data:`CAUSES`).
            topics: the topics it touched, in order, a project root's as ``<key>/<topic>``; empty: the notes
                whose files changed.
            staged: commit what :meth:`stage` staged, without staging the files again.
            projects: ``{key: revisions}`` of the project roots the files hold.

        Returns:
            The new commit's id (hex), or None if the files equal HEAD's.

        Raises:
            MMError(E_IO): if git fails (a hook refused the commit, …): the message is git's.
        """
        revs = [revisions] if isinstance(revisions, int) else list(revisions or ())
        try:
            if not staged:
                self._add(scopes)
            if not topics:
                topics = self.staged_topics()
            message = commit_message(revs, cause, topics, self.root_id, machine_name(), projects=projects)
            done = self.git.run("commit", "--quiet", "-F", "-", input=message.encode(), env=self.identity,
                                check=False)
            if done.returncode != 0:
                if any(m in done.stdout for m in (b"nothing to commit", b"nothing added to commit",
                                                  b"no changes added to commit")):  # a held text stands in
                    return None
                raise GitError(["commit"], done.returncode, (done.stderr or done.stdout).decode("utf-8", "replace"))
            return self.git.out("rev-parse", "HEAD")
        except GitError as error:
            raise MMError(ErrorCode.E_IO, f"git commit in {self.root} failed: {error.stderr}") from error

    def staged_topics(self) -> list[str]:
        """Topics whose note differs between the index (staged) and HEAD, sorted, a project root's as
        ``<key>/<topic>`` (none when git fails: the topics only name the commit)."""
        try:
            names = self.staged_paths()
        except GitError as error:
            if error.returncode == -1:  # timed out or could not start: the commit fails as it would
                raise
            return []
        return sorted(t for n in names if (t := _topic_of(n)) is not None)

    def staged_paths(self) -> list[str]:
        """The repository paths whose staged file differs from HEAD's (undecodable bytes as surrogates).

        Raises:
            GitError: if git fails.
        """
        names = self.git.run("diff", "--cached", "--name-only", "--no-renames", "-z").stdout
        return [n for n in names.decode("utf-8", "surrogateescape").split("\0") if n]

    def last_revision(self) -> int:
        """The highest revision number of this view's root the newest commit recording one names; 0 when none does.

        A daemon that starts numbering at ``last_revision() + 1`` keeps ``r42`` unique in the root's history.
        """
        if self.scope == USER_SCOPE:
            fmt, grep = "%(trailers:key=Mmd-Revision,valueonly,separator=%x20)", "^Mmd-Revision:"
        else:
            fmt = f"%(trailers:key={PROJECT_REVISION_TRAILER},valueonly,separator=%x1d)"
            grep = f"^{PROJECT_REVISION_TRAILER}: {self.scope} "
        done = self.git.run("log", "-1", f"--format={fmt}", "--grep", grep, check=False)
        values = done.stdout.decode("utf-8", "replace").strip()
        return max(self._revisions(values, "") if self.scope == USER_SCOPE else self._revisions("", values), default=0)

    def _revisions(self, user: str, projects: str) -> list[int]:
        """This view's revision numbers among a commit's ``Mmd-Revision`` values (``user``) or, for a project
        root, its ``Mmd-Project-Revision`` values (``projects``, joined by \\x1d)."""
        if self.scope == USER_SCOPE:
            return [int(r) for r in user.split() if r.isdigit()]
        return project_revisions(projects, _SEP).get(self.scope, [])

    def resolve(self, rev: str) -> str:
        """The commit id of ``rev``: ``r42`` (the one commit of THIS home recording revision 42 of this view's root)
        or any commit-ish.

        ``r42`` matches the commits whose ``Mmd-Root`` is this home's id; when none does, those without
        the trailer (made before it existed). Exactly one must match.

        Raises:
            MMError(E_INVALID): if no such commit exists, or ``r42`` matches none or several: the message
                lists the candidates by commit hash (another root's ``r42`` included).
        """
        text = rev.strip()
        if text[:1] == "r" and text[1:].isdigit() and text[1:].isascii():
            return self._resolve_revision(text, int(text[1:]))
        done = self.git.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if done.returncode != 0:
            raise MMError(ErrorCode.E_INVALID, f"{rev!r} is neither a revision (r42) nor a commit of {self.root}")
        return done.stdout.decode().strip()

    def _resolve_revision(self, rev: str, number: int) -> str:
        grep = "^Mmd-Revision:" if self.scope == USER_SCOPE else f"^{PROJECT_REVISION_TRAILER}: {self.scope} "
        done = self.git.run("log", f"--format=%H%x1f%s%x1f{_TRAILERS}", "--grep", grep, check=False)
        found = []
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            commit, subject, revs, root, projects = line.split("\x1f")
            if number in self._revisions(revs, projects):
                found.append((commit, subject, root.strip()))
        own = [f for f in found if f[2] == self.root_id] or [f for f in found if not f[2]]
        if len(own) == 1:
            return own[0][0]
        listed = "; ".join(f"{c} {s!r}" + ("" if r == self.root_id else " (other root)" if r else " (no root recorded)")
                           for c, s, r in found)
        where = self.root if self.scope == USER_SCOPE else f"the project root {self.scope}"
        if not found:
            raise MMError(ErrorCode.E_INVALID, f"no commit records revision {rev} of {where}")
        why = f"{len(own)} commits of this root record {rev}" if own else f"no commit of this root records {rev}"
        raise MMError(ErrorCode.E_INVALID, f"{why} (revision numbers are per root): name the commit by its hash "
                      f"(`mmctl log` lists them); candidates: {listed}", details=listed)

    def root_at(self, commit: str | None, tree: Mapping[str, TreeEntry] | None = None) -> RootAt:
        """The files and index entries of this view's root at ``commit`` (None: an empty root); ``tree``: that
        commit's whole tree when the caller has it. An entry whose ``file`` is not a safe path is kept as written
        (see :func:`mmd.core.format.parse_index`'s ``strict_files``).

        Raises:
            MMError(E_PARSE): if that commit's MEMORY.md is not mm v1 (a heading that is not a topic).
        """
        files = sub_tree(read_tree(self.git, commit) if tree is None else tree, self.scope)
        index = files.get(INDEX_NAME)
        text = read_blobs(self.git, [index.oid])[index.oid].decode("utf-8", "replace") if index else ""
        entries = {e.topic: e for e in parse_index(text, strict_files=False).entries} if text else {}
        return RootAt(commit, files, entries, text)

    def parent(self, commit: str) -> str | None:
        """``commit``'s first parent, or None for a root commit."""
        done = self.git.run("rev-parse", "--verify", "--quiet", f"{commit}^1", check=False)
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def log(self, topic: str | None = None, *, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` commits of this view's root (those touching ``topic`` when given), newest first.

        A commit's topics are its ``Mmd-Topics`` trailer, else the notes it changed; it is this root's when
        one of them is, or it records a revision of this root, or it names neither and changed a file of this
        root (a commit naming nothing, a merge, is the user root's).

        Returns:
            ``[{commit, parents, date (ISO-8601), author, subject, revisions: [int], topics: [str], root (id or
            None: not recorded), otherRoot (another home made it: its ``rN`` is not this root's)}]``; topics and
            revisions are this root's.
        """
        fmt = f"%x1e%H%x1f%P%x1f%aI%x1f%an%x1f%s%x1f{_TRAILERS}%x1f%(trailers:key=Mmd-Topics,valueonly,separator=%x20)"
        done = self.git.run("-c", "core.quotePath=false", "log", f"--format={fmt}", "--name-only",
                            "--no-renames", check=False)
        out: list[dict[str, Any]] = []
        for chunk in done.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
            head, _, names = chunk.partition("\n")
            commit, parents, date, author, subject, revs, root, projects, topics = head.split("\x1f")
            files = [n for n in names.split("\n") if n]
            listed = topics.split() or [t for f in files if (t := _topic_of(f)) is not None]
            named = [t for s, t in filter(None, map(split_topic, listed)) if s == self.scope]
            revisions = self._revisions(revs, projects)
            if not (named or revisions) and not self._touches(topics.split(), revs + projects, files):
                continue
            if topic is not None and topic not in named:
                continue
            out.append({"commit": commit, "parents": parents.split(), "date": date, "author": author,
                        "subject": subject, "revisions": revisions, "topics": named, "root": root.strip() or None,
                        "otherRoot": bool(root.strip()) and root.strip() != self.root_id})
            if len(out) >= limit:
                break
        return out

    def _touches(self, topics: list[str], revisions: str, files: list[str]) -> bool:
        """A commit that named no topic or revision of this root: its own, when it named none at all and changed a
        file of it (a merge lists no file: the user root's)."""
        if topics or revisions.strip():
            return False
        if not files:
            return self.scope == USER_SCOPE
        return any(split(f)[0] == self.scope for f in files)

    def _notes(self, state: RootAt, topics: Sequence[str]) -> dict[str, str]:
        oids = {t: o for t in topics if (o := state.note_oid(t)) is not None}
        blobs = read_blobs(self.git, oids.values())
        return {t: parse_note(blobs[o].decode("utf-8", "replace")).body for t, o in oids.items() if o in blobs}

    def changed_topics(self, before: RootAt, after: RootAt) -> list[str]:
        """Topics whose entry or note differs between two states, sorted."""
        return sorted(t for t in before.topics() | after.topics()
                      if before.entries.get(t) != after.entries.get(t) or before.note_oid(t) != after.note_oid(t))

    def diff(self, rev: str, other: str | None = None) -> dict[str, Any]:
        """What changed between two revisions; with one, what that revision changed (from its first parent).

        Returns:
            ``{from, to, topics: [{topic, change: added|updated|removed, before, after}], patch}``;
            ``before``/``after`` are ``{entry, body}`` or null; ``patch`` is git's unified diff
            of the memory files.

        Raises:
            MMError(E_INVALID): if a revision cannot be resolved (see :meth:`resolve`).
        """
        if other is None:
            new = self.resolve(rev)
            old = self.parent(new)
        else:
            old, new = self.resolve(rev), self.resolve(other)
        before, after = self.root_at(old), self.root_at(new)
        topics = self.changed_topics(before, after)
        old_bodies, new_bodies = self._notes(before, topics), self._notes(after, topics)
        rows = []
        for t in topics:
            was, now = t in before.topics(), t in after.topics()
            rows.append({"topic": t, "change": "updated" if was and now else "added" if now else "removed",
                         "before": _version(before.entries.get(t), old_bodies.get(t)) if was else None,
                         "after": _version(after.entries.get(t), new_bodies.get(t)) if now else None})
        base = old or self.git.out("hash-object", "-t", "tree", "/dev/null")
        where = self.prefix  # a project root's patch names its own paths (MEMORY.md, memories/…)
        patch = self.git.run("diff", "--no-color", "--no-ext-diff", *([f"--relative={where}"] if where else []), base,
                             new, "--", where + INDEX_NAME, where + DETAIL_DIR,
                             check=False).stdout.decode("utf-8", "replace")
        return {"from": old, "to": new, "topics": rows, "patch": patch}

    def note_at(self, topic: str, rev: str) -> dict[str, Any] | None:
        """``topic`` as it was at ``rev``: what a restore writes back; None if it did not exist then.

        Returns:
            ``{topic, commit, entry (reference shape) or null, body, summary, tags (comma-separated)}``.

        Raises:
            MMError(E_INVALID): if ``rev`` cannot be resolved.
        """
        commit = self.resolve(rev)
        state = self.root_at(commit)
        if topic not in state.topics():
            return None
        entry = state.entries.get(topic)
        body = self._notes(state, [topic]).get(topic, "")
        return {"topic": topic, "commit": commit, "entry": entry.to_json() if entry else None, "body": body,
                "summary": entry.summary if entry else "", "tags": ", ".join(entry.tags) if entry else ""}

    def revert_plan(self, rev: str) -> list[dict[str, Any]]:
        """The writes that undo ``rev``: each topic it changed goes back to its version before it.

        Returns:
            ``[{topic, action: write|delete, content?, summary?, tags?, changedSince}]`` sorted by topic;
            ``changedSince`` says the topic changed again after ``rev`` (a revert then
            overwrites the later version too: the daemon may ask first).

        Raises:
            MMError(E_INVALID): if ``rev`` cannot be resolved.
        """
        commit = self.resolve(rev)
        before, at, now = self.root_at(self.parent(commit)), self.root_at(commit), self.root_at(self.head())
        topics = self.changed_topics(before, at)
        bodies = self._notes(before, topics)
        plan = []
        for t in topics:
            since = at.entries.get(t) != now.entries.get(t) or at.note_oid(t) != now.note_oid(t)
            entry = before.entries.get(t)
            if t in before.topics():
                plan.append({"topic": t, "action": "write", "content": bodies.get(t, ""),
                             "summary": entry.summary if entry else "",
                             "tags": ", ".join(entry.tags) if entry else "", "changedSince": since})
            else:
                plan.append({"topic": t, "action": "delete", "changedSince": since})
        return plan


def _version(entry: IndexEntry | None, body: str | None) -> dict[str, Any]:
    return {"entry": entry.to_json() if entry else None, "body": body}


def _topic_of(path: str) -> str | None:
    """The topic (``<key>/<topic>`` in a project root) whose note is at the repository path ``path``, or None."""
    scope, inner = split(path)
    head, _, name = inner.partition("/")
    if head != DETAIL_DIR or "/" in name or not name.endswith(".md"):
        return None
    return scoped_topic(scope, name[:-3])
