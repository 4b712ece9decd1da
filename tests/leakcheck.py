"""Nothing left behind: a pytest plugin that ends every process a test starts and fails a run that leaks one.

Owns: the ``spawn`` fixture (a process leading its own process group, whose whole tree is ended when the test
ends, pass or fail); :func:`end_tree`, which the daemon helper uses too; the per-test check (a child of this
pytest process started during a test and still alive after its teardown, or a file or folder the test left in
the run's temp folder, is named, removed, and fails that test); the end-of-run check (a process carrying this
run's mark, wherever it was reparented, or anything left in this run's temp folder, such as a runtime folder
with its sockets or a temp root, fails the run, named).
Never: touches a process this run did not start (each process of the run carries ``MMD_TEST_RUN`` in its
environment, from this process's own mark), nor pytest's own ``tmp_path`` folders (kept out of its temp
folder: pytest keeps the last three runs' for a person to look at).
Threading: the fixtures run on pytest's thread; nothing here starts a thread.

Loaded by ``tests/conftest.py`` (``pytest_plugins``); a pytester run loads it with ``-p tests.leakcheck``.
Under pytest-xdist each worker checks its own tests and its own temp folder, and the controller none.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

MARK = "MMD_TEST_RUN"
"""The environment variable carrying the run's mark: every process started by a checking pytest inherits it."""
TERM_WAIT_S = 5.0
EXEC_WAIT_S = 2.0
"""How long :func:`environ` reads again a process whose environment is empty (one caught inside its exec)."""
"""How long a process has to exit after SIGTERM before its group is sent SIGKILL (a bound on a hang)."""


class _Run:
    """What this pytest process checks: its mark and its temp folder (both None when it checks nothing)."""

    mark: str | None = None
    temp: Path | None = None
    shared: str | None = None


def shared_temp() -> str:
    """The machine's temp folder (``/tmp``), for a folder another user must reach: the run's own is 0700."""
    return RUN.shared or tempfile.gettempdir()


RUN = _Run()


def pytest_configure(config: pytest.Config) -> None:
    """Give this process a mark and a temp folder, unless it is an xdist controller (its workers check)."""
    if not hasattr(config, "workerinput") and config.getoption("dist", default="no") != "no":
        return
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())  # tmp_path stays where pytest keeps it
    RUN.mark = uuid.uuid4().hex
    RUN.shared = tempfile.gettempdir()
    RUN.temp = Path(tempfile.mkdtemp(prefix="mmdt"))  # 0700, as a runtime base under /tmp must be
    os.environ[MARK] = RUN.mark
    os.environ["TMPDIR"] = str(RUN.temp)
    tempfile.tempdir = str(RUN.temp)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this run's temp folder (what was left in it was reported at the end of the session)."""
    if RUN.temp is not None:
        shutil.rmtree(RUN.temp, ignore_errors=True)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def describe(proc: psutil.Process) -> str:
    """``pid N: command line`` (at most 160 characters of it), for a message naming a process."""
    try:
        line = " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        line = "?"
    return f"pid {proc.pid}: {line[:160]}"


def end_processes(procs: Sequence[psutil.Process]) -> None:
    """SIGTERM each of ``procs``, then SIGKILL those still alive after :data:`TERM_WAIT_S` seconds."""
    live = [p for p in procs if _alive(p)]
    for proc in live:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    left = _wait_ended(live, TERM_WAIT_S)
    for proc in left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    _wait_ended(left, TERM_WAIT_S)


