"""The files of a memory root, opened one checked way (mm v1 §2–§4; issues 11 and 15).

Owns: which index ``file:`` values may name a note (regular files under ``memories/``,
never ``MEMORY.md``, never ``.mmd/``, never a folder); opening folders and notes below
the root without following any symlink (``openat`` from a folder descriptor with
``O_NOFOLLOW``, so nothing can be swapped between a check and the open); durable
replacement of files through a folder descriptor keeping the replaced file's mode;
the modes we create (folders 0700, files 0600, whatever the umask).

Never: parses mm v1 text (:mod:`.format`), decides budgets (:mod:`.store`), or follows
a symlink below the root (the root itself may be one: the user chose it).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .errors import ErrorCode, MMError
from .format import safe_rel_path
from .paths import DETAIL_DIR, INDEX_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "PreparedFile",
    "folder_fd",
    "make_folders",
    "note_parts",
    "note_problem",
    "opened_folder",
    "prepare_file",
    "read_index_bytes",
    "read_note_bytes",
    "remove_in",
    "remove_note",
    "replace_together",
    "sync_together",
    "temp_name",
]

DIR_MODE = 0o700
"""Mode of every folder mmd creates (root, ``memories/``, ``.mmd/``)."""
FILE_MODE = 0o600
"""Mode of every file mmd creates; a replaced file keeps its own mode."""

MAX_NOTE_READ_BYTES = 16 * 1024 * 1024
"""A detail file larger than this (UTF-8 bytes) is reported, not loaded."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_counter = itertools.count(1)


def note_problem(rel: str) -> str | None:
    """Why the index ``file:`` value ``rel`` may not name a note, or None when it may.

    A note is a file under ``memories/`` (``./`` and empty segments ignored), named
    by a safe relative path (:func:`.format.safe_rel_path`: no ``..``, not absolute,
    no backslash or NUL), so ``../x``, ``MEMORY.md``, ``.mmd/…``, ``memories`` itself
    and any other folder of the root are refused. A root's index may hold such a
    value (it is read with ``strict_files=False``): this is the one check every use of it passes.
    """
    try:
        safe_rel_path(rel)
    except MMError as error:
        return error.message
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if len(parts) < 2 or parts[0] != DETAIL_DIR:
        return f"file {rel!r} is not under {DETAIL_DIR}/; an index entry may name only a note there"
    return None


def note_parts(rel: str) -> list[str]:
    """``rel``'s path segments below the root (``./`` and empty segments dropped).

    Raises:
        MMError(E_PARSE): if ``rel`` may not name a note (see :func:`note_problem`).
    """
    problem = note_problem(rel)
    if problem is not None:
        raise MMError(ErrorCode.E_PARSE, problem, details=rel)
    return [p for p in rel.split("/") if p not in ("", ".")]


def _escape(rel: str, error: OSError) -> MMError:
    return MMError(ErrorCode.E_PARSE, f"{rel} leads through a symlink or a non-folder; not followed "
                                      f"({error.strerror})", details=rel)


def folder_fd(root: Path, parts: list[str] | tuple[str, ...], *, create: bool = False) -> int:
    """An open descriptor of the folder ``root/<parts…>``; no symlink below ``root`` is followed.

    Args:
        parts: folder names below the root (no ``..``).
        create: make missing folders (mode :data:`DIR_MODE`).

    Raises:
        FileNotFoundError: if a folder is missing (and ``create`` is False).
        OSError: ``ELOOP``/``ENOTDIR`` when a segment is a symlink or a file; others as the OS says.
    """
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                os.fchmod(child, DIR_MODE)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_folders(path: Path) -> None:
    """Create ``path`` and its missing parents, each :data:`DIR_MODE` whatever the umask.

    Raises:
        OSError: as ``mkdir`` does.
    """
    missing: list[Path] = []
    here = path
    while not here.exists():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, DIR_MODE)
            os.chmod(folder, DIR_MODE)


