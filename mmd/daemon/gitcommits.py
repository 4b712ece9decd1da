"""The commits of the daemon's git part (``mmd --git``, issues 18 and 27): every root's revisions, in one repository.

Owns: :class:`CommitUses`, the part of :class:`~.gitsync.GitSync` that turns revisions into commits. Each revision
of a root of the home — the user root's and each project root's below it (``projects/<key>/``), never a root
committed with its project (``<repo>/.mm``: its project's git carries it) — is queued as it is installed; the
git worker thread commits the batch that landed while the previous commit ran as ONE commit, taking the write
locks of the roots the batch names (in the home's order, :meth:`~.home.Home.ordered`) while it stages their
files, so a commit holds exactly the files of a revision of each root it names. Its message names the topics,
a project root's as ``<key>/<topic>``; ``Mmd-Revision`` lists the user root's revisions (the history's revision
floor), ``Mmd-Project-Revision`` each project root's (its own floor: :meth:`CommitUses.prepare_root` raises a
project root's revision mark to it before its first load, as :meth:`~.gitsync.GitSync.prepare` does for the
user root, so a root made by a sync, or whose ``.mmd/`` was lost, numbers on above the history).

Threading: :meth:`CommitUses.revised` and :meth:`CommitUses.opened` run on the loop, :meth:`CommitUses.prepare_root`
in the thread opening a root; the rest in the git worker thread. Never does: sync, git plumbing (:mod:`.git`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mmd.core.errors import ErrorCode, MMError
from mmd.core.paths import DETAIL_DIR, INDEX_NAME
from mmd.core.projects import PROJECTS_DIR

from .git.layout import USER_SCOPE, prefix, scoped_topic, split
from .home import Home, Root
from .revision import Revision

if TYPE_CHECKING:
    from .git import GitHistory

__all__ = ["CAUSES", "CommitUses", "Pending"]

log = logging.getLogger("mmd.git")

CAUSES = {"write": "write", "delete": "delete", "merge": "merge", "rename": "rename", "external": "external edit",
          "adopt": "adopt"}
"""The state's change causes → commit causes; others (``config``, ``sync``) commit nothing of their own."""

Pending = tuple[str, int, str, list[str]]
"""A revision waiting for its commit: ``(scope, revision, commit cause, topics)``."""


async def hold(roots: Sequence[Root]) -> None:
    """Take the write locks of ``roots`` in their order (the caller orders them); none held if one fails."""
    held: list[Root] = []
    try:
        for root in roots:
            await root.state.lock.acquire()
            held.append(root)
    except BaseException:
        let_go(held)
        raise


def let_go(roots: Sequence[Root]) -> None:
    """Release the write locks of ``roots`` (on the loop), last first."""
    for root in reversed(roots):
        root.state.lock.release()


