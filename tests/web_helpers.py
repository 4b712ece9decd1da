"""Helpers for the review page's tests: a real daemon with ``--http`` over a queue filled from our own fixtures.

The fixture logs (``tests/fixtures/web/sessions``) hold ten ``mm:`` prompts in two
projects; ``big-notes`` (361 code points) goes over budget once :func:`tighten_budget` lowered the
default write budget to 100 (a SIGHUP reload), the others stay within it. ``tests/fixtures/web/dense``
holds one session of seventeen marked statements as long as real ones (120–480 code points, inline
markdown, one with a ``javascript:`` link and a ``<script>`` tag): :data:`DENSE`.
This module holds no tests of its own.
"""

from __future__ import annotations

import http.client
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.test_daemon_helpers import DaemonProcess
from tests.test_ingest_helpers import backfilled, call, candidates, wait_until

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "web" / "sessions"
DENSE = Path(__file__).resolve().parent / "fixtures" / "web" / "dense"
DENSE_COUNT = 18
"""Candidates the dense fixture makes."""
EXPECTED_TOPICS = {"deploy-region", "test-command", "db-migrations", "code-style", "release-day", "big-notes",
                   "api-auth", "api-errors", "api-paging", "api-rate"}


def start_web_daemon(start_daemon: Any, tmp_path: Path, *extra: str, fixture: Path = FIXTURE,
                     expected: int = len(EXPECTED_TOPICS)) -> tuple[DaemonProcess, str]:
    """A daemon on a copy of the fixture logs with ``--http 127.0.0.1:0``: ``(daemon, token url)``, once its
    ``expected`` candidates are in the queue."""
    shutil.copytree(fixture, tmp_path / "sessions")
    daemon = start_daemon("--http", "127.0.0.1:0", *extra)
    backfilled(daemon)
    wait_until(lambda: len(candidates(daemon, "pending")) == expected, what="the fixture candidates")
    url = call(daemon, "daemon.status")["http"]["url"]
    return daemon, str(url)


def append_proposal(daemon: DaemonProcess, sessions: Path, session_id: str) -> dict[str, Any]:
    """The candidate proposing to append to the note ``deploy`` (written first, as "how staging deploys work"),
    made by a new session ``session_id`` of the shop project saying a REMEMBER about staging deploys."""
    from tests.test_ingest_helpers import user_message

    assert call(daemon, "memory.write", {"topic": "deploy", "content": "Staging deploys go through the bastion.",
                                         "tags": "staging", "summary": "how staging deploys work"})["ok"]
    folder = sessions / "--home-dev-shop--" / session_id
    folder.mkdir()
    header = (f'{{"type":"session","version":4,"id":"{session_id}","createdAt":1790787873424,"isSeeded":false,'
              '"delegationDepth":0}\n').encode()
    (folder / "session.v4.jsonl").write_bytes(
        header + user_message(1, "REMEMBER: staging deploys need the VPN token from the team vault.", "m1"))
    return dict(wait_until(lambda: next((c for c in candidates(daemon, "pending")
                                         if c.get("proposal", {}).get("action") == "append"), None),
                           what="the append proposal"))


def tighten_budget(daemon: DaemonProcess, budget: int = 100) -> None:
    """Lower the default write budget through the config file and a SIGHUP; returns once reloaded."""
    import signal

    folder = daemon.base / "xdg-config" / "mmd"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(f"defaultWriteBudget = {budget}\n")
    before = daemon.stderr().count("config.reloaded")
    daemon.signal(signal.SIGHUP)
    wait_until(lambda: daemon.stderr().count("config.reloaded") > before, what="the config reload")


def by_topic(daemon: DaemonProcess) -> dict[str, dict[str, Any]]:
    """Every candidate by its topic."""
    return {c["topic"]: c for c in candidates(daemon)}


def queue_rows(daemon: DaemonProcess) -> dict[str, tuple[str, str | None, str | None]]:
    """``{topic: (status, reason, written topic)}`` straight from ``.mmd/state.db``."""
    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    try:
        return {r[0]: (r[1], r[2], r[3]) for r in
                db.execute("SELECT topic, status, reason, written_topic FROM candidates")}
    finally:
        db.close()


def note_files(daemon: DaemonProcess) -> dict[str, str]:
    """``{file name: text}`` of the detail files of every root of the daemon's home (the user root's and its
    project roots': a candidate is written to the root of the project it was said in, issue 27)."""
    found = [*daemon.root.glob("memories/*.md"), *daemon.root.glob("projects/*/memories/*.md")]
    return {p.name: p.read_text() for p in sorted(found)}


def request(url: str, path: str, *, method: str = "GET", host: str | None = None, origin: str | None = None,
            cookie: str | None = None, body: str | None = None) -> tuple[int, dict[str, str], str]:
    """One raw HTTP request to the page's server: ``(status, headers, body text)``."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=10)
    headers = {"Host": host or parts.netloc}
    if origin is not None:
        headers["Origin"] = origin
    if cookie is not None:
        headers["Cookie"] = cookie
    if body is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read().decode()
    finally:
        conn.close()
