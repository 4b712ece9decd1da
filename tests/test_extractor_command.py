"""The extractor command's runner: time limit, output cap, and nothing it started outlives the run, a detached
(``setsid``) grandchild included, whether the run ends, times out or is stopped.

Real processes (a shell script that starts a helper in the background), real signals.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from mmd.daemon.ingest.extractor import ExtractorFailed, ExtractorStopped, run_command

pytestmark = pytest.mark.timeout(60)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (killed, waiting for init to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(") ", 1)[1][0] != "Z"


def _pid_from(path: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} never got a pid")


def _gone(pid: int, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    return not _alive(pid)


def test_a_command_that_runs_out_of_time_is_killed_with_what_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "helper.pid"
    script = f"sleep 300 & echo $! > {pidfile}; sleep 300"
    with pytest.raises(ExtractorFailed, match="timed out after 1 s"):
        run_command(["sh", "-c", script], b"{}", 1.0, 1 << 20)
    assert _gone(_pid_from(pidfile))


@pytest.mark.parametrize("waitid", [True, False], ids=["waitid", "no-waitid (macOS)"])
def test_a_command_that_exits_is_read_at_once_though_a_helper_still_holds_its_stdout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, waitid: bool) -> None:
    if not waitid:
        monkeypatch.delattr(os, "waitid", raising=False)
    pidfile = tmp_path / "helper.pid"
    script = f'sleep 300 & echo $! > {pidfile}; cat > /dev/null; echo \'{{"candidates": []}}\''
    # held up by the helper's open stdout, the run would end "timed out after 30 s" (the helper sleeps 300)
    out = run_command(["sh", "-c", script], b'{"version": 1}', 30.0, 1 << 20)
    assert out.strip() == b'{"candidates": []}'
    assert _gone(_pid_from(pidfile))


def test_stdout_past_the_cap_is_refused_and_the_command_stopped() -> None:
    with pytest.raises(ExtractorFailed, match="printed more than 1000 bytes"):
        run_command([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 4096)"], b"", 30.0, 1000)


def test_a_failing_command_reports_its_status_and_the_last_line_of_stderr() -> None:
    script = "import sys; sys.stdin.read(); print('one', file=sys.stderr); print('boom', file=sys.stderr); exit(3)"
    with pytest.raises(ExtractorFailed, match="^exit status 3: boom$"):
        run_command([sys.executable, "-c", script], b"x" * 1_000_000, 30.0, 1 << 20)
    with pytest.raises(ExtractorFailed, match="^cannot run /no/such/extractor: "):
        run_command(["/no/such/extractor"], b"", 30.0, 1 << 20)


needs_setsid = pytest.mark.skipif(shutil.which("setsid") is None or not sys.platform.startswith("linux"),
                                  reason="setsid(1) and a child subreaper (Linux) are needed")


def _detached(pidfile: Path, then: str) -> list[str]:
    """A command that starts ``setsid sleep 300`` (its own session: out of the command's group), then runs ``then``."""
    return ["sh", "-c", f"setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}; {then}"]


@needs_setsid
def test_a_detached_grandchild_is_gone_within_a_second_of_the_runs_end(tmp_path: Path) -> None:
    pidfile = tmp_path / "detached.pid"
    out = run_command(_detached(pidfile, 'sleep 0.2; echo \'{"candidates": []}\''), b"{}", 30.0, 1 << 20)
    ended = time.monotonic()
    assert out.strip() == b'{"candidates": []}'
    pid = _pid_from(pidfile)
    assert _gone(pid, within_s=1.0), f"setsid sleep 300 (pid {pid}) outlived its run"
    assert time.monotonic() - ended < 5  # a hang guard: the wait above bounds it


@needs_setsid
def test_a_detached_grandchild_is_ended_when_the_run_times_out_or_is_stopped(tmp_path: Path) -> None:
    timed = tmp_path / "timed.pid"
    with pytest.raises(ExtractorFailed, match="timed out after 1 s"):
        run_command(_detached(timed, "sleep 300"), b"{}", 1.0, 1 << 20)
    assert _gone(_pid_from(timed), within_s=1.0)

    stopped = tmp_path / "stopped.pid"
    stop = threading.Event()
    threading.Thread(target=lambda: (_pid_from(stopped), stop.set()), daemon=True).start()
    with pytest.raises(ExtractorStopped):
        run_command(_detached(stopped, "sleep 300"), b"{}", 60.0, 1 << 20, stop)
    assert _gone(_pid_from(stopped), within_s=1.0)


@needs_setsid
def test_a_detached_grandchild_is_ended_when_its_daemon_is_killed(tmp_path: Path) -> None:
    # the daemon's stand-in is killed with SIGKILL: the supervisor's PR_SET_PDEATHSIG still ends the run
    pidfile = tmp_path / "orphan.pid"
    script = ("import sys\nfrom mmd.daemon.ingest.extractor import run_command\n"
              f"run_command({_detached(pidfile, 'sleep 300')!r}, b'{{}}', 300.0, 1 << 20)\n")
    import subprocess

    parent = subprocess.Popen([sys.executable, "-c", script])
    pid = _pid_from(pidfile)
    parent.kill()
    parent.wait()
    assert _gone(pid, within_s=2.0)


@needs_setsid
def test_a_real_daemon_ends_its_extractors_detached_grandchild_at_shutdown(start_daemon, tmp_path: Path) -> None:
    import json

    from tests.test_ingest_helpers import backfilled
    from tests.test_queue_candidates import session_log

    sessions, pidfile = tmp_path / "sessions", tmp_path / "grandchild.pid"
    sessions.mkdir()
    config = tmp_path / "mmd.toml"
    config.write_text(f"[candidates]\ncommand = {json.dumps(_detached(pidfile, 'sleep 300'))}\ntimeoutMs = 300000\n",
                      encoding="utf-8")
    daemon = start_daemon("--sessions", str(sessions), "--config", str(config), "--session-idle-seconds", "1")
    backfilled(daemon)
    session_log(sessions, "--home-test-shop--", "s-long", [("m-1", "fact: the build box has 64 GB of RAM")])
    pid = _pid_from(pidfile)  # the run is under way, its grandchild detached
    assert _alive(pid)
    import signal

    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    assert _gone(pid, within_s=1.0), f"the extractor's setsid grandchild (pid {pid}) outlived the daemon"
    assert "extractor.stopped" in daemon.stderr()
