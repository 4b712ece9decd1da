"""External edits of the root become new revisions with ``cause: external``; the daemon's own never do.

Real daemon, real files, real inotify.
"""

from __future__ import annotations

import contextlib
import os

import pytest

from mmd.core.memory import Memory
from mmd.core.options import MemoryOptions

from .test_daemon_helpers import Client, Subscriber

pytestmark = pytest.mark.timeout(60)


async def test_an_external_edit_produces_memory_changed_after_our_own_write(daemon) -> None:
    sub = Subscriber(daemon.pub)
    client = Client(daemon.rpc)
    try:
        await sub.ready()
        own = await client.call("memory.write", {"topic": "ours", "content": "written by the daemon"})
        _, first = await sub.wait_for(lambda t, p: t == "memory/changed")
        assert first["cause"] == "write" and first["revision"] == own["revision"]

        # another tool (the core library, with its own lock-free writer) edits the root
        other = Memory.ensure(MemoryOptions.create(root=daemon.root, env={}), lock=contextlib.nullcontext)
        assert other.write("theirs", "written by someone else")["ok"]
        _, ext = await sub.wait_for(lambda t, p: t == "memory/changed")
        # the next change is the external one: our write never came back as external
        assert ext["cause"] == "external" and ext["revision"] == own["revision"] + 1
        assert [i["topic"] for i in ext["added"]] == ["theirs"]
        assert (await client.call("memory.read", {"topic": "theirs"}))["body"] == "written by someone else"

        # a person edits a note body in place, then deletes another note's file
        note = daemon.root / "memories" / "ours.md"
        note.write_text(note.read_text().replace("written by the daemon", "edited by hand"))
        _, edit = await sub.wait_for(lambda t, p: t == "memory/changed")
        assert edit["cause"] == "external" and [i["topic"] for i in edit["updated"]] == ["ours"]
        assert (await client.call("memory.read", {"topic": "ours"}))["body"] == "edited by hand"
        (daemon.root / "memories" / "theirs.md").unlink()
        _, deleted = await sub.wait_for(lambda t, p: t == "memory/changed")
        assert deleted["cause"] == "external" and [i["topic"] for i in deleted["updated"]] == ["theirs"]
        assert (await client.call("memory.read", {"topic": "theirs"}))["missingFile"] is True
        status = await client.call("daemon.status")
        assert status["watcher"]["running"] is True and status["watcher"]["externalChanges"] >= 2
    finally:
        client.close()
        sub.close()


async def test_a_broken_external_index_keeps_the_last_revision_and_serving(daemon) -> None:
    sub = Subscriber(daemon.pub)
    client = Client(daemon.rpc)
    try:
        await sub.ready()
        await client.call("memory.write", {"topic": "keep", "content": "still here"})
        # written whole (a rename): written in place, the watcher may read it between the truncation and the write,
        # an empty MEMORY.md, which is a valid index with no notes (seen once in a loaded run)
        broken = daemon.base / "MEMORY.broken"
        broken.write_text("# MEMORY.md\n\n## not a slug!\n")
        os.replace(broken, daemon.root / "MEMORY.md")
        for _ in range(50):
            status = await client.call("daemon.status")
            if status["watcher"]["errors"]:
                break
            await sub.next()  # heartbeats pace the loop (200 ms)
        assert status["watcher"]["errors"] >= 1 and "E_PARSE" in status["watcher"]["lastError"]
        assert (await client.call("memory.read", {"topic": "keep"}))["body"] == "still here"
    finally:
        client.close()
        sub.close()
