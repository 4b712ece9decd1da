"""``mmctl.Client`` and ``mmctl.AsyncClient`` against a real daemon: every method, sessions, typed errors,
events with ``seq`` gaps, timeouts, and reconnecting after the daemon restarts."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from mmctl import (
    AsyncClient,
    BudgetError,
    Client,
    ConflictError,
    DaemonUnavailable,
    MmctlError,
    NoSessionError,
    RpcError,
)
from mmctl.events import Event, SeqTracker, decode_event


def test_every_method_answers(mmd) -> None:  # type: ignore[no-untyped-def]
    with Client(mmd.root, env=mmd.env) as c:
        assert c.status()["root"] == str(mmd.root)
        written = c.write("deploy", "we deploy to us-east-1", summary="Deploy", tags=["ops", "aws"])
        assert written["ok"] and written["action"] == "created" and isinstance(written["revision"], int)
        assert c.read("deploy")["tags"] == ["ops", "aws"]
        assert c.read("absent") is None
        assert c.read()["entries"][0]["topic"] == "deploy" == c.index()["entries"][0]["topic"]
        assert [n["topic"] for n in c.list()["notes"]] == ["deploy"]
        assert c.search("deploy", mode="scan", limit=1)["total"] == 1
        assert c.budget()["detail"]["noteCount"] == 1
        assert c.digest(text="MEMO: keep it")["candidates"][0]["summary"] == "keep it"
        assert c.nudge()["noteCount"] == 1
        assert c.delete("deploy")["removed"] is True
        assert c.call("daemon.status")["revision"] == written["revision"] + 1


def test_a_session_keeps_its_frozen_snapshot(mmd) -> None:  # type: ignore[no-untyped-def]
    with Client(mmd.root, env=mmd.env) as c:
        with c.session() as s:
            assert s.write("later", "x")["pendingWrites"] == 1
            assert s.read("later") is None and c.read("later") is not None
            s.reload(s.session_id)
            assert s.read("later")["body"] == "x"
        with pytest.raises(NoSessionError):
            c.read(session_id=s.session_id)


def test_errors_are_typed_and_carry_the_mm_code(mmd) -> None:  # type: ignore[no-untyped-def]
    with Client(mmd.root, env=mmd.env) as c:
        with pytest.raises(RpcError) as bad:
            c.read("not a slug")
        assert bad.value.code == "E_INVALID" and bad.value.rpc_code == -32602
        with pytest.raises(ConflictError) as stale:
            c.write("t", "x", if_revision=10_000)
        assert stale.value.revision == c.status()["revision"]
        refused = c.write("t", "x" * 50, budget=10)
        assert refused["ok"] is False and refused["usage"]["overflow"] == 40
        with pytest.raises(BudgetError) as over:
            c.write("t", "x" * 50, budget=10, check=True)
        assert over.value.code == "E_WRITE_BUDGET_EXCEEDED" and over.value.usage["overflow"] == 40


def test_no_daemon_is_daemon_unavailable_within_the_timeout(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "DSH_HOME": str(tmp_path)}
    started = time.monotonic()
    with Client(tmp_path / "root", env=env, timeout_ms=200) as c, pytest.raises(DaemonUnavailable) as err:
        c.status()
    assert time.monotonic() - started < 2 and "start one with `mmd --root" in err.value.message
    assert isinstance(err.value, MmctlError) and err.value.code == "E_UNAVAILABLE"


def test_the_client_reconnects_after_the_daemon_restarts(mmd) -> None:  # type: ignore[no-untyped-def]
    with Client(mmd.root, env=mmd.env) as c:
        first = c.status()["pid"]
        mmd.stop()
        mmd.start()
        assert c.status()["pid"] != first
        assert c.write("after-restart", "x")["ok"]


def test_subscription_receives_events_and_counts_gaps(mmd) -> None:  # type: ignore[no-untyped-def]
    with Client(mmd.root, env=mmd.env) as c, c.subscribe(timeout_ms=5000) as events:
        first = next(events)  # a heartbeat: the subscription is live
        c.write("evt", "x")
        changed = next(e for e in events if e.topic == "memory/changed")
        assert changed.data["added"][0]["topic"] == "evt" and changed.seq > first.seq and changed.missed == 0


def test_seq_tracker_sees_gaps_and_restarts() -> None:
    t = SeqTracker()
    assert [t.track(s) for s in (5, 6, 9, 2)] == [(0, False), (0, False), (2, False), (1, True)]
    event = decode_event([b"daemon/heartbeat", b'{"seq": 3, "at": "x"}'], SeqTracker())
    assert event == Event("daemon/heartbeat", {"seq": 3, "at": "x"}, 3)
    assert decode_event([b"x", b"not json"], SeqTracker()) is None


async def test_async_client_pipelines_requests_and_sessions(mmd) -> None:  # type: ignore[no-untyped-def]
    async with AsyncClient(mmd.root, env=mmd.env) as c:
        await c.write("a", "alpha")
        results = await asyncio.gather(*(c.read("a") for _ in range(20)), c.status())
        assert all(r["body"] == "alpha" for r in results[:20]) and results[20]["root"] == str(mmd.root)
        async with c.session() as s:
            await c.write("b", "beta")
            assert await s.read("b") is None and (await c.read("b"))["body"] == "beta"
        with pytest.raises(RpcError):
            await c.search("   ")


async def test_async_events_and_reconnect(mmd) -> None:  # type: ignore[no-untyped-def]
    async with AsyncClient(mmd.root, env=mmd.env) as c:
        events = c.subscribe(["memory/changed", "daemon/heartbeat"], timeout_ms=5000)
        await events.__anext__()
        await c.write("e", "x")
        async for event in events:
            if event.topic == "memory/changed":
                assert event.data["added"][0]["topic"] == "e"
                break
        await events.aclose()
        pid = (await c.status())["pid"]
        await asyncio.to_thread(mmd.stop)
        await asyncio.to_thread(mmd.start)
        assert (await c.status())["pid"] != pid


def test_a_daemon_that_does_not_answer_is_a_request_timeout_and_stale_replies_are_dropped(mmd) -> None:  # type: ignore[no-untyped-def]
    import signal

    from mmctl import RequestTimeout

    with Client(mmd.root, env=mmd.env) as c:  # only the stalled read is given 300 ms: a loaded machine's write or
        c.write("t", "x")                      # status may take longer, and then failed the test
        mmd.signal(signal.SIGSTOP)
        try:
            with pytest.raises(RequestTimeout):
                c.call("memory.read", {"topic": "t"}, timeout_ms=300)
        finally:
            mmd.signal(signal.SIGCONT)
        assert c.status()["root"] == str(mmd.root)  # the late answers to read("t") are not taken for this one
        assert c.read("t")["body"] == "x"


def test_the_package_exports_resolve_lazily() -> None:
    import mmctl

    assert sorted(mmctl.__all__) == sorted(n for n in mmctl.__all__ if getattr(mmctl, n, None) is not None)
    with pytest.raises(AttributeError):
        mmctl.Nope  # noqa: B018


def _free_tcp() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def test_a_tcp_daemon_answers_only_clients_with_curve_keys(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    import zmq.auth
    from mmctl import Curve

    keys, allowed = tmp_path / "keys", tmp_path / "allowed"
    keys.mkdir()
    allowed.mkdir()
    server_public, server_secret = zmq.auth.create_certificates(keys, "server")
    client_public, client_secret = zmq.auth.create_certificates(keys, "client")
    shutil.copy(client_public, allowed)
    rpc, pub = _free_tcp(), _free_tcp()
    pytest.importorskip("mmd.daemon.main", reason="the daemon is not importable yet")
    daemon = start_daemon("--heartbeat-ms", "200", "--rpc", rpc, "--pub", pub, "--curve-secret-key-file", server_secret,
                          "--curve-client-keys-dir", str(allowed), root=tmp_path / "tcp-root", wait=False)
    with Client(endpoint=rpc, pub_endpoint=pub, curve=Curve.from_files(server_public, client_secret),
                timeout_ms=15_000) as c:
        assert c.status()["root"] == str(daemon.root)
        with c.subscribe(timeout_ms=5000) as events:
            assert next(events).topic == "daemon/heartbeat"
    with Client(endpoint=rpc, timeout_ms=500) as stranger, pytest.raises(DaemonUnavailable):
        stranger.status()
