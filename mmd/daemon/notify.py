"""systemd's notify protocol (``sd_notify``) without a dependency: one datagram per message.

``READY=1`` once serving, ``RELOADING=1`` around SIGHUP, ``STOPPING=1`` at
shutdown, ``WATCHDOG=1`` pings at half of ``$WATCHDOG_USEC``. Without
``$NOTIFY_SOCKET`` every call is a no-op. A failing send is logged, never raised.
"""

from __future__ import annotations

import logging
import os
import socket
import time

__all__ = ["Notifier"]

log = logging.getLogger("mmd.notify")


class Notifier:
    """Sends state changes to systemd.

    Args:
        address: ``$NOTIFY_SOCKET`` (a path, or ``@name`` for the abstract namespace), or None.
    """

    def __init__(self, address: str | None) -> None:
        self.address = address

    @property
    def enabled(self) -> bool:
        """Whether a notify socket is configured."""
        return bool(self.address)

    def send(self, *fields: str) -> bool:
        """Send ``KEY=value`` fields as one datagram; True if it was sent."""
        if not self.address:
            return False
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto("\n".join(fields).encode(), target)
            return True
        except OSError as error:
            log.warning("notify.failed address=%s error=%s", self.address, error)
            return False

    def ready(self, status: str) -> bool:
        """``READY=1`` with a status line."""
        return self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def reloading(self) -> bool:
        """``RELOADING=1`` (systemd ``Type=notify-reload`` wants the monotonic time too)."""
        return self.send("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}")

    def stopping(self) -> bool:
        """``STOPPING=1``."""
        return self.send("STOPPING=1", "STATUS=stopping")

    def watchdog(self) -> bool:
        """``WATCHDOG=1``."""
        return self.send("WATCHDOG=1")
