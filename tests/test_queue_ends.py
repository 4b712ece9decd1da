"""A queue that ends (issue 30), in the real daemon on the 18 shared real sessions (``../shared/real-sessions``).

A fresh user backfilled real Claude Code and Codex sessions: 608 candidates, 129 shown; deciding 82 of them handed
each place to a hidden one, and the list stayed ``100 of 104 pending (375 more hidden)``. Here the backfill shows
the newest sessions' best (at most ``candidates.backfillShown`` rule drafts), every one of them is decided through
``mmctl queue accept|reject``, and the visible queue is then empty and stays so (through a restart) until a new
session arrives.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import shared_path
from tests.test_ingest_helpers import backfilled, call, wait_until
from tests.test_mmctl_daemon import cli
from tests.test_sources_daemon import claude_session


def listed(daemon: Any, *flags: str) -> dict[str, Any]:
    code, out, err = cli(daemon, "queue", "list", "--json", "--limit", "1000", *flags)
    assert code == 0, err
    page: dict[str, Any] = json.loads(out)
    return page


def test_deciding_everything_a_real_backfill_shows_empties_the_queue_until_a_new_session_arrives(
        start_daemon, tmp_path: Path) -> None:
    real = shared_path("real-sessions")
    home = tmp_path / "home"
    shutil.copytree(real / "claude" / "projects", home / ".claude" / "projects")
    shutil.copytree(real / "codex" / "sessions", home / ".codex" / "sessions")
    daemon = start_daemon("--heartbeat-ms", "200")
    backfilled(daemon, timeout_s=300)
    first = listed(daemon)
    shown = first["candidates"]
    everything = listed(daemon, "--status", "all")["total"]
    held = first["leftOut"]["heldBack"]
    drafts = [c for c in shown if not c["pinned"] and c["rule"].split(".")[0] not in ("mm", "extractor")]
    assert 0 < len(drafts) <= 24 < everything and held > 0, (len(shown), everything, first["leftOut"])
    assert first["total"] == len(shown) and first["leftOut"]["expired"] == 0
    assert listed(daemon, "--status", "expired")["total"] == held
    accepted = 0
    for c in shown:  # a person deciding the page, each through mmctl: a few kept, the rest rejected
        if accepted < 3:
            code, out, _ = cli(daemon, "queue", "accept", str(c["id"]), "--topic", f"kept-{accepted + 1}")
            if code == 0:
                accepted += 1
                continue
        code, out, err = cli(daemon, "queue", "reject", str(c["id"]))
        assert code == 0 and out.startswith(f"rejected {c['id']}"), (out, err)
    assert accepted == 3 and out.endswith("the review queue is empty: nothing left on show\n"), out
    after = listed(daemon)
    assert (after["candidates"], after["total"]) == ([], 0)
    assert after["leftOut"]["heldBack"] == held  # what the backfill held back never refilled the view
    code, out, _ = cli(daemon, "queue", "list")
    assert code == 0 and out.startswith("no pending candidate on show: the review queue is empty ("), out
    counts = call(daemon, "daemon.status")["queue"]  # the nudge's "N wait for review" counts the shown alone
    assert counts["shown"] == 0 < counts["pending"], counts
    # it stays empty: the same logs read again after a restart bring nothing back
    daemon.stop()
    daemon = start_daemon("--heartbeat-ms", "200", root=daemon.root)
    backfilled(daemon, timeout_s=300)
    assert listed(daemon)["total"] == 0
    # until a new session arrives
    claude_session(home / ".claude" / "projects", "bbbbbbbb-3333-4444-8555-666666666666",
                   ["From now on, always run the full test suite with make check before you open a pull request."])
    fresh = wait_until(lambda: listed(daemon)["candidates"], timeout_s=30, what="the new session's draft")
    assert [c["source"]["sessionId"] for c in fresh] == ["bbbbbbbb-3333-4444-8555-666666666666"], fresh
