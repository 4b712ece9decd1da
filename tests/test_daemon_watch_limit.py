"""The watchers when the OS refuses native watches (issue 15): with the inotify watch limit at 0 the root
watcher and the ingestion say so, poll instead (so an edit is still seen), and log it once.

The limit is set to 0 inside a user namespace (``unshare -Ur``: the namespace has its own
``/proc/sys/user/max_inotify_watches``), so the machine's global limits are never touched.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_daemon_helpers import Client, DaemonProcess

pytestmark = pytest.mark.timeout(90)

LIMIT_ZERO = 'echo 0 > /proc/sys/user/max_inotify_watches && exec "$@"'


def _namespaces_refused() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    probe = subprocess.run(["unshare", "-Ur", "sh", "-c", LIMIT_ZERO, "sh", "true"], capture_output=True, text=True,
                           check=False)
    return None if probe.returncode == 0 else f"no user namespace with its own inotify limit: {probe.stderr.strip()}"


class LimitedDaemon(DaemonProcess):
    """The real daemon in a user namespace whose inotify watch limit is 0."""

    def start(self, wait: bool = True) -> LimitedDaemon:
        args = [sys.executable, "-m", "mmd.daemon.main", "--root", str(self.root), "--sessions",
                str(self.base / "sessions"), *self.extra]
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(["unshare", "-Ur", "sh", "-c", LIMIT_ZERO, "sh", *args], env=self.env,
                                         stderr=err, stdout=subprocess.DEVNULL)
        if wait:
            self.wait_ready()
        return self


def _status_text(daemon: DaemonProcess) -> str:
    import io

    from mmctl.cli.main import main

    out = io.StringIO()
    assert main(["status", "--root", str(daemon.root)], env=daemon.env, stdout=out, stderr=io.StringIO()) == 0
    return out.getvalue()


async def test_with_no_inotify_watches_both_watchers_report_it_and_poll(tmp_path: Path) -> None:
    refused = _namespaces_refused()
    if refused:
        pytest.skip(refused)
    (tmp_path / "sessions").mkdir()
    daemon = LimitedDaemon(tmp_path, "--heartbeat-ms", "200").start()
    client = Client(daemon.rpc)
    try:
        status = await client.call("daemon.status")
        watcher, ingest = status["watcher"], status["ingest"]
        assert watcher["mode"] == "polling" and "watch limit" in watcher["watchError"], watcher
        assert ingest["mode"] == "polling" and "watch limit" in ingest["watchError"], ingest
        out = _status_text(daemon)
        assert "warning: the watcher polls" in out and "warning: the ingest polls" in out, out
        assert (await client.call("memory.write", {"topic": "edited", "content": "by the daemon"}))["ok"]
        note = daemon.root / "memories" / "edited.md"
        written = note.stat().st_mtime_ns
        note.write_text(note.read_text().replace("by the daemon", "by hand"))
        # a person's edit comes seconds after the daemon's write; this one may come within the same second, and the
        # poller (notify's, under watchfiles) compares modification times in whole seconds: a poll between the two
        # writes would never see it. Its time is set one second on, as the person's would be.
        os.utime(note, ns=(written + 1_000_000_000, written + 1_000_000_000))
        deadline = time.monotonic() + 30
        while (await client.call("memory.read", {"topic": "edited"}))["body"] != "by hand":
            assert time.monotonic() < deadline, "the polling watcher never saw the edit"
            await asyncio.sleep(0.1)
        err = daemon.stderr()
        assert err.count("watcher.native_refused") == 1 and "watcher.failed" not in err, err
        assert err.count("ingest.native_refused") == 1, err
    finally:
        client.close()
        daemon.stop()


def test_a_failing_watch_backs_off_doubling_up_to_a_minute() -> None:
    from mmd.daemon.watching import MAX_RETRY_S, Backoff

    backoff = Backoff()
    pauses = [backoff.next_s() for _ in range(10)]
    assert pauses[:4] == [1.0, 2.0, 4.0, 8.0] and pauses[-1] == MAX_RETRY_S
    assert sum(pauses) > 5 * 60  # ten failures take minutes, not ten seconds
    backoff.reset()
    assert backoff.next_s() == 1.0
