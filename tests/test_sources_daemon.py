"""Claude Code and Codex transcripts beside DSH logs, in the real daemon with a fake ``HOME``.

Each test runs ``mmd`` with ``HOME`` pointed at ``tmp_path/home`` (the daemon helper does that) holding
``.claude/projects`` and ``.codex/sessions``: the adapters' fixtures (``tests/fixtures/sources``) plus
transcripts written here whose prompts carry ``MEMO:`` lines, and reads the queue and ``daemon.status`` over RPC.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
from pathlib import Path
from typing import Any

from tests.test_daemon_helpers import Subscriber
from tests.test_ingest_helpers import backfilled, call, candidates, status, wait_until
from tests.test_mmctl_daemon import cli
from tests.test_schema import check, event_def, rpc_def

SOURCES_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sources"
DSH_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sessions"
INGEST_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest"
KINDS = ["dsh", "claude-code", "codex"]
FIXTURE_RULES = {"KEEP-H1 always build kiln with `make release`, never plain make",
                 "KEEP-Q1 btw use tabs in the Makefile"}
"""The standing rules the person typed in the adapters' Claude Code fixture: candidates too since issue 13."""


def mine(daemon: Any) -> list[dict[str, Any]]:
    """The candidates of the transcripts a test wrote (every candidate but the fixtures' rules)."""
    return [c for c in candidates(daemon) if c["body"] not in FIXTURE_RULES]


def claude_record(sid: str, n: int, kind: str, text: str, cwd: str = "/home/ana/code/kiln") -> bytes:
    """One Claude Code transcript line: a typed prompt (``user``) or an assistant text block."""
    record: dict[str, Any] = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
                              "sessionId": sid, "version": "2.1.39", "type": kind, "uuid": f"{sid[:8]}-{n:05}",
                              "timestamp": f"2026-02-12T10:{n // 60 % 60:02}:{n % 60:02}.000Z"}
    if kind == "user":
        record["message"] = {"role": "user", "content": text}
    else:
        record["message"] = {"model": "claude-opus-4-6", "id": f"msg_{n}", "type": "message", "role": "assistant",
                             "content": [{"type": "text", "text": text}]}
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def claude_session(projects: Path, sid: str, memos: list[str], cwd: str = "/home/ana/code/kiln") -> Path:
    """A transcript ``projects/<encoded cwd>/<sid>.jsonl`` whose prompts are ``memos`` (each answered)."""
    path = projects / cwd.replace("/", "-") / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for n, memo in enumerate(memos):
            f.write(claude_record(sid, 2 * n, "user", memo, cwd))
            f.write(claude_record(sid, 2 * n + 1, "assistant", "Noted.", cwd))
    return path


def codex_rollout(sessions: Path, sid: str, memos: list[str], cwd: str = "/home/ana/code/viewer") -> Path:
    """A Codex rollout ``sessions/2026/02/18/rollout-…-<sid>.jsonl`` whose prompts are ``memos``."""
    path = sessions / "2026" / "02" / "18" / f"rollout-2026-02-18T09-00-00-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"timestamp": "2026-02-18T09:00:00.000Z", "type": "session_meta",
              "payload": {"id": sid, "timestamp": "2026-02-18T09:00:00.000Z", "cwd": cwd,
                          "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli"}}]
    path.write_text(json.dumps(lines[0], separators=(",", ":")) + "\n" + "".join(map(codex_turn, memos)),
                    encoding="utf-8")
    return path


def codex_turn(prompt: str) -> str:
    """A Codex turn's lines: the typed prompt and the turn's end (a prompt stands once its turn ends)."""
    return "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in (
        {"timestamp": "2026-02-18T09:00:01.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": prompt, "images": []}},
        {"timestamp": "2026-02-18T09:00:02.000Z", "type": "event_msg", "payload": {"type": "task_complete"}}))


def fake_home(home: Path) -> tuple[Path, Path]:
    """``home/.claude/projects`` and ``home/.codex/sessions`` holding the adapters' fixtures."""
    projects, rollouts = home / ".claude" / "projects", home / ".codex" / "sessions"
    shutil.copytree(SOURCES_FIXTURES / "claude" / "projects", projects)
    shutil.copytree(SOURCES_FIXTURES / "codex" / "sessions", rollouts)
    return projects, rollouts


