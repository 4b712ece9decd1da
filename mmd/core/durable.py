"""Durable, atomic file replacement and the root's write lock.

``atomic_write`` writes a unique hidden temp file (``.<name>.<pid>.<n>.<rand>.tmp``,
never ``*.md``, so no reader can take it for a note; see :mod:`.rootfs`), fsyncs it, renames it
over the target and fsyncs the folder: after a crash at any instant the target
holds the old bytes or the new ones, never a torn mix. ``WriteLock`` is the
exclusive ``flock`` on ``<root>/.mmd/lock`` that serializes our own writers
(daemon and ``mmctl``) across processes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

from .errors import ErrorCode, MMError
from .paths import DETAIL_DIR, INDEX_NAME, STATE_DIR
from .rootfs import DIR_MODE, FILE_MODE, PreparedFile, opened_folder, prepare_file, remove_in, sync_together

__all__ = ["LockHeld", "WriteLock", "atomic_write", "fsync_dir", "lock_path", "remove_durably", "write_together"]

def fsync_dir(folder: Path) -> None:
    """fsync a folder so that renames and unlinks in it survive a crash."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` atomically and durably (temp, fsync, rename, fsync folder).

    A symlink at ``path`` is replaced by a regular file; its target is never written.
    A replaced regular file keeps its mode; a new one gets ``mode`` (default 0600),
    whatever the umask.

    Raises:
        MMError(E_IO): if any step fails; the temp file is removed and ``path`` is untouched.
    """
    try:
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            prepared = prepare_file(dfd, path.name, data, new_mode=mode)
            try:
                prepared.commit()
            finally:
                prepared.discard()
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"write {path} failed: {error.strerror or error}", details=str(path)) from error


def remove_durably(path: Path) -> bool:
    """Unlink ``path`` (a symlink itself, never its target, never a folder) and fsync its folder.

    Returns:
        True if something was removed, False if nothing was there.

    Raises:
        MMError(E_IO): if the unlink fails for another reason.
    """
    try:
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"delete {path} failed: {error.strerror or error}", details=str(path)) from error
    try:
        removed = remove_in(dfd, path.name)
        if removed:
            os.fsync(dfd)
        return removed
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"delete {path} failed: {error.strerror or error}", details=str(path)) from error
    finally:
        os.close(dfd)


def write_together(root: Path, notes: dict[str, bytes], index: bytes) -> None:
    """Write the notes ``memories/<name>`` and MEMORY.md all or nothing, as the caller sees it (issues 11, 17).

    Every temp file is written, then fsynced, before any is renamed; the notes are
    renamed first (a crash between leaves old entries pointing at new bodies or
    an orphan note, never an entry without its note, and every file whole); if a
    rename fails, the notes already renamed are put back (new ones removed). One
    index rewrite and one fsync of each folder serve the whole batch.

    Raises:
        MMError(E_IO): if any step fails (ENOSPC included); every file is then as before.
    """
    first = next(iter(notes))
    try:
        with opened_folder(root, ()) as root_fd, opened_folder(root, (DETAIL_DIR,), create=True) as note_fd:
            prepared: list[PreparedFile] = []
            grouped = len(notes) > 1  # write every temp file, then sync them all: fewer journal commits
            try:
                for name, data in notes.items():
                    prepared.append(prepare_file(note_fd, name, data, keep_previous=True, sync=not grouped))
                index_file = prepare_file(root_fd, INDEX_NAME, index, sync=not grouped)
                try:
                    if grouped:
                        sync_together([temp.sync for temp in (*prepared, index_file)])
                    for note_file in prepared:
                        note_file.commit()
                    index_file.commit()
                except OSError:
                    for note_file in reversed(prepared):
                        note_file.restore()
                    raise
                finally:
                    index_file.discard()
            finally:
                for note_file in prepared:
                    note_file.discard()
            sync_together([lambda: os.fsync(note_fd), lambda: os.fsync(root_fd)], at_once=grouped)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"write {DETAIL_DIR}/{first} failed: {error.strerror or error}",
                      details=f"{DETAIL_DIR}/{first}") from error


def lock_path(root: Path) -> Path:
    """``<root>/.mmd/lock``."""
    return root / STATE_DIR / "lock"


class LockHeld(MMError):
    """Raised by :meth:`WriteLock.acquire` with ``blocking=False`` when another process holds the lock.

    ``holder_pid`` is the pid recorded in the lock file by the holder, or None; ``holder`` says it in words
    (``pid 123``, or ``another process``).
    """

    def __init__(self, path: Path, holder_pid: int | None) -> None:
        self.holder_pid = holder_pid
        self.holder = f"pid {holder_pid}" if holder_pid else "another process"
        super().__init__(ErrorCode.E_IO, f"{path} is held by {self.holder} (a running mmd owns this root?)",
                         details=str(path))


class WriteLock:
    """The exclusive ``flock`` on ``<root>/.mmd/lock`` (creates ``.mmd/`` as needed).

    The holder writes its pid into the file so a refused process can name it.
    flock locks belong to an open file: one process must not lock the same
    root twice through two ``WriteLock`` objects (the second would block).
    """

    def __init__(self, root: Path, timeout_s: float | None = None) -> None:
        self.path = lock_path(root)
        self.timeout_s = timeout_s
        self._fd: int | None = None

    def acquire(self, blocking: bool = True) -> None:
        """Take the lock, waiting for it (at most ``timeout_s`` seconds, if set) unless ``blocking`` is False.

        Raises:
            LockHeld: if another process holds it and ``blocking`` is False or the timeout passed.
            MMError(E_IO): if the lock file cannot be created.
        """
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(mode=DIR_MODE, exist_ok=True)
                os.chmod(self.path.parent, DIR_MODE)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
        except OSError as error:
            raise MMError(ErrorCode.E_IO, f"open {self.path} failed: {error.strerror}") from error
        try:
            self._lock(fd, blocking)
        except BlockingIOError:
            os.close(fd)
            raise LockHeld(self.path, self._read_pid()) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def _lock(self, fd: int, blocking: bool) -> None:
        """flock ``fd``; raises BlockingIOError when it stays held (not blocking, or past the timeout)."""
        import fcntl  # a read that takes no lock never loads it

        if not blocking or self.timeout_s is None:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            return
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    def release(self) -> None:
        """Release the lock (the file stays, as lock files do)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _read_pid(self) -> int | None:
        try:
            return int(self.path.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
