"""``memory.propose`` and the distillation line through a real daemon (issue 28): a proposal is a visible candidate
marked as the agent's, ranked above the rules' drafts, deduplicated as any candidate, and may target a note (append,
replace with the difference shown, delete); a prompt hook's sixth prompt without a proposal carries the line, once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mmd.candidates.proposals import PROPOSAL_SCORE
from mmd.inject.guide import DISTILL, DISTILL_AFTER_PROMPTS
from tests.test_daemon_helpers import sync_call
from tests.test_inject_daemon import call, error_code, inject, write


def propose(daemon: Any, content: str | None = None, **extra: Any) -> dict[str, Any]:
    return dict(call(daemon, "memory.propose", {"content": content, **extra}))


def test_a_proposal_is_a_visible_candidate_of_the_agent_above_the_drafts_with_its_reason(daemon: Any) -> None:
    out = propose(daemon, "Run the UI tests with the selenium grid, never playwright.", agent="claude-code",
                  session="s-1", reason="the person corrected me twice")
    assert out["ok"] and out["status"] == "queued" and out["scope"] == "user"
    cand = out["candidate"]
    assert (cand["id"], cand["kind"], cand["rule"], cand["pinned"], cand["visible"], cand["speaker"]) == \
        (out["id"], "proposal", "agent.propose", False, True, "agent")  # never pinned as the person's (issue 29)
    assert cand["score"] == PROPOSAL_SCORE and cand["source"]["sessionId"] == "s-1"
    # about testing: the testing note (appended, or made by the first accept: issue 30), as a marked line's
    assert cand["topic"] == "testing"
    assert cand["proposal"] == {"action": "append", "topic": "testing", "by": "claude-code",
                                "reason": "the person corrected me twice", "current": None}
    assert cand["evidence"][0]["reason"] == "the person corrected me twice"
    listed = call(daemon, "queue.list", {})["candidates"]
    assert listed[0]["id"] == cand["id"] and listed[0]["proposal"]["by"] == "claude-code"
    again = propose(daemon, "Run the UI tests with the selenium grid, never playwright!", agent="codex",
                    session="s-2")
    assert (again["status"], again["id"]) == ("merged", cand["id"]) and again["candidate"]["seen"] == 2
    call(daemon, "queue.reject", {"id": cand["id"], "reason": "not ours"})
    assert propose(daemon, "run the ui tests with the selenium grid never playwright")["status"] == "rejected"


def test_a_proposal_a_note_holds_queues_nothing_and_bad_ones_are_refused(daemon: Any) -> None:
    write(daemon, "ci", "The CI runs on self-hosted runners in eu-west-1.", summary="CI")
    held = propose(daemon, "the CI runs on self-hosted runners")
    assert (held["status"], held["id"], held["topic"]) == ("held", None, "ci")
    assert call(daemon, "queue.list", {})["total"] == 0
    assert error_code(daemon, "memory.propose", {"content": "x", "topic": "ci", "action": "create"}) == "E_EXISTS"
    assert error_code(daemon, "memory.propose", {"content": "x", "topic": "nope", "action": "replace"}) == "E_NOT_FOUND"
    assert error_code(daemon, "memory.propose", {"topic": "ci", "action": "append"}) == "E_INVALID"
    assert error_code(daemon, "memory.propose", {"content": "x", "action": "explode"}) == "E_INVALID"
    assert error_code(daemon, "memory.propose", {"content": "x", "agent": "someone"}) == "E_INVALID"
    assert error_code(daemon, "memory.propose", {"content": "a\x00b"}) == "E_INVALID"
    assert error_code(daemon, "memory.propose", {"content": "y " * 2500}) == "E_INVALID"  # never cut
    assert error_code(daemon, "memory.propose", {"content": "x", "topic": "not a slug"}) == "E_INVALID"
    assert call(daemon, "queue.list", {})["total"] == 0


def test_a_proposal_holding_a_secret_is_queued_redacted_and_answered_with_its_id(daemon: Any) -> None:
    # the queue's door redacts it, which changes its text and key: the answer said id null (a trial found it)
    token = "ghp_" + "Z" * 36
    out = propose(daemon, f"The vault token for staging is {token} until Friday.", reason="needed for deploys")
    assert out["status"] == "queued" and isinstance(out["id"], int), out
    got = call(daemon, "queue.get", {"id": out["id"]})
    assert token not in str(got) and "‹secret: github token›" in got["body"] and got["speaker"] == "agent"
    again = propose(daemon, f"The vault token for staging is {token} until Friday.")
    assert (again["status"], again["id"]) == ("merged", out["id"]), again


def test_replace_shows_the_note_as_it_is_and_accepting_writes_it_and_undo_restores_it(daemon: Any) -> None:
    curated = "## Deploys\n" + "A curated paragraph about deploys. " * 40
    write(daemon, "deploys", curated, summary="How we deploy")
    note_file = daemon.root / "memories" / "deploys.md"
    before = note_file.read_bytes()
    out = propose(daemon, "Deploy with make release.", topic="deploys", action="replace", agent="codex",
                  reason="shorter")
    cand = call(daemon, "queue.get", {"id": out["id"]})
    assert cand["proposal"]["action"] == "replace" and cand["proposal"]["current"] == curated
    assert note_file.read_bytes() == before  # untouched until accepted
    accepted = call(daemon, "queue.accept", {"id": out["id"]})
    note = call(daemon, "memory.read", {"topic": "deploys"})
    assert accepted["ok"] and (note["body"], note["summary"]) == ("Deploy with make release.", "How we deploy")
    undone = call(daemon, "queue.undo", {"id": out["id"]})
    assert undone["reverted"] == "restored" and call(daemon, "memory.read", {"topic": "deploys"})["body"] == curated
    same = propose(daemon, curated, topic="deploys", action="replace")
    assert same["status"] == "held"  # the note's own text: nothing to change


def test_append_and_delete_proposals_are_decided_like_any_candidate(daemon: Any) -> None:
    write(daemon, "tests", "Run make test.", summary="Tests")
    add = propose(daemon, "The e2e suite needs DOCKER_HOST set.", topic="tests")  # a note there: append
    assert add["candidate"]["proposal"]["action"] == "append"
    assert call(daemon, "queue.accept", {"id": add["id"]})["ok"]
    body = call(daemon, "memory.read", {"topic": "tests"})["body"]
    assert body == "Run make test.\n\nThe e2e suite needs DOCKER_HOST set."
    gone = propose(daemon, topic="tests", action="delete", reason="moved to the README")
    assert gone["candidate"]["body"] == "Delete the note tests."
    assert (daemon.root / "memories" / "tests.md").exists()
    assert call(daemon, "queue.accept", {"id": gone["id"]})["ok"]
    assert call(daemon, "memory.read", {"topic": "tests"}) is None
    assert call(daemon, "queue.undo", {"id": gone["id"]})["reverted"] == "restored"
    assert "DOCKER_HOST" in call(daemon, "memory.read", {"topic": "tests"})["body"]


def test_an_edited_accept_of_a_delete_deletes_and_one_of_a_replace_keeps_the_notes_summary(daemon: Any) -> None:
    # what `mmctl review`'s e and the page's edit form send back unchanged: the candidate's topic, summary and text
    write(daemon, "beta-test", "Run the beta suite with make beta.", summary="Beta tests")
    gone = propose(daemon, topic="beta-test", action="delete", reason="obsolete")["candidate"]
    unchanged = {"id": gone["id"], "topic": gone["topic"], "summary": gone["summary"], "content": gone["body"]}
    for refused in ({"content": "Keep the note, with this text."}, {"into": "beta-test"}, {"topic": "other"},
                    {"summary": "A summary of my own"}, {"tags": "x"}):
        answer = sync_call(daemon.rpc, "queue.accept", {**unchanged, **refused})
        assert answer["error"]["data"]["code"] == "E_INVALID", refused
        assert "proposes to delete the note beta-test" in answer["error"]["message"], refused
    assert call(daemon, "memory.read", {"topic": "beta-test"})["body"] == "Run the beta suite with make beta."
    assert call(daemon, "queue.get", {"id": gone["id"]})["status"] == "pending"
    assert call(daemon, "queue.accept", unchanged)["ok"]  # an edit that changes nothing is the deletion
    assert call(daemon, "memory.read", {"topic": "beta-test"}) is None
    assert not (daemon.root / "memories" / "beta-test.md").exists()
    assert call(daemon, "queue.undo", {"id": gone["id"]})["reverted"] == "restored"
    assert call(daemon, "memory.read", {"topic": "beta-test"})["summary"] == "Beta tests"

    write(daemon, "testing", "Run cargo test.", summary="How we test")
    new = propose(daemon, "Run cargo nextest --all.", topic="testing", action="replace")["candidate"]
    edited = {"id": new["id"], "topic": new["topic"], "summary": new["summary"], "content": new["body"]}
    assert call(daemon, "queue.accept", edited)["ok"]
    note = call(daemon, "memory.read", {"topic": "testing"})
    assert (note["body"], note["summary"]) == ("Run cargo nextest --all.", "How we test")
    call(daemon, "queue.undo", {"id": new["id"]})
    assert call(daemon, "queue.accept", {**edited, "summary": "Tests: nextest"})["ok"]  # the person's own is written
    assert call(daemon, "memory.read", {"topic": "testing"})["summary"] == "Tests: nextest"


def test_without_the_queue_a_proposal_is_refused_and_nothing_is_written(start_daemon: Any) -> None:
    daemon = start_daemon("--no-ingest")
    assert error_code(daemon, "memory.propose", {"content": "x"}) == "E_UNAVAILABLE"


def test_the_sixth_prompt_without_a_proposal_carries_the_line_once_and_the_view_does_not_move(daemon: Any) -> None:
    write(daemon, "a", "First.")
    client = "claude-code:sess-9"
    assert inject(daemon, client, commit=True)["mode"] == "baseline"
    for n in range(1, DISTILL_AFTER_PROMPTS + 1):
        got = inject(daemon, client, prompt=True, commit=True)
        assert got["mode"] == "none" and "distill" not in got, n
    sixth = inject(daemon, client, prompt=True)  # not committed: given again on the next prompt
    assert sixth["distill"] == DISTILL and sixth["mode"] == "none" and sixth["text"] == ""
    again = inject(daemon, client, prompt=True)
    assert again["distill"] == DISTILL
    call(daemon, "memory.injected", {"client": client, "token": again["token"]})
    for _ in range(3):
        assert "distill" not in inject(daemon, client, prompt=True, commit=True)
    other = "codex:sess-10"  # a session that proposed gets no line
    propose(daemon, "Releases are cut on Tuesdays.", agent="codex", session="sess-10")
    for _ in range(DISTILL_AFTER_PROMPTS + 2):
        assert "distill" not in inject(daemon, other, prompt=True, commit=True)


def test_distill_off_gives_no_line(start_daemon: Any, tmp_path: Path) -> None:
    config = tmp_path / "mmd.toml"
    config.write_text('[nudge]\ndistill = "off"\n[agents]\nwrites = "direct"\n', encoding="utf-8")
    daemon = start_daemon("--config", str(config))
    for _ in range(DISTILL_AFTER_PROMPTS + 3):
        assert "distill" not in inject(daemon, "claude-code:x", prompt=True, commit=True)



@pytest.mark.parametrize(("text", "message"), [
    ('[nudge]\ndistill = "twice"\n', "config error: nudge.distill = 'twice': must be one of once, off"),
    ('[agents]\nwrites = "sometimes"\n', "config error: agents.writes = 'sometimes': must be one of propose, direct"),
])
def test_a_bad_agents_or_distill_value_is_refused_naming_it(tmp_path: Path, text: str, message: str) -> None:
    from mmd.core.config_file import ConfigError, agent_setting
    from mmd.daemon.config import build_config

    bad = tmp_path / "bad.toml"
    bad.write_text(text, encoding="utf-8")
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "home")}
    with pytest.raises(ConfigError) as caught:
        build_config({"config": str(bad)}, env)
    assert caught.value.message == message
    key = "nudge.distill" if "nudge" in text else "agents.writes"
    with pytest.raises(ConfigError):
        agent_setting(key, env, bad)
    assert agent_setting(key, env, None) == ("once" if key == "nudge.distill" else "propose")


async def test_a_followed_dsh_session_gets_one_distill_nudge_event_after_its_sixth_prompt(start_daemon: Any,
                                                                                          tmp_path: Path) -> None:
    import asyncio
    import json

    import jsonschema

    from tests.test_daemon_helpers import Subscriber
    from tests.test_ingest_helpers import backfilled, dsh_line, user_message
    from tests.test_schema import SCHEMAS

    def new_log(name: str) -> Path:
        folder = tmp_path / "sessions" / "--home-test-agent--" / name
        folder.mkdir(parents=True)
        header = {"type": "session", "version": 4, "id": name, "createdAt": 1791383800000, "cwd": "/home/test/agent",
                  "isSeeded": False, "delegationDepth": 0}
        log = folder / "session.v4.jsonl"
        log.write_bytes((json.dumps(header) + "\n").encode() + dsh_line(0, "turn/start", {"turn": 1}))
        return log

    quiet, proposing = new_log("dsh-quiet"), new_log("dsh-proposing")
    daemon = start_daemon("--heartbeat-ms", "200")
    await asyncio.to_thread(backfilled, daemon)  # following now: a session that grows is a live one
    sub = Subscriber(daemon.pub)
    try:
        await sub.ready()
        for n in range(1, DISTILL_AFTER_PROMPTS + 3):
            for log in (quiet, proposing):
                with open(log, "ab") as f:
                    f.write(user_message(n, f"step {n}: keep going with the refactor", f"{log.parent.name}-{n}"))
            if n == 1:
                await asyncio.to_thread(propose, daemon, "The parser keeps its state per file.", agent="dsh",
                                        session="dsh-proposing")
        _, event = await sub.wait_for(lambda t, p: t == "memory/nudge" and p["reason"] == "distill")
        assert (event["sessionId"], event["agent"], event["distill"]) == ("dsh-quiet", "dsh", DISTILL)
        assert event["source"] == str(quiet) and event["suggestedActions"][0] == DISTILL
        jsonschema.validate(event, {**SCHEMAS["events.schema.json"], "$ref": "#/$defs/memory~1nudge"})
        with open(quiet, "ab") as f:  # more prompts, then a marked line: once it is queued, they were all read
            f.write(user_message(99, "one more step", "dsh-quiet-99"))
            f.write(user_message(100, "REMEMBER: the parser's cache is per file.", "dsh-quiet-100"))
        later: list[dict[str, Any]] = []

        def queued_or_distill(topic: str, payload: dict[str, Any]) -> bool:
            if topic == "memory/nudge" and payload["reason"] == "distill":
                later.append(payload)
            return topic == "queue/added" and payload["sessionId"] == "dsh-quiet"

        await sub.wait_for(queued_or_distill)
        assert later == []  # once per session, and never for the session that proposed
    finally:
        sub.close()


def test_a_note_agents_read_comes_first_in_a_baseline_and_stays_first_after_a_restart(start_daemon: Any,
                                                                                     tmp_path: Path) -> None:
    daemon = start_daemon()
    for topic in ("old-rule", "middle", "newest"):
        write(daemon, topic, f"The text of {topic}.", summary=topic)

    def first_listed(client: str) -> str:
        text = inject(daemon, client)["text"]
        return next(line for line in text.split("\n") if line.startswith("- ")).split(":")[0][2:]

    assert first_listed("before") == "newest"
    for _ in range(3):
        assert call(daemon, "memory.read", {"topic": "old-rule"})["body"] == "The text of old-rule."
    assert first_listed("after") == "old-rule"  # three reads: three days of recency, ahead of minutes
    daemon.stop()
    again = start_daemon(root=daemon.root)
    daemon = again
    assert first_listed("after-restart") == "old-rule"  # the counts were stored at stop


async def test_a_session_end_nudge_names_the_sessions_proposals(daemon: Any) -> None:
    import asyncio

    import jsonschema

    from tests.test_daemon_helpers import Subscriber
    from tests.test_schema import SCHEMAS

    sid = call(daemon, "memory.open")["sessionId"]
    mine = propose(daemon, "Benchmarks run on the quiet machine only.", sessionId=sid, reason="noise")
    propose(daemon, "Someone else's proposal.", session="another")
    sub = Subscriber(daemon.pub)
    try:
        await sub.ready()
        await asyncio.to_thread(call, daemon, "memory.close", {"sessionId": sid})
        _, event = await sub.wait_for(lambda t, p: t == "memory/nudge" and p["reason"] == "session-end")
    finally:
        sub.close()
    assert event["sessionId"] == sid and event["proposals"] == [
        {"id": mine["id"], "status": "pending", "topic": mine["topic"],
         "summary": "Benchmarks run on the quiet machine only."}]
    jsonschema.validate(event, {**SCHEMAS["events.schema.json"], "$ref": "#/$defs/memory~1nudge"})


def test_a_proposal_accepted_once_whose_effect_is_gone_is_queued_again_and_a_rejected_one_is_not(daemon: Any) -> None:
    # The queue knows a statement by its words: an agent proposing again what was accepted once was told "accepted"
    # and nothing happened, though the note had come back (a delete) or lost the text (an append).
    write(daemon, "scratch", "Temporary notes.", summary="Scratch")
    first = propose(daemon, topic="scratch", action="delete", reason="obsolete")
    assert call(daemon, "queue.accept", {"id": first["id"]})["ok"]
    assert call(daemon, "memory.read", {"topic": "scratch"}) is None
    write(daemon, "scratch", "Temporary notes, again.", summary="Scratch")
    again = propose(daemon, topic="scratch", action="delete", reason="obsolete again")
    assert (again["status"], again["id"]) == ("queued", first["id"]), again  # the decision no longer holds
    assert again["candidate"]["status"] == "pending" and again["candidate"]["visible"]
    assert [c["id"] for c in call(daemon, "queue.list", {})["candidates"]] == [first["id"]]
    assert call(daemon, "queue.accept", {"id": again["id"]})["ok"]
    assert call(daemon, "memory.read", {"topic": "scratch"}) is None

    write(daemon, "ports", "The API listens on 8080.", summary="Ports")
    add = propose(daemon, "The admin UI listens on 9090.", topic="ports")
    assert call(daemon, "queue.accept", {"id": add["id"]})["ok"]
    assert propose(daemon, "The admin UI listens on 9090.", topic="ports")["status"] == "held"  # in the note
    write(daemon, "ports", "The API listens on 8080.", summary="Ports")  # the person took it out again
    back = propose(daemon, "The admin UI listens on 9090.", topic="ports")
    assert (back["status"], back["id"]) == ("queued", add["id"]), back

    call(daemon, "queue.reject", {"id": back["id"], "reason": "not ours"})
    no = propose(daemon, "The admin UI listens on 9090.", topic="ports")
    assert (no["status"], no["id"]) == ("rejected", add["id"])  # the person said no: it stays said


def test_queue_show_leaves_out_what_a_proposal_does_not_know_rather_than_printing_question_marks(daemon: Any) -> None:
    from tests.test_mmctl_daemon import cli

    out = propose(daemon, "Staging resets every Monday at 06:00 UTC.", reason="it wiped my data")  # no project
    code, shown, _ = cli(daemon, "queue", "show", str(out["id"]))
    (line,) = [x for x in shown.splitlines() if x.startswith("- ")]
    assert code == 0 and "?" not in line and " in " not in line.split("(")[0], shown  # a fresh user read "- ? … in ?"
    assert line.startswith(f"- {out['candidate']['evidence'][0]['at']} other assistant (session -"), line
