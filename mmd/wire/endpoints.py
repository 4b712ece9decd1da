"""Where a root's daemon listens: endpoints derived from the root, so nothing needs discovering.

``ipc://<runtime>/mmd/<key>.rpc`` and ``…/<key>.pub``, where ``<runtime>`` is
``$XDG_RUNTIME_DIR``, else ``/run/user/<uid>`` when that folder is ours, else the ``0700`` folder
``/tmp/mmd-<uid>``, and
``<key>`` is the first 16 hex digits of the SHA-256 of the root's real path.
Part of the wire contract, so that the client finds the daemon without importing it:
it uses the standard library only and creates nothing unless :func:`ensure_private_dir` is called.

Trust (issue 11): a socket folder is *private* when it is ours (or root's), 0700 at most, and
every folder above it is ours or root's and writable by nobody else (or sticky, as ``/tmp``), so no
other user can plant, swap or read the sockets. The daemon binds only in a private folder
(:func:`ensure_private_dir`); the client sends nothing before :func:`check_socket_folder` and
:func:`check_peer` passed.

Found from the root itself (issues 26, 28): a hook runs in the agent's environment, which may have
another ``$XDG_RUNTIME_DIR`` than the daemon's, or none. So the daemon also records where it listens
in ``<root>/.mmd/endpoints.json`` (0600), and :func:`discover` uses that record when the derived
socket does not exist. The record is taken only as the socket folder is: a regular file (never
a symlink) of ours or root's with no group or other bits, in a ``.mmd`` folder of ours or root's that
nobody else can write, naming ``ipc://`` endpoints only; and the endpoint it names is still checked
by :func:`check_peer` before anything is sent.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from mmd.core.record import Record
from mmd.core.sha import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LIVENESS_MS", "RECORD_NAME", "Endpoints", "check_peer", "check_socket_folder", "discover", "endpoint_key",
           "endpoints_for", "ensure_private_dir", "ipc_path", "listener_of", "peer_credentials", "peer_uid",
           "record_path", "recorded_endpoints", "runtime_dir"]

KEY_HEX_DIGITS = 16
"""Length of ``<key>``, in hex digits (64 bits of the root's hash)."""


class Endpoints(Record):
    """A root's endpoints (a :class:`~mmd.core.record.Record`, not a dataclass: every one-shot
    ``mmctl`` call through the daemon imports this module, and :mod:`dataclasses` costs ~5 ms).

    Attributes:
        rpc: the ROUTER endpoint, ``ipc://…/<key>.rpc``.
        pub: the PUB endpoint, ``ipc://…/<key>.pub``.
        folder: the folder holding both sockets (``<runtime>/mmd``).
    """

    __slots__ = ("rpc", "pub", "folder")

    def __init__(self, rpc: str, pub: str, folder: Path) -> None:
        self.rpc, self.pub, self.folder = rpc, pub, folder


RUN_USER = Path("/run/user")
"""Where systemd (pam_systemd) makes each logged-in user's runtime folder, ``/run/user/<uid>``."""


def runtime_dir(env: Mapping[str, str], run_user: Path = RUN_USER) -> Path:
    """``$XDG_RUNTIME_DIR`` when set to an absolute path; else ``/run/user/<uid>`` when that folder is ours;
    else ``/tmp/mmd-<uid>``.

    The middle step keeps daemon and clients together when only one of them has the variable: a daemon run by
    ``systemd --user`` has ``XDG_RUNTIME_DIR=/run/user/<uid>``, while an MCP client starts ``mmctl mcp`` with a
    bare environment (``HOME``, ``PATH``, ``SHELL``, ``TERM``) and a hook or cron job may too.

    Args:
        env: the environment to read ``$XDG_RUNTIME_DIR`` from.
        run_user: the folder holding the per-user runtime folders (:data:`RUN_USER`).
    """
    value = env.get("XDG_RUNTIME_DIR", "")
    if value and os.path.isabs(value):
        return Path(value)
    uid = os.getuid()
    mine = run_user / str(uid)
    try:
        st = os.stat(mine)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
        return mine
    return Path(f"/tmp/mmd-{uid}")


def endpoint_key(root: str | os.PathLike[str]) -> str:
    """The short hash naming a root's sockets: 16 hex digits of SHA-256 of its real path."""
    real = os.path.realpath(os.fspath(root))
    return sha256_hex(real.encode("utf-8", "surrogateescape"))[:KEY_HEX_DIGITS]


def endpoints_for(root: str | os.PathLike[str], env: Mapping[str, str]) -> Endpoints:
    """The default endpoints of the daemon owning ``root`` (an absolute path; it need not exist yet).

    Args:
        root: the memory root, already resolved (``mmd.core.paths.resolve_root``).
        env: the environment to read ``$XDG_RUNTIME_DIR`` from.
    """
    folder = runtime_dir(env) / "mmd"
    key = endpoint_key(root)
    return Endpoints(rpc=f"ipc://{folder}/{key}.rpc", pub=f"ipc://{folder}/{key}.pub", folder=folder)


RECORD_NAME = "endpoints.json"
"""The file under ``<root>/.mmd/`` where the daemon records its endpoints: ``{"rpc", "pub", "pid"}``."""


def record_path(root: str | os.PathLike[str]) -> Path:
    """``<root>/.mmd/endpoints.json``."""
    return Path(root) / ".mmd" / RECORD_NAME


def recorded_endpoints(root: str | os.PathLike[str]) -> Endpoints | None:
    """The endpoints the root's daemon recorded, or None: no record, or one that fails the checks of the module
    docstring (another user's, readable or writable by others, a symlink, in a folder others can write, not
    ``ipc://``, not the shape written)."""
    import json

    path = record_path(root)
    try:
        folder = os.lstat(path.parent)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISDIR(folder.st_mode) or not _trusted(folder.st_uid) or stat.S_IMODE(folder.st_mode) & 0o022
                or not stat.S_ISREG(st.st_mode) or not _trusted(st.st_uid) or stat.S_IMODE(st.st_mode) & 0o077
                or st.st_size > 4096):
            return None
        value = json.loads(os.read(fd, 4096))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(value, dict):
        return None
    rpc, pub = value.get("rpc"), value.get("pub")
    if not (isinstance(rpc, str) and isinstance(pub, str) and rpc.startswith("ipc://") and pub.startswith("ipc://")):
        return None
    return Endpoints(rpc=rpc, pub=pub, folder=Path(rpc[len("ipc://"):]).parent)


