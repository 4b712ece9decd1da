"""The proposal channel's other surfaces (issue 28): ``mmctl propose`` for hooks and scripts, the MCP server without a
daemon (a proposal is refused and nothing is written), and ``mem_inject`` in a project's scope (the project's part and
the user's, labelled, as the hooks give them)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.test_inject_daemon import call
from tests.test_mmctl_agents import runner
from tests.test_mmctl_daemon import cli

if TYPE_CHECKING:
    from mcp import ClientSession


def test_mmctl_propose_queues_through_the_daemon_and_says_what_became_of_it(mmd: Any) -> None:
    code, out, err = cli(mmd, "propose", "--content", "The staging DB is reset every Monday.", "--reason",
                         "asked twice", "--agent", "codex", "--session", "s-7", "--user")
    assert (code, err) == (0, "") and out.startswith("queued for review as #1 (user); nothing is written"), out
    cand = call(mmd, "queue.get", {"id": 1})
    assert cand["proposal"]["by"] == "codex" and cand["proposal"]["reason"] == "asked twice"
    assert cand["source"]["sessionId"] == "s-7" and list((mmd.root / "memories").glob("*.md")) == []
    code, out, _ = cli(mmd, "propose", "--content", "the staging DB is reset every Monday", "--user", "--json")
    assert code == 0 and json.loads(out)["status"] == "merged" and json.loads(out)["id"] == 1
    assert cli(mmd, "write", "ci", "--content", "CI runs on Fridays.", "--user")[0] == 0  # a person's write: direct
    assert (mmd.root / "memories" / "ci.md").is_file()
    code, out, _ = cli(mmd, "propose", "ci", "--content", "CI runs on Fridays.", "--user")
    assert (code, out) == (0, "the memory already holds this (ci): nothing queued\n")
    code, _, err = cli(mmd, "propose", "nope", "--action", "replace", "--content", "x", "--user")
    assert code == 1 and "E_NOT_FOUND: there is no note nope to replace" in err


def test_mmctl_propose_without_a_daemon_proposes_nothing(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "home"), "MMCTL_NO_DAEMON": "1",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    run = runner(tmp_path / "root", env)
    assert run("init").code == 0
    done = run("propose", "--content", "a fact")
    assert done.code == 1 and "`propose` needs the mmd daemon" in done.err


async def _mcp(root: Path, env: dict[str, str], cwd: str | None, test: Any) -> None:
    from mcp import ClientSession, StdioServerParameters  # here: ~1 s of CPU, not at collection
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=sys.executable, args=["-m", "mmctl", "mcp", "--root", str(root)],
                                   env=env, cwd=cwd)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await test(session)


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def test_without_a_daemon_an_agents_write_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    from mmd.core import Memory, MemoryOptions

    root = tmp_path / "root"
    Memory.ensure(MemoryOptions.create(root=root, env={})).write("kept", "the person's text", summary="Kept")
    before = {p.name: p.read_bytes() for p in (root / "memories").iterdir()}
    env = {**os.environ, "DSH_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "XDG_CONFIG_HOME": str(tmp_path / "no-config")}

    async def test(mcp: ClientSession) -> None:
        for tool, args in (("mem_write", {"topic": "kept", "content": "the agent's text"}),
                           ("mem_write", {"topic": "fresh", "content": "new"}), ("mem_delete", {"topic": "kept"}),
                           ("mem_propose", {"content": "a fact", "reason": "why"})):
            result = await mcp.call_tool(tool, args)
            assert result.is_error and "proposals wait in the review queue of the mmd daemon" in _text(result), tool
            assert "`mm: …`" in _text(result)

    await _mcp(root, env, None, test)
    assert {p.name: p.read_bytes() for p in (root / "memories").iterdir()} == before


async def test_mem_inject_in_a_projects_scope_gives_its_part_and_the_users_labelled(mmd: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)  # a repository with an origin: a project (docs/projects.md)
    (work / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:me/work.git\n')
    (work / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert cli(mmd, "write", "shell", "--content", "I use fish.", "--user")[0] == 0
    assert cli(mmd, "write", "build", "--content", "make build, never cargo build.", "--project", str(work))[0] == 0

    async def test(mcp: ClientSession) -> None:
        text = _text(await mcp.call_tool("mem_inject", {}))
        project, user = text.split("\n\nUser memory (every project):\n")
        assert project.startswith("Project memory (work-") and "  make build, never cargo build." in project
        assert "  I use fish." in user
        again = _text(await mcp.call_tool("mem_inject", {}))
        assert again.startswith("nothing changed in the memory since your last mem_inject")

    await _mcp(mmd.root, mmd.env, str(work), test)
