"""The agent proposes, the person decides, end to end (issue 28): a scripted Claude Code session and a scripted Codex
session through a real daemon, the real hook commands (``mmctl inject --format claude-hook|codex-hook`` run as the
agent runs them, its JSON on stdin), a transcript appended as each agent writes it, and the real MCP server.

Each session: ``SessionStart`` gives the guide and a note's text; the sixth prompt (after five without a proposal)
carries the distillation line, once; an ``mm:`` line in a reply and a ``mem_propose`` call each become one visible
proposal attributed to the agent; an MCP ``mem_write`` over a curated note leaves its file byte for byte as it was and
queues a proposal whose review shows the difference; a person accepting it (``mmctl queue accept``) changes the note,
and the next prompt's delta carries the new text. Every hook output validates against the agent's published schema.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mmd.inject.guide import DISTILL, DISTILL_AFTER_PROMPTS, agent_guide
from tests.test_hook_outputs import context, valid
from tests.test_ingest_helpers import wait_until
from tests.test_inject_daemon import call
from tests.test_mmctl_daemon import cli

if TYPE_CHECKING:
    from mcp import ClientSession

HOOK_GUARD_S = 60.0
"""Bounds a hung hook process only (a hook answers within about 1 s: ``bench/hook_bench.py``)."""
CURATED = "## How we deploy\n" + "".join(f"- step {i}: a curated line the person wrote about deploys.\n"
                                           for i in range(24))


class Transcript:
    """An agent's session log as the agent writes it: one JSON line per record, appended."""

    def __init__(self, agent: str, folder: Path, session_id: str, cwd: Path) -> None:
        self.agent, self.session_id, self.cwd = agent, session_id, str(cwd)
        self.at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        if agent == "claude-code":
            self.path = folder / "-".join(["", *cwd.parts[1:]]) / f"{session_id}.jsonl"
        else:
            self.path = folder / "2026" / "03" / "02" / f"rollout-2026-03-02T09-00-00-{session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.n = 0
        if agent == "codex":
            self._write({"type": "session_meta", "payload": {"id": session_id, "timestamp": self._time(),
                                                             "cwd": self.cwd, "originator": "codex_cli_rs",
                                                             "cli_version": "0.104.0", "source": "cli"}})

    def _time(self) -> str:
        self.at += timedelta(seconds=5)
        return self.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _write(self, record: dict[str, Any]) -> None:
        if self.agent == "codex":
            record = {"timestamp": self._time(), **record}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def said(self, who: str, text: str) -> None:
        """Append one message of the person (``user``) or the agent (``assistant``)."""
        self.n += 1
        if self.agent == "claude-code":
            content: Any = text if who == "user" else [{"type": "text", "text": text}]
            self._write({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                         "sessionId": self.session_id, "version": "2.1.50", "type": who, "uuid": f"u-{self.n}",
                         "timestamp": self._time(), "message": {"role": who, "content": content}})
            return
        kind = "input_text" if who == "user" else "output_text"
        self._write({"type": "response_item", "payload": {"type": "message", "role": who,
                                                          "content": [{"type": kind, "text": text}]}})


class Agent:
    """One scripted session of ``agent`` (``claude-code`` | ``codex``): its hooks, its transcript, its MCP server."""

    def __init__(self, daemon: Any, agent: str, transcript: Transcript) -> None:
        self.daemon, self.agent, self.log = daemon, agent, transcript
        self.form = "claude-hook" if agent == "claude-code" else "codex-hook"

    def hook(self, event: str, env: dict[str, str] | None = None, **extra: Any) -> dict[str, Any] | None:
        """Run the installed hook command as the agent does; its parsed output (None for nothing), validated."""
        payload = {"session_id": self.log.session_id, "transcript_path": str(self.log.path), "cwd": self.log.cwd,
                   "hook_event_name": event, "permission_mode": "default", **extra}
        patient = {**self.daemon.env, "MMCTL_HOOK_BUDGET_MS": "30000"}  # a loaded machine can take over 1 s
        done = subprocess.run([sys.executable, "-m", "mmctl", "inject", "--format", self.form, "--root",
                               str(self.daemon.root)], input=json.dumps(payload).encode(),
                              env=env or patient, capture_output=True, timeout=HOOK_GUARD_S, cwd=self.log.cwd)
        assert done.returncode == 0, done.stderr
        out = done.stdout.decode()
        return valid(self.form, event, out) if out else None

    def prompt(self, text: str) -> str:
        """The person types ``text``: the prompt hook runs, then the agent logs the prompt; the context it added."""
        said = self.hook("UserPromptSubmit", prompt=text)
        self.log.said("user", text)
        return context(said) if said else ""


def proposals(daemon: Any, agent: str) -> list[dict[str, Any]]:
    return [c for c in call(daemon, "queue.list", {"limit": 1000})["candidates"]
            if c["rule"] == "agent.propose" and c["proposal"]["by"] == agent]


async def mcp_session(daemon: Any, cwd: str, client_name: str, test: Callable[[ClientSession], Any]) -> None:
    from mcp import ClientSession, StdioServerParameters  # here: ~1 s of CPU, not at collection
    from mcp.client.stdio import stdio_client
    from mcp.types import Implementation
    params = StdioServerParameters(command=sys.executable, args=["-m", "mmctl", "mcp", "--root", str(daemon.root)],
                                   env=daemon.env, cwd=cwd)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write, client_info=Implementation(name=client_name, version="1.0")) as session:
            init = await session.initialize()
            assert init.instructions is not None and init.instructions.startswith(agent_guide())
            await test(session)


