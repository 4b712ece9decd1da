"""``scripts/load-test`` (issue 32's load runs), run for real on a small suite of its own: the runs, their logs,
the exit status, and the CPU-bound processes ended whatever the runs did (the leak checks would name one left)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from .conftest import REPO

SUITE = """
import os

def test_passes():
    assert True

def test_fails_when_asked():
    assert not os.environ.get("LOAD_SCRIPT_FAIL"), "fails on purpose"
"""


def _load_test(tmp_path: Path, *, fail: bool) -> tuple[subprocess.CompletedProcess[str], Path]:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "test_small.py").write_text(SUITE)
    (suite / "pytest.ini").write_text("[pytest]\n")  # its own configuration: not this repository's options
    logs = tmp_path / ("logs-fail" if fail else "logs")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **({"LOAD_SCRIPT_FAIL": "1"} if fail else {})}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "load-test"), "--runs", "1" if fail else "2",
                           "--burners", "2", "--max-minutes", "2", "--log-dir", str(logs), "--",
                           "-p", "no:cacheprovider", str(suite)],
                          capture_output=True, text=True, timeout=300, env={**_inherited(), **env})
    return done, logs


def _inherited() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("MMD_TEST_RUN", "TMPDIR", "LANG")}


def _burner_pids(out: str) -> list[int]:
    line = next(line for line in out.splitlines() if line.startswith("load: 2 CPU-bound"))
    return [int(pid) for pid in line.split("pids ")[1].split()]


def test_two_loaded_runs_pass_their_logs_are_kept_and_the_load_ends(tmp_path: Path) -> None:
    done, logs = _load_test(tmp_path, fail=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"load: each run's output in {logs}" in done.stdout
    for n in (1, 2):
        assert f"run {n}: exit 0 in " in done.stdout and "2 passed" in (logs / f"run-{n}.log").read_text()
    assert done.stdout.rstrip().endswith("load: stopped")
    assert not [pid for pid in _burner_pids(done.stdout) if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


def test_a_failing_run_exits_1_naming_the_test_and_keeping_its_traceback(tmp_path: Path) -> None:
    done, logs = _load_test(tmp_path, fail=True)
    assert done.returncode == 1
    assert "run 1: exit 1 in " in done.stdout and "1 failed, 1 passed" in done.stdout
    failed = [line for line in done.stdout.splitlines() if line.startswith("  FAILED ")]
    assert len(failed) == 1 and "suite/test_small.py::test_fails_when_asked" in failed[0], done.stdout
    assert "fails on purpose" in (logs / "run-1.log").read_text()
    assert not [pid for pid in _burner_pids(done.stdout) if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
