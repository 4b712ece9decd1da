"""``mmctl mcp`` resources and the agent tools through the MCP SDK's own stdio client (issue 14): the index
and each note as resources, ``notifications/resources/list_changed`` on a new revision, ``mem_delete``
(refused on a bad topic), ``mem_due`` and ``mem_inject`` — without a daemon and through one."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema

from tests.test_mmctl_mcp import Mcp, _seed

if TYPE_CHECKING:
    from mcp import ClientSession


class Changes:
    """Counts ``notifications/resources/list_changed`` and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self.event = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/resources/list_changed":
            self.count += 1
            self.event.set()

    async def next(self, timeout_s: float = 10.0) -> None:
        await asyncio.wait_for(self.event.wait(), timeout_s)
        self.event.clear()


async def _session(root: Path, env: dict[str, str], test: Any) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client  # here: ~1 s of CPU, not at collection

    from tests.test_mmctl_mcp import direct_writes

    params = StdioServerParameters(command=sys.executable, args=["-m", "mmctl", "mcp", "--root", str(root)],
                                   env=direct_writes(env, root))
    changes = Changes()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write, message_handler=changes) as session:
            init = await session.initialize()
            assert init.capabilities.resources is not None and init.capabilities.resources.list_changed
            tools = (await session.list_tools()).tools
            assert {"mem_delete", "mem_due", "mem_inject"} <= {t.name for t in tools}
            await test(session, Mcp(session, {t.name: t.output_schema for t in tools}), changes)


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.contents)


