"""The root's life under the daemon (issue 15): a root removed or replaced while the daemon runs is never
written again nor recreated, and a second daemon never serves beside the first.

Real daemon in a subprocess, real files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .test_daemon_helpers import Client, RpcFailure

pytestmark = pytest.mark.timeout(90)


def _replace_at_once(root: Path, aside: Path) -> None:
    """Put an empty folder where ``root`` is, ``root`` itself going to ``aside``, in one atomic exchange where the
    OS has one (a rename then a mkdir leaves a moment with no root, which the daemon may see as a removal)."""
    from mmd.core.userfile import _exchange

    aside.mkdir()
    fd = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        swapped = _exchange(fd, root.name, os.path.relpath(aside, root.parent))
    finally:
        os.close(fd)
    if not swapped:
        pytest.skip("no atomic exchange of names here (renameat2, renameatx_np)")


@pytest.mark.parametrize("how", ["removed", "replaced"])
async def test_a_root_removed_or_replaced_under_the_daemon_refuses_writes_and_is_never_recreated(
        start_daemon, tmp_path: Path, how: str) -> None:  # type: ignore[no-untyped-def]
    first = start_daemon()
    client = Client(first.rpc)
    try:
        assert (await client.call("memory.write", {"topic": "kept", "content": "before"}))["ok"]
        if how == "removed":  # at once: a note deleted before its root is an outside edit a loaded daemon may read
            first.root.rename(tmp_path / "removing")
            shutil.rmtree(tmp_path / "removing")
        else:
            _replace_at_once(first.root, tmp_path / "moved-away")
        for method, params in (("memory.write", {"topic": "after", "content": "lost?"}),
                               ("memory.delete", {"topic": "kept"})):
            with pytest.raises(RpcFailure) as refused:
                await client.call(method, params)
            assert refused.value.code == "E_UNAVAILABLE"
            assert how in refused.value.error["message"] and "restart" in refused.value.error["message"]
        status = await client.call("daemon.status")
        assert how in status["rootLost"]
        from mmctl.cli.status import status_warnings  # (``mmctl status`` refuses a root without MEMORY.md)

        assert any(w.startswith("writes are refused") for w in status_warnings(status))
        assert (await client.call("memory.read", {"topic": "kept"}))["body"] == "before"  # reads go on
        if how == "removed":
            assert not first.root.exists()  # never recreated
        else:
            assert list(first.root.iterdir()) == []  # nothing written into the stranger
        assert "daemon.root_lost" in first.stderr()
        # a second daemon on the same root and endpoints refuses while the first one lives
        second = start_daemon(env={"XDG_RUNTIME_DIR": str(first.runtime)}, wait=False)
        assert second.wait(30) == 3
        assert f"pid {first.proc.pid}" in second.stderr(), second.stderr()
        assert (await client.call("daemon.status"))["pid"] == first.proc.pid
    finally:
        client.close()


def _mmctl_out(daemon, *argv: str) -> str:  # type: ignore[no-untyped-def]
    """What ``mmctl *argv --root ROOT`` prints on stdout (in-process, the daemon's environment)."""
    import io

    from mmctl.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--root", str(daemon.root)], env=daemon.env, stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue()


def _mmctl(daemon, *argv: str) -> int:  # type: ignore[no-untyped-def]
    """``mmctl *argv --root ROOT`` in-process, in the daemon's environment (direct mode when it is stopped)."""
    import io

    from mmctl.cli.main import main

    return main([*argv, "--root", str(daemon.root)], env=daemon.env, stdout=io.StringIO(), stderr=io.StringIO())


async def test_revisions_grow_across_restarts_and_direct_writes_so_a_stale_if_revision_never_passes(
        start_daemon) -> None:  # type: ignore[no-untyped-def]
    from mmd.core.revision_mark import read_mark

    first = start_daemon()
    client = Client(first.rpc)
    try:
        seen = (await client.call("memory.write", {"topic": "shared", "content": "mine"}))["revision"]
    finally:
        client.close()
    first.stop()
    mark = read_mark(first.root)
    assert mark >= seen
    assert _mmctl(first, "write", "direct", "--content", "written without a daemon") == 0
    assert read_mark(first.root) == mark + 1  # a direct-mode write advances the mark under the lock
    second = start_daemon()
    client = Client(second.rpc)
    try:
        status = await client.call("daemon.status")
        assert status["revision"] > mark + 1
        # someone else writes once after the restart: on a daemon counting from 1 again, this
        # would make ``seen`` current again and the stale write below would pass
        other = await client.call("memory.write", {"topic": "shared", "content": "theirs"})
        assert other["revision"] > seen
        with pytest.raises(RpcFailure) as stale:
            await client.call("memory.write", {"topic": "shared", "content": "mine again", "ifRevision": seen})
        assert stale.value.code == "E_CONFLICT"
        assert (await client.call("memory.read", {"topic": "shared"}))["body"] == "theirs"
    finally:
        client.close()


async def test_at_start_dead_writers_temp_files_go_and_paths_others_can_write_are_reported(
        start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    root = tmp_path / "root"
    (root / "memories").mkdir(parents=True)
    crashed = root / "memories" / f".alpha.md.{dead_pid}.1.abcd.tmp"
    crashed.write_text("half a note")
    live = root / "memories" / f".beta.md.{os.getpid()}.2.beef.tmp"
    live.write_text("a live writer's")
    root.chmod(0o777)
    daemon = start_daemon(root=root)
    assert not crashed.exists() and live.exists()
    assert "daemon.removed_stale_temp_files" in daemon.stderr()
    assert "daemon.loose_modes" in daemon.stderr()
    client = Client(daemon.rpc)
    try:
        assert (await client.call("memory.write", {"topic": "open", "content": "x"}))["ok"]
        (root / "memories" / "open.md").chmod(0o666)
        loose = (await client.call("daemon.status"))["looseModes"]
        assert {(m["path"], m["writable_by"]) for m in loose} == {(".", "group+world"),
                                                                  ("memories/open.md", "group+world")}
        out = _mmctl_out(daemon, "status")
        assert "warning: others can write this memory" in out and "memories/open.md (0o666)" in out
        root.chmod(0o700)
        (root / "memories" / "open.md").chmod(0o600)
        assert (await client.call("daemon.status"))["looseModes"] == []
    finally:
        client.close()


def test_a_nudge_missed_while_down_fires_once_after_start_and_a_restart_keeps_the_due_time(
        start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json
    import time

    hour_ms = 3_600_000
    root = tmp_path / "root"
    (root / ".mmd").mkdir(parents=True)
    schedule = root / ".mmd" / "schedule.json"
    schedule.write_text(json.dumps({"nudge": time.time_ns() // 1_000_000 - 5 * hour_ms}))  # missed 5 times
    daemon = start_daemon("--nudge-interval-ms", str(hour_ms), root=root)
    deadline = time.monotonic() + 30
    # the nudge is logged before its next due time is saved: wait for the save's own line (reading the file at
    # the nudge's line raced the save, and read the start's due time under load)
    while "scheduler.next job=nudge" not in daemon.stderr():
        assert time.monotonic() < deadline, "the missed nudge never fired"
        time.sleep(0.05)
    assert "memory.nudge reason=schedule" in daemon.stderr()
    due = json.loads(schedule.read_text())["nudge"]
    assert f"scheduler.next job=nudge due_ms={due}" in daemon.stderr()
    assert due > time.time_ns() // 1_000_000 + hour_ms // 2  # the next one is an hour on
    time.sleep(0.5)
    assert daemon.stderr().count("memory.nudge reason=schedule") == 1  # coalesced: once, not five times
    daemon.stop()
    again = start_daemon("--nudge-interval-ms", str(hour_ms), root=root)
    assert json.loads(schedule.read_text())["nudge"] == due  # a restart neither resets nor stretches it
    assert "memory.nudge" not in again.stderr()
