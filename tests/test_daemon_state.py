"""Sessions pin a revision: reads in a session see it until close or reload; new sessions see writes.

Real daemon, real sockets.
"""

from __future__ import annotations

import asyncio

import pytest

from .test_daemon_helpers import Client, RpcFailure

pytestmark = pytest.mark.timeout(60)


async def test_two_sessions_keep_their_own_snapshot_while_writes_land(daemon) -> None:
    a, b = Client(daemon.rpc), Client(daemon.rpc)
    try:
        await a.call("memory.write", {"topic": "shared", "content": "v1"})
        sa = await a.call("memory.open")
        await b.call("memory.write", {"topic": "shared", "content": "v2", "sessionId": None})
        await b.call("memory.write", {"topic": "fresh", "content": "new note"})
        sb = await b.call("memory.open")
        assert sb["revision"] == sa["revision"] + 2

        # session A still sees v1 and no "fresh"; session B sees both writes
        assert (await a.call("memory.read", {"topic": "shared", "sessionId": sa["sessionId"]}))["body"] == "v1"
        assert (await a.call("memory.read", {"topic": "fresh", "sessionId": sa["sessionId"]})) is None
        listed = await a.call("memory.list", {"sessionId": sa["sessionId"]})
        assert [n["topic"] for n in listed["notes"]] == ["shared"]
        assert (await b.call("memory.read", {"topic": "shared", "sessionId": sb["sessionId"]}))["body"] == "v2"
        index_a = await a.call("memory.index", {"sessionId": sa["sessionId"]})
        assert index_a["revision"] == sa["revision"]

        # a write inside session A is on disk at once and visible session-less, not inside A
        out = await a.call("memory.write", {"topic": "mine", "content": "from A", "sessionId": sa["sessionId"]})
        assert out["pendingWrites"] == 1
        assert (await b.call("memory.read", {"topic": "mine"}))["body"] == "from A"
        assert (await a.call("memory.read", {"topic": "mine", "sessionId": sa["sessionId"]})) is None
        assert (await a.call("memory.nudge", {"sessionId": sa["sessionId"]}))["pendingWrites"] == 1

        # reload re-pins A on the newest revision
        again = await a.call("memory.reload", {"sessionId": sa["sessionId"]})
        assert again["revision"] == out["revision"]
        assert (await a.call("memory.read", {"topic": "mine", "sessionId": sa["sessionId"]}))["body"] == "from A"

        closed = await a.call("memory.close", {"sessionId": sa["sessionId"]})
        assert closed == {"ok": True, "sessionId": sa["sessionId"], "pendingWrites": 0}
        with pytest.raises(RpcFailure) as gone:
            await a.call("memory.read", {"topic": "shared", "sessionId": sa["sessionId"]})
        assert gone.value.code == "E_NO_SESSION"
        assert (await a.call("daemon.status"))["sessions"] == 1
    finally:
        a.close()
        b.close()


async def test_idle_sessions_expire_after_their_ttl(start_daemon) -> None:
    d = start_daemon("--session-ttl-ms", "300")
    client = Client(d.rpc)
    try:
        sid = (await client.call("memory.open"))["sessionId"]
        assert (await client.call("daemon.status"))["sessions"] == 1
        for _ in range(100):  # expiry runs every ttl/4 (min 250 ms): wait for the condition, bounded
            if (await client.call("daemon.status"))["sessions"] == 0:
                break
            await asyncio.sleep(0.05)
        with pytest.raises(RpcFailure) as expired:
            await client.call("memory.index", {"sessionId": sid})
        assert expired.value.code == "E_NO_SESSION"
    finally:
        client.close()


async def test_concurrent_writes_in_one_session_each_get_their_own_result(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        sid = (await client.call("memory.open"))["sessionId"]
        ids = [await client.send("memory.write", {"topic": f"n{k}", "content": f"body {k}", "sessionId": sid})
               for k in range(20)]
        answers = [await client.reply_to(rid) for rid in ids]
        assert sorted(a["result"]["pendingWrites"] for a in answers) == list(range(1, 21))
        assert len({a["result"]["revision"] for a in answers}) == 20
    finally:
        client.close()


def test_every_revision_is_journaled_in_the_state_database(start_daemon) -> None:  # type: ignore[no-untyped-def]
    import json
    import sqlite3

    from tests.test_daemon_helpers import sync_call

    daemon = start_daemon("--no-ingest")
    assert sync_call(daemon.rpc, "memory.write", {"topic": "alpha", "content": "one"})["result"]["ok"]
    assert sync_call(daemon.rpc, "memory.delete", {"topic": "alpha"})["result"]["ok"]
    daemon.stop()
    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    rows = [(action, json.loads(detail)) for action, detail in
            db.execute("SELECT action, detail FROM journal ORDER BY id")]
    assert [a for a, _ in rows] == ["memory.write", "memory.delete"]
    assert [d["added"][0]["topic"] for a, d in rows if a == "memory.write"] == ["alpha"]
    assert rows[1][1]["removed"] == [{"topic": "alpha"}] and rows[1][1]["revision"] == rows[0][1]["revision"] + 1
