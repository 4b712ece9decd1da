"""Issue 13 against a real daemon: statements merge (restart, copy, resumed and other sessions), a rejected one
never comes back (even reworded, even after an upgrade from state.db schema 1), the extractor command.

Every log here is a small DSH v4 log written by the test (no ../shared needed).
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mmd.daemon.statedb import _SCHEMA, SCHEMA_VERSION
from tests.test_ingest_helpers import backfilled, call, candidates, dsh_line, user_message, wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "candidates"
RULE = "Always run the integration suite with make check-all, never bare pytest on this repo."
VPN = "REMEMBER: staging deploys always need the corporate VPN connection first."


def session_log(sessions: Path, project: str, session_id: str, prompts: list[tuple[str, str]],
                name: str = "session.v4.jsonl", cwd: str = "/home/test/shop") -> Path:
    """A DSH v4 log of human prompts ``(message id, text)`` under ``sessions/<project>/<session_id>/``."""
    folder = sessions / project / session_id
    folder.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 4, "id": session_id, "createdAt": 1791383800000, "cwd": cwd,
              "isSeeded": False, "delegationDepth": 0}
    lines = [(json.dumps(header) + "\n").encode(), dsh_line(0, "turn/start", {"turn": 1})]
    lines += [user_message(i + 1, text, mid) for i, (mid, text) in enumerate(prompts)]
    log = folder / name
    log.write_bytes(b"".join(lines))
    return log


def by_body(daemon: Any) -> dict[str, dict[str, Any]]:
    return {c["body"]: c for c in candidates(daemon, "all")}


def test_a_statement_seen_again_merges_and_a_rejected_one_never_returns(start_daemon, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    first = session_log(sessions, "--home-test-shop--", "s-one", [("m-1", VPN), ("m-2", RULE)])
    daemon = start_daemon("--sessions", str(sessions))
    backfilled(daemon)
    before = by_body(daemon)
    vpn = before["staging deploys always need the corporate VPN connection first."]
    rule = next(c for b, c in before.items() if "make check-all" in b)
    assert vpn["pinned"] and vpn["visible"] and vpn["rule"] == "mm.explicit" and vpn["seen"] == 1
    assert rule["rule"].startswith("human-") and rule["evidence"][0]["project"] == "/home/test/shop"
    assert rule["evidence"][0]["who"] == "human" and rule["evidence"][0]["sessionId"] == "s-one"
    # a restart reads nothing again
    daemon.stop()
    daemon.start()
    backfilled(daemon)
    assert by_body(daemon) == before
    # a second copy of the log (same session, same message ids): no new candidate, no new sighting
    shutil.copytree(first.parent, sessions / "--home-test-copy--" / "s-one")
    wait_until(lambda: call(daemon, "daemon.status")["ingest"]["filesTracked"] == 2, what="the copy")
    wait_until(lambda: call(daemon, "daemon.status")["ingest"]["bytesRead"] >= first.stat().st_size,
               what="the copy read")
    backfilled(daemon)
    assert by_body(daemon) == before
    # a resumed session replays the old messages (same ids) and adds one; another session repeats the rule
    session_log(sessions, "--home-test-shop--", "s-resumed", [("m-1", VPN), ("m-2", RULE),
                                                              ("m-3", "MEMO: the shop's staging lives in eu-west-3.")])
    session_log(sessions, "--home-test-shop--", "s-two", [("m-9", RULE)])
    got = wait_until(lambda: len(c := by_body(daemon)) == len(before) + 1
                     and c[rule["body"]]["seen"] == 2 and c, what="the two new logs")
    again = got[rule["body"]]
    assert [e["sessionId"] for e in again["evidence"]] == ["s-one", "s-two"] and again["score"] > rule["score"]
    assert got[vpn["body"]]["seen"] == 1  # the resumed session's replay is no new place
    assert "the shop's staging lives in eu-west-3." in got
    # rejected for good: the same words, the same words shouted, and a rewording within the threshold
    assert call(daemon, "queue.reject", {"id": vpn["id"], "reason": "in the wiki"})["ok"]
    session_log(sessions, "--home-test-shop--", "s-three", [
        ("m-20", VPN.upper()), ("m-21", "REMEMBER: staging deploys always need the corporate VPN connection first, ok"),
        ("m-22", "MEMO: releases are tagged on Tuesdays.")])
    final = wait_until(lambda: len(c := by_body(daemon)) == len(got) + 1 and c, what="the third session")
    assert "releases are tagged on Tuesdays." in final
    assert final[vpn["body"]]["status"] == "rejected" and final[vpn["body"]]["seen"] == 1
    assert not any("VPN" in b.upper() and c["status"] == "pending" for b, c in final.items())


@pytest.mark.parametrize("version", [1, 2])
def test_an_upgraded_daemon_keeps_the_queue_and_cursors_and_queues_nothing_twice(start_daemon, tmp_path: Path,
                                                                               version: int) -> None:
    sessions = tmp_path / "sessions"
    log = session_log(sessions, "--home-test-shop--", "s-old",
                      [("m-1", VPN), ("m-2", "MEMO: invoices go out monthly.")])
    root = tmp_path / "root"
    (root / ".mmd").mkdir(parents=True)
    db = sqlite3.connect(root / ".mmd" / "state.db")
    db.executescript(_SCHEMA)  # the tables before issue 13 (schema 1 lacked the inject ones: unused here)
    db.execute("INSERT INTO candidates (key, status, kind, topic, summary, body, chars, over_budget, session_id, file,"
               " seq, message_id, source_kind, created_at, decided_at, reason) VALUES ('old-key', 'rejected',"
               " 'explicit', 'memo-1', 'x', 'staging deploys always need the corporate VPN connection first.', 63, 0,"
               " 's-old', ?, 1, 'm-1', 'user', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z', 'no')",
               (str(log),))
    db.execute("INSERT INTO cursors VALUES ('/elsewhere/gone.jsonl', 'dsh', 's-x', 1, 2, 3, 0, -1, '{}', 'now')")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    daemon = start_daemon("--sessions", str(sessions), root=root)
    backfilled(daemon)
    got = candidates(daemon, "all")
    assert [(c["id"], c["status"], c["rule"], c["evidence"][0]["sessionId"]) for c in got][0] == (
        1, "rejected", "mm.explicit", "s-old")
    assert [c["body"] for c in got[1:]] == ["invoices go out monthly."]
    db = sqlite3.connect(root / ".mmd" / "state.db")
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert db.execute("SELECT path FROM cursors WHERE path = '/elsewhere/gone.jsonl'").fetchone() is not None
    db.close()


def test_the_extractor_runs_once_per_ended_session_and_its_failures_show(start_daemon, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    config = tmp_path / "mmd.toml"
    command = json.dumps([sys.executable, str(FIXTURES / "extractor.py"), str(tmp_path / "given")])
    config.write_text(f"[candidates]\ncommand = {command}\ntimeoutMs = 3000\n", encoding="utf-8")
    daemon = start_daemon("--sessions", str(sessions), "--config", str(config), "--session-idle-seconds", "1")
    st = backfilled(daemon)
    assert st["extractor"] == {"command": json.loads(command), "runs": 0, "failures": 0, "candidatesAdded": 0,
                               "lastRunAt": None, "lastError": None}
    session_log(sessions, "--home-test-shop--", "s-ok", [("m-1", "fact: the build box has 64 GB of RAM"),
                                                         ("m-2", "thanks")])
    ran = wait_until(lambda: (s := call(daemon, "daemon.status")["extractor"])["runs"] == 1 and s, timeout_s=20,
                     what="the extractor's first run")
    assert ran["failures"] == 0 and ran["candidatesAdded"] == 1
    (made,) = [c for c in candidates(daemon, "all") if c["rule"] == "extractor"]
    assert (made["body"], made["kind"], made["score"], made["visible"]) == (
        "the build box has 64 GB of RAM", "environment", 0.9, True)
    ev = made["evidence"][0]
    assert (ev["sessionId"], ev["who"], ev["quote"], ev["project"]) == (
        "s-ok", "human", "fact: the build box has 64 GB of RAM", "/home/test/shop")
    session_log(sessions, "--home-test-shop--", "s-fail", [("m-1", "FAIL on purpose")])
    failed = wait_until(lambda: (s := call(daemon, "daemon.status")["extractor"])["runs"] == 2 and s, timeout_s=20,
                        what="the failing run")
    assert failed["failures"] == 1 and failed["lastError"] == "exit status 3: the extractor refuses this session"
    session_log(sessions, "--home-test-shop--", "s-slow", [("m-1", "SLOW on purpose")])
    slow = wait_until(lambda: (s := call(daemon, "daemon.status")["extractor"])["runs"] == 3 and s["failures"] == 2
                      and s, timeout_s=30, what="the timed-out run")
    assert slow["lastError"] == "timed out after 3 s"
    assert "extractor.failed" in daemon.stderr()
    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    assert sorted(r[0] for r in db.execute("SELECT ok FROM extractors")) == [0, 0, 1]
    db.close()
    # SIGHUP: a new command and time limit apply to the next run, without a restart
    renewed = json.dumps([sys.executable, str(FIXTURES / "extractor.py"), str(tmp_path / "renewed")])
    config.write_text(f"[candidates]\ncommand = {renewed}\ntimeoutMs = 4000\n", encoding="utf-8")
    daemon.signal(signal.SIGHUP)
    wait_until(lambda: call(daemon, "daemon.status")["extractor"]["command"] == json.loads(renewed), timeout_s=20,
               what="the reloaded extractor command")
    session_log(sessions, "--home-test-shop--", "s-renewed", [("m-1", "fact: the CI cache lives in bucket ci-7")])
    wait_until(lambda: call(daemon, "daemon.status")["extractor"]["runs"] == 4, timeout_s=20, what="the fourth run")
    assert len(list(tmp_path.glob("renewed.*"))) == 1 and len(list(tmp_path.glob("given.*"))) == 3
    # both sides of the contract validate against schema/extractor.schema.json
    from jsonschema import Draft202012Validator

    contract = json.loads((Path(__file__).resolve().parent.parent / "schema" / "extractor.schema.json").read_text())
    Draft202012Validator.check_schema(contract)
    given = sorted(tmp_path.glob("given.*"))
    assert len(given) == 3
    for path in given:
        session = json.loads(path.read_bytes())
        assert Draft202012Validator({**contract, "$ref": "#/$defs/session"}).is_valid(session), session
    ok = next(json.loads(p.read_bytes()) for p in given if b"64 GB" in p.read_bytes())
    printed = subprocess.run([sys.executable, str(FIXTURES / "extractor.py")], input=json.dumps(ok).encode(),
                             capture_output=True, check=True).stdout
    output = json.loads(printed)
    output["candidates"] = [c for c in output["candidates"] if c["body"]]  # the malformed one is skipped, as mmd does
    assert Draft202012Validator({**contract, "$ref": "#/$defs/output"}).is_valid(output)


def test_the_new_queue_shapes_match_the_schema_on_a_real_daemon(start_daemon, tmp_path: Path) -> None:
    from tests.test_schema import Wire

    sessions = tmp_path / "sessions"
    session_log(sessions, "--home-test-shop--", "s-one", [
        ("m-1", VPN), ("m-2", RULE), ("m-3", "MEMO: invoices go out monthly."),
        ("m-4", "mm://local/billing Refunds are approved by finance.")])
    daemon = start_daemon("--sessions", str(sessions))
    wire = Wire(daemon)
    backfilled(daemon)
    page = wire.result("queue.list", {"all": True, "minScore": 0, "project": "/home/test/shop", "agent": "dsh"})
    assert page["total"] == 4 and wire.result("queue.list", {"agent": "codex"})["total"] == 0
    ids = [c["id"] for c in page["candidates"]]
    assert wire.result("queue.list", {"minScore": 1.5})["total"] == 3  # the marked ones
    many = wire.result("queue.accept", {"project": "user", "id": [ids[0], 99999]})
    assert many["ok"] is False and [r["ok"] for r in many["results"]] == [True, False], many
    assert many["results"][1]["error"]["code"] == "E_NOT_FOUND"
    typo = wire.error("queue.accept", {"project": "user", "id": ids[1], "into": "fiance"},  # never creates a note
                      "E_NOT_FOUND")
    assert "no note fiance to append to" in typo["message"] and typo["data"]["topic"] == "fiance"
    assert wire.result("queue.get", {"id": ids[1]})["status"] == "pending"
    wire.result("memory.write", {"topic": "finance", "content": "Finance signs off on money.", "tags": "billing"})
    into = wire.result("queue.accept", {"project": "user", "id": ids[1], "into": "finance"})
    assert into["ok"] and into["write"]["action"] == "updated"
    assert wire.result("queue.reject", {"below": 1.5})["results"] == [
        {"id": c["id"], "ok": True, "candidate": wire.result("queue.get", {"id": c["id"]})}
        for c in page["candidates"] if c["score"] < 1.5]
    rejected = wire.result("queue.reject", {"id": [ids[2], ids[2]]})
    assert [r["ok"] for r in rejected["results"]] == [True, True]
    # the index is over its cap (three notes, then the cap lowered): a write is refused, a merge that shrinks
    # the index is not
    small = tmp_path / "small"
    first = start_daemon("--no-ingest", root=small)
    for topic in ("a-note", "b-note", "c-note"):
        call(first, "memory.write", {"topic": topic, "content": f"{topic} body"})
    first.stop()
    lines = len((small / "MEMORY.md").read_text(encoding="utf-8").splitlines())
    wire = Wire(start_daemon("--no-ingest", "--index-lines", str(lines - 1), root=small))
    over = wire.result("memory.write", {"topic": "d-note", "content": "d body"})
    assert over["ok"] is False and over["code"] == "E_INDEX_BUDGET_EXCEEDED"
    merged = wire.result("memory.merge", {"topics": ["a-note", "b-note"], "into": "a-note"})
    assert merged["ok"] and merged["merged"] == ["b-note"]
    assert wire.result("memory.read", {"topic": "a-note"})["body"] == "a-note body\n\nb-note body"


def test_a_candidate_on_a_noted_subject_proposes_an_append_and_accepting_appends(start_daemon, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    daemon = start_daemon("--sessions", str(sessions))
    backfilled(daemon)
    assert call(daemon, "memory.write", {"topic": "deploy", "content": "Staging deploys go through the bastion.",
                                         "tags": "staging,vpn", "summary": "how staging deploys work"})["ok"]
    session_log(sessions, "--home-test-shop--", "s-app", [
        ("m-1", "REMEMBER: staging deploys need the VPN token from the team vault."),
        ("m-2", "MEMO: the cafeteria closes at three on Fridays."),
        ("m-3", "mm: staging deploys go through the bastion.")])  # already in the note: not queued
    got = wait_until(lambda: len(c := by_body(daemon)) == 2 and c, what="the two candidates")
    vpn = got["staging deploys need the VPN token from the team vault."]
    assert vpn["proposal"] == {"action": "append", "topic": "deploy"} and vpn["topic"] == "deploy"
    lunch = got["the cafeteria closes at three on Fridays."]
    assert lunch["proposal"] == {"action": "create", "topic": "cafeteria"}  # a name: the subject
    accepted = call(daemon, "queue.accept", {"project": "user", "id": vpn["id"]})
    assert accepted["ok"] and accepted["write"]["action"] == "updated"
    note = call(daemon, "memory.read", {"topic": "deploy"})
    assert note["body"] == ("Staging deploys go through the bastion.\n\n"
                            "staging deploys need the VPN token from the team vault.")
    assert note["summary"] == "how staging deploys work" and note["tags"] == ["staging", "vpn"]


def test_a_decided_draft_keeps_its_place_so_deciding_a_session_empties_it_until_a_new_one_comes(
        start_daemon, tmp_path: Path) -> None:
    """Issue 30: every decision handed its place to a hidden draft ("shown in their place: 332 …"), so deciding never
    shortened the queue. A session offers at most its budget in all, decided ones counted."""
    from mmd.candidates.score import MIN_SCORE

    rules = ["Always run the linter before you push to the shared branch.",
             "Never commit generated protobuf files into this repository.",
             "We use pnpm here, never npm or yarn for installs.",
             "Always pin container images by digest in the deploy manifests.",
             "Never log customer email addresses, even at debug level.",
             "From now on keep migrations reversible with a down step.",
             "Prefer structured logging over printf style messages everywhere.",
             "Don't add dependencies without a licence review first.",
             "Always write the changelog entry under the Unreleased heading.",
             "Never retry payment captures without the idempotency key.",
             "We use UTC timestamps in every stored record and API field.",
             "Always keep feature flags documented in flags.md with an owner.",
             "mm: the release train leaves every Thursday at noon."]  # pinned: never counted in the budget
    sessions = tmp_path / "sessions"
    session_log(sessions, "--home-test-shop--", "s-long", [(f"m-{i}", rule) for i, rule in enumerate(rules)])
    daemon = start_daemon("--sessions", str(sessions))
    backfilled(daemon)
    every = candidates(daemon, "pending")
    hidden = [c for c in every if not c["visible"] and c["score"] >= MIN_SCORE]
    shown = [c for c in every if c["visible"]]
    assert hidden and any(c["pinned"] for c in shown), [(c["visible"], c["score"]) for c in every]
    for c in shown:  # the pinned one first: it holds no place, and nothing comes up after any decision
        call(daemon, "queue.reject", {"id": c["id"]})
        assert {x["id"] for x in candidates(daemon, "pending") if x["visible"]} == {
            x["id"] for x in shown[shown.index(c) + 1:]}
    page = call(daemon, "queue.list")
    assert (page["candidates"], page["total"]) == ([], 0)
    assert page["leftOut"] == {"hidden": len([c for c in every if not c["visible"]]), "expired": 0, "heldBack": 0}
    session_log(sessions, "--home-test-shop--", "s-next", [("n-1", "Never merge on Fridays without a second review.")])
    (new,) = wait_until(lambda: call(daemon, "queue.list")["candidates"], timeout_s=20, what="the new session's draft")
    assert new["body"].startswith("Never merge on Fridays") and new["source"]["sessionId"] == "s-next"


def test_a_first_backfill_shows_the_newest_sessions_best_and_expired_drafts_come_back_by_undo(
        start_daemon, tmp_path: Path) -> None:
    """Issue 30: a first backfill made 608 candidates and showed 129; deciding them never ended."""
    import os

    from tests.test_mmctl_daemon import cli

    sessions = tmp_path / "sessions"
    said = {"s-old": ["Always tag releases with a signed annotated tag.", "Never force-push to the main branch."],
            "s-mid": ["Always run database migrations inside a transaction.", "Never store secrets in the repo."],
            "s-new": ["Always pin the node version in the CI config.", "Never edit generated client code by hand."]}
    for age, (sid, prompts) in enumerate(reversed(said.items())):  # s-new is the newest log
        log = session_log(sessions, "--home-test-shop--", sid, [(f"{sid}-{i}", p) for i, p in enumerate(prompts)])
        os.utime(log, (1_790_000_000 - age * 86_400,) * 2)
    daemon = start_daemon("--sessions", str(sessions), "--backfill-shown", "2")
    backfilled(daemon)
    page = call(daemon, "queue.list")
    assert sorted(c["body"] for c in page["candidates"]) == sorted(said["s-new"])
    assert page["leftOut"] == {"hidden": 0, "expired": 0, "heldBack": 4}
    held = call(daemon, "queue.list", {"status": "expired"})["candidates"]
    assert sorted(c["body"] for c in held) == sorted(said["s-old"] + said["s-mid"])
    assert {(c["reason"], c["visible"]) for c in held} == {("backfill", False)}
    code, out, _ = cli(daemon, "queue", "list", "--status", "expired")
    assert code == 0 and out.startswith("4 of 4 expired candidate(s)") and out.count("expired:backfill") == 4, out
    code, out, _ = cli(daemon, "queue", "undo", str(held[0]["id"]))
    assert code == 0 and out.startswith(f"undone {held[0]['id']}: pending again"), out
    assert held[0]["id"] in [c["id"] for c in call(daemon, "queue.list")["candidates"]]  # asked for: on show
    # a session that starts after the backfill is not held back
    session_log(sessions, "--home-test-shop--", "s-live", [("l-0", "Always squash fixup commits before merging.")])
    wait_until(lambda: any(c["source"]["sessionId"] == "s-live" for c in call(daemon, "queue.list")["candidates"]),
               timeout_s=20, what="the live session's draft")
    # 30 days pending, counted from when each was queued (or brought back): expired, out of the default view
    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    with db:
        db.execute("UPDATE candidates SET queued_at = '2020-01-01T00:00:00.000Z' WHERE status = 'pending'")
    db.close()
    code, out, _ = cli(daemon, "queue", "list")
    assert code == 0 and out == ("no pending candidate on show: the review queue is empty (7 expired (3 held back by "
                                 "the first backfill, 4 pending over 30 days): --status expired lists them, "
                                 "`mmctl queue undo ID` brings one back)\n"), out  # the undone one counts by age
    assert call(daemon, "daemon.status")["queue"]["expired"] == 7
