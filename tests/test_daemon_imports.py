"""What a daemon loads to start and serve plain reads and writes, so its start cannot quietly grow again (issue 32).

The suite starts some three hundred daemons, and a user's every login one: each import is paid each time. The
candidate pipeline (:mod:`mmd.candidates`), the git sync and the extractor's runner are loaded where they are
first used — the first session read, the first candidate, ``--git``, ``[candidates] command`` — never by a start
on a fresh root, by a write, a read or a status. The daemon runs as the suite runs it, with Python's import
profile on (``PYTHONPROFILEIMPORTTIME``: one line per module it imported, on its stderr).
"""

from __future__ import annotations

import re
from typing import Any

from tests.test_daemon_helpers import sync_call

LOADED_WHEN_USED = re.compile(r"mmd\.candidates(\..*)?|mmd\.daemon\.(gitsync|gitcommits|gitconflicts|git\..*)|"
                              r"mmd\.daemon\.ingest\.extractor|mmd\.daemon\.web(\..*)?|anyio\.(?!_lazyimport$).*")
"""Modules a start, a write, a read and a status never load (anyio's event-loop layer: the root watcher reads
watchfiles' notifier on a thread of its own; ``import watchfiles`` loads only anyio's lazy importer)."""


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_start_a_write_and_a_read_load_no_candidate_pipeline_git_or_page(start_daemon: Any) -> None:
    daemon = start_daemon("--heartbeat-ms", "200", env={"PYTHONPROFILEIMPORTTIME": "1"})
    written = sync_call(daemon.rpc, "memory.write", {"topic": "alpha", "content": "hello", "summary": "Alpha"})
    assert written["result"]["ok"], written
    assert sync_call(daemon.rpc, "memory.read", {"topic": "alpha"})["result"]["body"] == "hello"
    status = sync_call(daemon.rpc, "daemon.status")["result"]
    assert status["ingest"]["running"] and status["revision"] == 2, status  # ingestion on: its folders watched
    daemon.stop()
    imported = _imported(daemon.stderr())
    assert {"mmd.daemon.lifecycle", "mmd.daemon.ingest.follow", "mmd.daemon.queue", "mmd.sources"} <= imported
    early = sorted(m for m in imported if LOADED_WHEN_USED.fullmatch(m))
    assert early == [], f"loaded by a start, a write and a read: {', '.join(early)}"


SCHEDULER = re.compile(r"apscheduler(\..*)?")


def test_the_scheduler_is_loaded_only_when_its_first_job_is_near(start_daemon: Any) -> None:
    # every job a minute or more away (the heartbeat ten minutes, session expiry and the due check 60 s): a start,
    # a write and a status never load APScheduler (its import scans every installed package's entry points)
    daemon = start_daemon("--heartbeat-ms", "600000", "--session-ttl-ms", "3600000",
                          env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert sync_call(daemon.rpc, "memory.write", {"topic": "alpha", "content": "hello"})["result"]["ok"]
    assert sync_call(daemon.rpc, "daemon.status")["result"]["revision"] == 2
    daemon.stop()
    assert "mmd.daemon.scheduler" in _imported(daemon.stderr())
    assert not any(SCHEDULER.fullmatch(m) for m in _imported(daemon.stderr())), "APScheduler loaded by a start"


async def test_a_job_a_second_away_runs_once_the_scheduler_is_loaded_for_it(start_daemon: Any) -> None:
    from tests.test_daemon_helpers import Subscriber

    daemon = start_daemon("--heartbeat-ms", "1000", "--session-ttl-ms", "3600000",
                          env={"PYTHONPROFILEIMPORTTIME": "1"})
    sub = Subscriber(daemon.pub)
    try:
        _, first = await sub.wait_for(lambda t, p: t == "daemon/heartbeat", timeout_s=10)
        _, second = await sub.wait_for(lambda t, p: t == "daemon/heartbeat", timeout_s=10)
        assert second["seq"] > first["seq"]
    finally:
        sub.close()
    daemon.stop()
    assert any(SCHEDULER.fullmatch(m) for m in _imported(daemon.stderr()))
