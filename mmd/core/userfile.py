"""Files a user names (``AGENTS.md``, an agent's settings), read and replaced safely (issue 26).

Such a file is not under the memory root: it is wherever the user (or a cloned repository) put it,
so it is opened one checked way:

- Only a **regular file the user owns**; a FIFO, a device, a socket or a folder is refused before it
  is opened (``lstat``), and the open itself never blocks or follows a link (``O_NONBLOCK|O_NOFOLLOW``,
  then ``fstat`` confirms the same regular file).
- A path that leads through a **symlink** (the file itself, or a folder of it) is followed only to a
  regular file the user owns *inside the user's home* (a dotfiles repository); elsewhere it is refused,
  naming the target (a repository's ``AGENTS.md → /etc/hostname`` is never written, even as root).
  A path given without symlinks (what ``os.getcwd()`` yields) is taken as it is, wherever it is.
- A **read-only** file (no owner write bit) is refused, never replaced.
- The replacement is **atomic**: a temp file in the file's own folder, with the file's mode (and group
  where it can), fsynced, then renamed over it; never a partial file.
- **Concurrent writers** (an agent rewriting its settings by temp file and rename): the file is read
  again right before the rename and the edit is redone on the new bytes when it changed (a few
  times, then a refusal); a redone edit renames first and fsyncs right after, so that its window
  is microseconds rather than an fsync's milliseconds. On Linux and macOS the rename is an atomic *exchange*
  (``renameat2(RENAME_EXCHANGE)``, ``renameatx_np(RENAME_SWAP)``): the replaced file is checked to be
  the one the edit read, and a file another writer put there in between is swapped back, so its
  change is never lost; elsewhere (or on a file system without exchange) the window is the few
  microseconds between the last read and the rename.

Owns: the checks above, :func:`read_user_file` and :func:`update_user_file`. Never: parses the file
(the caller's ``edit`` does), or writes inside the memory root (:mod:`.rootfs` does).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from .errors import ErrorCode, MMError
from .rootfs import temp_name

__all__ = ["RETRIES", "UserFile", "read_user_file", "update_user_file", "user_home"]

RETRIES = 5
"""How many times an edit is redone on a file that changed under it before :func:`update_user_file` refuses."""
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class UserFile:
    """One read of a file a user named.

    Attributes:
        path: the path as named.
        target: the file read and replaced (``path`` itself, or the regular file a symlink leads to).
        data: its bytes, or None when it does not exist.
        mode: its permission bits (None when it does not exist).
    """

    __slots__ = ("_id", "data", "mode", "path", "target")

    def __init__(self, path: Path, target: Path, data: bytes | None, st: os.stat_result | None) -> None:
        self.path, self.target, self.data = path, target, data
        self.mode = None if st is None else stat.S_IMODE(st.st_mode)
        self._id = None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def same(self, other: UserFile) -> bool:
        """Whether ``other`` read the same file in the same state (inode, size, mtime and bytes)."""
        return self._id == other._id and self.data == other.data


def user_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The real path of the user's home: ``home`` when it is an absolute path, else the account's (``pwd``)."""
    if home is None or not os.path.isabs(home):
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    return Path(os.path.realpath(home))


def _refuse(path: Path, why: str) -> MMError:
    return MMError(ErrorCode.E_INVALID, f"{path} {why}; nothing was written", details=str(path))