def discover(root: str | os.PathLike[str], env: Mapping[str, str]) -> Endpoints:
    """Where the daemon of ``root`` listens: the endpoints derived from ``env`` (:func:`endpoints_for`) when their
    socket exists, else those the daemon recorded in the root (:func:`recorded_endpoints`) when theirs does, else
    the derived ones. One ``stat`` when the environments agree."""
    derived = endpoints_for(root, env)
    path = ipc_path(derived.rpc)
    if path is None or os.path.exists(path):
        return derived
    recorded = recorded_endpoints(root)
    if recorded is not None and recorded.rpc != derived.rpc and os.path.exists(recorded.rpc[len("ipc://"):]):
        return recorded
    return derived


def ipc_path(endpoint: str) -> Path | None:
    """The socket file of an ``ipc://`` endpoint, or None for other transports."""
    return Path(endpoint[len("ipc://"):]) if endpoint.startswith("ipc://") else None


def _trusted(uid: int) -> bool:
    """Whether a file owned by ``uid`` may sit on our socket path: ours, or root's."""
    return uid in (os.getuid(), 0)


def _private(path: Path, st: os.stat_result, shared: Path | None = None) -> None:
    """Refuse ``path`` unless it is a directory of ours (or root's) with mode 700; ``shared``: the sticky folder
    everyone can write (``/tmp``) that ``path`` sits right under, named in the message as the reason."""
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"socket folder {path} is not a directory")
    if not _trusted(st.st_uid) or stat.S_IMODE(st.st_mode) & 0o077:
        why = f" (it sits right under {shared}, which every user can write)" if shared is not None else ""
        raise PermissionError(f"{path} (uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}) must belong to "
                              f"uid {os.getuid()} with mode 700{why}, or another user could reach the daemon's "
                              f"sockets; fix it (chmod 700 {path}) or remove it")


def _check_above(real: Path) -> None:
    """Every folder above ``real`` is ours or root's and writable by nobody else unless sticky; a folder
    right under a sticky shared one (``/tmp/mmd-<uid>``) must be private itself."""
    shared: Path | None = None
    for part in (*reversed(real.parents), real):
        st = os.stat(part)
        if shared is not None:
            _private(part, st, shared)
        mode = stat.S_IMODE(st.st_mode)
        if not _trusted(st.st_uid) or mode & 0o022 and not mode & stat.S_ISVTX:
            raise PermissionError(f"{part} above the socket folder (uid {st.st_uid}, mode {mode:o}) can be "
                                  f"changed by another user; use a runtime folder only you can write "
                                  f"($XDG_RUNTIME_DIR)")
        shared = part if mode & 0o002 and mode & stat.S_ISVTX else None


