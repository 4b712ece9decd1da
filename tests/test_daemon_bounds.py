"""Resource bounds of the real daemon (issue 11): what a runaway or hostile client cannot do.

Huge numeric ids are bad params, not internal errors; every frame and the whole
message count against ``maxRequestBytes``; ``memory.digest`` never blocks on a
FIFO and runs on its own bounded pool; a flood of large requests leaves another
client's write answerable and the daemon's memory bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from mmd.daemon.offload import BoundedPool
from mmd.wire.protocol import DaemonError

from .test_daemon_helpers import Client, RpcFailure

pytestmark = pytest.mark.timeout(120)


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


async def test_huge_numeric_ids_and_offsets_are_invalid_params_not_internal_errors(daemon) -> None:
    client = Client(daemon.rpc)
    try:
        cases = [("queue.get", {"id": 2**63}), ("queue.get", {"id": "9" * 5000}), ("queue.get", {"id": -(2**70)}),
                 ("queue.list", {"offset": 10**30}), ("queue.list", {"limit": 2**64}),
                 ("queue.accept", {"id": "12345678901234567890"}), ("queue.reject", {"id": 2**100}),
                 ("memory.write", {"topic": "t", "content": "c", "ifRevision": 2**63}),
                 ("memory.search", {"query": "q", "limit": 10**40}),
                 ("memory.write", {"topic": "t", "content": "c", "budget": -(2**64)})]
        for method, params in cases:
            with pytest.raises(RpcFailure) as failure:
                await client.call(method, params)
            assert failure.value.error["code"] == -32602, (method, params, failure.value.error)
            assert failure.value.code == "E_INVALID"
        # the largest id in range is an ordinary "not found"
        with pytest.raises(RpcFailure) as missing:
            await client.call("queue.get", {"id": 2**63 - 1})
        assert missing.value.code == "E_NOT_FOUND"
        assert "Traceback" not in daemon.stderr()
    finally:
        client.close()


async def test_every_frame_and_the_whole_message_count_against_max_request_bytes(start_daemon) -> None:
    daemon = start_daemon("--max-request-bytes", "100000")
    client = Client(daemon.rpc)
    try:
        request = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "daemon.status", "params": {}}).encode()
        for frames in ([b"e" * 60_000, b"f" * 60_000, request],  # each frame fits; together they do not
                       [b"e" * 200_000, request]):  # one envelope frame alone is too large
            await client.sock.send_multipart(frames)
            answer = json.loads((await asyncio.wait_for(client.sock.recv_multipart(), 10))[-1])
            assert answer["id"] == 5  # read from the leading bytes, never parsed whole
            assert answer["error"]["data"] == {"code": "E_TOO_LARGE", "bytes": sum(map(len, frames)),
                                               "limit": 100000}
        assert (await client.call("daemon.status"))["pid"] == daemon.proc.pid
    finally:
        client.close()


async def test_digest_of_a_fifo_is_refused_at_once_and_writes_and_shutdown_never_wait(daemon, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    flood, writer = Client(daemon.rpc), Client(daemon.rpc)
    try:
        ids = [await flood.send("memory.digest", {"file": str(fifo)}) for _ in range(12)]
        answer = await writer.call("memory.write", {"topic": "served", "content": "while digests wait"}, timeout_s=30)
        assert answer["ok"] is True
        refused = [(await flood.reply_to(rid, timeout_s=30))["error"] for rid in ids]
        assert {e["data"]["code"] for e in refused} <= {"E_DIGEST_SOURCE", "E_BUSY"}  # busy: the pool's bound
        assert any("not a regular file" in e["message"] for e in refused)
        await flood.send("memory.digest", {"file": str(fifo)})
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(30) == 0
    finally:
        flood.close()
        writer.close()


async def test_a_flood_of_large_digests_leaves_writes_answerable_and_memory_bounded(daemon) -> None:
    flood, writer = Client(daemon.rpc), Client(daemon.rpc)
    text = "remember: " + "x" * (3 * 1024 * 1024)
    try:
        ids = [await flood.send("memory.digest", {"text": text}) for _ in range(100)]
        for k in range(5):
            answer = await writer.call("memory.write", {"topic": f"w{k}", "content": "under flood"}, timeout_s=60)
            assert answer["ok"] is True
        codes = []
        for rid in ids:
            reply = await flood.reply_to(rid, timeout_s=120)
            codes.append(reply["error"]["data"]["code"] if "error" in reply else "ok")
        assert set(codes) <= {"ok", "E_BUSY"} and "E_BUSY" in codes
        assert _peak_rss_mb(daemon.proc.pid) < 350, "100 × 3 MiB requests must not all be held at once"
    finally:
        flood.close()
        writer.close()


async def test_the_digest_pool_is_bounded_and_closing_it_never_waits_for_a_stuck_call() -> None:
    import threading

    stuck = threading.Event()
    pool = BoundedPool("digest", workers=1, backlog=1)
    running = [asyncio.ensure_future(pool.run(stuck.wait)) for _ in range(2)]
    await asyncio.sleep(0.05)
    with pytest.raises(DaemonError) as busy:
        await pool.run(stuck.wait)
    assert busy.value.code == "E_BUSY"
    pool.close()  # one call is blocked in its thread for good, one waits for a worker
    for call in running:
        with pytest.raises(DaemonError) as closing:
            await call
        assert closing.value.code == "E_SHUTTING_DOWN"
    stuck.set()


async def test_a_process_pool_returns_results_and_mm_errors_and_stops_a_stuck_call() -> None:
    import time

    from mmd.core.digest import digest
    from mmd.core.errors import MMError

    pool = BoundedPool("digest", processes=True, timeout_s=60.0)  # a loaded machine's first worker is slow
    try:
        result = await pool.run(digest, text="MEMO: kept in a worker process", dsh_home="/nonexistent")
        assert result["candidates"][0]["summary"] == "kept in a worker process"
        with pytest.raises(MMError) as missing:  # an mm error crosses the process boundary whole
            await pool.run(digest, file="/nonexistent/log", dsh_home="/nonexistent")
        assert missing.value.code.value == "E_DIGEST_SOURCE"
        pool.timeout_s = 2.0  # the stuck call's bound
        with pytest.raises(DaemonError) as stopped:
            await pool.run(time.sleep, 3600)
        assert stopped.value.code == "E_BUSY" and "stopped" in stopped.value.message
        pool.timeout_s = 60.0
        result = await pool.run(digest, text="MEMO: a fresh worker", dsh_home="/nonexistent")
        assert result["candidates"][0]["summary"] == "a fresh worker"
        stuck = asyncio.ensure_future(pool.run(time.sleep, 3600))
        await asyncio.sleep(0.5)
    finally:
        pool.close()
    with pytest.raises(DaemonError) as closing:
        await stuck
    assert closing.value.code == "E_SHUTTING_DOWN"
