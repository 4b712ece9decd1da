"""The memory root's history in git: one commit per revision, and what the history can tell.

Owns: :class:`GitHistory` — committing the root's files after a revision
(message ``write deploy-region (r42)``, with ``Mmd-Revision`` / ``Mmd-Topics`` /
``Mmd-Root`` trailers so ``r42`` can be found again), the root's id
(``.mmd/root-id``: which root made a commit), the log (per topic, JSON-able), the
diff between two revisions, a topic's note at a revision, and the plan a
revert needs. Reverts and restores are NOT performed here: the daemon
performs them as new writes under every budget, never as a history rewrite.
Never commits ``.mmd/`` (``.gitignore``, see :mod:`.repo`). Never does: sync.

Revision numbers are local: two roots sharing a remote both make an ``r42``. So
``r42`` means the one commit recording revision 42 made by THIS root (its
``Mmd-Root`` trailer is this root's id; a commit made before the trailer existed
counts when it is the only candidate); several or none: refused, naming the
candidates by commit hash (a hash always works).
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmd.core.durable import atomic_write
from mmd.core.errors import ErrorCode, MMError
from mmd.core.format import parse_index, parse_note
from mmd.core.model import IndexEntry
from mmd.core.paths import DETAIL_DIR, INDEX_NAME, STATE_DIR

from .runner import Git, GitError
from .tree import TreeEntry, identity_env, read_blobs, read_tree

__all__ = ["CAUSES", "MACHINE_TRAILER", "NAME_MAX", "ROOT_ID_NAME", "GitHistory", "RootAt", "clean_name",
           "commit_message", "machine_name", "root_id"]

CAUSES = ("write", "delete", "external edit", "revert", "restore", "accept", "sync")
"""Usual commit causes; any short phrase is accepted."""

_REV = re.compile(r"^r(\d+)$")
_ROOT_ID = re.compile(r"^[0-9a-f]{8,64}$")
ROOT_ID_NAME = "root-id"
"""The root id's file name inside ``.mmd/`` (never committed: a fresh clone makes a new id)."""
_TRAILERS = ("%(trailers:key=Mmd-Revision,valueonly,separator=%x20)%x1f"
             "%(trailers:key=Mmd-Root,valueonly,separator=%x20)")
_SUBJECT_TOPICS = 4
"""Most topics named in a commit subject; the trailer lists them all."""
MACHINE_TRAILER = "Mmd-Machine"
"""Every mmd commit's trailer naming the machine (its host name) that made it, beside ``Mmd-Root``."""
NAME_MAX = 64
"""Most characters of a machine name (a longer one, from a commit, is cut)."""


def clean_name(raw: str) -> str:
    """A machine name as commits record it: letters, digits, ``.``, ``_`` and ``-`` only, at most :data:`NAME_MAX`
    (anything else dropped: a remote commit's trailer is read as an attacker's)."""
    return re.sub(r"[^A-Za-z0-9._-]", "", raw.strip())[:NAME_MAX]


def machine_name() -> str:
    """This machine's name for commits: its host name, cleaned (:func:`clean_name`; ``unknown`` when empty)."""
    return clean_name(socket.gethostname()) or "unknown"


def root_id(root: Path) -> str:
    """This root's id (16 hex digits), from ``<root>/.mmd/root-id``; made and written there on first use.

    Raises:
        OSError: if a new id cannot be written (the root is gone or read-only).
    """
    path = root / STATE_DIR / ROOT_ID_NAME
    try:
        text = path.read_text(encoding="ascii").strip()
        if _ROOT_ID.match(text):
            return text
    except (OSError, UnicodeDecodeError):
        pass
    made = secrets.token_hex(8)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    atomic_write(path, f"{made}\n".encode("ascii"), mode=0o600)
    return made


def commit_message(revisions: Sequence[int], cause: str, topics: Sequence[str], root: str | None = None,
                   machine: str | None = None, extra: Sequence[str] = ()) -> str:
    """``write deploy-region (r42)`` plus the ``Mmd-Revision``, ``Mmd-Topics``, ``Mmd-Root`` and ``Mmd-Machine``
    trailers, then the ``extra`` trailer lines (a merge's ``Mmd-Conflict``, :mod:`.versions`).

    More than four topics are counted in the subject (``write 12 topics (r40, r41)``); ``root`` is the
    id of the root making the commit (see :func:`root_id`), ``machine`` the machine's (:func:`machine_name`).
    """
    named = ", ".join(topics) if len(topics) <= _SUBJECT_TOPICS else f"{len(topics)} topics"
    revs = ", ".join(f"r{r}" for r in revisions)
    subject = " ".join(part for part in (cause, named, f"({revs})" if revs else "") if part)
    trailers = []
    if revisions:
        trailers.append("Mmd-Revision: " + " ".join(str(r) for r in revisions))
    if topics:
        trailers.append("Mmd-Topics: " + " ".join(topics))
    if root:
        trailers.append(f"Mmd-Root: {root}")
    if machine:
        trailers.append(f"{MACHINE_TRAILER}: {machine}")
    trailers += extra
    return subject + ("\n\n" + "\n".join(trailers) if trailers else "") + "\n"


