"""The main job end to end: mmd on real session logs, reviewed with mmctl, stopped cleanly.

Steps:
1. copy ../shared/sessions into a temp ``$DSH_HOME`` and start ``mmd`` with no root or sessions flag;
2. wait for the backfill; ``mmctl queue list --json`` shows exactly the expected candidates;
3. subscribe to events; append a prompt to a live log and see ``queue/added``;
4. ``mmctl queue accept`` one candidate, see ``memory/changed``, read it back with ``mmctl read``;
5. see a scheduled ``memory/nudge``;
6. SIGTERM: exit 0, sockets gone, the note and the queue's decisions still there after a restart.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from mmd.core import Memory, MemoryOptions

from .test_daemon_helpers import Subscriber
from .test_ingest_helpers import (
    PAYMENTS,
    backfilled,
    candidates,
    comparable,
    copy_samples,
    expected_in_scan_order,
    user_message,
)


def mmctl(daemon: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """``mmctl`` as a user runs it: no --root, the daemon found from $DSH_HOME and $XDG_RUNTIME_DIR."""
    return subprocess.run([sys.executable, "-m", "mmctl", *args], capture_output=True, text=True,
                          env=daemon.env, timeout=60)


async def test_mmd_digests_real_logs_into_a_queue_that_mmctl_reviews(start_daemon: Any, tmp_path: Path) -> None:
    copy_samples(tmp_path / "dsh" / "sessions")
    daemon = start_daemon("--heartbeat-ms", "200", "--nudge-interval-ms", "700", bare=True)
    assert daemon.root == tmp_path / "dsh" / "memory"
    backfilled(daemon, timeout_s=30)

    listed = mmctl(daemon, "queue", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    queue = json.loads(listed.stdout)["candidates"]
    # the visible ones, highest score first (ties in scan order); the rest are hidden, still pending
    expected = expected_in_scan_order(tmp_path / "dsh" / "sessions")
    visible = sorted((c for c in expected if c["visible"]), key=lambda c: -c["score"])
    assert [comparable(c) for c in queue] == visible
    pending = len(expected)

    events = Subscriber(daemon.pub)
    try:
        await events.ready()
        log = tmp_path / "dsh" / "sessions" / PAYMENTS
        last_seq = sum(1 for _ in log.open("rb")) - 1
        with log.open("ab") as f:
            f.write(user_message(last_seq + 1, "REMEMBER: the e2e test appended this line", "e2e-msg"))
        _, added = await events.wait_for(lambda t, p: t == "queue/added", timeout_s=15)
        fresh = [c for c in candidates(daemon) if c["id"] in added["ids"]]
        assert [c["body"] for c in fresh] == ["the e2e test appended this line"]

        chosen = next(c for c in queue if c["kind"] == "uri")
        accepted = mmctl(daemon, "queue", "accept", str(chosen["id"]), "--json")
        assert accepted.returncode == 0, accepted.stderr
        assert json.loads(accepted.stdout)["ok"] is True
        _, changed = await events.wait_for(lambda t, p: t == "memory/changed", timeout_s=10)
        assert changed["cause"] == "write" and [i["topic"] for i in changed["added"]] == [chosen["topic"]]
        where = [] if chosen["scope"] == "user" else ["--project", chosen["scope"]]  # its project's root (issue 27)
        read = mmctl(daemon, "read", chosen["topic"], "--json", *where)
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout)["body"] == chosen["body"]

        # The accept's memory/changed goes out before the queue counts move; a nudge in between still
        # says one more, so wait for the first scheduled nudge that counts one accepted and one added.
        _, nudge = await events.wait_for(lambda t, p: t == "memory/nudge" and p["queuePending"] == pending,
                                         timeout_s=10)
        assert nudge["reason"] == "schedule"
    finally:
        events.close()

    daemon.signal(signal.SIGTERM)
    assert daemon.wait(timeout_s=15) == 0, daemon.stderr()
    assert not os.path.exists(daemon.rpc[len("ipc://"):]) and not os.path.exists(daemon.pub[len("ipc://"):])
    root = daemon.root if chosen["scope"] == "user" else daemon.root / "projects" / chosen["scope"]
    memory = Memory.open(MemoryOptions.create(root=root, env={}), fts5=False)
    note = memory.read_topic(chosen["topic"])
    assert note is not None and note.body == chosen["body"]

    again = start_daemon(bare=True)
    backfilled(again, timeout_s=30)
    statuses = {c["id"]: c["status"] for c in candidates(again)}
    assert statuses[chosen["id"]] == "accepted"
    assert sum(1 for s in statuses.values() if s == "pending") == pending
