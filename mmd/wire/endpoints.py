"""Where a root's daemon listens: endpoints derived from the root, so nothing needs discovering.

``ipc://<runtime>/mmd/<key>.rpc`` and ``…/<key>.pub``, where ``<runtime>`` is
``$XDG_RUNTIME_DIR``, else the ``0700`` folder ``/tmp/mmd-<uid>``, and
``<key>`` is the first 16 hex digits of the SHA-256 of the root's real path.
Part of the wire contract, so that the client finds the daemon without importing it:
it uses the standard library only and creates nothing unless :func:`ensure_private_dir` is called.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Endpoints", "endpoint_key", "endpoints_for", "ensure_private_dir", "ipc_path", "runtime_dir"]

KEY_HEX_DIGITS = 16
"""Length of ``<key>``, in hex digits (64 bits of the root's hash)."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    """A root's endpoints.

    Attributes:
        rpc: the ROUTER endpoint, ``ipc://…/<key>.rpc``.
        pub: the PUB endpoint, ``ipc://…/<key>.pub``.
        folder: the folder holding both sockets (``<runtime>/mmd``).
    """

    rpc: str
    pub: str
    folder: Path


def runtime_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_RUNTIME_DIR`` when set to an absolute path, else ``/tmp/mmd-<uid>``."""
    value = env.get("XDG_RUNTIME_DIR", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(f"/tmp/mmd-{os.getuid()}")


def endpoint_key(root: str | os.PathLike[str]) -> str:
    """The short hash naming a root's sockets: 16 hex digits of SHA-256 of its real path."""
    real = os.path.realpath(os.fspath(root))
    return hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:KEY_HEX_DIGITS]


def endpoints_for(root: str | os.PathLike[str], env: Mapping[str, str]) -> Endpoints:
    """The default endpoints of the daemon owning ``root`` (an absolute path; it need not exist yet).

    Args:
        root: the memory root, already resolved (``mmd.core.paths.resolve_root``).
        env: the environment to read ``$XDG_RUNTIME_DIR`` from.
    """
    folder = runtime_dir(env) / "mmd"
    key = endpoint_key(root)
    return Endpoints(rpc=f"ipc://{folder}/{key}.rpc", pub=f"ipc://{folder}/{key}.pub", folder=folder)


def ipc_path(endpoint: str) -> Path | None:
    """The socket file of an ``ipc://`` endpoint, or None for other transports."""
    return Path(endpoint[len("ipc://"):]) if endpoint.startswith("ipc://") else None


def ensure_private_dir(folder: Path) -> None:
    """Create ``folder`` (and its parents) user-only (0700), or check an existing one is.

    A folder we own with looser bits is tightened to 0700; one owned by another
    user, or a symlink, is refused, so nobody else can plant or read our sockets.

    Raises:
        PermissionError: if the folder is owned by another user or is not a directory.
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
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{folder} is not a directory")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to uid {st.st_uid}, not to us (uid {os.getuid()})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)
