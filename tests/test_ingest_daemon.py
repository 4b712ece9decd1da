"""Session-log ingestion in the real daemon: the samples' exact candidates, restarts, appends, zstd, torn tails.

Each test runs ``mmd`` on a temp copy of ``../shared/sessions`` (skipped visibly without it) and reads the
queue over RPC. The expected candidates are written out in ``tests/fixtures/ingest/samples_expected.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.test_daemon_helpers import Subscriber
from tests.test_ingest_helpers import (
    DECOYS,
    INFRA,
    LEGACY,
    PAYMENTS,
    SAMPLES_EXPECTED,
    SEEDED,
    backfilled,
    call,
    candidates,
    comparable,
    copy_samples,
    dsh_line,
    expected_in_scan_order,
    user_message,
    wait_until,
    zstd_frames,
)

SAMPLE_CANDIDATES = sum(len(v) for v in SAMPLES_EXPECTED.values())
"""Candidates the samples yield: 19 (issue 13 took out the compaction headings, the narration, the duplicates)."""


def test_the_samples_fill_the_queue_with_exactly_the_expected_candidates(start_daemon, tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon("--heartbeat-ms", "200")
    st = backfilled(daemon)
    got = candidates(daemon)
    assert [comparable(c) for c in got] == expected_in_scan_order(sessions)
    # per sample, decoys included: injected context, reasoning, tools, system prompts and inherited turns never count
    for name, expected in SAMPLES_EXPECTED.items():
        mine = [comparable(c) for c in got if c["source"]["file"] == str(sessions / name)]
        assert mine == expected, name
    assert SAMPLES_EXPECTED[SEEDED] == [] and SAMPLES_EXPECTED[LEGACY] == []
    for decoy in DECOYS:
        assert not [c["id"] for c in got if decoy in c["body"] or decoy in c["summary"]], decoy
    assert all(c["status"] == "pending" and c["createdAt"].endswith("Z") for c in got)
    sizes = sum(f.stat().st_size for f in sessions.rglob("*.jsonl"))
    assert st["queue"].pop("shown") == call(daemon, "queue.list", {"limit": 1})["total"]  # the default view's
    assert st["queue"] == {"pending": SAMPLE_CANDIDATES, "accepted": 0, "rejected": 0, "expired": 0,
                           "total": SAMPLE_CANDIDATES}
    ingest = st["ingest"]
    assert ingest["filesTracked"] == 4 and ingest["bytesRead"] == sizes and ingest["errors"] == 0
    assert ingest["backfill"] == {**ingest["backfill"], "files": 4, "bytes": sizes, "candidates": SAMPLE_CANDIDATES}
    assert ingest["sessionsDir"] == str(sessions) and ingest["folderPresent"]
    assert (daemon.root / ".mmd" / "state.db").is_file()
    assert "ingest.backfill_done files=4" in daemon.stderr()


def test_a_restart_resumes_from_the_cursors_without_reading_or_queueing_again(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    first = candidates(daemon)
    daemon.stop()
    daemon.start()
    st = backfilled(daemon)
    assert st["ingest"]["bytesRead"] == 0 and st["ingest"]["backfill"]["candidates"] == 0
    assert candidates(daemon) == first


async def test_appended_lines_reach_the_queue_and_a_torn_tail_waits_for_its_newline(start_daemon,
                                                                                   tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon("--heartbeat-ms", "100", "--nudge-interval-ms", "300")
    await asyncio.to_thread(backfilled, daemon)
    sub = Subscriber(daemon.pub)
    try:
        await sub.ready()
        log = sessions / PAYMENTS
        line = user_message(83, "REMEMBER: rotate the Stripe webhook secret every 90 days.", "m-append")
        with open(log, "ab") as f:
            f.write(line[:40])  # a torn tail: no newline yet
        await asyncio.sleep(0.5)
        assert len(await asyncio.to_thread(candidates, daemon)) == SAMPLE_CANDIDATES
        with open(log, "ab") as f:
            f.write(line[40:])
        _, event = await sub.wait_for(lambda t, p: t == "queue/added")
        assert event["sessionId"] == "session-3f9c2a71-5b8e-4d0a-9c61-2e7f4b8d1a05" and event["source"] == str(log)
        (new,) = [call(daemon, "queue.get", {"id": i}) for i in event["ids"]]
        assert (new["kind"], new["topic"], new["body"]) == ("explicit", "rotate-stripe-webhook-secret",
                                                            "rotate the Stripe webhook secret every 90 days.")
        assert new["source"] == {"sessionId": event["sessionId"], "file": str(log), "seq": 83,
                                 "messageId": "m-append", "kind": "user"}
        _, beat = await sub.wait_for(lambda t, p: t == "daemon/heartbeat")
        assert beat["queuePending"] == SAMPLE_CANDIDATES + 1
        _, nudge = await sub.wait_for(lambda t, p: t == "memory/nudge" and p["reason"] == "schedule")
        assert nudge["queuePending"] == SAMPLE_CANDIDATES + 1
    finally:
        sub.close()


def test_zstd_logs_give_the_same_candidates_and_a_cut_last_frame_gives_the_prefix(start_daemon,
                                                                                    tmp_path: Path) -> None:
    plain = copy_samples(tmp_path / "plain")
    sessions = tmp_path / "sessions"
    full_infra = b""
    cut_seq = None
    for log in sorted(plain.rglob("session*.jsonl")):
        lines = log.read_bytes().splitlines(keepends=True)
        frames = zstd_frames(lines, per_frame=3)
        target = sessions / log.relative_to(plain).with_name(log.name + ".zstd")
        target.parent.mkdir(parents=True, exist_ok=True)
        data = b"".join(frames)
        if log.name == "session.jsonl":  # infra: cut its last frame in half (a torn tail)
            full_infra = data
            data = data[:len(data) - len(frames[-1]) // 2]
            last = [json.loads(line) for line in lines[1 + 3 * ((len(lines) - 2) // 3):]]
            cut_seq = min(e.get("seq", e.get("seq0", 10**9)) for e in last)
        target.write_bytes(data)
    assert cut_seq is not None
    daemon = start_daemon()
    backfilled(daemon)
    got = [comparable(c) for c in candidates(daemon)]
    names = sorted(SAMPLES_EXPECTED, key=lambda n: (-(sessions / (n + ".zstd")).stat().st_mtime_ns,
                                                    str(sessions / (n + ".zstd"))))  # backfill: newest first
    prefix = [c for c in SAMPLES_EXPECTED[INFRA] if c["source"]["seq"] < cut_seq]
    assert 0 < len(prefix) < len(SAMPLES_EXPECTED[INFRA])
    assert got == [c for n in names for c in (prefix if n == INFRA else SAMPLES_EXPECTED[n])]
    # the writer finishes the frame: the rest arrives, nothing repeats
    infra = sessions / (INFRA + ".zstd")
    with open(infra, "ab") as f:
        f.write(full_infra[infra.stat().st_size:])
    wait_until(lambda: len(candidates(daemon)) == SAMPLE_CANDIDATES, what="the rest of the zstd log")
    got_all = sorted(map(str, (comparable(c) for c in candidates(daemon))))
    assert got_all == sorted(map(str, expected_in_scan_order(plain)))


def test_a_new_generation_or_a_rewritten_log_is_read_again_without_duplicates(start_daemon, tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    v4 = sessions / PAYMENTS
    data = v4.read_bytes()
    # a migration publishes session.v5.jsonl beside v4: the same events plus one more
    v5 = v4.with_name("session.v5.jsonl")
    v5.write_bytes(data + user_message(83, "MEMO: migrations keep the event seqs.", "m-v5"))
    got = wait_until(lambda: (c := candidates(daemon)) and len(c) == SAMPLE_CANDIDATES + 1 and c,
                     what="the v5 candidate")
    assert got[-1]["body"] == "migrations keep the event seqs." and got[-1]["source"]["file"] == str(v5)
    # a truncate-repair: the log shrinks, then grows again with the same events; then it is replaced (new inode)
    infra = sessions / INFRA
    whole = infra.read_bytes()
    cut = whole.rfind(b"\n", 0, len(whole) // 2) + 1
    base = call(daemon, "daemon.status")["ingest"]["bytesRead"]

    def read_since() -> int:
        return int(call(daemon, "daemon.status")["ingest"]["bytesRead"]) - base

    infra.write_bytes(whole[:cut])
    wait_until(lambda: read_since() >= cut, what="the shrunk log read again")
    infra.write_bytes(whole)
    wait_until(lambda: read_since() >= len(whole), what="the repaired log")
    tmp = infra.with_name("copy.bin")
    tmp.write_bytes(whole)
    os.replace(tmp, infra)
    wait_until(lambda: read_since() >= len(whole) + len(whole), what="the replaced log")
    assert len(candidates(daemon)) == SAMPLE_CANDIDATES + 1
    st = call(daemon, "daemon.status")
    assert st["ingest"]["filesTracked"] == 4 and st["queue"]["total"] == SAMPLE_CANDIDATES + 1


def test_a_fork_skips_its_inherited_prefix_in_every_format_version(start_daemon, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    fork = sessions / "--home-dev-x--" / "session-fork"
    fork.mkdir(parents=True)
    header = {"type": "session", "version": 4, "id": "session-fork", "createdAt": 1, "cwd": "/home/dev/x",
              "parentSession": "session-parent", "isSeeded": True, "delegationDepth": 0}
    (fork / "session.v4.jsonl").write_bytes(b"".join([
        (json.dumps(header) + "\n").encode(),
        user_message(0, "MEMO: the parent said this", "p-1"),
        dsh_line(1, "session/end-seed", {"inherited": True}),
        user_message(2, "MEMO: the fork said this", "f-1"),
    ]))
    old = sessions / "_no-cwd" / "legacy-fork"
    old.mkdir(parents=True)
    header0 = {"type": "session", "version": 0, "id": "legacy-fork", "createdAt": 1, "seedLength": 2}
    (old / "session.jsonl").write_bytes(b"".join([
        (json.dumps(header0) + "\n").encode(),
        user_message(0, "MEMO: inherited in v0", "l-0"),
        dsh_line(1, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        user_message(2, "MEMO: the v0 fork's own", "l-2"),
    ]))
    daemon = start_daemon()
    backfilled(daemon)
    got = [(c["source"]["sessionId"], c["source"]["seq"], c["body"]) for c in candidates(daemon)]
    assert sorted(got) == [("legacy-fork", 2, "the v0 fork's own"), ("session-fork", 2, "the fork said this")]


def test_a_session_folder_moved_out_and_back_is_forgotten_then_read_again(start_daemon, tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    project = sessions / PAYMENTS.split("/")[0]
    aside = tmp_path / "aside"
    os.rename(project, aside)
    wait_until(lambda: call(daemon, "daemon.status")["ingest"]["filesTracked"] == 3, what="the folder forgotten")
    os.rename(aside, project)
    wait_until(lambda: call(daemon, "daemon.status")["ingest"]["filesTracked"] == 4, what="the folder read again")
    assert [comparable(c) for c in candidates(daemon)] == expected_in_scan_order(sessions)
    assert call(daemon, "daemon.status")["ingest"]["errors"] == 0
