"""SHA-256 in hex without importing :mod:`hashlib` where that costs more than it saves: its import loads OpenSSL
(~2–3 ms of every one-shot ``mmctl`` call), while a process that hashes much (the daemon) wants OpenSSL's speed.

Owns: :func:`sha256_hex`, for the keys the client derives on its hot paths (a root's endpoint key, a project's key,
an injection's content hashes: issues 17, 31). Never: anything that needs another algorithm or a streaming hash
(use hashlib).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["BUILTIN_MAX_BYTES", "sha256_hex"]

BUILTIN_MAX_BYTES = 4096
"""Longer data is hashed by :mod:`hashlib` (imported then, once): CPython's built-in SHA-256 takes ~8.6 ns a byte
where OpenSSL's takes ~1.1, so past a few KiB the import pays for itself."""

_builtin: Callable[[bytes], Any] | None = None
"""CPython's built-in ``sha256`` constructor, found on first use."""


def _builtin_sha256() -> Callable[[bytes], Any]:
    """``_sha2.sha256`` (CPython 3.12+) or ``_sha256.sha256`` (before), else :func:`hashlib.sha256`; found once."""
    global _builtin
    if _builtin is None:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            try:
                from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
            except ImportError:
                from hashlib import sha256
        _builtin = sha256
    return _builtin


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` (bytes) in lowercase hex: :mod:`hashlib`'s when it is loaded or ``data`` is longer than
    :data:`BUILTIN_MAX_BYTES`, else CPython's built-in module's; the same digest either way."""
    hashlib = sys.modules.get("hashlib")
    if hashlib is None and len(data) > BUILTIN_MAX_BYTES:
        import hashlib
    if hashlib is not None:
        return str(hashlib.sha256(data).hexdigest())
    return str(_builtin_sha256()(data).hexdigest())
