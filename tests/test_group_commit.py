"""Group commit (issue 17): writes that arrive together share one index rewrite and one set of fsyncs.

Core: ``MemoryStore.write_many`` checks each write in arrival order against the index the
writes before it left, lands the accepted ones together, and never lets a refused, invalid or
unwritable write take the others down. Daemon: concurrent writers each get their own
revision, journal row and ``memory/changed`` event, in arrival order with deletes; a
loaded snapshot is frozen out of the collector's sight. Real files, real daemon, real sockets.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core import durable as store_module  # the store writes its files through durable.write_together
from mmd.core.errors import ErrorCode
from mmd.core.paths import INDEX_NAME
from mmd.core.store import MemoryStore

from .test_daemon_helpers import Client, RpcFailure, Subscriber

pytestmark = pytest.mark.timeout(60)

NOW = "2026-01-01T00:00:00.000Z"


def _store(tmp_path: Path, **caps: Any) -> MemoryStore:
    options = MemoryOptions.create(root=tmp_path / "root", **caps)
    Memory.ensure(options)
    return MemoryStore(options, lambda: NOW)


def _topics(store: MemoryStore) -> list[str]:
    return sorted(e.topic for e in store.live_state().entries)


def test_a_group_rewrites_the_index_once_and_fsyncs_each_file_once(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    fsyncs: list[int] = []
    prepared: list[str] = []
    real_fsync, real_prepare = os.fsync, store_module.prepare_file
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    monkeypatch.setattr(store_module, "prepare_file",
                        lambda dfd, name, data, **kw: (prepared.append(name), real_prepare(dfd, name, data, **kw))[1])
    open_fds = len(os.listdir("/proc/self/fd"))
    done = store.write_many([(f"t{k}", f"body {k}", {}) for k in range(5)])
    assert len(os.listdir("/proc/self/fd")) == open_fds
    assert [d.outcome and d.outcome["ok"] for d in done] == [True] * 5
    assert prepared.count(INDEX_NAME) == 1 and sorted(prepared) == [INDEX_NAME, *(f"t{k}.md" for k in range(5))]
    assert len(fsyncs) == 5 + 1 + 2  # each note, the index, each folder once (one write alone: 4)
    assert _topics(store) == [f"t{k}" for k in range(5)]
    assert (store.root / "memories" / "t3.md").read_text().endswith("body 3\n")


def test_refused_and_invalid_writes_in_a_group_take_nothing_else_down(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.write("Keep", "an existing note")
    done = store.write_many([
        ("a", "fine", {}),
        ("b", "x" * 50, {"budget": 10}),  # over its write budget
        ("bad topic!", "x", {}),  # invalid slug
        ("keep", "a case twin of Keep", {}),  # E_CONFLICT
        ("c", "   ", {}),  # blank content
        ("d", "also fine", {"summary": "D", "tags": "x,y"}),
    ])
    assert done[0].outcome is not None and done[0].outcome["ok"]
    assert done[1].outcome is not None and done[1].outcome["code"] == "E_WRITE_BUDGET_EXCEEDED"
    assert done[2].error is not None and done[2].error.code is ErrorCode.E_INVALID
    assert done[3].error is not None and done[3].error.code is ErrorCode.E_CONFLICT
    assert done[4].outcome is not None and not done[4].outcome["ok"]
    assert done[5].outcome is not None and done[5].outcome["ok"]
    assert _topics(store) == ["Keep", "a", "d"]
    assert sorted(p.name for p in (store.root / "memories").iterdir()) == ["Keep.md", "a.md", "d.md"]


def test_budgets_are_checked_in_arrival_order_against_the_writes_before(tmp_path: Path) -> None:
    probe = _store(tmp_path / "probe")
    for k in range(2):
        probe.write(f"n{k}", f"body {k}")
    capped = _store(tmp_path / "capped", index_lines=probe.live_state().usage["lines"])
    done = capped.write_many([(f"n{k}", f"body {k}", {}) for k in range(4)])
    codes = [d.outcome["code"] if d.outcome and not d.outcome["ok"] else "ok" for d in done]
    assert codes == ["ok", "ok", "E_INDEX_BUDGET_EXCEEDED", "E_INDEX_BUDGET_EXCEEDED"]
    assert _topics(capped) == ["n0", "n1"]


def test_a_group_that_cannot_be_written_is_retried_write_by_write(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    store.write("b", "old body of b")
    real_prepare = store_module.prepare_file

    def failing(dfd: int, name: str, data: bytes, **kw: Any) -> Any:
        if name == "b.md":
            raise OSError(28, "No space left on device")
        return real_prepare(dfd, name, data, **kw)

    monkeypatch.setattr(store_module, "prepare_file", failing)
    open_fds = len(os.listdir("/proc/self/fd"))
    done = store.write_many([("a", "new a", {}), ("b", "new b", {}), ("c", "new c", {})])
    assert len(os.listdir("/proc/self/fd")) == open_fds  # the group's temp files, kept open for the fsync, closed
    assert [bool(d.outcome and d.outcome["ok"]) for d in done] == [True, False, True]
    assert done[1].error is not None and done[1].error.code is ErrorCode.E_IO
    assert _topics(store) == ["a", "b", "c"]
    assert (store.root / "memories" / "b.md").read_text().endswith("old body of b\n")
    assert not [p.name for p in (store.root / "memories").iterdir() if p.name.endswith(".tmp")]
    assert not [p.name for p in store.root.iterdir() if p.name.endswith(".tmp")]


async def test_concurrent_writers_each_get_a_revision_a_journal_row_and_an_event(start_daemon) -> None:
    daemon = start_daemon("--no-ingest", "--heartbeat-ms", "200")
    sub = Subscriber(daemon.pub)
    clients = [Client(daemon.rpc) for _ in range(8)]
    try:
        await sub.ready()
        first = (await clients[0].call("daemon.status"))["revision"]
        sent = [[await c.send("memory.write", {"topic": f"w{i}-{k}", "content": f"body {i} {k}"})
                 for k in range(3)] for i, c in enumerate(clients)]
        answers = [[await c.reply_to(rid) for rid in ids] for c, ids in zip(clients, sent, strict=True)]
        results = [a["result"] for row in answers for a in row]
        assert [r for r in results if not r["ok"]] == []
        assert sorted(r["revision"] for r in results) == list(range(first + 1, first + 25))
        for row in answers:  # one writer's pipelined writes land in the order it sent them
            revisions = [a["result"]["revision"] for a in row]
            assert revisions == sorted(revisions)
        changed: dict[int, dict[str, Any]] = {}
        while len(changed) < 24:
            topic, payload = await sub.next()
            if topic == "memory/changed":
                changed[payload["revision"]] = payload
        for r in results:
            assert [i["topic"] for i in changed[r["revision"]]["added"]] == [r["topic"]]
        listed = await clients[0].call("memory.list")
        assert len(listed["notes"]) == 24
        assert (await clients[0].call("memory.read", {"topic": "w3-2"}))["body"] == "body 3 2"
    finally:
        sub.close()
        for c in clients:
            c.close()
    daemon.stop()
    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    rows = [json.loads(d) for a, d in db.execute("SELECT action, detail FROM journal ORDER BY id")
            if a == "memory.write"]
    assert sorted(r["revision"] for r in rows) == list(range(first + 1, first + 25))


async def test_pipelined_writes_deletes_and_if_revision_keep_arrival_order(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        base = (await client.call("memory.write", {"topic": "x", "content": "v0"}))["revision"]
        ids = [await client.send("memory.write", {"topic": "x", "content": "v1"}),
               await client.send("memory.write", {"topic": "y", "content": "y1"}),
               await client.send("memory.delete", {"topic": "x"}),
               await client.send("memory.write", {"topic": "x", "content": "v2", "ifRevision": base + 3}),
               await client.send("memory.write", {"topic": "z", "content": "z1", "ifRevision": base}),
               await client.send("memory.write", {"topic": "x", "content": "v3"})]
        answers = [await client.reply_to(rid) for rid in ids]
        assert [a["result"]["revision"] for a in answers[:4]] == [base + 1, base + 2, base + 3, base + 4]
        assert answers[4]["error"]["data"]["code"] == "E_CONFLICT"
        assert answers[5]["result"]["revision"] == base + 5
        assert (await client.call("memory.read", {"topic": "x"}))["body"] == "v3"
        assert await client.call("memory.read", {"topic": "z"}) is None
        with pytest.raises(RpcFailure):
            await client.call("memory.write", {"topic": "x", "content": "late", "ifRevision": base})
    finally:
        client.close()



GROUP_WRITER = """
import sys
from pathlib import Path
from mmd.core import MemoryOptions
from mmd.core.store import MemoryStore

