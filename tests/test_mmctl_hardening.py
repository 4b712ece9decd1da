"""The Python clients under faults (issue 15): an oversized request's ``id: null`` error is surfaced and
never resent, a client started before its daemon finds it, sessions reload and close without their id,
and the public API type-checks with mypy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mmctl import AsyncClient, Client, DaemonUnavailable, RpcError

REPO = Path(__file__).resolve().parent.parent


def _requests(client: Client) -> int:
    requests: int = client.status()["requests"]
    return requests


@pytest.mark.parametrize("method", ["write", "search"])  # one not idempotent, one idempotent (resent on timeout)
def test_an_oversized_request_gets_e_too_large_once_and_is_never_resent(start_daemon, method: str) -> None:  # type: ignore[no-untyped-def]
    daemon = start_daemon("--max-request-bytes", "2000")
    with Client(daemon.root, env=daemon.env, timeout_ms=3000) as client:
        before = _requests(client)
        with pytest.raises(RpcError) as too_large:
            if method == "write":
                client.write("big", "x" * 5000)
            else:
                client.search("y" * 5000)
        assert too_large.value.code == "E_TOO_LARGE"
        assert too_large.value.data["limit"] == 2000 and too_large.value.data["bytes"] > 5000
        assert _requests(client) == before + 2  # the big request once, and this status
        assert client.read("big") is None


async def test_the_async_client_surfaces_e_too_large_to_the_request_that_caused_it(start_daemon) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    daemon = start_daemon("--max-request-bytes", "2000")
    async with AsyncClient(daemon.root, env=daemon.env, timeout_ms=3000) as client:
        big = asyncio.ensure_future(client.write("big", "x" * 5000))
        small = [asyncio.ensure_future(client.write(f"s{k}", "fits")) for k in range(3)]
        with pytest.raises(RpcError) as too_large:
            await big
        assert too_large.value.code == "E_TOO_LARGE"
        assert all(r["ok"] for r in await asyncio.gather(*small))


def test_a_client_started_before_its_daemon_finds_it(start_daemon, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                     request: pytest.FixtureRequest) -> None:
    from tests.test_daemon_helpers import DaemonProcess

    probe = DaemonProcess(tmp_path)  # only for the environment the daemon will have
    request.addfinalizer(probe.stop)  # never started: stop removes its runtime folder
    with Client(probe.root, env=probe.env, timeout_ms=300) as client:
        with pytest.raises(DaemonUnavailable):
            client.status()
        daemon = start_daemon(env={"XDG_RUNTIME_DIR": str(probe.runtime)})
        client.timeout_ms = 10_000
        assert client.status()["pid"] == daemon.proc.pid
        assert client.write("later", "found it")["ok"] is True


def test_sessions_reload_and_close_without_their_id(mmd) -> None:  # type: ignore[no-untyped-def]
    with Client(mmd.root, env=mmd.env) as client:
        session = client.session()
        client.write("after", "written outside the session")
        assert session.read("after") is None
        reloaded = session.reload()
        assert reloaded["revision"] == session.revision == client.status()["revision"]
        assert session.read("after")["body"] == "written outside the session"
        assert session.close()["ok"] is True
        assert session.close() is None  # already closed: fine


async def test_async_sessions_reload_and_close_without_their_id(mmd) -> None:  # type: ignore[no-untyped-def]
    async with AsyncClient(mmd.root, env=mmd.env) as client:
        session = await client.session().reopen()
        await client.write("after", "x")
        assert (await session.reload())["revision"] == session.revision == (await client.status())["revision"]
        assert (await session.read("after"))["body"] == "x"
        assert (await session.close())["ok"] is True


EXAMPLE = '''
from mmctl import AsyncClient, Client, DaemonUnavailable, RpcError, Session, UnsafeEndpoint


def sync_use(root: str) -> int:
    with Client(root, timeout_ms=500) as client:
        session: Session = client.session()
        session.write("deploy", "us-east-1", summary="Deploy", tags=["ops"], if_revision=3)
        session.reload()
        session.close()
        try:
            client.queue_accept(7, replace=True)
        except (RpcError, DaemonUnavailable, UnsafeEndpoint) as error:
            return len(error.code)
    return 0


async def async_use(root: str) -> None:
    async with AsyncClient(root) as client, client.session() as session:
        await session.reload()
        await session.close()
'''


def _mypy(tmp_path: Path, sources: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One ``mypy --strict`` run over ``{file name: source}`` (one cold start for all of them)."""
    for name, source in sources.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    env = {**os.environ, "MYPYPATH": f"{REPO / 'client'}{os.pathsep}{REPO}"}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                           *sources], capture_output=True, text=True, env=env, cwd=tmp_path, check=False)


