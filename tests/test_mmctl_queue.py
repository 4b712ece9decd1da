"""The review queue through mmctl: ``mmctl queue list|show|accept|reject`` and the MCP queue tools.

The daemon ingests a copy of ``../shared/sessions`` (the sample DSH logs), so
the queue holds real candidates; the tests skip visibly without the samples,
or when the daemon cannot run or serves no queue.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mmctl import Client
from mmctl.cli.main import main

from .test_ingest_helpers import backfilled, copy_samples


@pytest.fixture
def queued(start_daemon, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A daemon whose review queue holds the samples' candidates and a session's hidden ones (the samples' are all
    marked on purpose, so all visible: issue 30), every one of them: the backfill is done (returning at the first
    candidate let later, higher-scored ones reorder the pages a test compared, on a loaded machine)."""
    copy_samples(tmp_path / "sessions")
    shutil.copytree(Path(__file__).parent / "fixtures" / "dsh-budget", tmp_path / "sessions", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("README.md"))
    daemon = start_daemon("--heartbeat-ms", "200")
    backfilled(daemon, timeout_s=60)
    with Client(daemon.root, env=daemon.env) as client:
        assert client.queue_list()["pending"] > 0, "no candidate reached the review queue"
    return daemon


def backfilled_candidates(daemon: Any) -> list[dict[str, Any]]:
    """The visible pending candidates once the backfill is done (highest score first)."""
    backfilled(daemon)
    return list(json.loads(cli(daemon, "queue", "list", "--json")[1])["candidates"])


