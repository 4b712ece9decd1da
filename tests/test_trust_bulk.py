"""Issue 29: flagged candidates are never accepted in bulk without naming them — ``mmctl queue accept 3 4 5``, RPC
``queue.accept`` with a list of ids and the page's batch each accept the unflagged ones and refuse every flagged
one with its id and why (exit 1); one named alone, or ``--flagged`` (``flagged: true``), accepts it. Real daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.test_candidates_screening import AGENT_LINES
from tests.test_daemon_helpers import sync_call
from tests.test_ingest_helpers import backfilled, call, candidates, wait_until
from tests.test_mmctl_daemon import cli
from tests.test_sources_daemon import claude_record
from tests.test_web_security import _cookie, _form
from tests.web_helpers import request

SID = "0b6c2d9e-1f3a-4c5b-9d7e-8a6f5e4d3c2b"
CWD = "/home/ana/code/kiln"
PLAIN = ("mm: the kiln build runs with make release", "mm: the staging host is kiln-staging-2",
         "mm: tests take about four minutes")


def _queued(start_daemon: Any, tmp_path: Path, *flags: str,
            cwd: str = CWD) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """A daemon whose queue holds the three plain lines a person marked and the agent's three flagged ones, said in
    a session in ``cwd`` (so proposed to its project's root): ``(daemon, plain, flagged)``."""
    path = tmp_path / "home" / ".claude" / "projects" / cwd.replace("/", "-") / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [claude_record(SID, n, "user", line, cwd) for n, line in enumerate(PLAIN)]
    lines += [claude_record(SID, 10 + n, "assistant", f"OK.\n{line}", cwd) for n, line in enumerate(AGENT_LINES)]
    path.write_bytes(b"".join(lines))
    daemon = start_daemon("--heartbeat-ms", "200", *flags)
    backfilled(daemon)
    found = wait_until(lambda: len(candidates(daemon, "pending")) == 6 and candidates(daemon, "pending"),
                       what="six candidates")
    plain = [c for c in found if not c["flags"]]
    flagged = [c for c in found if c["flags"]]
    assert len(plain) == len(flagged) == 3 and all(c["speaker"] == "agent" for c in flagged)
    return daemon, plain, flagged


def _status(daemon: Any, cid: int) -> str:
    return str(call(daemon, "queue.get", {"id": cid})["status"])


def test_a_bulk_accept_names_the_flagged_ids_instead_of_taking_them(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, plain, flagged = _queued(start_daemon, tmp_path)
    ids = [str(c["id"]) for c in (plain[0], flagged[0], plain[1], flagged[1])]
    code, out, err = cli(daemon, "queue", "accept", *ids)
    assert code == 1
    for c in flagged[:2]:
        assert f"accept {c['id']}: not accepted: it is flagged ({c['flags'][0]['kind']}:" in err
        assert f"mmctl queue accept {c['id']}) or pass --flagged" in err and _status(daemon, c["id"]) == "pending"
    assert all(_status(daemon, c["id"]) == "accepted" for c in plain[:2]) and f"accepted {plain[0]['id']}" in out
    answer = call(daemon, "queue.accept", {"id": [plain[2]["id"], flagged[2]["id"]]})
    assert not answer["ok"] and [r["ok"] for r in answer["results"]] == [True, False]
    refused = answer["results"][1]["error"]
    assert refused["code"] == "E_INVALID" and f"candidate {flagged[2]['id']} is flagged" in refused["message"]
    code, out, _ = cli(daemon, "queue", "accept", str(flagged[0]["id"]))  # named alone: taken
    assert code == 0 and _status(daemon, flagged[0]["id"]) == "accepted"
    code, _, err = cli(daemon, "queue", "accept", str(flagged[1]["id"]), str(flagged[2]["id"]), "--flagged")
    assert code == 0, err
    assert {_status(daemon, c["id"]) for c in flagged} == {"accepted"}


def test_the_pages_batch_accepts_the_unflagged_and_says_why_it_left_the_flagged(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, plain, flagged = _queued(start_daemon, tmp_path, "--http", "127.0.0.1:0")
    url = call(daemon, "daemon.status")["http"]["url"]
    cookie = _cookie(url)
    status, _, page = request(url, "/", cookie=cookie)
    assert status == 200 and page.count('class="candidate flagged"') == 3 and "said by the agent" in page
    assert page.index(f'id="cand-{plain[-1]["id"]}"') < page.index(f'id="cand-{flagged[0]["id"]}"')  # flagged last
    assert "⚑ act without asking: tells the agent to act without asking" in page
    rev = call(daemon, "memory.index")["revision"]
    batch = _form(url, cookie, action="accept", rev=rev, back="/") + "".join(
        f"&ids={c['id']}" for c in (plain[0], flagged[0]))
    origin = f"http://{urlsplit(url).netloc}"
    status, headers, _ = request(url, "/queue/batch", method="POST", cookie=cookie, origin=origin, body=batch)
    assert status == 303
    _, _, told = request(url, headers["location"], cookie=cookie)
    assert "accept: 1 of 2 done" in told and f"#{flagged[0]['id']}: candidate {flagged[0]['id']} is flagged" in told
    assert _status(daemon, plain[0]["id"]) == "accepted" and _status(daemon, flagged[0]["id"]) == "pending"


def test_an_accept_over_a_note_holding_a_persons_secret_journals_no_value_and_undo_brings_it_back(
        start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    daemon, plain, _ = _queued(start_daemon, tmp_path)
    text = "the staging db password is hunter2"
    assert cli(daemon, "write", "staging-db", "--content", text, "--allow-secret")[0] == 0
    refused = sync_call(daemon.rpc, "queue.accept", {"id": plain[0]["id"], "into": "staging-db", "project": "user"})
    assert refused["error"]["data"]["code"] == "E_SECRET"  # an accept never lets a secret through, old or new
    answer = call(daemon, "queue.accept", {"id": plain[0]["id"], "topic": "staging-db", "replace": True,
                                           "project": "user"})
    assert answer["ok"] and call(daemon, "memory.read", {"topic": "staging-db"})["body"] == plain[0]["body"]
    with sqlite3.connect(daemon.root / ".mmd" / "state.db") as db:
        assert "hunter2" not in "\n".join(db.iterdump())  # the text it replaced is named by its version
    undone = call(daemon, "queue.undo", {"id": plain[0]["id"]})
    assert undone["reverted"] == "restored" and call(daemon, "memory.read", {"topic": "staging-db"})["body"] == text


async def test_an_agent_over_mcp_sees_no_flagged_candidates_words_and_cannot_accept_one(
        start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.test_mmctl_mcp import Mcp
    from tests.test_mmctl_mcp_boundary import _agent, _project

    kiln = _project(tmp_path / "kiln")  # the agent's server runs in the project the candidates were said in
    daemon, plain, flagged = _queued(start_daemon, tmp_path, cwd=str(kiln))

    async def agent(mcp: Mcp, tools: dict[str, Any]) -> None:
        text, listed, err = await mcp.call("mem_queue_list")
        assert not err and listed is not None and "evil.example" not in text + str(listed)
        assert "never ask the user" not in text and "(flagged: override, exfiltration; its text waits for a person" \
            in text and "said by agent" in text
        text, _, err = await mcp.call("mem_queue_accept", id=flagged[0]["id"])
        assert err and f"candidate {flagged[0]['id']} is flagged" in text and "an agent cannot accept it" in text
        _, accepted, err = await mcp.call("mem_queue_accept", id=plain[0]["id"])
        assert not err and accepted is not None and accepted["ok"]

    await _agent(daemon, kiln, agent, direct=True)
    assert _status(daemon, flagged[0]["id"]) == "pending" and _status(daemon, plain[0]["id"]) == "accepted"


def test_review_shows_who_said_each_and_why_it_is_flagged_the_flagged_last(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    daemon, plain, flagged = _queued(start_daemon, tmp_path)
    done = subprocess.run([sys.executable, "-m", "mmctl", "review", "--root", str(daemon.root)],
                          input="j\n" * 6 + "q\n", env=daemon.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    cards = [c for c in done.stdout.split("\n[")[1:] if c[:1].isdigit()]  # "[3/6] #…", not the keys' prompt
    assert len(cards) == 6 and all("said by the person" in c for c in cards[:3])
    assert all("said by the agent" in c and "⚑ " in c for c in cards[3:])
    assert "⚑ fetched script: runs a script fetched from the network" in done.stdout