def sources(st: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["kind"]: s for s in st["ingest"]["sources"]}


CLAUDE_SID = "aaaaaaaa-2222-4333-8444-555555555555"
CODEX_SID = "019c68dc-aaaa-7226-b63c-5ab791b7584a"


async def test_both_agents_are_read_from_a_fake_home_with_no_flag_live_and_to_their_session_end(
        start_daemon, tmp_path: Path) -> None:
    projects, rollouts = fake_home(tmp_path / "home")
    transcript = claude_session(projects, CLAUDE_SID, ["MEMO: kiln releases are cut from the release branch."])
    codex_rollout(rollouts, CODEX_SID, ["REMEMBER: the viewer's e2e suite needs Xvfb."])
    daemon = start_daemon("--heartbeat-ms", "200", "--session-idle-seconds", "1")
    st = wait_until(lambda: (s := backfilled(daemon)) and all(
        sources(s)[k]["backfill"]["done"] for k in ("claude-code", "codex")) and s, what="both folders")
    by_kind = sources(st)
    check(rpc_def("daemon.status.result"), st, "daemon.status with three sources")
    assert [s["kind"] for s in st["ingest"]["sources"]] == KINDS
    assert by_kind["dsh"]["enabled"] and by_kind["dsh"]["phase"] == "waiting" and not by_kind["dsh"]["folderPresent"]
    for kind, folder, files in (("claude-code", projects, 4), ("codex", rollouts, 4)):
        s = by_kind[kind]
        assert (s["folder"], s["enabled"], s["phase"], s["folderPresent"]) == (str(folder), True, "following", True)
        assert s["files"] == files and s["errors"] == 0  # the subagent file beside the fixtures is never a log
        assert s["backfill"]["files"] == s["backfill"]["filesTotal"] == files
        assert s["bytesRead"] == s["backfill"]["bytesTotal"] == sum(p.stat().st_size for p in folder.rglob("*.jsonl")
                                                                    if "subagents" not in p.parts)
    code, out, err = cli(daemon, "status")
    assert (code, err) == (0, "")
    table = out.split("\nsources:\n")[1].splitlines()
    assert table[0].split() == ["source", "state", "files", "read", "last", "event", "errors", "backfill", "folder"]
    assert [row.split()[:3] for row in table[1:]] == [["dsh", "waiting", "0"], ["claude-code", "following", "4"],
                                                      ["codex", "following", "4"]]
    assert table[2].endswith(f"4/4 files in {by_kind['claude-code']['backfill']['seconds']:.1f} s  {projects}")
    assert FIXTURE_RULES <= {c["body"] for c in candidates(daemon)}
    got = {c["body"]: c for c in mine(daemon)}
    assert set(got) == {"kiln releases are cut from the release branch.", "the viewer's e2e suite needs Xvfb."}
    assert got["kiln releases are cut from the release branch."]["source"]["sessionId"] == CLAUDE_SID
    assert got["the viewer's e2e suite needs Xvfb."]["source"]["sessionId"] == CODEX_SID
    assert by_kind["claude-code"]["candidatesAdded"] == 1 + len(FIXTURE_RULES)
    assert by_kind["codex"]["candidatesAdded"] == 1

    sub = Subscriber(daemon.pub)
    try:
        await sub.ready()
        with open(transcript, "ab") as f:
            f.write(claude_record(CLAUDE_SID, 90, "user", "MEMO: the kiln cache lives in /var/cache/kiln.")[:50])
        await asyncio.sleep(0.3)  # a torn last line is never digested
        assert len(mine(daemon)) == 2
        with open(transcript, "ab") as f:
            f.write(claude_record(CLAUDE_SID, 90, "user", "MEMO: the kiln cache lives in /var/cache/kiln.")[50:])
        _, added = await sub.wait_for(lambda topic, p: topic == "queue/added")
        check(event_def("queue/added"), added, "queue/added")
        assert (added["agent"], added["sessionId"], added["source"]) == ("claude-code", CLAUDE_SID, str(transcript))
        _, nudge = await sub.wait_for(lambda topic, p: topic == "memory/nudge" and p["reason"] == "session-end")
        check(event_def("memory/nudge"), nudge, "memory/nudge (agent session-end)")
        assert (nudge["agent"], nudge["sessionId"], nudge["project"], nudge["source"]) == (
            "claude-code", CLAUDE_SID, "/home/ana/code/kiln", str(transcript))
        left = [c for c in candidates(daemon, "pending") if c["source"]["sessionId"] == CLAUDE_SID and c["visible"]]
        best = sorted(left, key=lambda c: (-c["score"], c["id"]))[0]
        said = nudge["suggestedActions"][0]  # what the session left comes first, by id and summary
        assert said.startswith(f"this session left {len(left)} candidate memor") and f"#{best['id']} " in said, said
        assert f"mmctl queue show {best['id']}" in said
    finally:
        sub.close()
    assert len(mine(daemon)) == 3 and status(daemon)["ingest"]["sessionsEnded"] == 1
    # replaced by a rewritten file (same records, one more) and then truncated: read again, nothing twice
    rewritten = transcript.with_name("rewrite.tmp")
    more = claude_record(CLAUDE_SID, 91, "user", "MEMO: kiln needs rust 1.80.")
    rewritten.write_bytes(transcript.read_bytes() + more)
    rewritten.replace(transcript)
    wait_until(lambda: len(mine(daemon)) == 4, what="the replaced transcript read again")
    transcript.write_bytes(claude_record(CLAUDE_SID, 0, "user", "MEMO: kiln releases are cut from the release branch.")
                           + claude_record(CLAUDE_SID, 92, "user", "MEMO: kiln was truncated once."))
    wait_until(lambda: len(mine(daemon)) == 5, what="the truncated transcript read again")
    bodies = [c["body"] for c in mine(daemon)]
    assert len(bodies) == len(set(bodies)) == 5 and {"kiln needs rust 1.80.", "kiln was truncated once."} <= set(bodies)
    assert status(daemon)["ingest"]["errors"] == 0