async def _exercise(session: ClientSession, mcp: Mcp, changes: Changes, write: Any) -> None:
    listed = (await session.list_resources()).resources
    assert [str(r.uri) for r in listed] == ["mm://local/", "mm://local/seed"]
    templates = (await session.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["mm://local/{topic}"]
    index = await session.read_resource("mm://local/")
    assert "## seed" in _text(index) and index.contents[0].mime_type == "text/markdown"
    note = _text(await session.read_resource("mm://local/seed"))
    assert note.startswith("# seed (mm://local/seed)") and "summary: Seed note" in note and "the seed body" in note

    text, first, err = await mcp.call("mem_inject")
    assert not err and first is not None and first["mode"] == "baseline" and "- seed: Seed note" in text
    text, quiet, _ = await mcp.call("mem_inject")
    assert quiet is not None and quiet["mode"] == "none" and "nothing changed" in text

    await write("fresh", "a new fact", "Fresh", "2000-01-01")  # another writer: a new revision
    await changes.next()
    assert "mm://local/fresh" in [str(r.uri) for r in (await session.list_resources()).resources]
    assert "a new fact" in _text(await session.read_resource("mm://local/fresh"))  # the latest revision
    _, delta, _ = await mcp.call("mem_inject")
    assert delta is not None and delta["mode"] == "delta" and delta["added"] == ["fresh"]
    text, due, _ = await mcp.call("mem_due")
    assert due is not None and [d["topic"] for d in due["due"]] == ["fresh"] and "review date 2000-01-01" in text
    # re-checked: a rewrite with a new review date clears it (mem_write had no reviewAfter: only a delete did)
    # written by another since, but the note resource read above showed this connection that version: no conflict
    text, _, err = await mcp.call("mem_write", topic="fresh", content="a new fact", reviewAfter="1y")
    assert not err, text
    text, _, _ = await mcp.call("mem_read", topic="fresh")
    assert "a new fact" in text  # mem_inject's delta reloaded this connection's snapshot
    text, _, err = await mcp.call("mem_write", topic="fresh", content="a new fact", reviewAfter="1y")
    assert not err, text
    await changes.next()
    _, due, _ = await mcp.call("mem_due")
    assert due is not None and due["due"] == []
    text, _, err = await mcp.call("mem_write", topic="fresh", content="a new fact", reviewAfter="when it breaks")
    assert err and "E_INVALID" in text

    text, _, err = await mcp.call("mem_delete", topic="../etc")
    assert err and "E_INVALID" in text
    text, deleted, err = await mcp.call("mem_delete", topic="fresh")
    assert not err and deleted is not None and deleted["removed"] is True and "deleted mm://local/fresh" in text
    jsonschema.validate(deleted, mcp.schemas["mem_delete"])
    await changes.next()
    assert [str(r.uri) for r in (await session.list_resources()).resources] == ["mm://local/", "mm://local/seed"]
    _, gone, _ = await mcp.call("mem_delete", topic="fresh")
    assert gone is not None and gone["removed"] is False
    _, removed, _ = await mcp.call("mem_inject")
    assert removed is not None and removed["removed"] == ["fresh"]
    missing = await _read_error(session, "mm://local/nothing")
    assert "no note for topic 'nothing'" in missing
    await _another_writer(mcp, changes, write)


async def _another_writer(mcp: Mcp, changes: Changes, write: Any) -> None:
    """Agent A (this connection) read seed; agent B rewrites it: A's blind rewrite would replace B's text."""
    text, _, _ = await mcp.call("mem_read", topic="seed")
    assert "the seed body" in text
    await write("seed", "the seed body, amended by B", "Seed note", "")
    await changes.next()
    text, _, err = await mcp.call("mem_write", topic="seed", content="A's version")
    assert err and "E_CONFLICT" in text and "by another writer" in text and "mem_reload" in text
    text, _, err = await mcp.call("mem_delete", topic="seed")
    assert err and "E_CONFLICT" in text
    text, _, _ = await mcp.call("mem_read", topic="seed")
    assert "amended by B" not in text  # still the frozen snapshot (mm v1 §7)...
    text, reloaded, err = await mcp.call("mem_reload")
    assert not err and reloaded is not None and reloaded["loadedAt"] and "new snapshot" in text
    text, _, err = await mcp.call("mem_write", topic="seed", content="A's version")  # reloaded, but not read
    assert err and "E_CONFLICT" in text
    text, _, _ = await mcp.call("mem_read", topic="seed")
    assert "amended by B" in text  # ...until a reload
    text, _, err = await mcp.call("mem_write", topic="seed", content="A's version, with B's amendment")
    assert not err, text
    text, _, err = await mcp.call("mem_write", topic="seed", content="A again")  # its own write is no conflict
    assert not err, text
    text, _, _ = await mcp.call("mem_read", topic="seed")  # the snapshot still shows the version before it...
    assert "A again" not in text
    text, _, err = await mcp.call("mem_write", topic="seed", content="A, a third time")  # ...which is no conflict
    assert not err, text
    await write("born", "B made it", "Born", "")  # created since the snapshot
    await changes.next()
    text, _, err = await mcp.call("mem_write", topic="born", content="A's")
    assert err and "was created by another writer" in text
    text, delta, _ = await mcp.call("mem_inject")  # a delta names it, and the reads now see it
    assert delta is not None and "born" in delta["added"]
    text, _, _ = await mcp.call("mem_read", topic="born")
    assert "B made it" in text
    await write("born", "B made it, then changed it", "Born", "")
    await changes.next()
    assert "then changed it" in _text(await mcp.session.read_resource("mm://local/born"))  # the latest, read...
    text, _, err = await mcp.call("mem_write", topic="born", content="A's, knowing B's change")
    assert not err, text  # ...so no conflict: this connection has seen that version
    await write("born", None, "", "")  # B deletes what A wrote
    await changes.next()
    text, _, err = await mcp.call("mem_write", topic="born", content="A's again")
    assert err and "was deleted by another writer" in text
    await mcp.call("mem_reload")
    text, _, _ = await mcp.call("mem_read", topic="born")  # the reloaded snapshot shows it gone: seen
    text, _, err = await mcp.call("mem_write", topic="born", content="A's again")
    assert not err, text


async def _read_error(session: ClientSession, uri: str) -> str:
    try:
        await session.read_resource(uri)
    except Exception as error:  # noqa: BLE001 - the SDK raises its MCPError; its text is the point
        return str(error)
    raise AssertionError(f"reading {uri} succeeded")


async def test_resources_and_agent_tools_without_a_daemon(tmp_path: Path) -> None:
    from mmd.core import Memory, MemoryOptions

    root = tmp_path / "root"
    _seed(root)
    env = {**os.environ, "DSH_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "MMCTL_NO_DAEMON": "1"}

    async def write(topic: str, content: str | None, summary: str, review: str) -> None:  # None: delete
        memory = Memory.ensure(MemoryOptions.create(root=root, env={}))
        if content is None:
            await asyncio.to_thread(memory.delete, topic)
        else:
            await asyncio.to_thread(memory.write, topic, content, summary=summary, review_after=review)

    await _session(root, env, lambda s, m, c: _exercise(s, m, c, write))


async def test_resources_and_agent_tools_through_a_daemon(mmd) -> None:  # type: ignore[no-untyped-def]
    from mmctl import AsyncClient

    async with AsyncClient(mmd.root, env=mmd.env) as client:
        await client.write("seed", "the seed body", summary="Seed note")

    async def write(topic: str, content: str | None, summary: str, review: str) -> None:  # None: delete
        async with AsyncClient(mmd.root, env=mmd.env) as client:
            if content is None:
                assert (await client.delete(topic))["ok"]
            else:
                assert (await client.write(topic, content, summary=summary, review_after=review))["ok"]

    await _session(mmd.root, dict(mmd.env), lambda s, m, c: _exercise(s, m, c, write))
