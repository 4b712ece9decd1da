"""Events on the PUB socket: changes, nudges and heartbeats, numbered by ``seq`` without gaps.

Real daemon, real sockets; the SUB waits for a first heartbeat so no event is lost to the slow joiner.
"""

from __future__ import annotations

import pytest

from .test_daemon_helpers import Client, Subscriber

pytestmark = pytest.mark.timeout(60)


async def test_a_subscriber_receives_a_nudge_on_a_short_interval(start_daemon) -> None:
    d = start_daemon("--nudge-interval-ms", "200", "--heartbeat-ms", "100")
    sub = Subscriber(d.pub)
    try:
        topic, nudge = await sub.wait_for(lambda t, p: t == "memory/nudge", timeout_s=10)
        assert nudge["reason"] == "schedule"
        assert {"seq", "at", "pendingWrites", "noteCount", "suggestedActions", "queuePending"} <= nudge.keys()
        _, again = await sub.wait_for(lambda t, p: t == "memory/nudge", timeout_s=10)
        assert again["seq"] > nudge["seq"]
    finally:
        sub.close()


async def test_no_periodic_nudge_when_disabled(start_daemon) -> None:
    d = start_daemon("--no-nudge", "--nudge-interval-ms", "50", "--heartbeat-ms", "100")
    sub = Subscriber(d.pub)
    try:
        seen = []
        for _ in range(6):  # six heartbeats = 500 ms with eleven nudges due if they were on
            seen.append(await sub.wait_for(lambda t, p: True))
        assert {t for t, _ in seen} == {"daemon/heartbeat"}
        beat = seen[-1][1]
        assert beat["revision"] >= 1 and beat["queuePending"] == 0 and beat["at"].endswith("Z")
        seqs = [p["seq"] for _, p in seen]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    finally:
        sub.close()


async def test_writes_publish_changed_events_with_consecutive_seq(daemon) -> None:
    sub = Subscriber(daemon.pub)
    client = Client(daemon.rpc)
    try:
        await sub.ready()
        w = await client.call("memory.write", {"topic": "alpha", "content": "first"})
        await client.call("memory.write", {"topic": "alpha", "content": "second"})
        await client.call("memory.delete", {"topic": "alpha"})
        events = []
        while len([e for e in events if e[0] == "memory/changed"]) < 3:
            events.append(await sub.next())
        seqs = [p["seq"] for _, p in events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        changed = [p for t, p in events if t == "memory/changed"]
        assert [c["cause"] for c in changed] == ["write", "write", "delete"]
        assert [c["revision"] for c in changed] == [w["revision"], w["revision"] + 1, w["revision"] + 2]
        assert [i["topic"] for i in changed[0]["added"]] == ["alpha"]
        assert len(changed[0]["added"][0]["sha256"]) == 64
        assert [i["topic"] for i in changed[1]["updated"]] == ["alpha"]
        assert changed[2]["removed"] == [{"topic": "alpha"}]
    finally:
        client.close()
        sub.close()


async def test_closing_a_session_publishes_a_session_end_nudge(daemon) -> None:
    sub = Subscriber(daemon.pub)
    client = Client(daemon.rpc)
    try:
        await sub.ready()
        sid = (await client.call("memory.open"))["sessionId"]
        await client.call("memory.write", {"topic": "x", "content": "y", "sessionId": sid})
        await client.call("memory.close", {"sessionId": sid})
        _, nudge = await sub.wait_for(lambda t, p: t == "memory/nudge")
        assert nudge["reason"] == "session-end" and nudge["sessionId"] == sid and nudge["pendingWrites"] == 1
    finally:
        client.close()
        sub.close()