def read_note_bytes(root: Path, rel: str) -> tuple[bytes, int] | None:
    """The bytes of the note at ``rel`` and its size, or None when it is missing or not a regular file.

    Every folder below the root and the note itself are opened with ``O_NOFOLLOW``
    from the folder above; ``fstat`` of the open file is the check, so nothing can
    be swapped in between.

    Raises:
        MMError(E_PARSE): if ``rel`` may not name a note, leads through a symlink,
            or is larger than 16 MiB.
        OSError: if the OS refuses the read for another reason.
    """
    parts = note_parts(rel)
    try:
        dfd = folder_fd(root, parts[:-1])
    except (FileNotFoundError, NotADirectoryError) as error:
        if isinstance(error, NotADirectoryError) and os.path.isdir(root):
            raise _escape(rel, error) from None
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _escape(rel, error) from None
        raise
    try:  # O_NONBLOCK: a FIFO in the way must not hang the reader
        fd = os.open(parts[-1], os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise MMError(ErrorCode.E_PARSE, f"{rel} is a symlink; notes are never followed", details=rel) from None
        raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None  # a folder, FIFO or device is no note: missing
        if st.st_size > MAX_NOTE_READ_BYTES:
            raise MMError(ErrorCode.E_PARSE, f"{rel} is {st.st_size} bytes, over the 16 MiB read limit", details=rel)
        return _read_to_end(fd, max(st.st_size, 1 << 16)), st.st_size
    finally:
        os.close(fd)


def read_index_bytes(root: Path) -> bytes:
    """MEMORY.md's bytes (b"" when absent), opened with ``O_NOFOLLOW`` like every note.

    Raises:
        MMError(E_PARSE): if MEMORY.md is a symlink (never followed) or not a regular file.
        MMError(E_IO): if it cannot be read.
    """
    path = root / INDEX_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return b""
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise MMError(ErrorCode.E_PARSE, f"{path} is a symlink; the index is never followed",
                          details=str(path)) from None
        raise MMError(ErrorCode.E_IO, f"read {path} failed: {error.strerror}", details=str(path)) from error
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MMError(ErrorCode.E_PARSE, f"{path} is not a regular file", details=str(path))
        return _read_to_end(fd)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"read {path} failed: {error.strerror}", details=str(path)) from error
    finally:
        os.close(fd)


def temp_name(name: str) -> str:
    """A fresh hidden temp name for ``name``: ``.<name>.<pid>.<n>.<hex>.tmp`` (never ``*.md``)."""
    return f".{name}.{os.getpid()}.{next(_counter)}.{os.urandom(4).hex()}.tmp"


