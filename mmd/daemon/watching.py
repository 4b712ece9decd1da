"""What both file watchers (the root's and the sessions folder's) share: choosing native watching or
polling, and backing off after failures.

Owns: :func:`native_failure`, which asks the OS for native watches on a path the way
the watchers will (without watchfiles' ``ignore_permission_denied``, which hides a
refused watch: with the inotify watch limit reached, a native watch sees nothing
and says nothing), and :class:`Backoff`, the pause before a failed watch restarts
(doubling from one second to a minute, so a watch that keeps failing logs a few
lines, not one a second). The watchers poll (watchfiles' ``force_polling``) when
native watching is refused, and show the mode and the reason in their health.
Never reads or writes the watched files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MAX_RETRY_S", "POLL_DELAY_MS", "RETRY_S", "Backoff", "native_failure", "watch_or_poll"]

RETRY_S = 1.0
"""First pause after a failed watch before it restarts, seconds."""
MAX_RETRY_S = 60.0
"""Longest pause between restarts of a watch that keeps failing, seconds."""
POLL_DELAY_MS = 300
"""How often a polling watch looks at the files, milliseconds."""


def native_failure(path: Path, *, recursive: bool) -> str | None:
    """Why the OS refuses native watches on ``path`` (the inotify watch or instance limit, no backend), or
    None when they work. A folder we may not read below ``path`` does not count: the watchers skip it.

    Blocking (it sets up and drops the watches): call it in a worker thread.
    """
    from watchfiles import watch

    stopped = threading.Event()
    stopped.set()  # set up the watches, then return at once
    try:
        for _ in watch(path, stop_event=stopped, recursive=recursive, force_polling=False,
                       ignore_permission_denied=False, raise_interrupt=False):
            break
    except PermissionError:
        return None
    except FileNotFoundError:
        return None  # gone meanwhile: the watcher's own start reports it
    except OSError as error:
        return str(error)
    except RuntimeError as error:  # watchfiles' other backend errors
        return str(error)
    return None


def watch_or_poll(paths: Sequence[Path], *, recursive: bool, report: Callable[[str | None], None],
                  **options: Any) -> Iterator[set[tuple[Any, str]]]:
    """watchfiles' ``watch`` on ``paths``: native when the OS allows it, else polling.

    The native watch is first set up strictly (``ignore_permission_denied=False``, so a refused watch
    raises instead of seeing nothing); a folder we may not read below them sets it up again
    leniently. The same watch goes on, so nothing happens between the check and the watch.

    Args:
        report: called once, before the first batch, with why native watching was refused (then the
            watch polls every :data:`POLL_DELAY_MS` ms) or None.
        options: more ``watchfiles.watch`` arguments (``stop_event``, ``debounce``, …).
    """
    from watchfiles import watch

    failure: str | None = None
    for strict in (True, False):
        changes = watch(*paths, recursive=recursive, force_polling=False, ignore_permission_denied=not strict,
                        **options)
        try:
            first = next(changes)
        except StopIteration:
            report(None)
            return
        except PermissionError:
            continue
        except (OSError, RuntimeError) as error:
            failure = str(error)
            break
        report(None)
        yield first
        yield from changes
        return
    report(failure)
    yield from watch(*paths, recursive=recursive, force_polling=True, poll_delay_ms=POLL_DELAY_MS,
                     ignore_permission_denied=True, **options)


class Backoff:
    """Pauses between restarts of a failing watch: :data:`RETRY_S`, doubling up to :data:`MAX_RETRY_S`.

    Attributes:
        failures: failures in a row since the last :meth:`reset`.
    """

    def __init__(self, first_s: float = RETRY_S, most_s: float = MAX_RETRY_S) -> None:
        self.first_s, self.most_s = first_s, most_s
        self.failures = 0

    def next_s(self) -> float:
        """Count one more failure; the pause before the next try, seconds."""
        self.failures += 1
        return float(min(self.most_s, self.first_s * 2.0 ** (self.failures - 1)))

    def reset(self) -> None:
        """The watch ran and delivered: the next failure pauses :data:`RETRY_S` again."""
        self.failures = 0