store = MemoryStore(MemoryOptions.create(root=Path(sys.argv[1])), lambda: "2026-01-01T00:00:00.000Z")
n = 0
print("ready", flush=True)
while True:
    store.write_many([(f"t{(n + k) % 12}", f"group {n} write {k} " + "x" * (n % 500), {}) for k in range(8)])
    n += 1
"""


@pytest.mark.parametrize("seed", range(6))
def test_a_group_writer_killed_at_any_moment_leaves_every_file_whole(tmp_path: Path, seed: int) -> None:
    import random
    import signal
    import subprocess
    import sys
    import time

    from mmd.core.format import parse_note

    root = tmp_path / "root"
    Memory.ensure(MemoryOptions.create(root=root))
    rng = random.Random(seed)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", GROUP_WRITER, str(root)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        memory = Memory.open(MemoryOptions.create(root=root))  # MEMORY.md whole: it parses
        snapshot = memory.snapshot
        assert not snapshot.anomalies.get("malformedNotes") and snapshot.anomalies["danglingEntries"] == 0
        for note in (root / "memories").glob("*.md"):
            parsed = parse_note(note.read_text())
            assert parsed.body.startswith("group ")  # every note whole, whichever group it came from


async def test_a_loaded_snapshot_is_frozen_out_of_the_collectors_sight(tmp_path: Path) -> None:
    import gc

    from mmd.daemon.state import MemoryState

    options = MemoryOptions.create(root=tmp_path / "root")
    Memory.ensure(options).write("t", "a long-lived note")
    gc.unfreeze()
    state = MemoryState(options, fts5=False)
    try:
        await state.load()
        assert gc.get_freeze_count() > 0
        assert (await state.write("u", "after the freeze"))["ok"]
    finally:
        gc.unfreeze()


def test_a_group_whose_index_rename_fails_puts_every_note_back(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    assert store.write("a", "old a")["ok"] and store.write("b", "old b")["ok"]
    os.chmod(store.root / "memories" / "b.md", 0o640)
    before = {p.name: (p.read_bytes(), p.stat().st_mode) for p in (store.root / "memories").iterdir()}
    index_before = (store.root / INDEX_NAME).read_bytes()
    real_replace = os.replace

    def replace(src: str, dst: str, **kwargs: Any) -> None:
        if dst == INDEX_NAME:
            raise OSError(5, "Input/output error")
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    done = store.write_many([("a", "new a", {}), ("b", "new b", {}), ("c", "new c", {})])
    assert all(d.error is not None and d.error.code is ErrorCode.E_IO for d in done)  # each retried alone, each failed
    after = {p.name: (p.read_bytes(), p.stat().st_mode) for p in (store.root / "memories").iterdir()}
    assert after == before  # old bytes and modes back, the new note gone, no temp file left
    assert (store.root / INDEX_NAME).read_bytes() == index_before


def test_a_groups_fsyncs_run_together_and_all_before_any_rename(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    store = _store(tmp_path)
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", threading.current_thread().name))
        real_fsync(fd)

    def replace(src: str, dst: str, **kwargs: Any) -> None:
        events.append(("rename", dst))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    done = store.write_many([(f"t{k}", f"body {k}", {}) for k in range(4)])
    assert all(d.outcome and d.outcome["ok"] for d in done)
    kinds = [kind for kind, _ in events]
    assert kinds == ["fsync"] * 5 + ["rename"] * 5 + ["fsync"] * 2  # files durable before any rename; folders last
    assert all(name.startswith("mmd-fsync") for kind, name in events if kind == "fsync")  # issued together
    events.clear()
    assert store.write("t9", "alone")["ok"]  # a lone write keeps its fsyncs in place
    assert {name for kind, name in events if kind == "fsync"} == {threading.current_thread().name}


def test_an_undo_that_fails_too_leaves_whole_notes_and_no_temp_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    assert store.write("a", "old a")["ok"] and store.write("b", "old b")["ok"]
    real_replace = os.replace
    broken = {"on": False}

    def replace(src: str, dst: str, **kwargs: Any) -> None:
        if dst == INDEX_NAME:
            broken["on"] = True  # the disk fails here, and stays failed for the undo's renames
        if broken["on"]:
            raise OSError(5, "Input/output error")
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    done = store.write_many([("a", "new a", {}), ("b", "new b", {})])
    assert all(d.error is not None and d.error.code is ErrorCode.E_IO for d in done)
    leftovers = [p.name for folder in (store.root, store.root / "memories") for p in folder.iterdir()
                 if p.name.endswith(".tmp")]
    assert leftovers == []  # the undo's own temp files went too
    for name in ("a", "b"):  # each note whole: its old bytes or its new ones, as after a crash
        assert (store.root / "memories" / f"{name}.md").read_text().endswith((f"old {name}\n", f"new {name}\n"))