def test_a_log_laid_out_where_its_agent_never_writes_one_is_named_in_the_log(start_daemon, tmp_path: Path) -> None:
    _, rollouts = fake_home(tmp_path / "home")
    misplaced = codex_rollout(rollouts, CODEX_SID, ["REMEMBER: the viewer's e2e suite needs Xvfb."])
    flat = rollouts / "20260218" / misplaced.name  # a day folder flattened: Codex never writes one there
    flat.parent.mkdir()
    misplaced.rename(flat)
    daemon = start_daemon()
    wait_until(lambda: (s := backfilled(daemon)) and sources(s)["codex"]["backfill"]["done"], what="the codex folder")
    assert f"ingest.files_not_read kind=codex folder={rollouts} files=1 first={flat}" in daemon.stderr()
    assert not [c for c in mine(daemon) if "Xvfb" in c["body"]]


def test_no_source_turns_one_off_and_a_folder_created_after_start_is_picked_up(start_daemon, tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude_session(home / ".claude" / "projects", CLAUDE_SID, ["MEMO: never read while turned off."])
    daemon = start_daemon("--no-source", "claude-code")
    st = wait_until(lambda: (s := status(daemon)) and sources(s)["codex"]["phase"] == "waiting" and s,
                    what="codex waiting")
    by_kind = sources(st)
    check(rpc_def("daemon.status.result"), st, "daemon.status with a source off")
    assert (by_kind["claude-code"]["enabled"], by_kind["claude-code"]["phase"]) == (False, "off")
    assert by_kind["codex"]["enabled"] and not by_kind["codex"]["folderPresent"]
    assert st["ingest"]["phase"] == "waiting"  # no DSH folder and no codex folder yet
    rollout = codex_rollout(home / ".codex" / "sessions", CODEX_SID, ["MEMO: codex appeared after the start."])
    wait_until(lambda: [c["body"] for c in candidates(daemon)] == ["codex appeared after the start."],
               what="the new codex folder read")
    st = wait_until(lambda: (s := status(daemon)) and sources(s)["codex"]["phase"] == "following" and s,
                    what="codex followed")
    assert sources(st)["codex"]["files"] == 1 and sources(st)["claude-code"]["files"] == 0
    with open(rollout, "a", encoding="utf-8") as f:  # the folder is followed live from then on
        f.write(codex_turn("MEMO: appended once followed."))
    wait_until(lambda: len(candidates(daemon)) == 2, what="the appended prompt")
    assert all("never read" not in c["body"] for c in candidates(daemon))


def test_a_sigkill_mid_backfill_then_a_restart_queues_each_candidate_once(start_daemon, tmp_path: Path) -> None:
    projects, _ = fake_home(tmp_path / "home")
    files = 600
    for i in range(files):
        pad = "x" * 2000
        claude_session(projects, f"{i:08x}-2222-4333-8444-555555555555",
                       [f"MEMO: service {i} deploys from tag v{i}.{pad[:0]}", f"REMEMBER: service {i} owns port {i}.",
                        f"a long prompt that only pads the log {pad}"], cwd=f"/home/ana/code/svc{i}")
    expected = {f"service {i} deploys from tag v{i}." for i in range(files)} | {
        f"service {i} owns port {i}." for i in range(files)}
    first = start_daemon()
    wait_until(lambda: 0 < sources(status(first))["claude-code"]["backfill"]["files"] < files,
               timeout_s=30, what="the backfill under way")
    first.signal(signal.SIGKILL)
    first.wait()
    second = start_daemon()
    st = wait_until(lambda: (s := status(second)) and sources(s)["claude-code"]["backfill"]["done"] and s,
                    timeout_s=60, what="the backfill after the restart")
    assert sources(st)["claude-code"]["backfill"]["files"] == files + 3  # resumed from the stored cursors
    assert sources(st)["claude-code"]["bytesRead"] < sources(st)["claude-code"]["backfill"]["bytesTotal"]
    expected |= FIXTURE_RULES
    bodies = [c["body"] for c in candidates(second)]
    assert len(bodies) == len(set(bodies)) and set(bodies) == expected
    second.stop()
    third = start_daemon()
    st = wait_until(lambda: (s := status(third)) and sources(s)["claude-code"]["backfill"]["done"] and s,
                    timeout_s=60, what="the third backfill")
    assert sources(st)["claude-code"]["bytesRead"] == 0 and st["ingest"]["candidatesAdded"] == 0
    assert call(third, "daemon.status")["queue"]["total"] == len(expected)


def test_a_state_db_from_before_the_sources_keeps_its_dsh_cursors(start_daemon, tmp_path: Path) -> None:
    """``state_before_sources.sql``: the state.db the daemon before this change wrote over the DSH fixtures."""
    sessions = tmp_path / "sessions"  # the daemon helper's --sessions
    shutil.copytree(DSH_FIXTURES, sessions)
    (tmp_path / "root" / ".mmd").mkdir(parents=True)
    conn = sqlite3.connect(tmp_path / "root" / ".mmd" / "state.db")
    conn.executescript((INGEST_FIXTURES / "state_before_sources.sql").read_text(encoding="utf-8").replace(
        "/tmp/sw_upg/sessions", str(sessions)))
    for path, raw in conn.execute("SELECT path, cursor FROM cursors").fetchall():
        cursor = json.loads(raw)  # the copy is the same file: same bytes, its mtime set back, its own inode
        os.utime(path, ns=(cursor["log"]["mtime_ns"], cursor["log"]["mtime_ns"]))
        cursor["log"]["inode"] = os.stat(path).st_ino
        conn.execute("UPDATE cursors SET cursor = ?, inode = ? WHERE path = ?",
                     (json.dumps(cursor), cursor["log"]["inode"], path))
    conn.commit()
    before = conn.execute("SELECT id, body FROM candidates ORDER BY id").fetchall()
    conn.close()
    assert len(before) == 2
    projects, _ = fake_home(tmp_path / "home")
    claude_session(projects, CLAUDE_SID, ["MEMO: only this is new."])
    daemon = start_daemon()
    st = wait_until(lambda: (s := backfilled(daemon)) and all(
        sources(s)[k]["backfill"]["done"] for k in KINDS) and s, what="every folder")
    dsh = sources(st)["dsh"]
    assert dsh["bytesRead"] == 0 and dsh["files"] == dsh["backfill"]["files"] == 3 and dsh["candidatesAdded"] == 0
    got = candidates(daemon)
    assert [c["id"] for c in got] == [1, 2, 3, 4, 5] and [c["body"] for c in got[:2]] == [b for _, b in before]
    assert {c["body"] for c in got[2:]} == {"only this is new."} | FIXTURE_RULES
    assert st["queue"]["total"] == 5 and st["ingest"]["errors"] == 0