@dataclass(frozen=True, slots=True)
class RootAt:
    """The memory files at one commit: its tree, the parsed index entries by topic, MEMORY.md's text ('' if none)."""

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
    """Commits and reads the history of one memory root (the repository's top level).

    Args:
        root: the root, already prepared by :func:`~.repo.ensure_repo`.
        env: the environment git runs with (default ``os.environ``).

    Raises:
        GitMissing: if ``git`` is not on PATH.
    """

    def __init__(self, root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> None:
        self.root = Path(os.path.abspath(root))
        self.git = Git(self.root, env, alone=True)  # the root's own repository, never one around it
        self._identity: dict[str, str] | None = None
        self._root_id: str | None = None

    @property
    def identity(self) -> dict[str, str]:
        """The author fallback variables (see :func:`~.tree.identity_env`), read once."""
        if self._identity is None:
            self._identity = identity_env(self.git)
        return self._identity

    @property
    def root_id(self) -> str:
        """This root's id (see :func:`root_id`), read or made once.

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

    def stage(self) -> None:
        """Stage the root's files as they are now (``git add --all``): what :meth:`commit` with ``staged``
        records, whatever the files become meanwhile.

        Raises:
            MMError(E_IO): if git fails.
        """
        try:
            self.git.run("add", "--all", "--", ".")
        except GitError as error:
            raise MMError(ErrorCode.E_IO, f"git add in {self.root} failed: {error.stderr}") from error

    def commit(self, revisions: int | Sequence[int] | None, cause: str, topics: Sequence[str], *,
               staged: bool = False) -> str | None:
        """Commit the root's files as they are now (with ``staged``: as :meth:`stage` left them);
        None when nothing changed.

        Args:
            revisions: the revision (or the batch of revisions of a group commit) the files hold.
            cause: what happened (``write``, ``delete``, ``external edit``, ``revert``, … see :data:`CAUSES`).
            topics: the topics it touched, in order; empty: the notes whose files changed.
            staged: commit what :meth:`stage` staged, without staging the files again.

        Returns:
            The new commit's id (hex), or None if the files equal HEAD's.

        Raises:
            MMError(E_IO): if git fails (a hook refused the commit, …): the message is git's.
        """
        revs = [revisions] if isinstance(revisions, int) else list(revisions or ())
        try:
            if not staged:
                self.git.run("add", "--all", "--", ".")
            if not topics:
                topics = self.staged_topics()
            done = self.git.run("commit", "--quiet", "-F", "-",
                                input=commit_message(revs, cause, topics, self.root_id, machine_name()).encode(),
                                env=self.identity, check=False)
            if done.returncode != 0:
                if b"nothing to commit" in done.stdout or b"nothing added to commit" in done.stdout:
                    return None
                raise GitError(["commit"], done.returncode, (done.stderr or done.stdout).decode("utf-8", "replace"))
            return self.git.out("rev-parse", "HEAD")
        except GitError as error:
            raise MMError(ErrorCode.E_IO, f"git commit in {self.root} failed: {error.stderr}") from error

    def staged_topics(self) -> list[str]:
        """Topics whose ``memories/<topic>.md`` differs between the index (staged) and HEAD, sorted."""
        names = self.git.run("diff", "--cached", "--name-only", "--no-renames", "-z", "--", DETAIL_DIR,
                             check=False).stdout.decode("utf-8", "replace").split("\0")
        return sorted(n[len(DETAIL_DIR) + 1:-3] for n in names if n.endswith(".md") and n.count("/") == 1)

    def last_revision(self) -> int:
        """The highest revision number the newest commit recording one names; 0 when none does.

        A daemon that starts numbering at ``last_revision() + 1`` keeps ``r42`` unique in the root's history.
        """
        fmt = "%(trailers:key=Mmd-Revision,valueonly,separator=%x20)"
        done = self.git.run("log", "-1", f"--format={fmt}", "--grep", "^Mmd-Revision:", check=False)
        numbers = [int(r) for r in done.stdout.decode().split() if r.isdigit()]
        return max(numbers, default=0)

    def resolve(self, rev: str) -> str:
        """The commit id of ``rev``: ``r42`` (the one commit of THIS root recording revision 42) or any commit-ish.

        ``r42`` matches the commits whose ``Mmd-Root`` is this root's id; when none does, those without
        the trailer (made before it existed). Exactly one must match.

        Raises:
            MMError(E_INVALID): if no such commit exists, or ``r42`` matches none or several: the message
                lists the candidates by commit hash (another root's ``r42`` included).
        """
        match = _REV.match(rev.strip())
        if match:
            return self._resolve_revision(rev.strip(), match.group(1))
        done = self.git.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if done.returncode != 0:
            raise MMError(ErrorCode.E_INVALID, f"{rev!r} is neither a revision (r42) nor a commit of {self.root}")
        return done.stdout.decode().strip()

    def _resolve_revision(self, rev: str, number: str) -> str:
        done = self.git.run("log", f"--format=%H%x1f%s%x1f{_TRAILERS}", "--grep", "^Mmd-Revision:", check=False)
        found = []
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            commit, subject, revs, root = line.split("\x1f")
            if number in revs.split():
                found.append((commit, subject, root.strip()))
        own = [f for f in found if f[2] == self.root_id] or [f for f in found if not f[2]]
        if len(own) == 1:
            return own[0][0]
        listed = "; ".join(f"{c} {s!r}" + ("" if r == self.root_id else " (other root)" if r else " (no root recorded)")
                           for c, s, r in found)
        if not found:
            raise MMError(ErrorCode.E_INVALID, f"no commit records revision {rev} in {self.root}")
        why = f"{len(own)} commits of this root record {rev}" if own else f"no commit of this root records {rev}"
        raise MMError(ErrorCode.E_INVALID, f"{why} (revision numbers are per root): name the commit by its hash "
                      f"(`mmctl log` lists them); candidates: {listed}", details=listed)

    def root_at(self, commit: str | None) -> RootAt:
        """The files and index entries at ``commit`` (None: an empty root); an entry whose ``file`` is
        not a safe path is kept as written (see :func:`mmd.core.format.parse_index`'s ``strict_files``).

        Raises:
            MMError(E_PARSE): if that commit's MEMORY.md is not mm v1 (a heading that is not a topic).
        """
        tree = read_tree(self.git, commit)
        index = tree.get(INDEX_NAME)
        text = read_blobs(self.git, [index.oid])[index.oid].decode("utf-8", "replace") if index else ""
        entries = {e.topic: e for e in parse_index(text, strict_files=False).entries} if text else {}
        return RootAt(commit, tree, entries, text)

    def parent(self, commit: str) -> str | None:
        """``commit``'s first parent, or None for a root commit."""
        done = self.git.run("rev-parse", "--verify", "--quiet", f"{commit}^1", check=False)
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def log(self, topic: str | None = None, *, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` commits of the root (those touching ``topic`` when given), newest first.

        A commit's topics are its ``Mmd-Topics`` trailer, else the notes it changed.

        Returns:
            ``[{commit, parents, date (ISO-8601), author, subject, revisions: [int], topics: [str], root (id or
            None: not recorded), otherRoot (another root made it: its ``rN`` is not this root's)}]``.
        """
        fmt = f"%x1e%H%x1f%P%x1f%aI%x1f%an%x1f%s%x1f{_TRAILERS}%x1f%(trailers:key=Mmd-Topics,valueonly,separator=%x20)"
        done = self.git.run("-c", "core.quotePath=false", "log", f"--format={fmt}", "--name-only",
                            "--no-renames", check=False)
        out: list[dict[str, Any]] = []
        for chunk in done.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
            head, _, names = chunk.partition("\n")
            commit, parents, date, author, subject, revs, root, topics = head.split("\x1f")
            named = topics.split() or [p[len(DETAIL_DIR) + 1:-3] for p in names.split("\n")
                                       if p.startswith(f"{DETAIL_DIR}/") and p.endswith(".md")]
            if topic is not None and topic not in named:
                continue
            out.append({"commit": commit, "parents": parents.split(), "date": date, "author": author,
                        "subject": subject, "revisions": [int(r) for r in revs.split() if r.isdigit()],
                        "topics": named, "root": root.strip() or None,
                        "otherRoot": bool(root.strip()) and root.strip() != self.root_id})
            if len(out) >= limit:
                break
        return out

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
        patch = self.git.run("diff", "--no-color", "--no-ext-diff", base, new, "--", INDEX_NAME, DETAIL_DIR,
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