@pytest.mark.timeout(600)  # mypy takes ~20 s of CPU: the bound is for a hang, not for a loaded machine
def test_the_public_api_type_checks_with_mypy_and_mistakes_are_caught(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("mypy") is None:  # a test dependency: a skip here hid a missing extra
        pytest.fail("mypy (a test dependency) is not installed: pip install -e '.[test]'")
    bad = EXAMPLE.replace('timeout_ms=500', 'timeout_ms="slow"').replace('session.reload()', 'session.reload(5)')
    done = _mypy(tmp_path, {"good.py": EXAMPLE, "bad.py": bad})
    assert done.returncode == 1 and "good.py" not in done.stdout + done.stderr, done.stdout + done.stderr
    errors = "\n".join(line for line in done.stdout.splitlines() if line.startswith("bad.py:"))
    assert 'Argument "timeout_ms" to "Client"' in errors and 'Argument 1 to "reload"' in errors, done.stdout


async def test_an_mcp_server_started_before_the_daemon_writes_through_it_once_it_runs(  # type: ignore[no-untyped-def]
        start_daemon, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    import asyncio

    from tests.test_daemon_helpers import DaemonProcess
    from tests.test_mmctl_mcp import Mcp, _seed, _session

    probe = DaemonProcess(tmp_path)  # the environment the daemon will have
    started: list[DaemonProcess] = []

    def end() -> None:  # the daemon first: it writes in the probe's runtime folder until it has stopped
        for daemon in started:
            daemon.stop()
        probe.stop()  # never started: stop removes its runtime folder

    request.addfinalizer(end)
    _seed(probe.root)

    async def test(mcp: Mcp) -> None:
        _, note, err = await mcp.call("mem_read", topic="seed")
        assert not err and note is not None  # served from the files: no daemon yet
        daemon = await asyncio.to_thread(start_daemon, env={"XDG_RUNTIME_DIR": str(probe.runtime)})
        started.append(daemon)
        text, written, err = await mcp.call("mem_write", topic="later", content="through the daemon")
        assert not err and written is not None and written["ok"], text
        async with AsyncClient(daemon.root, env=daemon.env) as client:
            assert (await client.read("later"))["body"] == "through the daemon"
            assert (await client.status())["sessions"] == 1  # the server pinned a daemon session
        text, _, err = await mcp.call("mem_queue_accept", id=2**40)  # an integer id, as mem_queue_list shows
        assert err and ("E_NOT_FOUND" in text or "review queue" in text), text

    await _session(probe.root, dict(probe.env), test)


def test_an_unnumbered_error_answers_the_request_it_names_by_size() -> None:
    from mmctl._base import answers

    too_large = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "too large",
                                                         "data": {"code": "E_TOO_LARGE", "bytes": 5000}}}
    assert answers(too_large, 3, 5000) and not answers(too_large, 3, 4999)
    parse = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad", "data": {"code": "E_PARSE"}}}
    assert answers(parse, 3, 10)  # the one request in flight
    assert not answers({"jsonrpc": "2.0", "id": None, "result": {}}, 3, 10)
    assert not answers({"jsonrpc": "2.0", "id": 2, "result": {}}, 3, 10)  # a stale answer


def test_the_daemon_reads_a_leading_id_without_parsing_the_frame() -> None:
    from mmd.daemon.rpc import peek_id

    assert peek_id(b'{"jsonrpc":"2.0","id":7,"method":"memory.write","params":{') == 7
    assert peek_id(b'{"jsonrpc": "2.0", "id": "a-1", "method"') == "a-1"
    assert peek_id(b'{"method":"memory.write","id":4,') is None  # not leading: unknown without a parse
    assert peek_id(b'{"jsonrpc":"2.0","id":{"nested":1}') is None


def test_the_following_memory_forwards_every_call_of_a_session_memory() -> None:
    import inspect

    from mmctl.mcp.memory import FollowingMemory, SessionMemory

    calls = {n for n, f in vars(SessionMemory).items() if inspect.iscoroutinefunction(f)}
    assert calls and calls <= {n for n, f in vars(FollowingMemory).items() if inspect.iscoroutinefunction(f)}
