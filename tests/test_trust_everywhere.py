"""Issue 29 "Done when", on one real daemon (``--git`` with a remote, ``--http``, an ``[export]`` file, ingestion of a
real Claude Code transcript): every kind of secret a person pastes, the agent's three instruction lines and hidden
text go through every surface — the queue (``queue.list``, ``mmctl queue show``, ``queue list``), the page's HTML,
``state.db`` dumped, every event (the session-end nudge to every subscriber included), the daemon's log, then, once
each candidate is accepted, the notes, ``MEMORY.md``, topic names, git commits and the remote, a hook's output and
the export — and no value, no hidden character appears raw anywhere; the agent's lines are labelled the agent's
and flagged; a person's ``--allow-secret`` write is kept, recorded, and still never reaches a hook or an export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.test_candidates_screening import AGENT_LINES, TAGS
from tests.test_daemon_helpers import Subscriber
from tests.test_git_daemon import mmctl_sync
from tests.test_git_helpers import bare_remote, git, isolate_git
from tests.test_ingest_helpers import call, wait_until
from tests.test_mmctl_daemon import cli
from tests.test_screen_secrets import SECRETS
from tests.test_sources_daemon import claude_record
from tests.test_trust_holds import hook_output
from tests.web_helpers import request

pytestmark = pytest.mark.timeout(240)

SID = "7d3b1f2e-4c5a-4b6d-8e9f-0a1b2c3d4e5f"
CWD = "/home/ana/code/shop"
PASTED = [(kind, template, value) for kind, template, value in SECRETS if "\n" not in value]
"""The secrets a person pastes on a line of their own (the private key block is the allowed write below)."""
PRIVATE = next(value for kind, _, value in SECRETS if kind == "private key")
HIDDEN = ("\u202e", "\u200b", TAGS[0])


def _transcript(home: Path) -> Path:
    """A live Claude Code transcript, its first prompt only (the rest is :func:`_session`)."""
    path = home / ".claude" / "projects" / CWD.replace("/", "-") / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_record(SID, 0, "user", "hello, let us set up the shop's deploys", CWD))
    return path


def _session(path: Path) -> None:
    """The session goes on: the person's ``mm:`` lines, each holding a secret, then the agent's replies marking the
    issue's three lines, a plain fact, and a line carrying hidden text."""
    lines = [claude_record(SID, 1 + n, "user", f"mm: {template.format(value)}" if not template.startswith("mm:")
                           else template.format(value), CWD) for n, (_, template, value) in enumerate(PASTED)]
    n = 1 + len(lines)
    said = [*AGENT_LINES, "mm: the API listens on port 8080", f"mm: ship with make\u200b release\u202e {TAGS}"]
    lines += [claude_record(SID, n + i, "assistant", f"Sure.\n{line}", CWD) for i, line in enumerate(said)]
    with open(path, "ab") as f:
        f.write(b"".join(lines))


def _raw(text: str, values: list[str]) -> list[str]:
    """What of ``values`` and of the hidden characters ``text`` holds (as is, or as JSON escapes it)."""
    found = [v for v in values if v in text or json.dumps(v)[1:-1] in text]
    found += [f"U+{ord(h):04X}" for h in HIDDEN if h in text or json.dumps(h)[1:-1] in text]
    return found


def _dump(root: Path) -> str:
    with sqlite3.connect(root / ".mmd" / "state.db") as db:
        return "\n".join(db.iterdump())