def tool_text(result: Any) -> str:
    assert not result.is_error, result.content
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@pytest.mark.parametrize(("agent", "client_name"), [("claude-code", "claude-code"), ("codex", "codex-mcp-client")])
async def test_a_scripted_session_proposes_and_the_person_decides(start_daemon: Any, tmp_path: Path, agent: str,
                                                                  client_name: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    logs = {"claude-code": tmp_path / "agent-home" / ".claude" / "projects",
            "codex": tmp_path / "agent-home" / ".codex" / "sessions"}
    for folder in logs.values():
        folder.mkdir(parents=True)
    daemon = start_daemon("--heartbeat-ms", "200", "--source", f"claude-code={logs['claude-code']}",
                          "--source", f"codex={logs['codex']}")
    assert cli(daemon, "write", "ui-tests", "--content", "Don't use playwright: the CI has no browsers.",
               "--summary", "UI tests", "--user")[0] == 0
    assert cli(daemon, "write", "deploys", "--content", CURATED, "--summary", "How we deploy", "--user")[0] == 0
    note = daemon.root / "memories" / "deploys.md"
    curated_bytes = note.read_bytes()
    sid = {"claude-code": "9f0c2d4e-1b2a-4c3d-8e9f-0a1b2c3d4e5f", "codex": "0199a213-81c0-7800-8aa1-bbab2a035a53"}
    session = Agent(daemon, agent, Transcript(agent, logs[agent], sid[agent], work))

    # session start: the guide, then the notes with their text (a person's rule reaches the model)
    start = session.hook("SessionStart", source="startup", model="m")
    assert start is not None
    said = context(start)
    assert said.startswith(agent_guide() + "\n\n") and "  Don't use playwright: the CI has no browsers." in said
    # a hook in the agent's environment, without the daemon's XDG_RUNTIME_DIR, still gets the memory
    bare = {k: v for k, v in daemon.env.items() if k != "XDG_RUNTIME_DIR"}
    resumed = session.hook("SessionStart", env=bare, source="resume", model="m")
    assert resumed is not None and context(resumed).startswith(agent_guide())

    # five prompts without a proposal: nothing to add; the sixth carries the distillation line, once
    for n in range(1, DISTILL_AFTER_PROMPTS + 1):
        assert session.prompt(f"step {n}: carry on with the refactor") == "", n
        session.log.said("assistant", f"Done with step {n}.")
    assert session.prompt("step 6: and the tests") == DISTILL
    assert session.prompt("step 7: one more") == ""

    # an mm: line in the agent's reply: one visible proposal, the agent's
    session.log.said("assistant", "Found it.\nmm: the flaky test is a race in the cache warmer, not the network")
    (marked,) = wait_until(lambda: [c for c in proposals(daemon, agent) if "cache warmer" in c["body"]] or None,
                           what="the mm: line's proposal")
    assert marked["visible"] and not marked["pinned"] and marked["speaker"] == "agent"  # never pinned as the person's
    assert marked["source"]["sessionId"] == session.log.session_id
    assert marked["evidence"][0]["who"] == "assistant" and marked["evidence"][0]["project"] == str(work)

    async def through_mcp(mcp: ClientSession) -> None:
        text = tool_text(await mcp.call_tool("mem_propose", {
            "content": "Release builds need RELEASE=1 or the version stamp is empty.", "reason": "it bit us today"}))
        assert text.startswith("queued for review as #"), text
        text = tool_text(await mcp.call_tool("mem_write", {"topic": "deploys", "content": "Deploy: make release."}))
        assert text.startswith("NOT WRITTEN: queued for review as #") and "unchanged until then" in text, text

    await mcp_session(daemon, str(work), client_name, through_mcp)
    assert note.read_bytes() == curated_bytes  # the agent's write left the curated note as it was
    mine = proposals(daemon, agent)
    by_body = {c["body"]: c for c in mine}
    stamped = by_body["Release builds need RELEASE=1 or the version stamp is empty."]
    assert stamped["proposal"]["reason"] == "it bit us today" and stamped["visible"]
    replace = by_body["Deploy: make release."]
    assert replace["proposal"]["action"] == "replace" and replace["proposal"]["current"] == CURATED.rstrip("\n")
    assert len(mine) == 3 and call(daemon, "queue.list", {})["candidates"][0]["rule"] == "agent.propose"

    # the person reviews: the difference, then accepts; the next prompt's delta carries the new text
    code, shown, _ = cli(daemon, "queue", "show", str(replace["id"]))
    assert code == 0 and f"proposed by {agent}: written with mem_write" in shown
    assert "--- deploys (now)" in shown and "+Deploy: make release." in shown and "-- step 0: a curated" in shown
    code, out, err = cli(daemon, "queue", "accept", str(replace["id"]))
    assert code == 0, err
    assert note.read_bytes() != curated_bytes and "Deploy: make release." in note.read_text()
    delta = session.prompt("step 8: deploy it")
    assert "- updated deploys: How we deploy <mm://local/deploys>\n  Deploy: make release." in delta, delta
    assert DISTILL not in delta
