"""The sessions folder as the daemon watches it: other logs, ignored files, garbage, a missing or recreated
folder, and the session-end nudge of a session that went quiet with its lock released.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
from pathlib import Path

from tests.test_daemon_helpers import Subscriber
from tests.test_ingest_helpers import (
    FIXTURES,
    PAYMENTS,
    SAMPLES_EXPECTED,
    backfilled,
    call,
    candidates,
    copy_samples,
    status,
    user_message,
    wait_until,
)

OTHER_EXPECTED = [
    ("agent-log.jsonl", "summary", "the-flaky-test-was-a-timezone", "the flaky test was a timezone bug.",
     "session-log"),
    ("config.json", "explicit", "the-staging-db-is-reset-nightly", 'the staging DB is reset nightly at 02:00 UTC"',
     "text"),
    ("huge.jsonl", "explicit", "after-the-huge-line", "after the huge line", "session-log"),
    ("notes.md", "explicit", "the-ci-cache-key-includes-the", "the CI cache key includes the lockfile hash.", "text"),
    ("notes.md", "heading", "deploy-window", "Fridays are frozen; deploys resume Monday 09:00 UTC.", "text"),
    ("session.jsonl", "explicit", "a-dsh-name-without-a-dsh", "a DSH name without a DSH header", "session-log"),
]


def _other_folder(sessions: Path, outside: Path) -> None:
    """Other logs as they are, files to ignore, a 20 MB single line and binary garbage."""
    sessions.mkdir(parents=True)
    for name in ("notes.md", "agent-log.jsonl", "config.json"):
        shutil.copyfile(FIXTURES / "other" / name, sessions / name)
    memo = b"MEMO: never ingest this\n"
    for name in ("notes.md~", "notes.md.bak", ".notes.md.swp", ".hidden.md", "session.jsonl.0123456789ab.tmp",
                 "session.lock", "notes.txt"):
        (sessions / name).write_bytes(memo)
    outside.mkdir()
    (outside / "secret.md").write_bytes(memo)
    (sessions / "link.md").symlink_to(outside / "secret.md")
    (sessions / "garbage.jsonl").write_bytes(bytes(range(256)) * 64 + b"\nMEMO: \x00binary\n")
    (sessions / "blob.md").write_bytes(b"\x00\x01MEMO: binary document\n")
    (sessions / "proj").mkdir()
    not_dsh = b'{"type":"note","text":"MEMO: a DSH name without a DSH header"}\n'
    (sessions / "proj" / "session.jsonl").write_bytes(not_dsh)
    with open(sessions / "huge.jsonl", "wb") as f:
        for _ in range(20):
            f.write(b"x" * (1024 * 1024))
        f.write(b'\n{"type":"note","text":"MEMO: after the huge line"}\n')


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_other_logs_are_digested_as_they_are_and_junk_is_ignored_or_skipped(start_daemon, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    _other_folder(sessions, tmp_path / "outside")
    daemon = start_daemon()
    st = backfilled(daemon)
    got = [(Path(c["source"]["file"]).name, c["kind"], c["topic"], c["body"], c["source"]["kind"])
           for c in candidates(daemon)]
    assert sorted(got, key=lambda g: g[0]) == OTHER_EXPECTED  # files newest first; each file's own order kept
    assert all(c["source"]["sessionId"] is None and c["source"]["seq"] is None for c in candidates(daemon))
    ingest = st["ingest"]
    assert ingest["errors"] == 0 and ingest["warnings"] >= 3  # the huge line, the NUL line, the binary document
    assert ingest["filesTracked"] == 7  # the five logs above, garbage.jsonl and blob.md
    assert _peak_rss_mib(daemon.proc.pid) < 120  # the 20 MB line was never held whole
    # later lines of every log keep flowing
    with open(sessions / "garbage.jsonl", "ab") as f:
        f.write(b'{"type":"note","text":"MEMO: garbage logs still flow"}\n')
    wait_until(lambda: any(c["body"] == "garbage logs still flow" for c in candidates(daemon)), what="a new line")


def test_a_missing_folder_is_waited_for_and_a_recreated_one_is_followed_again(start_daemon, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    daemon = start_daemon()
    wait_until(lambda: status(daemon)["ingest"]["phase"] == "waiting", what="the waiting phase")
    assert status(daemon)["ingest"]["folderPresent"] is False
    sessions.mkdir()
    (sessions / "a.md").write_text("MEMO: the folder appeared\n")
    wait_until(lambda: len(candidates(daemon)) == 1, what="the first candidate")
    backfilled(daemon)
    shutil.rmtree(sessions)
    wait_until(lambda: not status(daemon)["ingest"]["folderPresent"], what="the folder to be missed")
    sessions.mkdir()
    (sessions / "a.md").write_text("MEMO: the folder appeared\n")
    (sessions / "b.md").write_text("MEMO: and came back\n")
    wait_until(lambda: len(candidates(daemon)) == 2, what="the recreated folder")
    backfilled(daemon)
    (sessions / "c.md").write_text("MEMO: followed again\n")
    got = wait_until(lambda: (c := candidates(daemon)) and len(c) == 3 and c, what="a change after the return")
    assert [c["body"] for c in got] == ["the folder appeared", "and came back", "followed again"]
    assert status(daemon)["ingest"]["errors"] == 0


async def test_a_quiet_session_with_its_lock_released_earns_one_session_end_nudge(start_daemon,
                                                                                  tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon("--heartbeat-ms", "100", "--session-idle-seconds", "1")
    await asyncio.to_thread(backfilled, daemon)
    log = sessions / PAYMENTS
    lock = os.open(log.parent / "session.lock", os.O_RDWR | os.O_CREAT, 0o644)
    sub = Subscriber(daemon.pub)
    try:
        await sub.ready()
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live DSH writer
        with open(log, "ab") as f:
            f.write(user_message(83, "MEMO: nudges wait for the lock.", "m-live"))
        await sub.wait_for(lambda t, p: t == "queue/added")
        try:
            await sub.wait_for(lambda t, p: t == "memory/nudge", timeout_s=2.0)
            raise AssertionError("a session-end nudge while the session's lock is held")
        except TimeoutError:
            pass
        fcntl.flock(lock, fcntl.LOCK_UN)
        _, nudge = await sub.wait_for(lambda t, p: t == "memory/nudge", timeout_s=5.0)
        assert nudge["reason"] == "session-end" and nudge["sessionId"] == "session-3f9c2a71-5b8e-4d0a-9c61-2e7f4b8d1a05"
        samples = sum(len(v) for v in SAMPLES_EXPECTED.values())  # and the line just appended
        assert nudge["queuePending"] == samples + 1 and nudge["source"] == str(log)
        # the sessions are digested already: the nudge asks for a review, not for mem_digest
        assert not any("mem_digest" in a for a in nudge["suggestedActions"])
        assert f"{samples + 1} candidate memories wait for review: mmctl review" in " ".join(nudge["suggestedActions"])
        # once per quiet spell: the samples that never grew while followed earn none
        try:
            topic, extra = await sub.wait_for(lambda t, p: t == "memory/nudge", timeout_s=1.5)
            raise AssertionError(f"a second nudge: {extra}")
        except TimeoutError:
            pass
        assert (await asyncio.to_thread(call, daemon, "daemon.status"))["ingest"]["sessionsEnded"] == 1
    finally:
        sub.close()
        os.close(lock)