def _kind(mode: int) -> str | None:
    """What a non-regular file is (``a FIFO``), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _target(path: Path, home: Path) -> Path:
    """The file to read and replace for ``path`` (see the module docstring for the symlink rule).

    Raises:
        MMError(E_INVALID): a symlink that leads outside the home, to something that is not a regular file
            of the user, or to nothing.
    """
    given = Path(os.path.abspath(path))
    real = Path(os.path.realpath(given))
    if real == given:
        return given
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as error:
        raise _refuse(path, f"leads through a symlink to {real}, which cannot be examined ({error.strerror})") from None
    if st is None:
        folder = real.parent
        if not folder.is_dir() or os.stat(folder).st_uid != os.getuid():
            raise _refuse(path, f"is a symlink to {real}, which does not exist (in no folder of yours)")
    elif _kind(st.st_mode) is not None:
        raise _refuse(path, f"is a symlink to {real}, which is {_kind(st.st_mode)}, not a regular file")
    elif st.st_uid != os.getuid():
        raise _refuse(path, f"is a symlink to {real}, a file of uid {st.st_uid}, not yours (uid {os.getuid()})")
    if home == real or home not in real.parents:
        raise _refuse(path, f"is a symlink to {real}, outside your home {home}; a symlink is followed only to "
                            "your own file inside your home (a dotfiles repository): name the file itself")
    return real


def _read_at(dfd: int, name: str, shown: Path, target: Path) -> UserFile:
    """Read ``name`` in the folder ``dfd``, checked as the module docstring says (a file renamed over it between
    the check and the open, as a concurrent writer does, is checked again).

    Raises:
        MMError(E_INVALID): not a regular file, another user's file, or a read-only one.
        MMError(E_IO): it cannot be read, or kept being replaced.
    """
    for _ in range(RETRIES):
        read = _read_once(dfd, name, shown, target)
        if read is not None:
            return read
    raise MMError(ErrorCode.E_IO, f"{shown} kept being replaced while it was read; try again", details=str(shown))


def _read_once(dfd: int, name: str, shown: Path, target: Path) -> UserFile | None:
    """One checked read; None when another file was renamed over ``name`` between the check and the open."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return UserFile(shown, target, None, None)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot examine {shown}: {error.strerror}", details=str(shown)) from None
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(shown, "was replaced by a symlink while it was read")
    kind = _kind(st.st_mode)
    if kind is not None:
        raise _refuse(shown, f"is {kind}, not a regular file")
    if st.st_uid != os.getuid():
        raise _refuse(shown, f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})")
    if not st.st_mode & stat.S_IWUSR:
        raise _refuse(shown, f"is read-only (mode {stat.S_IMODE(st.st_mode):04o}): make it writable "
                             "(chmod u+w) if it should change, or edit it by hand")
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refuse(shown, "was replaced by a symlink while it was read") from None
        raise MMError(ErrorCode.E_IO, f"cannot read {shown}: {error.strerror}", details=str(shown)) from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return UserFile(shown, target, b"".join(chunks), opened)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot read {shown}: {error.strerror}", details=str(shown)) from None
    finally:
        os.close(fd)


def _folder(target: Path, shown: Path) -> int:
    try:
        return os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot open the folder of {shown}: {error.strerror}",
                      details=str(shown)) from None


def read_user_file(path: str | os.PathLike[str], *, home: str | os.PathLike[str] | None = None) -> UserFile:
    """Read the file a user named at ``path`` (missing: ``data`` is None), with every check of the module docstring.

    Args:
        home: the user's home (``$HOME``); None or relative: the account's.

    Raises:
        MMError(E_INVALID): a symlink the rule refuses, not a regular file, another user's, read-only.
        MMError(E_IO): it cannot be read.
    """
    shown = Path(path)
    target = _target(shown, user_home(home))
    if not target.parent.is_dir():
        return UserFile(shown, target, None, None)
    dfd = _folder(target, shown)
    try:
        return _read_at(dfd, target.name, shown, target)
    finally:
        os.close(dfd)


def update_user_file(path: str | os.PathLike[str], edit: Callable[[bytes | None], bytes | None], *,
                     home: str | os.PathLike[str] | None = None, new_mode: int = 0o644,
                     tries: int = RETRIES) -> bool:
    """Replace the file at ``path`` with ``edit(its bytes)``, atomically and safely (module docstring).

    ``edit`` gets the current bytes (None: no file) and returns the new ones, or None to leave the file as
    it is; it is called again on the new bytes when the file changed meanwhile, so it must be a pure
    function of its argument (it may raise to refuse). A new file gets ``new_mode``; a replaced one keeps
    its mode. The folder must exist.

    Returns:
        True if the file was written, False if ``edit`` changed nothing.

    Raises:
        MMError(E_INVALID): as :func:`read_user_file` (nothing written), or what ``edit`` raises.
        MMError(E_IO): the folder cannot be written (the file is then as it was), or the file kept
            changing under the edit ``tries`` times.
    """
    shown = Path(path)
    target = _target(shown, user_home(home))
    dfd = _folder(target, shown)
    try:
        for attempt in range(tries):
            current = _read_at(dfd, target.name, shown, target)
            new = edit(current.data)
            if new is None or new == current.data:
                return False
            if _replace(dfd, current, new, new_mode, sync_first=attempt == 0):
                return True
    finally:
        os.close(dfd)
    raise MMError(ErrorCode.E_IO, f"{shown} kept changing while it was written (another program rewrites it); "
                                  "nothing was written: try again", details=str(shown))