async def test_no_secret_or_hidden_character_reaches_any_surface_and_the_agents_lines_are_flagged(  # noqa: PLR0915
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    agents_md = tmp_path / "AGENTS.md"
    agents_md.write_text("# Agents\n")
    values = [value for _, _, value in PASTED]
    transcript = _transcript(tmp_path / "home")
    daemon = start_daemon("--git", "--http", "127.0.0.1:0", "--heartbeat-ms", "200", "--session-idle-seconds", "1",
                          "--export-file", str(agents_md))
    git(daemon.root, "remote", "add", "origin", str(remote))
    sub = Subscriber(daemon.pub)
    events: list[tuple[str, dict[str, Any]]] = []
    try:
        await sub.ready()
        wait_until(lambda: call(daemon, "daemon.status")["ingest"]["filesTracked"] == 1, what="the transcript read")
        _session(transcript)

        def seen(topic: str, payload: dict[str, Any]) -> bool:
            events.append((topic, payload))
            return topic == "memory/nudge" and payload.get("reason") == "session-end"

        _, nudge = await sub.wait_for(seen, timeout_s=60)
    finally:
        sub.close()
    page = call(daemon, "queue.list", {"all": True, "limit": 1000})
    cands = page["candidates"]
    assert len(cands) == len(PASTED) + 5 and nudge["sessionId"] == SID
    # --- who said it, and what it asks
    agents = [c for c in cands if c["speaker"] == "agent"]
    assert len(agents) == 5 and all(not c["pinned"] and c["rule"] == "agent.propose" for c in agents)
    flagged = {c["body"]: {f["kind"] for f in c["flags"]} for c in agents}
    assert flagged[AGENT_LINES[0].split(": ", 1)[1]] == {"override", "exfiltration"}
    assert flagged[AGENT_LINES[1].split(": ", 1)[1]] == {"fetched script"}
    assert flagged[AGENT_LINES[2].split(": ", 1)[1]] == {"act without asking"}
    assert flagged["the API listens on port 8080"] == set()
    persons = [c for c in cands if c["speaker"] == "person"]
    assert len(persons) == len(PASTED) and all(c["redacted"] and c["flags"][0]["kind"] == "secret" for c in persons)
    assert [bool(c["flags"]) for c in page["candidates"] if c["visible"]][-1]  # flagged ones listed last
    # --- no value anywhere the queue shows or keeps it
    assert _raw(json.dumps(page, ensure_ascii=False), values) == []
    assert _raw(json.dumps(events, ensure_ascii=False), values) == []
    assert "(flagged: " in json.dumps(nudge)  # the nudge names a flagged one by its kinds, never its words
    for c in cands:
        code, out, _ = cli(daemon, "queue", "show", str(c["id"]))
        assert code == 0 and _raw(out, values) == [] and f"speaker     {c['speaker']}" in out
    code, listed, _ = cli(daemon, "queue", "list", "--all")
    assert code == 0 and _raw(listed, values) == [] and "⚑ override: asks the agent" in listed
    url = call(daemon, "daemon.status")["http"]["url"]
    token = url.split("token=")[1]
    for path in ["/", *(f"/queue/{c['id']}" for c in cands)]:
        status, _, html = request(url, f"{path}?token={token}")
        assert status == 200 and _raw(html, values) == [], path
    status, _, html = request(url, f"/?token={token}&all=1")
    assert "said by the agent" in html and "⚑ fetched script" in html
    assert _raw(_dump(daemon.root), values) == []
    # --- accepted one by one (a bulk accept takes no flagged one): each writes the redacted form
    bulk = call(daemon, "queue.accept", {"id": [c["id"] for c in persons[:3]]})
    assert not bulk["ok"] and all(not r["ok"] and "flagged" in r["error"]["message"] for r in bulk["results"])
    for c in cands:
        answer = call(daemon, "queue.accept", {"id": c["id"]})
        if not answer["ok"]:  # a topic another candidate took first: appended to its note
            answer = call(daemon, "queue.accept", {"id": c["id"], "into": c["topic"]})
        assert answer["ok"], answer
    scopes = {c["scope"] for c in cands}
    notes = [n for scope in scopes for n in call(daemon, "memory.list", {"project": scope})["notes"]]
    assert len(notes) >= len(PASTED) and _raw(json.dumps(notes, ensure_ascii=False), values) == []
    files = [*daemon.root.rglob("MEMORY.md"), *daemon.root.rglob("memories/*.md")]
    assert len(files) > len(PASTED) and all(_raw(p.read_text(), values) == [] for p in files)
    topics = " ".join(n["topic"] for n in notes)
    assert _raw(topics, [v.lower() for v in values] + ["hunter2", "akia4xkq7rzp2mbn6twd"]) == [], topics
    assert "‹secret: password›" in json.dumps(notes, ensure_ascii=False)
    assert mmctl_sync(daemon)["pushed"]
    history = git(daemon.root, "log", "-p", "--all") + git(remote, "log", "-p", "--all")
    assert "staging" in history and _raw(history, values) == []
    # --- a person's own secret: kept as allowed, recorded, never in a hook's output or an export
    code, _, err = cli(daemon, "write", "deploy-key", "--content", f"the deploy key:\n{PRIVATE}", "--allow-secret")
    assert code == 0 and "private key" in err and PRIVATE not in err
    assert PRIVATE in (daemon.root / "memories" / "deploy-key.md").read_text()
    journal = [r for r in _dump(daemon.root).splitlines() if "memory.allowed" in r]
    assert journal and "private key" in journal[-1] and "b3BlbnNzaC1rZXktdjEAAAAA" not in journal[-1]
    said = hook_output(daemon, tmp_path / "elsewhere")
    assert "deploy-key" in said and _raw(said, [*values, "b3BlbnNzaC1rZXktdjEAAAAA"]) == []
    wait_until(lambda: "deploy-key" in agents_md.read_text(), what="the export")
    assert _raw(agents_md.read_text(), [*values, "b3BlbnNzaC1rZXktdjEAAAAA"]) == []
    assert _raw(daemon.stderr(), values) == []