def cli(daemon: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--root", str(daemon.root)], env=dict(daemon.env), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_queue_list_shows_an_aligned_table_and_json_pages(queued, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "140")
    code, out, _ = cli(queued, "queue", "list", "--limit", "3")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("3 of ") and "pending" in lines[0]
    assert lines[2].split() == ["id", "score", "seen", "kind", "by", "root", "topic", "summary"]
    page = json.loads(cli(queued, "queue", "list", "--json", "--limit", "3")[1])
    assert [line.split()[4] for line in lines[3:6]] == [c["speaker"] for c in page["candidates"]]  # who said each
    # 80 columns: each summary on a line of its own under its row, readable, not cut to a dozen characters
    monkeypatch.setenv("COLUMNS", "80")
    lines = cli(queued, "queue", "list", "--limit", "3")[1].splitlines()
    assert lines[2].split() == ["id", "score", "seen", "kind", "by", "root", "topic", "(summary", "below)"]
    assert all(len(line) <= 80 for line in lines[2:9])
    for k, cand in enumerate(page["candidates"]):
        assert lines[3 + 2 * k].split()[0] == str(cand["id"])
        assert lines[4 + 2 * k].startswith("    " + " ".join(cand["summary"].split())[:40])
    page = json.loads(cli(queued, "queue", "list", "--json", "--limit", "2", "--offset", "1")[1])
    assert (len(page["candidates"]), page["offset"], page["limit"]) == (2, 1, 2)


def test_show_accept_and_reject_decide_candidates(queued) -> None:  # type: ignore[no-untyped-def]
    page = json.loads(cli(queued, "queue", "list", "--json")[1])
    first, second = page["candidates"][:2]
    code, out, _ = cli(queued, "queue", "show", str(first["id"]))
    assert code == 0 and f"\n{first['body']}\n\nseen " in out and "status" in out  # the body, then the evidence
    # where it was seen: a DSH log's own seq (the record holding the quote), never a bare number after a colon
    ev = first["evidence"][0]
    found = re.search(rf"{re.escape(ev['file'])}, seq (\d+)\)", out)
    assert found, out
    records = [json.loads(line) for line in Path(ev["file"]).read_text(encoding="utf-8").splitlines()]
    (record,) = [r for r in records if r.get("seq") == int(found.group(1))]
    assert " ".join(ev["quote"].split())[:30] in json.dumps(record, ensure_ascii=False)
    code, out, _ = cli(queued, "queue", "accept", "--user", str(first["id"]), "--topic", "from-queue")
    assert (code, out) == (0, f"accepted {first['id']}: created mm://local/from-queue\n")
    assert cli(queued, "read", "from-queue", "--json")[1] and json.loads(
        cli(queued, "read", "from-queue", "--json")[1])["body"] == first["body"]
    code, out, _ = cli(queued, "queue", "reject", str(second["id"]), "--reason", "not durable", "--json")
    assert code == 0 and json.loads(out)["candidate"]["status"] == "rejected"
    code, _, err = cli(queued, "queue", "accept", "--user", str(second["id"]))
    assert code == 1 and "already rejected" in err
    code, out, err = cli(queued, "queue", "reject", str(second["id"]), "99999")  # as accept: exit 1, said so
    assert (code, out) == (1, "") and err.splitlines() == [
        f"mmctl: reject {second['id']}: candidate {second['id']} is already rejected; nothing changed",
        "mmctl: reject 99999: no candidate 99999 in the review queue"]
    code, out, _ = cli(queued, "queue", "reject", str(second["id"]), "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "E_DECIDED"
    code, _, err = cli(queued, "queue", "show", "99999")
    assert code == 1 and "no candidate 99999" in err


def _table(lines: list[str]) -> list[list[str]]:
    """The rows of a ``queue list`` table (after its head, blank line and header), split at spaces."""
    return [line.split() for line in lines[3:] if line[:1].isdigit()]


def test_a_list_with_hidden_or_decided_candidates_says_which_in_a_state_column(queued,  # type: ignore[no-untyped-def]
                                                                                   monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    first, second = json.loads(cli(queued, "queue", "list", "--json")[1])["candidates"][:2]
    assert cli(queued, "queue", "accept", "--user", str(first["id"]), "--topic", "from-queue")[0] == 0
    assert cli(queued, "queue", "reject", str(second["id"]))[0] == 0
    lines = cli(queued, "queue", "list", "--status", "all")[1].splitlines()
    assert lines[2].split()[:4] == ["id", "score", "seen", "state"]
    state = {row[0]: row[3] for row in _table(lines)}
    assert state[str(first["id"])] == "accepted→from-queue" and state[str(second["id"])] == "rejected"
    hidden = [c for c in json.loads(cli(queued, "queue", "list", "--all", "--json")[1])["candidates"]
              if not c["visible"]]
    # a decided candidate is listed with its status whether or not the budget hid it while pending
    assert cli(queued, "queue", "reject", str(hidden[-1]["id"]))[0] == 0
    rejected = json.loads(cli(queued, "queue", "list", "--status", "rejected", "--json")[1])
    assert {c["id"] for c in rejected["candidates"]} == {second["id"], hidden[-1]["id"]} and rejected["total"] == 2
    hidden = hidden[:-1]
    rows = {row[0]: row for row in _table(cli(queued, "queue", "list", "--all")[1].splitlines())}
    assert hidden and all(rows[str(c["id"])][3] == "hidden" for c in hidden)
    plain = cli(queued, "queue", "list")[1].splitlines()  # only pending ones on show: no state column
    assert plain[2].split() == ["id", "score", "seen", "kind", "by", "root", "topic", "summary"]


def test_show_numbers_a_line_as_editors_do() -> None:
    from mmctl.cli.queue import _show

    evidence = [{"agent": "codex", "who": "human", "file": "/l/r.jsonl", "position": {"file": "/l/r.jsonl", "line": 0}},
                {"agent": "dsh", "who": "human", "file": "/l/s.jsonl", "position": {"file": "/l/s.jsonl", "line": 9,
                                                                                   "seq": 8}}]
    out = _show({"id": 1, "body": "b", "evidence": evidence})
    assert "/l/r.jsonl, line 1)" in out and "/l/s.jsonl, line 10, seq 8)" in out, out


def test_an_over_budget_accept_keeps_the_candidate_pending_and_exits_1(queued) -> None:  # type: ignore[no-untyped-def]
    cid = json.loads(cli(queued, "queue", "list", "--json")[1])["candidates"][0]["id"]
    code, out, err = cli(queued, "queue", "accept", "--user", str(cid), "--content", "x" * 5000)
    assert code == 1 and out == "" and err.startswith(f"mmctl: not accepted {cid}: content exceeds its write budget")
    assert "(5000/4000 chars)" in err and "shorter --content" in err
    assert json.loads(cli(queued, "queue", "show", str(cid), "--json")[1])["status"] == "pending"


def test_an_accept_the_full_index_refuses_names_the_id_its_figures_and_into(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon("--index-lines", "24")  # room for two entries
    ids = [str(c["id"]) for c in backfilled_candidates(daemon)[:3]]
    code, out, err = cli(daemon, "queue", "accept", "--user", *ids)
    assert code == 1 and len(out.splitlines()) == 2 and out.startswith(f"accepted {ids[0]}: created mm://")
    assert err.startswith(f"mmctl: not accepted {ids[2]}: the MEMORY.md index exceeds its hard limit"), err
    assert "would have 29/24 lines" in err and "--into TOPIC" in err and "mmctl merge" in err
    assert "see usage" not in err  # the reference's pointer at --json's usage: the figures are on the line
    assert "chars)" not in err and "shorter --content" not in err  # not the write budget's figures or fix
    first = json.loads(cli(daemon, "queue", "show", ids[0], "--json")[1])["written"]["topic"]
    code, out, _ = cli(daemon, "queue", "accept", "--user", ids[2], "--into", first)
    assert code == 0 and out.startswith(f"accepted {ids[2]}: "), out


async def test_the_mcp_queue_tools_list_the_user_roots_candidates_and_decide_nothing(queued) -> None:  # type: ignore[no-untyped-def]
    # a server outside any project sees the user root's candidates alone, never a project's (the samples' are the
    # projects their sessions ran in); under writes = "propose" (the default) it accepts and rejects nothing: a person
    # decides (deciding in scope under "direct": tests/test_mmctl_mcp_boundary.py)
    from mcp import ClientSession, StdioServerParameters, stdio_client  # here: ~1 s of CPU, not at collection
    params = StdioServerParameters(command=sys.executable, args=["-m", "mmctl", "mcp", "--root", str(queued.root)],
                                   env=dict(queued.env))
    with Client(queued.root, env=queued.env) as client:
        users = client.queue_list(project="user", all=True, limit=100)["candidates"]
        others = [c for c in client.queue_list(all=True, limit=100)["candidates"] if c["scope"] != "user"]
    assert others, "the samples' candidates are their projects'"
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert not tools & {"mem_queue_accept", "mem_queue_reject"}
            everything = await session.call_tool("mem_queue_list", {"all": True, "limit": 100})
            assert not everything.is_error and everything.structured_content is not None
            listed = everything.structured_content["candidates"]
            assert [c["id"] for c in listed] == [c["id"] for c in users]
            text = everything.content[0].text  # type: ignore[union-attr]
            for each in listed:  # the summary, then the body unless it is the same text
                assert each["body"].strip() in text
            assert not any(c["body"].strip() in text for c in others if len(c["body"].strip()) > 40)
            for tool in ("mem_queue_accept", "mem_queue_reject"):
                refused = await session.call_tool(tool, {"id": str(others[0]["id"])})
                assert refused.is_error and "a person decides" in refused.content[0].text  # type: ignore[union-attr]
    with Client(queued.root, env=queued.env) as client:
        assert client.queue_get(others[0]["id"])["status"] == "pending"


def test_accept_with_replace_overwrites_and_without_says_how(queued) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(queued, "queue", "list", "--json")
    first = json.loads(out)["candidates"][0]
    assert cli(queued, "write", first["topic"], "--content", "mine")[0] == 0
    code, _, err = cli(queued, "queue", "accept", "--user", str(first["id"]))
    assert code == 1 and err == (f"mmctl: accept {first['id']}: mm://local/{first['topic']} already has a note; "
                                 "accept with --replace to overwrite it, --into T to append to a note, or "
                                 "--topic T to write elsewhere\n")
    code, out, _ = cli(queued, "queue", "accept", "--user", str(first["id"]), "--replace")
    assert code == 0 and out.startswith(f"accepted {first['id']}: updated")


def test_list_filters_show_evidence_accept_into_reject_below_and_merge(queued) -> None:  # type: ignore[no-untyped-def]
    backfilled(queued)
    visible = json.loads(cli(queued, "queue", "list", "--json")[1])
    everything = json.loads(cli(queued, "queue", "list", "--all", "--json")[1])
    assert visible["total"] < everything["total"] == everything["pending"]
    assert all(c["visible"] for c in visible["candidates"]) and not all(c["visible"] for c in everything["candidates"])
    high = json.loads(cli(queued, "queue", "list", "--min-score", "1.5", "--json")[1])["candidates"]
    assert high and all(c["score"] >= 1.5 for c in high)
    payments = json.loads(cli(queued, "queue", "list", "--all", "--project", "/home/dev/work/payments-api",
                              "--json")[1])["candidates"]
    assert payments and all(any(e["project"] == "/home/dev/work/payments-api" for e in c["evidence"])
                            for c in payments)
    # the project as the table shows it (its last folder) or with a trailing slash finds the same
    for named in ("payments-api", "/home/dev/work/payments-api/"):
        assert json.loads(cli(queued, "queue", "list", "--all", "--project", named, "--json")[1])["candidates"] \
            == payments
    assert json.loads(cli(queued, "queue", "list", "--all", "--project", "api", "--json")[1])["total"] == 0
    # a long name as the table cuts it ("payments-a…") names the folders starting so
    assert json.loads(cli(queued, "queue", "list", "--all", "--project", "payments-a…", "--json")[1])["candidates"] \
        == payments
    assert json.loads(cli(queued, "queue", "list", "--all", "--project", "api…", "--json")[1])["total"] == 0
    # a folder above the project finds it too: a session started in a subfolder of the repository belongs to it
    for above in ("/home/dev/work", "/home/dev/work/", "work"):
        assert json.loads(cli(queued, "queue", "list", "--all", "--project", above, "--json")[1])["candidates"] \
            == payments, above
    assert json.loads(cli(queued, "queue", "list", "--agent", "codex", "--json")[1])["total"] == 0
    sid = everything["candidates"][-1]["source"]["sessionId"]  # one session's candidates, hidden ones with --all
    of_session = json.loads(cli(queued, "queue", "list", "--all", "--session", sid, "--json")[1])["candidates"]
    assert of_session == [c for c in everything["candidates"] if c["source"]["sessionId"] == sid]
    assert json.loads(cli(queued, "queue", "list", "--session", "no-such-session", "--json")[1])["total"] == 0
    code, _, err = cli(queued, "queue", "list", "--min-score", "high")
    assert code == 2 and "expects a number" in err
    code, _, err = cli(queued, "queue", "list", "--agent", "claude")  # a misspelt agent is not "0 of 0"
    assert code == 2 and "invalid choice: 'claude'" in err and "'claude-code'" in err
    # show prints where it was seen
    first, second, third = visible["candidates"][:3]
    code, out, _ = cli(queued, "queue", "show", str(first["id"]))
    ev = first["evidence"][0]
    assert code == 0 and f"seen {first['seen']} time(s):" in out and f"> {ev['quote']}" in out
    assert ev["sessionId"] in out
    # accept into a note: appended under the budget; then merge two notes into one
    assert cli(queued, "write", "house-rules", "--content", "Rules of the house.")[0] == 0
    code, out, err = cli(queued, "queue", "accept", "--user", str(first["id"]), "--into", "house-rule")  # a typo
    assert (code, out) == (1, "") and err == (
        f"mmctl: accept {first['id']}: there is no note house-rule to append to; `mmctl list` shows the notes, "
        "--topic house-rule (no --into) creates it\n")
    code, out, _ = cli(queued, "queue", "accept", "--user", str(first["id"]), "--into", "house-rules")
    assert (code, out) == (0, f"accepted {first['id']}: updated mm://local/house-rules\n")
    note = json.loads(cli(queued, "read", "house-rules", "--json")[1])
    assert note["body"] == f"Rules of the house.\n\n{first['body']}" and note["summary"] == ""  # summary kept
    fourth = next(c for c in everything["candidates"] if c["status"] == "pending" and c["score"] >= 0.6
                  and c["id"] not in {first["id"], second["id"], third["id"]})
    code, out, _ = cli(queued, "queue", "accept", "--user", str(fourth["id"]), "--into", "house-rules", "--summary",
                       "House rules: tests, deploys")  # an append may retitle the note it grows
    note = json.loads(cli(queued, "read", "house-rules", "--json")[1])
    assert code == 0 and note["summary"] == "House rules: tests, deploys" and note["body"].endswith(fourth["body"])
    body = note["body"]
    assert cli(queued, "queue", "accept", "--user", str(second["id"]), "--topic", "second-rule")[0] == 0
    code, out, _ = cli(queued, "merge", "second-rule", "--into", "house-rules", "--summary",
                       "Rules of the house, merged")
    assert (code, out) == (0, "merged second-rule into house-rules (updated)\n")
    listed = json.loads(cli(queued, "list", "--json")[1])["notes"]
    assert [n["summary"] for n in listed if n["topic"] == "house-rules"] == ["Rules of the house, merged"]
    assert json.loads(cli(queued, "read", "second-rule", "--json")[1])["found"] is False
    merged = json.loads(cli(queued, "read", "house-rules", "--json")[1])["body"]
    assert merged == f"{body}\n\n{second['body']}"
    code, _, err = cli(queued, "merge", "no-such-note", "--into", "house-rules")
    assert code == 1 and "no note to merge: no-such-note" in err
    # reject below a score: each reported; nothing pending below it stays
    low = [c for c in everything["candidates"] if float(f"{c['score']:.2f}") < 0.6 and c["status"] == "pending"]
    # a dry run first: the same candidates listed, none rejected
    pending = json.loads(cli(queued, "queue", "list", "--json")[1])["pending"]
    code, out, _ = cli(queued, "queue", "reject", "--below", "0.6", "--dry-run", "--json")
    assert code == 0 and sorted(c["id"] for c in json.loads(out)["candidates"]) == sorted(c["id"] for c in low)
    code, out, _ = cli(queued, "queue", "reject", "--below", "0.6", "--dry-run")
    assert code == 0 and out.startswith(f"--below 0.6 would reject {len(low)} candidate(s); nothing is rejected yet:")
    assert all(f"\n{c['id']} " in out for c in low)
    assert json.loads(cli(queued, "queue", "list", "--json")[1])["pending"] == pending
    assert cli(queued, "queue", "reject", str(low[0]["id"]), "--dry-run")[0] == 2
    code, out, _ = cli(queued, "queue", "reject", "--below", "0.6")
    assert code == 0 and out.splitlines() == [f"rejected {c['id']}" for c in sorted(low, key=lambda c: c["id"])]
    rest = json.loads(cli(queued, "queue", "list", "--all", "--json")[1])["candidates"]
    assert rest and all(float(f"{c['score']:.2f}") >= 0.6 for c in rest)
    code, out, _ = cli(queued, "queue", "reject", str(third["id"]), "99999")
    assert code == 1 and out == f"rejected {third['id']}\n"


def test_the_queue_list_head_says_what_is_hidden_and_how_to_page_on() -> None:
    """A fresh user read '92 of 92 pending candidate(s), 367 pending' as a contradiction."""
    from mmctl.cli.queue import _queue_head

    assert _queue_head(92, 92, 367, "pending", 0) == (
        "92 of 92 pending candidate(s) (275 more hidden by their session's budget: --all lists them)")
    assert _queue_head(100, 367, 367, "pending", 0) == (
        "100 of 367 pending candidate(s); --offset 100 lists the next ones")
    assert _queue_head(3, 3, 10, "rejected", 0) == "3 of 3 rejected candidate(s); 10 pending"
    # a filtered list (--project, --agent, --min-score, --all): the rest were filtered out, not hidden
    assert _queue_head(2, 2, 177, "pending", 0, filtered=True) == "2 of 2 pending candidate(s)"



def test_deciding_every_candidate_on_show_empties_the_queue_and_the_list_says_what_was_left_out(
        queued) -> None:  # type: ignore[no-untyped-def]
    """Issue 30: `queue reject` of 82 ids answered "shown in their place: …" and the list stayed as long."""
    backfilled(queued)
    everything = json.loads(cli(queued, "queue", "list", "--all", "--json")[1])["candidates"]
    shown = [str(c["id"]) for c in everything if c["visible"]]
    hidden = sum(1 for c in everything if not c["visible"])
    assert shown and hidden, everything
    code, out, _ = cli(queued, "queue", "reject", *shown[:-1])
    assert code == 0 and out.splitlines() == [f"rejected {cid}" for cid in shown[:-1]]  # one is left: nothing said
    code, out, _ = cli(queued, "queue", "reject", shown[-1])
    assert code == 0 and out == f"rejected {shown[-1]}\nthe review queue is empty: nothing left on show\n"
    code, out, _ = cli(queued, "queue", "list")
    assert (code, out) == (0, f"no pending candidate on show: the review queue is empty ({hidden} more hidden by "
                              "their session's budget: --all lists them)\n")
    page = json.loads(cli(queued, "queue", "list", "--json")[1])
    assert (page["candidates"], page["total"], page["expireDays"]) == ([], 0, 30)
    assert page["leftOut"] == {"hidden": hidden, "expired": 0, "heldBack": 0}
    code, out, _ = cli(queued, "queue", "reject", shown[0])  # nothing decided: nothing said about the queue
    assert code == 1 and "empty" not in out


def test_the_queue_list_head_says_why_candidates_were_left_out() -> None:
    from mmctl.cli.queue import _queue_head

    left = {"hidden": 4, "expired": 3, "heldBack": 120}
    assert _queue_head(0, 0, 7, "pending", 0, left=left, days=30) == (
        "no pending candidate on show: the review queue is empty (4 more hidden by their session's budget: --all "
        "lists them; 123 expired (120 held back by the first backfill, 3 pending over 30 days): --status expired "
        "lists them, `mmctl queue undo ID` brings one back)")
    # --all lists the hidden ones: only the expired ones are left out
    assert _queue_head(4, 4, 7, "pending", 0, filtered=True, left={**left, "heldBack": 0}, days=14) == (
        "4 of 4 pending candidate(s) (3 expired (3 pending over 14 days): --status expired lists them, "
        "`mmctl queue undo ID` brings one back)")
    assert _queue_head(2, 2, 7, "pending", 0, left={"hidden": 0, "expired": 0, "heldBack": 0}) == (
        "2 of 2 pending candidate(s)")
    assert _queue_head(0, 0, 7, "pending", 0, filtered=True, left=left).startswith("no pending candidate matches (")