def _replace(dfd: int, current: UserFile, new: bytes, new_mode: int, *, sync_first: bool) -> bool:
    """Put ``new`` in place of ``current``; False (nothing changed) when the file is no longer ``current``.

    With ``sync_first`` the temp file is fsynced before the rename (a crash leaves the old file or the new
    one, whole); without, right after it, so that the last read, the rename and the check of what it
    replaced take microseconds, not an fsync's milliseconds (a retry against a busy writer).
    """
    name, shown = current.target.name, current.path
    tmp = temp_name(name)
    fd: int | None = None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        os.fchmod(fd, new_mode if current.mode is None else current.mode)
        with contextlib.suppress(OSError):
            if current.data is not None:
                os.fchown(fd, -1, os.stat(name, dir_fd=dfd, follow_symlinks=False).st_gid)
        view = memoryview(new)
        while view:
            view = view[os.write(fd, view):]
        if sync_first:
            os.fsync(fd)
        ours = os.fstat(fd).st_ino
        if not current.same(_read_at(dfd, name, shown, current.target)):  # right before the rename
            return False
        if current.data is None:
            try:
                os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:  # created meanwhile: edit it instead
                return False
        elif not _exchange(dfd, tmp, name):
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        elif not _displaced_is(dfd, tmp, current):
            _exchange(dfd, tmp, name)  # another writer's file was replaced: it goes back
            if os.stat(tmp, dir_fd=dfd, follow_symlinks=False).st_ino != ours:
                _exchange(dfd, tmp, name)  # and a newer one came meanwhile: the newest stays in place
            return False
        if not sync_first:
            os.fsync(fd)
        os.fsync(dfd)
        return True
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot write {shown}: {error.strerror or error} (it is as it was)",
                      details=str(shown)) from None
    finally:
        if fd is not None:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)


def _displaced_is(dfd: int, tmp: str, current: UserFile) -> bool:
    """Whether the file the exchange moved to ``tmp`` is the one ``current`` read."""
    try:
        st = os.stat(tmp, dir_fd=dfd, follow_symlinks=False)
        fd = os.open(tmp, _READ_FLAGS, dir_fd=dfd)
    except OSError:
        return False
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return current.same(UserFile(current.path, current.target, b"".join(chunks), st))


_EXCHANGE_FLAG = 2  # RENAME_EXCHANGE (Linux renameat2) and RENAME_SWAP (macOS renameatx_np)


def _exchange(dfd: int, a: str, b: str) -> bool:
    """Atomically swap the names ``a`` and ``b`` in the folder ``dfd``; False where the OS or file system cannot.

    Raises:
        OSError: for any other failure of the swap.
    """
    exchanger = _find_exchanger()
    if exchanger is None:
        return False
    import ctypes

    if exchanger(dfd, os.fsencode(a), dfd, os.fsencode(b)) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code))


@functools.cache
def _find_exchanger() -> Callable[[int, bytes, int, bytes], int] | None:
    import ctypes

    name = "renameat2" if sys.platform.startswith("linux") else "renameatx_np" if sys.platform == "darwin" else ""
    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name) if name else None
    except (OSError, AttributeError):
        return None
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int

    def exchange(olddfd: int, old: bytes, newdfd: int, new: bytes) -> int:
        return int(function(olddfd, old, newdfd, new, _EXCHANGE_FLAG))

    return exchange
