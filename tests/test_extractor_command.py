"""The extractor command's runner: time limit, output cap, and nothing it started outlives the run.

Real processes (a shell script that starts a helper in the background), real signals.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from mmd.daemon.ingest.extractor import ExtractorFailed, run_command

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


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
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