def check_socket_folder(folder: Path) -> None:
    """Check that ``folder`` is private: no other user can plant, swap or read a socket in it.

    The real path's folder must be a directory owned by us (or root) with no group or other bits;
    each folder above it must be owned by us or root and writable by nobody else unless sticky
    (``/tmp``), and one right under a sticky shared folder (the runtime base ``/tmp/mmd-<uid>``)
    must be 0700 too. Symlinks are followed first, so a link to another user's folder fails.

    Raises:
        PermissionError: naming the component, its owner and mode, and the fix.
        OSError: if the folder cannot be examined (FileNotFoundError if it is absent).
    """
    real = Path(os.path.realpath(folder))
    _private(real, os.stat(real))
    _check_above(real.parent)


def peer_credentials(path: Path) -> tuple[int, int] | None:
    """``(pid, uid)`` of the process listening on the AF_UNIX socket ``path`` (``SO_PEERCRED``), None
    where the OS does not say (not Linux).

    Raises:
        OSError: if nothing listens there, or the listener's backlog is full (``BlockingIOError``: a process that
            stopped accepting, never waited for).
    """
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.setblocking(False)  # a listener that does not accept (stopped) and whose backlog is full: EAGAIN
        probe.connect(os.fspath(path))
        if option is None:
            return None
        pid, uid, _ = struct.unpack("3i", probe.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(pid), int(uid)


def _connected_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of the connected AF_UNIX ``sock`` (``SO_PEERCRED``), None where the
    OS does not say. ``_socket``'s constants: the caller need not have loaded :mod:`socket`."""
    import _socket
    import struct

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _, uid, _ = struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(uid)


def peer_uid(path: Path) -> int | None:
    """The uid of the process listening on ``path``, as :func:`peer_credentials` (None: the OS does not say).

    Raises:
        OSError: if nothing listens there.
    """
    credentials = peer_credentials(path)
    return None if credentials is None else credentials[1]


def check_peer(endpoint: str, connected: Any = None) -> None:
    """Check an ``ipc://`` endpoint before anything is sent to it (no-op for other transports).

    Its folder must be private (:func:`check_socket_folder`), its socket file ours (or root's), and
    the listening process must run as us (or root) where the OS tells (``SO_PEERCRED``): the process at the
    other end of ``connected`` (a socket already connected to it) when given, else of a probe connection.

    Raises:
        PermissionError: if another user owns the folder, the socket or the listening process.
        OSError: if the socket is absent or nobody listens on it.
    """
    path = ipc_path(endpoint)
    if path is None:
        return
    check_socket_folder(path.parent)
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode) or not _trusted(st.st_uid):
        raise PermissionError(f"{path} is not a socket of uid {os.getuid()} (uid {st.st_uid})")
    uid = peer_uid(path) if connected is None else _connected_uid(connected)
    if uid is not None and not _trusted(uid):
        raise PermissionError(f"the process listening on {path} runs as uid {uid}, not as uid {os.getuid()}")


def ensure_private_dir(folder: Path) -> None:
    """Create ``folder`` (and its missing parents) user-only (0700), then check it is private.

    A folder we own with looser bits is tightened to 0700 when everything above it is private
    already; a runtime base or folder owned by another user, writable by others or not a
    directory is refused (:func:`check_socket_folder`), so nobody else can plant or read our sockets.

    Raises:
        PermissionError: if a component is owned by another user, writable by others, or not a directory.
        OSError: if it cannot be created.
    """
    for part in (*reversed(folder.parents[: len(folder.parents) - 1]), folder):
        if part.exists() or part.is_symlink():
            continue
        old = os.umask(0o077)
        try:
            part.mkdir(mode=0o700, exist_ok=True)
        finally:
            os.umask(old)
    real = Path(os.path.realpath(folder))
    st = os.stat(real)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077:
        _check_above(real.parent)  # only then is the folder surely ours to tighten
        os.chmod(real, 0o700)
    check_socket_folder(folder)


LIVENESS_MS = 1000
"""While a request waits, how often a client checks that the daemon's ipc socket is still the one that took
it, in milliseconds (:func:`listener_of`)."""


def listener_of(path: os.PathLike[str] | None, *, connect: bool = True) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the ipc socket at ``path`` while a process accepts connections on it, else None
    (no socket, or a daemon killed that left its file): a waiting request whose listener changed or went will
    never be answered. ``connect=False`` skips the ``connect`` (a ``stat`` only): what a request records as it
    starts, on the hot path, to compare with later. The ``connect`` never blocks: a listener whose backlog is
    full (a daemon that stopped accepting, SIGSTOPped) is a listener still."""
    if path is None:
        return None
    try:
        st = os.stat(path)
        if connect:
            import socket

            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.setblocking(False)
                try:
                    probe.connect(os.fspath(path))
                except BlockingIOError:
                    pass  # its backlog is full: it is there, not accepting
    except OSError:
        return None
    return st.st_dev, st.st_ino
