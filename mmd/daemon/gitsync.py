"""The daemon's git part (``mmd --git``, issues 18 and 27): history commits, sync, conflicts as review candidates.

Owns: preparing the home's repository at start (:func:`~.git.repo.ensure_repo`, the merge driver by the
installed ``mmd``'s absolute path; ONE repository at the user root, each project root of the home its folder
``projects/<key>/``, ``docs/projects.md``), the revision floor (numbers continue above the last revision the
history records, per root), the commits of every root's revisions (:class:`~.gitcommits.CommitUses`); the sync
(``memory.sync`` and every ``git.syncIntervalMs``, backing off after a failure) holding every served root's
write lock (:meth:`~.home.Home.hold_all`: user root first, then project roots by key) as the engine's lock; the
reload of every root a sync changed (``memory/changed`` with ``cause: "sync"`` and its ``scope``, installed
under the same locks so the watcher never reports those files as external) and the opening of a project root
the sync made; the conflict records queued as ``kind: "conflict"`` review candidates in their root's scope
through :mod:`.gitconflicts` (the sync's, those another machine's merge decided about this home's versions,
the topics of a remote commit held back because it would leave a root unusable, and those the merge
driver spooled during a person's own ``git merge``), and a resolution a sync brings accepted here too; one
sync at a time (a second ``memory.sync`` meanwhile is refused at once with ``E_BUSY``, saying what the running
one waits for); the remote commit refused last (``git.refused`` in status until the remote changes, never
weighed twice against the same HEAD); the ``memory/synced`` event and the ``git`` object of ``daemon.status``.
The history use-cases (log, diff, revert, restore), per root, are :class:`~.githistory.HistoryUses`. A root
committed with its project (``<repo>/.mm``) is never part of any of this: its project's git carries it.

Threading: git runs in the worker thread (commits, syncs, status) or in ``asyncio.to_thread`` (reads); events
and installs happen on the loop. Never does: merges, git plumbing (:mod:`.git`), sockets.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmd.core.clock import iso_ms, parse_iso_ms
from mmd.core.errors import ErrorCode, MMError
from mmd.core.memory import nudge_report
from mmd.core.paths import DETAIL_DIR, INDEX_NAME
from mmd.core.projects import PROJECTS_DIR
from mmd.wire.events import MEMORY_NUDGE, MEMORY_SYNCED, QUEUE_DECIDED
from mmd.wire.protocol import DaemonCode, DaemonError

from .config import GitSettings
from .events import Publisher
from .git.layout import USER_SCOPE, scopes_of
from .git.runner import NETWORK_TIMEOUT_S
from .gitcommits import CommitUses
from .gitconflicts import ConflictQueue
from .githistory import HistoryUses, RootHistory
from .home import Home, Root
from .queue import ReviewQueue

if TYPE_CHECKING:
    from .git.contain import Refusal

__all__ = ["RETRY_FIRST_MS", "RETRY_MAX_MS", "GitSync", "check_root", "retry_delay_ms"]

log = logging.getLogger("mmd.git")

RETRY_FIRST_MS = 5_000
"""First retry after a failed sync, milliseconds (or the interval, when shorter); doubles per failure."""
RETRY_MAX_MS = 900_000
"""Longest wait between retries, milliseconds (or the interval, when longer)."""


def check_root(root: Path) -> None:
    """Refuse ``--git`` on ``root`` before anything is created there: no ``git`` on PATH, or a root (existing
    or not) inside another repository (mmd never commits on a user's project branch).

    Raises:
        MMError(E_INVALID): naming the reason (and the other repository's top level).
    """
    from .git import GitMissing
    from .git.runner import Git

    probe = root
    while not probe.is_dir() and probe != probe.parent:
        probe = probe.parent
    try:
        done = Git(probe).run("rev-parse", "--show-toplevel", check=False)
    except GitMissing as error:
        raise _no_git(error) from error
    top = done.stdout.decode("utf-8", "surrogateescape").strip() if done.returncode == 0 else ""
    if top and os.path.realpath(top) != os.path.realpath(root):
        raise MMError(ErrorCode.E_INVALID,
                      f"the memory root {root} is inside the git repository {top}: mmd never commits on another "
                      f"repository's branch; move the root out of it, or make the root a repository of its own",
                      details=top)


def _no_git(error: Exception) -> MMError:
    return MMError(ErrorCode.E_INVALID, f"--git needs the git command, which is not on PATH: {error}")


def retry_delay_ms(interval_ms: int, failures: int) -> int:
    """The wait before the next sync after ``failures`` failed ones in a row, milliseconds.

    ``interval_ms`` with no failure; else ``min(interval, RETRY_FIRST_MS)`` doubled per further
    failure, at most ``max(interval, RETRY_MAX_MS)``.
    """
    if failures <= 0:
        return interval_ms
    first = min(interval_ms, RETRY_FIRST_MS)
    return int(min(first * 2 ** min(failures - 1, 30), max(interval_ms, RETRY_MAX_MS)))


class _HomeLock:
    """Every served root's asyncio write lock, taken from the git worker thread (the engine's ``lock``).

    On entry it takes them all (:meth:`~.home.Home.hold_all`) and commits the revisions still pending; on
    exit it reloads each root whose files moved under it (a merge or fast-forward), before releasing them.
    """

    def __init__(self, owner: GitSync) -> None:
        self.owner = owner
        self.head: str | None = None

    def __enter__(self) -> _HomeLock:
        owner = self.owner
        owner.held = asyncio.run_coroutine_threadsafe(owner.home.hold_all(), owner.loop).result()
        try:
            owner.commit_pending()
            self.head = owner.history.head()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.owner.reload_moved(self.head)
        finally:
            self._release()

    def _release(self) -> None:
        held, self.owner.held = self.owner.held, []
        self.owner.loop.call_soon_threadsafe(self.owner.home.release_all, held)


class GitSync(CommitUses, HistoryUses):
    """The git part of one daemon.

    Args:
        settings: the ``[git]`` settings (enabled).
        home: the roots served (their locks serialize commits and merges with writes).
        queue: the review queue (conflicts become candidates there).
        publisher: the event publisher (``memory/synced``, ``queue/added``).
        driver: the merge driver command (``[<mmd>, "merge-index"]``).
    """

    def __init__(self, settings: GitSettings, home: Home, queue: ReviewQueue, publisher: Publisher,
                 driver: Sequence[str]) -> None:
        from .git import GitHistory, GitMissing

        self.settings = settings
        self.home = home
        self.state = home.user.state
        self.scope = USER_SCOPE
        self.queue = queue
        self.publisher = publisher
        self.driver = list(driver)
        self.root: Path = self.state.options.root
        try:
            self.history = GitHistory(self.root)
        except GitMissing as error:
            raise _no_git(error) from error
        self.history.stand_in = self.held_secrets
        self.loop = asyncio.get_running_loop()
        self.conflicts = ConflictQueue(queue, self.state, publisher, self.loop, state_of=self._state_of)
        """The conflicts' review candidates (:mod:`.gitconflicts`)."""
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mmd-git")
        self._init_commits()
        self._labels: dict[tuple[str, str], str] = {}
        """``{(scope, topic): revert | restore}`` while such a write is under way: its revision's commit cause."""
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.failures = 0
        self.repo: dict[str, Any] = {}
        self.last_sync: dict[str, Any] | None = None
        self.last_error: dict[str, Any] | None = None
        self.commit_error: str | None = None
        self.next_sync_at: str | None = None
        self.commits = 0
        self._repo_stale = False
        """A commit moved HEAD since :attr:`repo` was read: the next ``status`` has it read again."""
        self.syncing: dict[str, Any] | None = None
        """The sync under way: ``{stage, remote, since, stageSince, timeoutMs}``; None between syncs."""
        self.refused: Refusal | None = None
        """The remote commit the last sync refused (kept until a sync takes the remote again)."""
        self.held: list[Root] = []
        """The roots whose locks the sync under way holds (in the worker thread, between its lock's enter and exit)."""
        self._made: set[str] = set()
        """Keys of the project roots a sync under way made (opened once it released the locks)."""
        home.preparing = self.prepare_root

    def _state_of(self, scope: str) -> Any:
        root = self.home.get(scope)
        return root.state if root is not None and root not in self.home.outside else None

    def history_of(self, root: Root) -> HistoryUses:
        """The history use-cases of ``root`` (the user root's are this object's; a project root's paths are
        ``projects/<key>/…``)."""
        return self if root.is_user else RootHistory(root.scope, root.state, self.history.scoped(root.scope),
                                                     self._labels, self._submit)

    # --- start and stop ---------------------------------------------------------------------------

    def prepare(self) -> None:
        """Make the root a repository mmd can commit in, and raise the root's revision mark to the last
        revision its history records (a fresh clone has no ``.mmd/``): ``r42`` stays one revision. Run with
        the root's lock held, before the first load.

        Raises:
            MMError(E_INVALID): if git is missing, the root lies inside another repository (the reason
                names it), or ``git.branch`` is not the repository's branch.
            MMError(E_IO): if git fails or the mark cannot be written.
        """
        from mmd.core.revision_mark import advance_mark, read_mark

        from .git import GitError, ensure_repo

        info = ensure_repo(self.root, driver=self.driver)
        wanted = self.settings.branch
        if wanted is not None and info.branch != wanted:
            if self.history.head() is None:  # an unborn branch (a new repository): name it as configured
                try:
                    self.history.git.run("symbolic-ref", "HEAD", f"refs/heads/{wanted}")
                except GitError as error:
                    raise MMError(ErrorCode.E_IO, f"git cannot name the branch {wanted}: {error.stderr}") from error
            else:
                raise MMError(ErrorCode.E_INVALID,
                              f"git.branch = {wanted!r} but the repository at {self.root} is on "
                              f"{info.branch or 'a detached HEAD'}: check out {wanted} first (mmd never "
                              f"switches a repository's branch)")
        self.scan_projects()
        last = self.history.last_revision()
        if last > read_mark(self.root):
            try:
                advance_mark(self.root, last)
            except OSError as error:
                raise MMError(ErrorCode.E_IO, f"recording revision {last} in .mmd/ failed: {error}") from error

    async def start(self) -> None:
        """After the first load: commit the edits made while the daemon was down, then sync on schedule."""
        revision = self.state.revision
        await self._submit(self._commit_startup, revision)
        self._task = asyncio.create_task(self._schedule(), name="mmd-git-sync")

    def _commit_startup(self, revision: int) -> None:
        try:
            if self.history.commit([revision], "external edit", [], scopes=[USER_SCOPE]):
                self.commits += 1
        except MMError as error:
            self.commit_error = str(error)
            log.error("git.commit_failed error=%r", str(error))
        self._refresh_repo()

    async def stop(self) -> None:
        """Stop the schedule, cut a fetch or push under way (retried later), commit what is pending, stop."""
        self._stop.set()
        self.history.git.abort()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await self._submit(self._flush)
        await asyncio.to_thread(self._worker.shutdown, True)

    async def _submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.wrap_future(self._worker.submit(fn, *args))

    # --- status of the repository ----------------------------------------------------------------

    def _refresh_repo(self) -> None:
        from .git import repo_status

        self._repo_stale = False
        try:
            self.repo = repo_status(self.root, remote=self.settings.remote, history=self.history)
        except Exception as error:  # noqa: BLE001 - status is a report; the daemon serves on
            log.warning("git.status_failed error=%r", str(error))

    # --- sync -------------------------------------------------------------------------------------

    async def sync_now(self) -> dict[str, Any]:
        """Commit, fetch, merge, push, reload; returns what happened (``SyncResult`` JSON plus ``queued``
        candidate ids and ``revision``) once it is all done; a failure is in ``error``, never raised.

        Raises:
            DaemonError(E_BUSY): at once, if a sync is already under way (the message says since when
                and what it waits for; it pushes what is committed by the time it pushes).
        """
        running = self.syncing
        if running is not None:
            raise DaemonError(DaemonCode.E_BUSY, f"a sync is already running (since {running['since']}, now "
                              f"{_waiting(running)}): this one did nothing; `mmctl status` shows when it ends")
        now = self.state.now_iso()
        self.syncing = {"stage": "commit", "remote": None, "since": now, "stageSince": now,
                        "timeoutMs": int(NETWORK_TIMEOUT_S * 1000)}
        try:
            result: dict[str, Any] = await self._submit(self._sync)
        finally:
            self.syncing = None
        result["revision"] = self.state.revision
        for scope in result["overBudget"]:  # allowed on disk, as an external edit would be: nudge a consolidation
            state = self.state if scope == USER_SCOPE else self._state_of(scope)
            if state is not None:
                report = nudge_report(state.current, 0, self.state.now_iso())
                self.publisher.publish(MEMORY_NUDGE, {**report, "reason": "sync", "queuePending": self.queue.pending,
                                                      **({} if scope == USER_SCOPE else {"scope": scope})})
        self.publisher.publish(MEMORY_SYNCED, {
            k: result[k] for k in ("ok", "remote", "branch", "merged", "pushed", "head", "ahead", "behind", "topics",
                                   "queued", "error", "revision", "indexOverBudget")})
        return result

    def _step(self, stage: str, what: str) -> None:
        """Worker thread: the sync reached ``stage`` (``what``: the remote and its address for fetch and push)."""
        running = self.syncing
        if running is not None:
            self.syncing = {**running, "stage": stage, "remote": what or running["remote"],
                            "stageSince": self.state.now_iso()}
        if what:
            log.info("git.sync_waiting stage=%s remote=%s timeout_s=%g", stage, what, NETWORK_TIMEOUT_S)

    def _sync(self) -> dict[str, Any]:
        from .git import sync

        roots = {r.scope: r.state.options for r in self.home.projects() if r not in self.home.outside}
        done = sync(self.root, remote=self.settings.remote, branch=self.settings.branch, options=self.state.options,
                    lock=lambda: _HomeLock(self), history=self.history, refused=self.refused, progress=self._step,
                    roots=roots)
        self._open_made()
        result = done.to_json()
        source = f"git:{result['remote']}/{result['branch']}"
        result["queued"] = self.conflicts.add([c["candidate"] for c in result["conflicts"] if "candidate" in c]
                                              + done.received, source)
        result["queued"] += self.conflicts.add(done.held, source) if done.held else []
        result["queued"] += self.drain_spool()
        if result["changed"]:  # a resolution accepted on the other machine came with it: accepted here too
            self.conflicts.resolved(self._decided)
        if result["fetched"]:  # kept until a sync reaches the remote and takes it (or refuses another commit)
            self.refused = done.refused
        if done.refused is not None and done.held:
            log.warning("git.sync_held commit=%s topics=%d queued=%d", done.refused.commit, done.refused.count,
                        len(result["queued"]))
        self._refresh_repo()
        at = self.state.now_iso()
        self.last_sync = {"at": at, "ok": result["ok"], "merged": result["merged"], "pushed": result["pushed"],
                          "conflicts": len(result["conflicts"]), "note": result["note"], "error": result["error"]}
        if result["error"]:
            self.failures += 1
            self.last_error = {"at": at, **result["error"]}
            log.warning("git.sync_failed stage=%s error=%r failures=%d", result["error"]["stage"],
                        result["error"]["message"], self.failures)
        else:
            self.failures = 0
        return result

    def reload_moved(self, before: str | None) -> None:
        """Worker thread, every served root's lock held: reload each root whose files the commits since ``before``
        changed (``memory/changed`` with ``cause: "sync"`` and its scope); a project root that is not served
        yet is remembered, to be opened once the locks are released (:meth:`_open_made`)."""
        after = self.history.head()
        if after is None or after == before:
            return
        git = self.history.git
        args = ("diff", "--name-only", "-z", "--no-renames", before, after) if before else \
            ("ls-tree", "-r", "-z", "--name-only", after)
        names = git.run(*args, check=False).stdout.decode("utf-8", "surrogateescape").split("\0")
        for scope in scopes_of(n for n in names if n):
            root = self.home.get(scope)
            if root is None:
                self._made.add(scope)
            elif root in self.held:
                self._reload(root)

    def _reload(self, root: Root) -> None:
        """Worker thread, ``root``'s lock held: when its files differ from its current revision, load and install
        them (``memory/changed`` with ``cause: "sync"``)."""
        state = root.state
        try:
            notes = [f"{DETAIL_DIR}/{n}" for n in os.listdir(root.path / DETAIL_DIR) if n.endswith(".md")]
        except OSError:
            notes = []
        if not state.external_change({INDEX_NAME, *notes, *state.fingerprints}):
            return
        try:
            revision = state.prepare_load()
        except MMError as error:  # the merged files stay on disk; the previous revision stays current
            log.error("git.reload_failed scope=%s error=%r", root.scope, str(error))
            return

        async def adopt() -> bool:
            return state.adopt(revision, "sync")

        asyncio.run_coroutine_threadsafe(adopt(), self.loop).result()

    def _open_made(self) -> None:
        """Worker thread, no lock held: open and serve each project root a sync made (``projects/<key>/``)."""
        made, self._made = self._made, set()
        for key in sorted(made):
            if (self.root / PROJECTS_DIR / key / INDEX_NAME).is_file():
                try:
                    asyncio.run_coroutine_threadsafe(self.home.ensure_key(key, []), self.loop).result()
                except Exception as error:  # noqa: BLE001 - the files are synced; the first request opens it then
                    log.error("git.open_failed scope=%s error=%r", key, str(error))

    def _decided(self, cand: dict[str, Any]) -> None:
        """Worker thread: publish ``queue/decided`` for a conflict the sync resolved."""
        self.loop.call_soon_threadsafe(self.publisher.publish, QUEUE_DECIDED, {
            "id": cand["id"], "status": cand["status"], "queuePending": self.queue.pending, "topic": cand["topic"]})

    def drain_spool(self) -> list[int]:
        """Queue the conflicts ``git merge`` left in the driver's spool (a person's own ``git pull``); run after
        each commit (an external edit's included) and each sync. Returns the new candidates' ids."""
        from .git import drain_conflicts

        out = [{"topic": str(r.get("topic")), "entrySummary": (r.get("otherEntry") or {}).get("summary"),
                "body": r["otherBody"] if r.get("otherBody") is not None else r.get("keptBody") or "",
                "scope": str(r.get("scope") or USER_SCOPE),
                "evidence": {side: {"body": r.get(f"{side}Body")} for side in ("kept", "other")}}
               for r in drain_conflicts(self.root)]
        return self.conflicts.add(out, "git merge driver") if out else []

    async def _schedule(self) -> None:
        """Sync every ``syncIntervalMs``; after a failure sooner, then backing off (:func:`retry_delay_ms`)."""
        while not self._stop.is_set():
            delay_ms = retry_delay_ms(self.settings.sync_interval_ms, self.failures)
            self.next_sync_at = _iso_in(self.state.now_iso(), delay_ms)
            try:
                await asyncio.wait_for(self._stop.wait(), delay_ms / 1000)
                return
            except TimeoutError:
                pass
            if self.syncing is not None:  # a `mmctl sync` is under way: it is this round's sync
                continue
            try:
                await self.sync_now()
            except Exception as error:  # noqa: BLE001 - a bug must not end the schedule; it is counted and retried
                self.failures += 1
                self.last_error = {"at": self.state.now_iso(), "stage": "sync", "message": repr(error)}
                log.exception("git.sync_crashed")

    # --- status -----------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The ``git`` object of ``daemon.status`` (``schema/rpc.schema.json``): ``ahead``/``behind`` as of the
        last fetch; ``branch``…``uncommitted`` as of the last sync, or the status call after the last commit."""
        if self._repo_stale and not self._stop.is_set():
            self._repo_stale = False
            self._worker.submit(self._refresh_repo)
        return {**{k: self.repo.get(k) for k in ("branch", "head", "remoteConfigured", "ahead", "behind",
                                                 "uncommitted")},
                "remote": self.settings.remote, "commits": self.commits, "pendingCommits": self.pending_commits,
                "commitError": self.commit_error, "lastSync": self.last_sync, "lastError": self.last_error,
                "failures": self.failures, "nextSyncAt": self.next_sync_at,
                "syncIntervalMs": self.settings.sync_interval_ms, "syncing": self.syncing,
                "refused": self.refused.to_json() if self.refused else None}


def _waiting(running: dict[str, Any]) -> str:
    """What a running sync does now, in words: ``waiting for the fetch from origin (…) since …``."""
    if running["stage"] in ("fetch", "push"):
        word = "fetch from" if running["stage"] == "fetch" else "push to"
        return f"waiting for the {word} {running['remote']} since {running['stageSince']}"
    return {"commit": "committing", "merge": "merging"}.get(str(running["stage"]), str(running["stage"]))


def _iso_in(now_iso: str, delay_ms: int) -> str:
    return iso_ms(parse_iso_ms(now_iso) + timedelta(milliseconds=delay_ms))

