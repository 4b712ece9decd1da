"""Child processes that end with their parent: a process-group kill, and a supervisor that ends every descendant.

A process group is not enough to end what a command started: a helper that calls ``setsid``
(``setsid sleep 300``, a daemonizing model server) leaves the group, and once its parent exits it
is reparented to init, out of reach. :func:`supervised` wraps a command in this module run as a
program (``python -m mmd.daemon.children PARENT_PID -- ARGV…``), the *supervisor*:

- On Linux it makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every orphan
  among the command's descendants, detached or not, is reparented to it rather than to init; and it
  asks for ``SIGTERM`` when the thread that started it ends (``PR_SET_PDEATHSIG``: a daemon killed
  with ``SIGKILL`` still gets its children ended).
- It runs the command in a session of its own, with the supervisor's stdin, stdout and stderr.
- When the command exits, or the supervisor gets ``SIGTERM``/``SIGINT``/``SIGHUP``, it kills the
  command's process group, then every child it has (reparented orphans included) and their children
  as they are reparented in turn, until it has none; then it exits with the command's status
  (``128 + N`` for a signal ``N``), or 127 after ``mmd-supervisor: cannot run …`` on stderr.

On macOS (no subreaper) the supervisor ends the command's process group only: a descendant that
left the group with ``setsid`` and whose parent exited outlives the run there.

Owns: :func:`kill_group` (the one process-group kill of the daemon's children: git, the extractor),
:func:`supervised`, :func:`end_supervisor` and the supervisor program. Never: reads or writes the
command's input or output, or decides time limits (the caller does).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["CANNOT_RUN", "SUPERVISOR_GRACE_S", "end_supervisor", "kill_group", "supervised"]

CANNOT_RUN = "mmd-supervisor: cannot run "
"""How the supervisor's last stderr line begins when the command could not be started (exit status 127)."""
SUPERVISOR_GRACE_S = 5.0
"""How long :func:`end_supervisor` waits for the supervisor to end the descendants, seconds, before it kills
the supervisor's own group."""
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s process group (it leads one: ``start_new_session``); gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def supervised(command: Sequence[str]) -> list[str]:
    """The argv that runs ``command`` under the supervisor (this module), for this process as its parent."""
    return [sys.executable, "-m", "mmd.daemon.children", str(os.getpid()), "--", *command]


def end_supervisor(proc: subprocess.Popen[bytes], grace_s: float = SUPERVISOR_GRACE_S) -> None:
    """End a supervisor started with :func:`supervised` (``start_new_session``) and everything under it; reap it.

    ``SIGTERM`` first, so the supervisor ends the descendants; after ``grace_s`` seconds without an exit,
    its whole group is killed (descendants that left the group may then survive).
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()


# --- the supervisor program --------------------------------------------------------------------------


class _Ending(Exception):
    """Raised in the supervisor by a signal that asks it to end the command."""


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` through libc; False where there is none (not Linux) or it fails."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (``/proc/*/stat``; empty where there is no ``/proc``)."""
    out: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(name))
    return out


def _end_descendants(command: subprocess.Popen[bytes] | None) -> None:
    """Kill the command's group and every child of this process, as orphans keep being reparented here."""
    if command is not None:
        kill_group(command)
    me = os.getpid()
    while True:
        for pid in _children(me):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)  # one ended child; its own children are ours now
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _status(code: int) -> int:
    """A wait status as an exit status: the code, or 128 + the signal that ended the process."""
    if os.WIFSIGNALED(code):
        return 128 + os.WTERMSIG(code)
    return os.WEXITSTATUS(code) if os.WIFEXITED(code) else 1


def _main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: python -m mmd.daemon.children PARENT_PID -- ARGV...\n")
        return 2
    parent = int(argv[0])

    def ending(signum: int, _frame: object) -> None:
        raise _Ending(signum)

    for sig in _ENDING:
        signal.signal(sig, ending)
    command: subprocess.Popen[bytes] | None = None
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent ended before PDEATHSIG was asked for
            return 128 + signal.SIGTERM
        try:
            command = subprocess.Popen(argv[2:], start_new_session=True)
        except OSError as error:
            sys.stderr.write(f"{CANNOT_RUN}{argv[2]}: {error.strerror or error}\n")
            return 127
        if hasattr(os, "waitid"):  # exited but not reaped: its pid, the group's id, stays taken till the kill
            while os.waitid(os.P_PID, command.pid, os.WEXITED | os.WNOWAIT) is None:
                pass
            kill_group(command)
        _, code = os.waitpid(command.pid, 0)
        command.returncode = _status(code)
        return command.returncode
    except _Ending as ended:
        return 128 + int(ended.args[0])
    finally:
        for sig in _ENDING:  # a second signal must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        _end_descendants(command if command is not None and command.returncode is None else None)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