class CommitUses:
    """Revisions into commits; mixed into :class:`~.gitsync.GitSync`."""

    home: Home
    history: GitHistory
    loop: asyncio.AbstractEventLoop
    commits: int
    commit_error: str | None
    _worker: concurrent.futures.ThreadPoolExecutor
    _stop: asyncio.Event
    _repo_stale: bool
    _labels: dict[tuple[str, str], str]

    def _init_commits(self) -> None:
        self._pending: list[Pending] = []
        self._plock = threading.Lock()
        """Guards :attr:`_pending` and :attr:`_flush_queued` (appended on the loop, taken in the worker)."""
        self._flush_queued = False
        self._edited: set[str] = set()
        """Keys of the project roots whose files differed from the history's when they were opened."""
        self._floors: dict[str, int] = {}
        """``{key: last revision the history records}`` read at start for the roots not opened yet."""

    @property
    def pending_commits(self) -> int:
        """Revisions installed and not committed yet."""
        return len(self._pending)

    def drain_spool(self) -> list[int]:
        raise NotImplementedError  # the merge driver's conflicts (GitSync)

    # --- on the loop ------------------------------------------------------------------------------

    def revised(self, revision: Revision, cause: str, scope: str = USER_SCOPE) -> None:
        """A revision of the root ``scope`` was installed (on the loop, under its lock): queue its commit (none for a
        root outside the home, or a cause that commits nothing of its own)."""
        root = self.home.get(scope)
        if root is not None and root in self.home.outside:
            return
        topics = [i["topic"] for part in (revision.added, revision.updated, revision.removed) for i in part]
        label = next((self._labels[(scope, t)] for t in topics if (scope, t) in self._labels), None) \
            or CAUSES.get(cause)
        if label is not None:
            self._queue((scope, revision.snapshot.revision, label, topics))

    def opened(self, root: Root) -> None:
        """A project root of the home was opened: commit the edits made while no daemon served it, when
        :meth:`prepare_root` found its files differing from the history's (an external edit)."""
        if root.scope in self._edited:
            self._edited.discard(root.scope)
            self._queue((root.scope, root.state.revision, "external edit", []))

    def _queue(self, item: Pending) -> None:
        with self._plock:
            self._pending.append(item)
            if self._stop.is_set() or self._flush_queued:  # shutting down: stop() commits it (else the next start)
                return
            self._flush_queued = True
        self._worker.submit(self._flush)

    # --- in a thread ------------------------------------------------------------------------------

    def scan_projects(self) -> None:
        """At start, before any project root is opened (a worker thread): read once, for every project root, the
        last revision of it the history records and whether its files differ from the history's, so that opening
        the roots one by one on the loop (:meth:`~.home.Home.warm`) runs no git; a root found later asks git
        itself (:meth:`prepare_root`)."""
        from mmd.daemon.git.message import PROJECT_REVISION_TRAILER, project_revisions

        fmt = f"%(trailers:key={PROJECT_REVISION_TRAILER},valueonly,separator=%x1d)"
        done = self.history.git.run("log", f"--format={fmt}", "--grep", f"^{PROJECT_REVISION_TRAILER}:", check=False)
        floors: dict[str, int] = {}
        for line in done.stdout.decode("utf-8", "replace").splitlines():  # newest first: its numbers are the floor
            for key, numbers in project_revisions(line, "\x1d").items():
                floors.setdefault(key, max(numbers))
        self._floors = floors
        self._edited |= self._changed_folders(None)

    def _changed_folders(self, key: str | None) -> set[str]:
        """The keys of the project roots (``key``'s alone, or all) whose files differ from HEAD's."""
        from mmd.daemon.git.layout import split

        folder = f"{PROJECTS_DIR}/{key}" if key else PROJECTS_DIR
        status = ("--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all", "--", folder)
        out = self.history.git.run(*status, check=False).stdout.decode("utf-8", "surrogateescape")
        return {scope for entry in out.split("\0") if len(entry) > 3 and (scope := split(entry[3:])[0]) != USER_SCOPE}

    def prepare_root(self, key: str, path: Path) -> None:
        """A project root's lock is held, before its first load: raise its revision mark to the last revision of it
        the history records (a root a sync made has no ``.mmd/``), so its numbers continue, and note whether its
        files differ from the history's (:meth:`opened` commits them). A root outside the home has no history here.

        Raises:
            MMError(E_IO): if the mark cannot be written.
        """
        from mmd.core.revision_mark import advance_mark, read_mark

        if path.parent != self.home.home / PROJECTS_DIR:
            return
        last = self._floors.pop(key, None)
        if last is None:  # not scanned at start: a root made since (by a sync, a first write, another tool)
            self._edited |= self._changed_folders(key)
            last = self.history.scoped(key).last_revision()
        if last > read_mark(path):
            try:
                advance_mark(path, last)
            except OSError as error:
                raise MMError(ErrorCode.E_IO, f"recording revision {last} in {path}/.mmd failed: {error}") from error

    def held_secrets(self, scopes: Sequence[str] | None) -> dict[str, bytes]:
        """Worker thread (the history's :attr:`~.git.GitHistory.stand_in`): ``{path relative to the home: text}``,
        a held outside edit's secrets redacted (``‹secret: kind›``), for the note files of the roots ``scopes``
        (None: all) that such an edit holds, and their MEMORY.md. A secret typed into a note by hand is never
        committed, so no sync pushes it, while its review waits: the file keeps it, the commit shows the text a
        person's accept would write; the accept or the rejection is then committed as any write.

        So is a staged note file (or MEMORY.md) the daemon neither wrote nor read as it is now (its inode, size
        and mtime are not the root's fingerprint of it): an outside edit the watcher has not yet seen, made in
        the moment before a write's commit stages the root; it is held, and its own commit made, once seen.

        What is redacted is the text staged (the index's blob), never the file read again: an editor rewriting the
        file between ``git add`` and this call (truncated, half written) left the staged text with its secret
        while the file held none (a loaded run committed a token so).

        Raises:
            GitError: if git cannot list or show the staged files (the commit is then not made: fail closed).
        """
        from mmd.screen.secrets import redact

        from .holds import Holds

        out: dict[str, bytes] = {}
        roots = list(self.home) if scopes is None else [r for s in scopes if (r := self.home.get(s)) is not None]
        staged = self.history.staged_paths()
        for root in (r for r in roots if r not in self.home.outside):
            secret = [h.topic for h in Holds.held(root).get().values()
                      if h.speaker == "outside-edit" and "secret" in h.kinds]
            held = [*(f"{DETAIL_DIR}/{topic}.md" for topic in secret), *([INDEX_NAME] if secret else [])]
            base = prefix(root.scope)
            unseen = [rel for path in staged if path.startswith(base) and split(path)[0] == root.scope
                      and (rel := path[len(base):]).endswith(".md") and _unseen(root, rel)]
            for rel in dict.fromkeys([*held, *unseen]):
                data = self._staged_blob(base + rel)
                try:
                    text = data.decode("utf-8") if data is not None else None
                except UnicodeDecodeError:
                    continue  # not a note's text: nothing of ours to redact
                if text is not None and (clean := redact(text)) != text:
                    out[base + rel] = clean.encode("utf-8")
        return out

    def _staged_blob(self, path: str) -> bytes | None:
        """Worker thread: the staged text of ``path`` (relative to the repository), None when the index has none.
        Raises GitError when git fails otherwise."""
        if not self.history.git.run("ls-files", "-z", "--", f":(literal){path}").stdout:  # gone: none staged
            return None
        return self.history.git.run("cat-file", "blob", f":{path}").stdout

    def _flush(self) -> None:
        """Worker thread: stage the files of the pending revisions' roots under their write locks, then commit them
        as one commit (writes go on meanwhile: the commit records the staged files)."""
        with self._plock:
            self._flush_queued = False
            scopes = {s for s, _, _, _ in self._pending}
        roots = self.home.ordered([r for s in scopes if (r := self.home.get(s)) is not None])
        try:
            asyncio.run_coroutine_threadsafe(hold(roots), self.loop).result()
        except RuntimeError:  # the loop is gone: the next start commits the files as an external edit
            return
        try:
            batch = self._take(scopes)
            staged = bool(batch) and self._stage(batch)
        finally:
            self.loop.call_soon_threadsafe(let_go, roots)
        if batch and staged:
            self._commit(batch, True)
            self.drain_spool()
        elif batch:  # git add failed: keep the revisions for the next commit (status says why)
            with self._plock:
                self._pending[:0] = batch

    def commit_pending(self) -> None:
        """Commit the revisions installed so far (the caller holds every root's write lock); errors are kept in
        status."""
        batch = self._take(None)
        if batch:
            self._commit(batch, False)

    def _take(self, scopes: set[str] | None) -> list[Pending]:
        """The pending revisions of ``scopes`` (None: all), in order; those of other roots stay pending."""
        with self._plock:
            batch = [p for p in self._pending if scopes is None or p[0] in scopes]
            self._pending = [p for p in self._pending if scopes is not None and p[0] not in scopes]
            if self._pending and not self._flush_queued and not self._stop.is_set():
                self._flush_queued = True
                self._worker.submit(self._flush)
        return batch

    @staticmethod
    def _scopes(batch: list[Pending]) -> list[str]:
        return sorted({s for s, _, _, _ in batch}, key=lambda s: (s != USER_SCOPE, s))

    def _stage(self, batch: list[Pending]) -> bool:
        try:
            self.history.stage(self._scopes(batch))
            return True
        except MMError as error:
            self.commit_error = str(error)
            log.error("git.stage_failed error=%r", str(error))
            return False

    def _commit(self, batch: list[Pending], staged: bool) -> None:
        causes = list(dict.fromkeys(c for _, _, c, _ in batch))
        topics = list(dict.fromkeys(scoped_topic(s, t) for s, _, _, ts in batch for t in ts))
        user = [r for s, r, _, _ in batch if s == USER_SCOPE]
        projects: dict[str, list[int]] = {}
        for scope, revision, _, _ in batch:
            if scope != USER_SCOPE:
                projects.setdefault(scope, []).append(revision)
        try:
            if self.history.commit(user, ", ".join(causes), topics, staged=staged, scopes=self._scopes(batch),
                                   projects=projects):
                self.commits += 1
            self.commit_error = None
            self._repo_stale = True
        except MMError as error:  # a hook refused it: the files stay, the next commit takes them along
            self.commit_error = str(error)
            log.error("git.commit_failed revisions=%s error=%r", [(s, r) for s, r, _, _ in batch], str(error))


def _unseen(root: Root, rel: str) -> bool:
    """Whether the file ``rel`` of ``root`` differs from the daemon's fingerprint of it (what it last wrote or
    read): an outside edit not yet picked up. A file gone counts as seen (nothing of it is staged)."""
    try:
        st = (root.path / rel).stat()
    except OSError:
        return False
    return root.state.fingerprints.get(rel) != (st.st_ino, st.st_size, st.st_mtime_ns)

