"""SHA-256 in hex without :mod:`hashlib`, whose import loads OpenSSL (~2–3 ms of every one-shot ``mmctl`` call).

Owns: :func:`sha256_hex`, for the short keys the client derives on its hot paths (a root's endpoint key, a
project's key: issues 17, 31). Never: anything that needs another algorithm or a streaming hash (use hashlib).
"""

from __future__ import annotations

__all__ = ["sha256_hex"]


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` in hex, from CPython's built-in module when there is one (``_sha2`` from 3.12,
    ``_sha256`` before), else :mod:`hashlib`; the same digest either way."""
    import importlib

    for name in ("_sha2", "_sha256"):
        try:
            return str(importlib.import_module(name).sha256(data).hexdigest())
        except ImportError:
            continue
    import hashlib

    return hashlib.sha256(data).hexdigest()
