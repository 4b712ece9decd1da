"""What the environment pins for one ``mmctl`` call (testing aids), read alike by the CLI and the MCP server.

Owns: reading ``MMCTL_NOW`` (an ISO-8601 time that pins the clock),
``MMCTL_FTS5`` (``0``/``1`` forces SQLite FTS5 off or on) and
``MMCTL_NO_DAEMON`` (``1`` never looks for a daemon). Never does: I/O, printing.
"""

from __future__ import annotations

from collections.abc import Mapping

from mmd.core.clock import Clock, parse_iso_ms, system_clock

__all__ = ["pinned_clock", "pinned_fts5", "wants_daemon"]


def pinned_clock(env: Mapping[str, str]) -> Clock:
    """The clock ``MMCTL_NOW`` pins, else the system clock.

    Raises:
        ValueError: ``MMCTL_NOW must be an ISO-8601 time (got '…')`` for anything else.
    """
    pinned = env.get("MMCTL_NOW", "").strip()
    if not pinned:
        return system_clock
    try:
        moment = parse_iso_ms(pinned)
    except ValueError:
        raise ValueError(f"MMCTL_NOW must be an ISO-8601 time (got {pinned!r})") from None
    return lambda: moment


def pinned_fts5(env: Mapping[str, str]) -> bool | None:
    """``MMCTL_FTS5`` as forced FTS5 availability: False for ``0``/``false``, True for ``1``/``true``, else None."""
    value = env.get("MMCTL_FTS5", "").strip().lower()
    return {"0": False, "false": False, "1": True, "true": True}.get(value)


def wants_daemon(env: Mapping[str, str]) -> bool:
    """False when ``MMCTL_NO_DAEMON`` is ``1`` or ``true`` (work on the files only)."""
    return env.get("MMCTL_NO_DAEMON", "") not in ("1", "true")
