"""``mmctl mcp`` through the MCP SDK's own stdio client: the tools, their schemas, one frozen snapshot.

Each test spawns ``python -m mmctl mcp`` and talks to it with
``mcp.ClientSession``; every structured result is validated against the
output schema the tool declared.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema

from mmd.inject.guide import instructions
from tests.test_mmctl_daemon import cli

if TYPE_CHECKING:
    from mcp import ClientSession

TOOLS = {"mem_read", "mem_write", "mem_search", "mem_budget", "mem_digest", "mem_delete", "mem_due", "mem_inject",
         "mem_reload", "mem_queue_list", "mem_queue_accept", "mem_queue_reject", "mem_propose"}


class Mcp:
    """A live MCP session plus the declared output schemas, validating every call."""

    def __init__(self, session: ClientSession, schemas: dict[str, Any]) -> None:
        self.session, self.schemas = session, schemas

    async def call(self, name: str, **arguments: Any) -> tuple[str, dict[str, Any] | None, bool]:
        """``(text, structuredContent, isError)``; a non-error result must match its declared schema."""
        result = await self.session.call_tool(name, arguments)
        text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        if not result.is_error:
            jsonschema.validate(result.structured_content, self.schemas[name])
        return text, result.structured_content, bool(result.is_error)


def direct_writes(env: dict[str, str], root: Path) -> dict[str, str]:
    """``env`` with a config file (in a folder beside ``root``, the test's own) saying ``[agents] writes = "direct"``:
    these tests exercise the tools' own writes; proposals (the default, issue 28) are tested in
    ``tests/test_agents_end_to_end.py``."""
    near = next(p for p in root.parents if p.is_dir())  # the root itself may not exist yet
    base = near / f"{root.name}-mcp-config"
    (base / "mmd").mkdir(parents=True, exist_ok=True)
    (base / "mmd" / "config.toml").write_text('[agents]\nwrites = "direct"\n', encoding="utf-8")
    return {**env, "XDG_CONFIG_HOME": str(base)}


async def _session(root: Path, env: dict[str, str], test: Any) -> str:
    """Run ``test`` on a session with ``mmctl mcp --root root``; what the server wrote to stderr."""
    from mcp import ClientSession, StdioServerParameters, stdio_client  # here: ~1 s of CPU, not at collection
    params = StdioServerParameters(command=sys.executable, args=["-m", "mmctl", "mcp", "--root", str(root)],
                                   env=direct_writes(env, root))
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            tools = (await session.list_tools()).tools
            assert {t.name for t in tools} == TOOLS
            assert init.instructions == instructions("en")
            await test(Mcp(session, {t.name: t.output_schema for t in tools}))
        errlog.seek(0)
        return errlog.read()


async def _exercise(mcp: Mcp) -> None:
    text, index, err = await mcp.call("mem_read")
    assert not err and "Memory index (1 entries" in text and "- seed — Seed note" in text

    text, note, _ = await mcp.call("mem_read", topic="seed")
    assert note is not None and note["note"]["body"] == "the seed body" and "the seed body" in text

    text, written, _ = await mcp.call("mem_write", topic="fresh", content="a new fact", summary="Fresh", tags="a,b")
    assert written is not None and written["ok"] and written["pendingWrites"] == 1
    assert "created mm://local/fresh" in text

    text, _, err = await mcp.call("mem_read", topic="fresh")  # one frozen snapshot per connection
    assert err and ("E_NOT_FOUND: no note for topic fresh (mm://local/fresh) in this session's "
        "snapshot") in text and "mem_reload takes a new snapshot" in text

    text, refused, _ = await mcp.call("mem_write", topic="big", content="x" * 50, budget=10)
    assert refused is not None and refused["ok"] is False and text.startswith("NOT WRITTEN (E_WRITE_BUDGET_EXCEEDED)")
    # values the core would silently replace by its defaults are refused, saying so (budget -1 wrote with 4000)
    for tool, args, said in (("mem_write", {"topic": "big", "content": "x", "budget": -1}, "budget"),
                             ("mem_search", {"query": "seed", "mode": "bogus"}, "mode must be one of auto, scan"),
                             ("mem_digest", {"text": "MEMO: x", "maxItems": 0}, "maxItems")):
        text, _, err = await mcp.call(tool, **args)
        assert err and "E_INVALID" in text and said in text, text

    text, found, _ = await mcp.call("mem_search", query="seed")
    assert found is not None and found["total"] == 1 and "- seed (mm://local/seed)" in text

    text, report, _ = await mcp.call("mem_budget")
    assert report is not None and report["pendingWrites"] == 1 and report["detail"]["noteCount"] == 2

    text, digest, _ = await mcp.call("mem_digest", text="MEMO: remember the port is 8080", maxItems=3)
    assert digest is not None and digest["candidates"] and "remember the port is 8080" in text
    assert digest["candidates"][0]["summary"] == digest["candidates"][0]["body"]
    assert text.count("remember the port is 8080") == 1  # a summary equal to the body is printed once

    _, every, _ = await mcp.call("mem_read", all=True)
    assert every is not None and [n["topic"] for n in every["notes"]] == ["seed"]

    text, _, err = await mcp.call("mem_read", topic="not a slug")
    assert err and "E_INVALID" in text

    text, _, err = await mcp.call("mem_read", topc="seed")  # a mistyped parameter is no parameter
    assert err and text == "E_INVALID: mem_read has no parameter 'topc' (did you mean 'topic'?); its parameters: " \
                           "topic, all"
    for name in sorted(TOOLS):  # every tool: nothing done, nothing read, an error naming the parameter
        text, _, err = await mcp.call(name, id="1", topic="seed", query="q", content="c", bogus=True)
        assert err and text.startswith(f"E_INVALID: {name} has no parameter ") and "'bogus'" in text, text
    _, still, _ = await mcp.call("mem_budget")
    assert still is not None and still["pendingWrites"] == 1


def _seed(root: Path) -> None:
    from mmd.core import Memory, MemoryOptions

    Memory.ensure(MemoryOptions.create(root=root, env={})).write("seed", "the seed body", summary="Seed note")


async def test_the_tools_over_stdio_without_a_daemon(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _seed(root)
    env = {**os.environ, "DSH_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path / "run")}

    async def test(mcp: Mcp) -> None:
        await _exercise(mcp)
        text, _, err = await mcp.call("mem_queue_list")
        assert err and "needs the mmd daemon" in text and "mmd --root" in text

    stderr = await _session(root, env, test)
    assert "Processing request" not in stderr and "INFO" not in stderr, stderr  # the SDK's log of every request



async def test_the_tools_over_stdio_through_a_daemon_session(mmd) -> None:  # type: ignore[no-untyped-def]
    from mmctl import AsyncClient

    async with AsyncClient(mmd.root, env=mmd.env) as client:
        await client.write("seed", "the seed body", summary="Seed note")

    async def test(mcp: Mcp) -> None:
        await _exercise(mcp)
        async with AsyncClient(mmd.root, env=mmd.env) as client:
            assert (await client.status())["sessions"] == 1  # the connection's pinned snapshot
            assert (await client.read("fresh"))["body"] == "a new fact"  # the write went through the daemon
        text, result, err = await mcp.call("mem_queue_list")
        assert (not err and result is not None and result["ok"]) or "review queue" in text
        # The daemon restarts: the connection pins a new snapshot, which now holds this session's write.
        await asyncio.to_thread(mmd.stop)
        await asyncio.to_thread(mmd.start)
        text, note, err = await mcp.call("mem_read", topic="fresh")
        assert not err and note is not None and note["note"]["body"] == "a new fact"

    await _session(mmd.root, dict(mmd.env), test)


async def test_a_server_whose_daemon_stops_goes_on_with_the_files_then_with_the_next_daemon(mmd) -> None:  # type: ignore[no-untyped-def]
    # with the daemon gone, every call waited for the client's 10 s timeout, then failed E_UNAVAILABLE
    async def test(mcp: Mcp) -> None:
        text, _, err = await mcp.call("mem_write", topic="one", content="through the daemon")
        assert not err, text
        assert cli(mmd, "write", "one", "--content", "B's, while the daemon ran")[0] == 0
        await asyncio.to_thread(mmd.stop)  # SIGTERM: its sockets are removed
        text, _, err = await mcp.call("mem_write", topic="one", content="A's, blind")  # the move to the files...
        assert err and "E_CONFLICT" in text, text  # ...keeps what this connection has seen
        text, _, err = await mcp.call("mem_write", topic="two", content="on the files")
        assert not err, text
        text, _, err = await mcp.call("mem_read", topic="one")  # the files' snapshot: B's text, now seen
        assert not err and "B's, while the daemon ran" in text, text
        await asyncio.to_thread(mmd.start)  # it holds the root's lock: a write now succeeds only through it
        text, _, err = await mcp.call("mem_write", topic="three", content="through the next daemon")
        assert not err, text
        from mmctl import AsyncClient

        async with AsyncClient(mmd.root, env=mmd.env) as client:
            assert (await client.status())["sessions"] == 1  # this connection's, pinned in the new daemon

    await _session(mmd.root, dict(mmd.env), test)
    assert {p.name for p in (mmd.root / "memories").iterdir()} == {"one.md", "two.md", "three.md"}


async def test_a_root_that_does_not_exist_fails_reads_and_the_first_write_makes_it(tmp_path: Path) -> None:
    # `mmctl mcp --root <typo>` used to create the folder (parents too) at start and serve an empty memory
    typo = tmp_path / "no" / "such" / "root"
    env = {**os.environ, "DSH_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "MMCTL_NO_DAEMON": "1"}

    async def test(mcp: Mcp) -> None:
        for tool, args in (("mem_read", {}), ("mem_read", {"topic": "a"}), ("mem_search", {"query": "a"})):
            text, _, err = await mcp.call(tool, **args)
            assert err and f"E_NOT_INITIALIZED: no memory root at {typo} yet" in text and "--root" in text, text
        assert not (tmp_path / "no").exists()
        text, written, err = await mcp.call("mem_write", topic="first", content="made by the first write")
        assert not err and written is not None and written["ok"], text
        text, _, err = await mcp.call("mem_write", topic="first", content="again")
        assert not err, text
        text, injected, _ = await mcp.call("mem_inject")  # lists it, and the reads then see it too
        assert injected is not None and "- first" in text
        text, _, err = await mcp.call("mem_read")
        assert not err and "- first" in text, text

    await _session(typo, env, test)
    assert (typo / "MEMORY.md").is_file() and "again" in (typo / "memories" / "first.md").read_text()


def test_a_note_whose_file_is_gone_reads_as_such_not_as_an_empty_body(tmp_path: Path) -> None:
    from mmctl.mcp.resources import note_text

    from mmd.core import Memory, MemoryOptions

    memory = Memory.ensure(MemoryOptions.create(root=tmp_path / "root", env={}))
    memory.write("victim", "the body", summary="V")
    (tmp_path / "root" / "memories" / "victim.md").unlink()
    note = Memory.open(MemoryOptions.create(root=tmp_path / "root", env={})).read_topic("victim")
    assert note is not None and note.missing_file
    text = note_text(note.to_json())
    assert "(its file memories/victim.md is missing" in text and text.startswith("# victim (mm://local/victim)")