class PreparedFile:
    """A temp file written and fsynced beside its target, waiting to be renamed over it.

    Built by :func:`prepare_file`; :meth:`commit` renames, :meth:`discard` removes it.
    ``previous`` holds the replaced file's bytes (None when there was none, or
    ``keep_previous`` was False), so :meth:`restore` can undo the rename.
    ``fd``: the temp file, still open, when its fsync was left to :meth:`sync`.
    """

    def __init__(self, dfd: int, name: str, tmp: str, previous: bytes | None, fd: int | None = None) -> None:
        self.dfd, self.name, self.tmp, self.previous, self.fd = dfd, name, tmp, previous, fd
        self.committed = False

    def sync(self) -> None:
        """fsync the temp file (made with ``prepare_file(..., sync=False)``) and close it; before :meth:`commit`.

        Raises:
            OSError: if it cannot be synced.
        """
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def commit(self) -> None:
        """Rename the temp file over the target (not yet durable: fsync ``dfd`` after).

        Raises:
            OSError: if the rename fails; the target is then untouched.
        """
        os.replace(self.tmp, self.name, src_dir_fd=self.dfd, dst_dir_fd=self.dfd)
        self.committed = True

    def restore(self) -> None:
        """Undo :meth:`commit`: write the previous bytes back (atomically, with the file's mode), or
        remove a file that was new. If even that fails (the disk that failed the batch), the file
        keeps its new bytes: whole, as after a crash between the renames."""
        if not self.committed:
            return
        with contextlib.suppress(OSError):
            if self.previous is not None:
                back = prepare_file(self.dfd, self.name, self.previous)
                try:
                    back.commit()
                finally:
                    back.discard()  # its temp file, if the rename failed too
                self.previous = None
            else:
                os.unlink(self.name, dir_fd=self.dfd)
        self.committed = False

    def discard(self) -> None:
        """Remove what is left: close the temp file and remove it if not committed; forget the previous bytes."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        if not self.committed:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp, dir_fd=self.dfd)
        self.previous = None


_SYNC_THREADS = 8
_sync_pool: ThreadPoolExecutor | None = None


def sync_together(syncs: Sequence[Callable[[], object]], *, at_once: bool = True) -> None:
    """Run ``syncs`` (each an fsync: :meth:`PreparedFile.sync`, a folder's) at once, from a small pool
    of threads, and wait for every one; one after the other, in place, when ``at_once`` is False.

    A group commit's files each need their fsync; issued one after the other, each waits for
    its own journal commit, issued together the file system commits them in one or two
    (measured: ~20 % off the durable write of a group of 8 notes). A lone write's two folder
    fsyncs stay in place: handing them to threads would cost it more than it saves.

    Raises:
        OSError: the first failure, once every one has returned (none is left running).
    """
    if len(syncs) < 2 or not at_once:
        for sync in syncs:
            sync()
        return
    from concurrent.futures import ThreadPoolExecutor, wait

    global _sync_pool
    if _sync_pool is None:
        _sync_pool = ThreadPoolExecutor(_SYNC_THREADS, thread_name_prefix="mmd-fsync")
    futures = [_sync_pool.submit(sync) for sync in syncs]
    wait(futures)
    for future in futures:
        future.result()


def _read_in(dfd: int, name: str) -> bytes:
    """The bytes of the regular file ``name`` in the folder ``dfd`` (never following a symlink; a FIFO swapped
    in does not block).

    Raises:
        OSError: if it cannot be read.
    """
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=dfd)
    try:
        return _read_to_end(fd)
    finally:
        os.close(fd)


def _read_to_end(fd: int, chunk_bytes: int = 1 << 20) -> bytes:
    """Everything left to read from ``fd``, ``chunk_bytes`` at a time. Raises OSError as ``os.read``."""
    chunks = []
    while chunk := os.read(fd, chunk_bytes):
        chunks.append(chunk)
    return b"".join(chunks)


def prepare_file(dfd: int, name: str, data: bytes, *, keep_previous: bool = False,
                 new_mode: int = FILE_MODE, sync: bool = True) -> PreparedFile:
    """Write ``data`` to a temp file beside ``name`` in the folder ``dfd`` and fsync it.

    The temp file gets the mode of the regular file it will replace, else
    ``new_mode`` (default :data:`FILE_MODE`; set with ``fchmod``, so the umask does not matter). With
    ``keep_previous`` the current file's bytes are read and kept, for :meth:`PreparedFile.restore`
    (a read costs less than a hard link made and removed, and adds no inode change for watchers).
    With ``sync`` False the fsync is left to :meth:`PreparedFile.sync`, the temp file open till then
    (a group commit writes every temp file first, then syncs them: one journal commit carries them all).

    Raises:
        OSError: if any step fails (ENOSPC included); nothing is left behind then.
    """
    mode = new_mode
    exists = False
    with contextlib.suppress(FileNotFoundError):
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            mode, exists = stat.S_IMODE(st.st_mode), True
    tmp = temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE, dir_fd=dfd)
    open_fd: int | None = fd  # left open for PreparedFile.sync when the fsync waits
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
            open_fd = None
            os.close(fd)
        previous = _read_in(dfd, name) if keep_previous and exists else None
    except BaseException:
        if open_fd is not None:
            with contextlib.suppress(OSError):
                os.close(open_fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    return PreparedFile(dfd, name, tmp, previous, open_fd)


def remove_in(dfd: int, name: str) -> bool:
    """Unlink ``name`` in the folder ``dfd`` (a symlink itself, never its target; never a folder).

    Returns:
        True if a file was removed, False if nothing (or a folder) was there.

    Raises:
        OSError: if the unlink fails for another reason.
    """
    try:
        os.unlink(name, dir_fd=dfd)
    except (FileNotFoundError, IsADirectoryError):
        return False
    except PermissionError:
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                return False
        raise
    return True


@contextlib.contextmanager
def opened_folder(root: Path, parts: list[str] | tuple[str, ...], *, create: bool = False) -> Iterator[int]:
    """:func:`folder_fd` as a context manager that closes the descriptor."""
    fd = folder_fd(root, parts, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def replace_together(root: Path, notes: dict[str, bytes], index: bytes) -> None:
    """Replace the notes ``memories/<name>`` (``notes``: ``{name: bytes}``, at least one) and MEMORY.md
    (``index``) all or nothing, as a reader sees it (issues 11, 17).

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


def remove_note(root: Path, rel: str) -> bool:
    """Remove the note ``rel`` of ``root`` if it may name one (:func:`note_problem`); never follow a symlink.

    Returns:
        True if a file was removed; False if none was there, or ``rel`` names
        something that is not a note (MEMORY.md, ``.mmd/``, a folder), which stays.

    Raises:
        MMError(E_IO): if the unlink fails.
    """
    if note_problem(rel) is not None:
        return False
    parts = note_parts(rel)
    try:
        with opened_folder(root, parts[:-1]) as dfd:
            removed = remove_in(dfd, parts[-1])
            if removed:
                os.fsync(dfd)
            return removed
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        if error.errno == errno.ELOOP:
            return False
        raise MMError(ErrorCode.E_IO, f"delete {rel} failed: {error.strerror or error}", details=rel) from error
