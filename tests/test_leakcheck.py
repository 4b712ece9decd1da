"""The leak checks themselves (``tests/leakcheck.py``), run on purpose-made leaky tests in a separate pytest.

The inner run records the pid of every process its tests start; once it is over, none of them may be
alive, and its report must name the ones a test left behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from .conftest import REPO

GRANDPARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
time.sleep(600)
"""
"""A leader that starts a process leading a session of its own (out of the leader's group), then waits."""
DETACH = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
os._exit(0)  # the child is reparented: no longer a child of pytest
"""

INNER = f'''
import os, subprocess, sys, tempfile
from pathlib import Path

PIDS = Path(os.environ["LEAK_PIDS"])


def record(name, pid):
    import psutil
    with PIDS.open("a") as out:  # the start time too: a pid the machine reuses later is not this process
        out.write(f"{{name}} {{pid}} {{psutil.Process(pid).create_time()!r}}\\n")


def test_a_spawned_group_and_what_it_started_end_with_a_failing_test(spawn):
    proc = spawn([sys.executable, "-c", {GRANDPARENT!r}], stdout=subprocess.PIPE, text=True)
    record("leader", proc.pid)
    record("grandchild", int(proc.stdout.readline()))
    assert False, "fails on purpose"


def test_a_bare_popen_left_running_fails_its_test():
    record("bare", subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid)


def test_a_temp_root_left_fails_its_test():
    tempfile.mkdtemp(prefix="mmdrt-left-")


def test_a_detached_process_fails_the_run():
    out = subprocess.run([sys.executable, "-c", {DETACH!r}], capture_output=True, text=True, check=True)
    record("detached", int(out.stdout))
'''


def _alive(pid: int, started: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == started and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_every_process_a_leaky_run_started_is_ended_and_the_leaks_are_named(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("LEAK_PIDS", str(pids))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(test_leaky=INNER)
    result = pytester.runpytest_subprocess("-p", "tests.leakcheck", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           timeout=120)
    rows = [line.split() for line in pids.read_text().splitlines()]
    recorded = {name: pid for name, pid, _ in rows}
    assert set(recorded) == {"leader", "grandchild", "bare", "detached"}, recorded
    assert not [name for name, pid, started in rows if _alive(int(pid), float(started))]
    result.assert_outcomes(passed=3, failed=1, errors=3)
    out = result.stdout.str()
    assert "fails on purpose" in out
    assert f"the test left running (now ended): pid {recorded['bare']}: {sys.executable} -c" in out
    assert f"processes still running at the end of the run (now ended): pid {recorded['detached']}:" in out
    assert "the test left in the run's temp folder (now removed): mmdrt-left-" in out
    assert f"pid {recorded['leader']}:" not in out and f"pid {recorded['grandchild']}:" not in out  # spawn's own


def test_a_clean_run_reports_nothing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(test_clean='''
import subprocess, sys

def test_a_process_waited_for(spawn):
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
    spawn([sys.executable, "-c", "import time; time.sleep(600)"])  # ended by the fixture
''')
    result = pytester.runpytest_subprocess("-p", "tests.leakcheck", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           timeout=120)
    result.assert_outcomes(passed=1)


class _Exec:
    """A process as psutil shows it while it is inside its exec: an empty environment, then its own."""

    def __init__(self, empty_reads: int, parent: int = 1) -> None:
        self.reads, self.empty_reads, self.parent = 0, empty_reads, parent

    def environ(self) -> dict[str, str]:
        self.reads += 1
        return {} if self.reads <= self.empty_reads else {"MMD_TEST_RUN": "mark"}

    def ppid(self) -> int:
        return self.parent


def test_a_process_caught_inside_its_exec_is_read_again_until_it_shows_its_environment() -> None:
    # A loaded run's session-end check read a detached process's environment as it exec'd: empty, so the mark was
    # not there and the process outlived the run (twice in six loaded runs).
    from tests.leakcheck import environ

    caught = _Exec(empty_reads=3)
    assert environ(caught) == {"MMD_TEST_RUN": "mark"} and caught.reads == 4  # type: ignore[arg-type]
    kernel = _Exec(empty_reads=10**6, parent=2)
    assert environ(kernel) == {} and kernel.reads == 1  # type: ignore[arg-type]  # a kernel thread has none