def _wait_ended(procs: Sequence[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait at most ``timeout_s`` seconds for ``procs`` to end; those still alive. A child of this process is
    reaped; a zombie another process has not reaped yet counts as ended (``psutil.wait_procs`` waits for its pid to
    go, and an init that reaps late kept a test waiting the whole timeout)."""
    deadline, left = time.monotonic() + timeout_s, list(procs)
    while True:
        for proc in left:
            try:
                proc.wait(timeout=0)
            except psutil.Error:  # TimeoutExpired: still running
                pass
        left = [proc for proc in left if _alive(proc)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.01)


def end_tree(popen: subprocess.Popen[Any], graceful: signal.Signals = signal.SIGTERM,
             wait_s: float = TERM_WAIT_S) -> None:
    """End ``popen``, its process group and every descendant it started (they may lead groups of their own).

    ``graceful`` goes to the leader first; once it has exited, or after ``wait_s`` seconds, its group is sent
    SIGKILL (the leader is not reaped before, so the group's id is still its own); then each descendant seen
    while the leader lived and still alive is ended by :func:`end_processes`. The leader is reaped and its
    pipes closed. A leader reaped before (its pid may be another process's now) is left alone: what it
    started is found by the end-of-run check.
    """
    if popen.poll() is None:
        try:
            descendants = psutil.Process(popen.pid).children(recursive=True)
        except psutil.Error:
            descendants = []
        popen.send_signal(graceful)
        _exited_unreaped(popen.pid, wait_s)
        try:
            if os.getpgid(popen.pid) == popen.pid:  # it leads its group (``start_new_session``)
                os.killpg(popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        popen.kill()
        popen.wait(TERM_WAIT_S)
        end_processes(descendants)
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        if stream is not None:
            stream.close()


def _exited_unreaped(pid: int, wait_s: float) -> bool:
    """Wait at most ``wait_s`` seconds for child ``pid`` to exit, without reaping it; whether it exited."""
    deadline = time.monotonic() + wait_s
    try:
        while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
    except ChildProcessError:  # reaped already
        pass
    return True


@pytest.fixture
def spawn() -> Iterator[Any]:
    """A factory ``spawn(args, **popen_kwargs)`` → a ``subprocess.Popen`` leading a new process group
    (``start_new_session``), SIGINT at its default disposition (a run started in the background by a shell without
    job control inherits SIGINT ignored, and a test's Ctrl-C then never reached the child); at teardown, pass or
    fail, each is ended with its tree (:func:`end_tree`)."""
    started: list[subprocess.Popen[Any]] = []

    def start(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        proc = subprocess.Popen(args, start_new_session=True, preexec_fn=_default_sigint, **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):
        end_tree(proc)


def _default_sigint() -> None:
    """In the child, before exec: SIGINT as a terminal's Ctrl-C would find it (an ignored signal survives exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


OWN_HELPERS = ("from multiprocessing.resource_tracker import main", "from multiprocessing.forkserver import main")
"""Command lines of helpers the interpreter itself starts once, on first use, and keeps for its lifetime (they
exit with it): no test's."""


def _own_helper(proc: psutil.Process) -> bool:
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return False
    return any(helper in line for helper in OWN_HELPERS)


def _children() -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process().children(recursive=True) if _alive(p) and not _own_helper(p)]
    except psutil.Error:
        return []


def _temp_names() -> set[str]:
    return set(os.listdir(RUN.temp)) if RUN.temp is not None and RUN.temp.is_dir() else set()


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)


def _started_under(before: set[tuple[int, float]], procs: list[psutil.Process]) -> list[psutil.Process]:
    """Of ``procs`` (descendants of this process), those that are new and whose every ancestor below this
    process is new too: what a test started, not what a process already running then (a module's browser)
    started meanwhile."""
    me, new = os.getpid(), []
    for proc in procs:
        try:
            chain = [proc, *proc.parents()]
            mine = [p for p in chain[:next(i for i, p in enumerate(chain) if p.pid == me)]]
            if all((p.pid, p.create_time()) not in before for p in mine):
                new.append(proc)
        except (psutil.Error, StopIteration):
            continue
    return new


def _known(procs: list[psutil.Process]) -> set[tuple[int, float]]:
    known = set()
    for proc in procs:
        try:
            known.add((proc.pid, proc.create_time()))
        except psutil.Error:
            continue
    return known


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Iterator[None]:
    """Fail a test (at teardown) that leaves a process it started running; the processes named are ended."""
    if RUN.mark is None:
        yield
        return
    before, temp_before = _known(_children()), _temp_names()
    yield
    leaked = _started_under(before, _children())
    names = [describe(p) for p in leaked]
    end_processes(leaked)
    left = sorted(_temp_names() - temp_before)
    assert RUN.temp is not None
    for name in left:
        _remove(RUN.temp / name)
    problems = [f"the test left running (now ended): {'; '.join(names)}"] if names else []
    problems += [f"the test left in the run's temp folder (now removed): {', '.join(left)}"] if left else []
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def environ(proc: psutil.Process) -> dict[str, str]:
    """The environment of ``proc``. Linux shows an empty one while a process is inside its exec, until the new
    image's is set up (read right after ``Popen`` returned, 13 of 300 on a loaded machine): such a process is read
    again, for at most :data:`EXEC_WAIT_S` seconds; a kernel thread (its parent is 0 or 2) has none.

    Raises:
        psutil.Error: the process is gone or not ours to read.
    """
    deadline = time.monotonic() + EXEC_WAIT_S
    while True:
        env: dict[str, str] = proc.environ()
        if env or proc.ppid() in (0, 2) or time.monotonic() >= deadline:
            return env
        time.sleep(0.01)


def _marked_elsewhere() -> list[psutil.Process]:
    """Processes carrying this run's mark, other than this one and its children (found by the per-test check)."""
    me, found = os.getpid(), []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if environ(proc).get(MARK) == RUN.mark and _alive(proc) and not _own_helper(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _left_in_temp() -> list[str]:
    if RUN.temp is None or not RUN.temp.is_dir():
        return []
    return sorted(str(p) for p in RUN.temp.iterdir())


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_at_the_end() -> Iterator[None]:
    """At the end of the session: fail the run naming any process of this run still alive (a daemonized or
    reparented one) and anything left in the run's temp folder (runtime folders, sockets, temp roots)."""
    yield
    if RUN.mark is None:
        return
    procs = _marked_elsewhere()
    names = [describe(p) for p in procs]
    end_processes(procs)
    left = _left_in_temp()
    for path in left:
        _remove(Path(path))
    problems = ([f"processes still running at the end of the run (now ended): {'; '.join(names)}"] if names else [])
    problems += [f"left in the run's temp folder (now removed): {', '.join(left[:20])}"] if left else []
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
