"""The RPC server keeps answering: bad input gets a JSON-RPC error, concurrent writers lose nothing.

Every test drives the real daemon in a subprocess over its real ipc socket.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mmd.core.memory import Memory
from mmd.core.options import MemoryOptions

from .test_daemon_helpers import Client, RpcFailure, sync_call

pytestmark = pytest.mark.timeout(60)


async def test_garbage_requests_get_json_rpc_errors_and_the_daemon_serves_on(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        cases = [
            (b"not json", -32700, "E_PARSE"),
            (b"\xff\xfe\x00", -32700, "E_PARSE"),
            (b"[1, 2, 3]", -32600, "E_INVALID"),
            (b'{"jsonrpc": "1.0", "id": 7, "method": "daemon.status"}', -32600, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 8, "method": 42}', -32600, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 9, "method": "no.such"}', -32601, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 10, "method": "memory.read", "params": [1]}', -32602, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 11, "method": "memory.read", "params": {"topic": 5}}', -32602, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 12, "method": "memory.read", "params": {"bogus": 1}}', -32602, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 13, "method": "memory.write", "params": {"topic": "x"}}', -32602,
             "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 14, "method": "memory.read", "params": {"topic": "Bad Topic!"}}', -32602,
             "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 15, "method": "memory.search", "params": {"query": " "}}', -32602,
             "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 16, "method": "queue.get", "params": {"id": 0}}', -32602, "E_INVALID"),
            (b'[' * 100_000, -32700, "E_PARSE"),
            (rb'{"jsonrpc": "2.0", "id": 17, "method": "memory.write", "params": {"topic": "x", "content": "\ud800"}}',
             -32602, "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 18, "method": "memory.search", "params": {"query": "x", "limit": 0}}', -32602,
             "E_INVALID"),
            (b'{"jsonrpc": "2.0", "id": 19, "method": "memory.read", "params": {"sessionId": "nope"}}', -32000,
             "E_NO_SESSION"),
        ]
        for frame, rpc_code, mm_code in cases:
            await client.send_raw(frame)
            answer = await client.recv()
            assert answer["jsonrpc"] == "2.0"
            assert answer["error"]["code"] == rpc_code, (frame[:60], answer)
            assert answer["error"]["data"]["code"] == mm_code, (frame[:60], answer)
        # an empty frame is a parse error; a notification (no id) gets no answer
        await client.sock.send_multipart([b"", b""])
        frames = await asyncio.wait_for(client.sock.recv_multipart(), 10)
        assert frames[0] == b"" and json.loads(frames[-1])["error"]["code"] == -32700
        await client.send_raw(b'{"jsonrpc": "2.0", "method": "daemon.status"}')
        status = await client.call("daemon.status")
        assert status["pid"] == daemon.proc.pid
    finally:
        client.close()


async def test_a_10_mib_frame_gets_an_error_and_the_daemon_serves_on(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        huge = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory.write",
                           "params": {"topic": "big", "content": "x" * (10 * 1024 * 1024)}}).encode()
        await client.send_raw(huge)
        answer = await client.recv()
        assert answer["error"]["data"]["code"] == "E_TOO_LARGE"
        assert (await client.call("memory.read", {"topic": "big"})) is None
        assert (await client.call("memory.write", {"topic": "small", "content": "fits"}))["ok"] is True
    finally:
        client.close()


async def test_eight_clients_times_fifty_pipelined_writes_lose_nothing_and_leave_no_temp_files(daemon) -> None:
    topics = [f"t{i}" for i in range(10)]
    clients = [Client(daemon.rpc) for _ in range(8)]

    async def storm(n: int, client: Client) -> list[dict]:
        ids = [await client.send("memory.write", {"topic": topics[(n + k) % len(topics)],
                                                  "content": f"client {n} write {k}"}) for k in range(50)]
        return [await client.reply_to(rid, timeout_s=30) for rid in ids]

    try:
        results = await asyncio.gather(*(storm(n, c) for n, c in enumerate(clients)))
        outcomes = [a["result"] for answers in results for a in answers]
        assert len(outcomes) == 400 and all(o["ok"] for o in outcomes)
        revisions = sorted(o["revision"] for o in outcomes)
        assert revisions == list(range(revisions[0], revisions[0] + 400))  # one revision each, none shared
        # the last acknowledged write of each topic is what the files hold
        last: dict[str, tuple[int, str]] = {}
        for n, answers in enumerate(results):
            for k, a in enumerate(answers):
                topic = topics[(n + k) % len(topics)]
                if a["result"]["revision"] > last.get(topic, (0, ""))[0]:
                    last[topic] = (a["result"]["revision"], f"client {n} write {k}")
        on_disk = Memory.open(MemoryOptions.create(root=daemon.root, env={}))
        for topic, (_, body) in last.items():
            assert on_disk.read_topic(topic).body == body
        assert len(on_disk.snapshot.notes) == len(topics)
        leftovers = [p for p in Path(daemon.root).rglob("*") if p.name.endswith(".tmp")]
        assert leftovers == []
    finally:
        for c in clients:
            c.close()


async def test_if_revision_gives_compare_and_set(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        first = await client.call("memory.write", {"topic": "cas", "content": "one"})
        rev = first["revision"]
        ok = await client.call("memory.write", {"topic": "cas", "content": "two", "ifRevision": rev})
        assert ok["ok"] is True and ok["revision"] == rev + 1
        with pytest.raises(RpcFailure) as conflict:
            await client.call("memory.write", {"topic": "cas", "content": "three", "ifRevision": rev})
        assert conflict.value.code == "E_CONFLICT"
        assert conflict.value.error["data"]["revision"] == rev + 1
        with pytest.raises(RpcFailure) as conflict_delete:
            await client.call("memory.delete", {"topic": "cas", "ifRevision": rev})
        assert conflict_delete.value.code == "E_CONFLICT"
        assert (await client.call("memory.read", {"topic": "cas"}))["body"] == "two"
    finally:
        client.close()


async def test_budget_failure_is_a_result_and_makes_no_revision(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        before = (await client.call("daemon.status"))["revision"]
        outcome = await client.call("memory.write", {"topic": "long", "content": "x" * 50, "budget": 10})
        assert outcome["ok"] is False and outcome["code"] == "E_WRITE_BUDGET_EXCEEDED"
        assert outcome["revision"] == before
        assert (await client.call("memory.read", {"topic": "long"})) is None
    finally:
        client.close()


async def test_reads_list_search_budget_digest_and_delete_round_trip(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        await client.call("memory.write", {"topic": "deploy", "content": "we deploy to us-east-1",
                                           "summary": "deploy region", "tags": ["ops", "aws"]})
        note = await client.call("memory.read", {"topic": "deploy"})
        assert note["tags"] == ["ops", "aws"] and note["uri"] == "mm://local/deploy"
        index = await client.call("memory.read")
        assert [e["topic"] for e in index["entries"]] == ["deploy"]
        assert [n["topic"] for n in (await client.call("memory.list"))["notes"]] == ["deploy"]
        found = await client.call("memory.search", {"query": "deploy", "mode": "scan"})
        assert found["matches"][0]["topic"] == "deploy"
        budget = await client.call("memory.budget")
        assert budget["detail"]["noteCount"] == 1
        nudge = await client.call("memory.nudge")
        assert nudge["noteCount"] == 1
        digest = await client.call("memory.digest", {"text": "Decision: we use ruff for lint."})
        assert digest["sourceKind"] in ("text", "session-log")
        gone = await client.call("memory.delete", {"topic": "deploy"})
        assert gone["ok"] is True and gone["removed"] is True
        assert (await client.call("memory.read", {"topic": "deploy"})) is None
    finally:
        client.close()


def test_a_req_socket_client_is_answered_too(daemon) -> None:
    import zmq

    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(daemon.rpc)
        sock.send(b'{"jsonrpc": "2.0", "id": "a", "method": "daemon.status"}')
        assert sock.poll(5000)
        assert json.loads(sock.recv())["id"] == "a"
    finally:
        sock.close()
    assert sync_call(daemon.rpc, "daemon.status")["result"]["revision"] >= 1


async def test_a_client_that_never_reads_its_replies_does_not_stall_the_others(daemon) -> None:
    flooder, other = Client(daemon.rpc), Client(daemon.rpc)
    try:
        for _ in range(5000):  # far beyond the reply pipe's high-water mark; never read
            await flooder.send("memory.list")
        for _ in range(20):
            status = await other.call("daemon.status", timeout_s=2)
        assert status["requests"] >= 20
        assert (await other.call("memory.write", {"topic": "still", "content": "served"}, timeout_s=5))["ok"]
    finally:
        flooder.close()
        other.close()



async def test_requests_beyond_the_in_flight_cap_get_e_busy_while_reads_are_still_answered(tmp_path: Path) -> None:
    """In-process: the ROUTER loop with a fake method table whose one awaited method blocks."""
    from types import SimpleNamespace

    import zmq

    from mmd.daemon.rpc import RpcServer

    endpoint = f"ipc://{tmp_path}/cap.sock"
    router = zmq.Context.instance().socket(zmq.ROUTER)
    router.bind(endpoint)
    release = asyncio.Event()

    async def slow(params: dict) -> dict:
        await release.wait()
        return {"done": True}

    methods = SimpleNamespace(inline={"daemon.status": lambda params: {"alive": True}},
                              awaited={"memory.digest": slow})
    server = RpcServer(router, methods, 1024, max_in_flight=2)  # type: ignore[arg-type]
    server.start()
    client = Client(endpoint)
    try:
        slow_ids = [await client.send("memory.digest", {"text": "x"}) for _ in range(3)]
        busy = await client.reply_to(slow_ids[2])
        assert busy["error"]["data"]["code"] == "E_BUSY"
        assert await client.call("daemon.status") == {"alive": True}
        release.set()
        assert [(await client.reply_to(rid))["result"] for rid in slow_ids[:2]] == [{"done": True}] * 2
        await server.stop(1.0)
    finally:
        client.close()
        server.close(0)
