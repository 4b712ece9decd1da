"""The review page's listen address (``[http] listen`` / ``--http``): parsed, and refused unless it is loopback.

Owns: turning ``HOST:PORT`` (``[::1]:PORT`` for IPv6, ``localhost`` for
127.0.0.1) into ``(host, port)``. The page is for the person at this machine:
from elsewhere, reach it through an SSH tunnel. Never opens a socket (the
lifecycle's web step does), never imports the web stack.
"""

from __future__ import annotations

import ipaddress

__all__ = ["http_listen"]


def http_listen(raw: str | None) -> tuple[str, int] | None:
    """``(host, port)`` of ``raw``, or None when it is None (the page is off); port 0 = any free one.

    Raises:
        ValueError: with the reason, for anything but ``HOST:PORT`` with a loopback HOST and a port 0–65535.
    """
    if raw is None:
        return None
    host, sep, port = raw.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:8765 (port 0 = any free one)")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError("the review page listens on a loopback address only (127.0.0.1, ::1 or localhost); "
                         "reach it from elsewhere through an SSH tunnel")
    return ("127.0.0.1" if host == "localhost" else host), int(port)
