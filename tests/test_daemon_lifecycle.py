"""The daemon's life: one owner per root, user-only sockets, clean and lossless shutdown, reloads, systemd.

Real daemon in a subprocess, real signals, real sockets.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import time
from pathlib import Path

import pytest

from mmd.core.memory import Memory
from mmd.core.options import MemoryOptions

from .test_daemon_helpers import Client, RpcFailure, Subscriber

pytestmark = pytest.mark.timeout(60)


def test_a_socket_folder_that_cannot_be_used_is_refused_before_the_root_is_created(start_daemon,
                                                                                  tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    root = tmp_path / "new-root"
    failed = start_daemon("--rpc", f"ipc://{blocker}/x.rpc", root=root, wait=False)
    assert failed.wait(30) == 1
    assert f"socket folder {blocker} is not a directory" in failed.stderr()
    assert not root.exists()


def test_a_second_daemon_on_the_same_root_exits_naming_the_holder(start_daemon) -> None:
    first = start_daemon()
    second = start_daemon(wait=False, env={"XDG_RUNTIME_DIR": str(first.runtime)})  # as a user starts it again
    assert second.wait(10) == 3  # at once: it serves the root (no wait for the lock, as for a short writer)
    assert f"pid {first.proc.pid}" in second.stderr()
    # the first one is untouched: its sockets are still there and it still answers
    assert first.wait_ready()["pid"] == first.proc.pid


def test_a_start_waits_for_a_lock_held_briefly_by_a_writer_that_is_no_daemon(start_daemon, tmp_path: Path) -> None:
    # `mmctl` writing the files while no daemon ran holds the lock for a moment: a start then exited 3, naming it
    from mmd.core.durable import WriteLock

    root = tmp_path / "root"
    root.mkdir()
    lock = WriteLock(root)
    lock.acquire()
    try:
        daemon = start_daemon(root=root, wait=False)
        deadline = time.monotonic() + 30  # bounds a hang only: a loaded machine takes its time to get there
        while "daemon.waiting_for_lock" not in daemon.stderr() and daemon.proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "daemon.waiting_for_lock" in daemon.stderr(), daemon.stderr()  # it came to the lock and waits,
        assert daemon.proc.poll() is None, daemon.stderr()  # rather than giving up
    finally:
        lock.release()
    assert daemon.wait_ready()["pid"] == daemon.proc.pid


def test_a_startup_that_fails_half_way_undoes_every_step_it_took(start_daemon, tmp_path: Path) -> None:
    # lock, database, snapshot, watchers, ingestion and scheduler start; another process listens on the PUB
    # socket's path, so it is not bound over
    taken = socket.socket(socket.AF_UNIX)
    taken.bind(str(tmp_path / "taken.pub"))
    taken.listen()
    failed = start_daemon("--pub", f"ipc://{tmp_path}/taken.pub", wait=False)
    assert failed.wait(30) == 3, failed.stderr()
    taken.close()
    err = failed.stderr()
    assert "ingest.waiting" in err and "daemon.refused" in err and "daemon.stopped" in err, err
    assert not os.path.exists(failed.rpc[len("ipc://"):])  # the ROUTER never bound
    # the lock and the database were released: the next daemon on the same root serves
    again = start_daemon()
    assert again.wait_ready()["root"] == str(again.root)


def test_sockets_and_their_folder_are_user_only_and_removed_at_exit(daemon) -> None:
    assert stat.S_IMODE(os.stat(daemon.folder).st_mode) == 0o700
    for endpoint in (daemon.rpc, daemon.pub):
        path = endpoint[len("ipc://"):]
        st = os.stat(path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    assert not os.path.exists(daemon.rpc[len("ipc://"):]) and not os.path.exists(daemon.pub[len("ipc://"):])
    assert "daemon.stopped" in daemon.stderr()


async def test_sigterm_during_a_write_storm_loses_no_acknowledged_write(start_daemon) -> None:
    """1. eight clients write in a loop to overlapping topics; 2. SIGTERM once 40 writes are acknowledged;
    3. the daemon exits 0; 4. every topic holds its last acknowledged body and every file parses."""
    d = start_daemon()
    topics = [f"storm{i}" for i in range(6)]
    acked: dict[str, tuple[int, str]] = {}
    count = 0
    first_acks = asyncio.Event()

    async def writer(n: int) -> None:
        nonlocal count
        client = Client(d.rpc)
        try:
            for k in range(10_000):
                topic, body = topics[(n + k) % len(topics)], f"client {n} write {k}"
                try:
                    out = await client.call("memory.write", {"topic": topic, "content": body}, timeout_s=3)
                except (RpcFailure, TimeoutError):
                    return  # E_SHUTTING_DOWN, or the daemon is gone: never acknowledged
                assert out["ok"] is True
                if out["revision"] > acked.get(topic, (0, ""))[0]:
                    acked[topic] = (out["revision"], body)
                count += 1
                if count >= 40:
                    first_acks.set()
        finally:
            client.close()

    tasks = [asyncio.create_task(writer(n)) for n in range(8)]
    await asyncio.wait_for(first_acks.wait(), 30)
    d.signal(signal.SIGTERM)
    await asyncio.gather(*tasks)
    assert await asyncio.to_thread(d.wait, 20) == 0
    memory = Memory.open(MemoryOptions.create(root=d.root, env={}))
    assert "malformedNotes" not in memory.snapshot.anomalies
    for topic, (_, body) in acked.items():
        assert memory.read_topic(topic).body == body
    assert [p for p in Path(d.root).rglob("*") if p.name.endswith(".tmp")] == []


def test_a_bad_config_is_refused_at_start_with_key_value_and_why(start_daemon, tmp_path: Path) -> None:
    bad_flag = start_daemon("--index-lines", "0", wait=False)
    assert bad_flag.wait() == 2
    assert "indexLines" in bad_flag.stderr() and "positive integer" in bad_flag.stderr()

    config = tmp_path / "bad.toml"
    config.write_text('[search]\nmode = "grep"\n')
    bad_file = start_daemon("--config", str(config), wait=False)
    assert bad_file.wait() == 2
    assert "search.mode" in bad_file.stderr() and "grep" in bad_file.stderr()

    tcp = start_daemon("--rpc", "tcp://127.0.0.1:5599", wait=False)
    assert tcp.wait() == 2
    assert "tcp://" in tcp.stderr() and "CURVE" in tcp.stderr()


async def test_sighup_reloads_the_config_file(start_daemon, tmp_path: Path) -> None:
    config = tmp_path / "mmd.toml"
    config.write_text("[nudge]\nenabled = false\n[daemon]\nheartbeatMs = 100\n")
    d = start_daemon("--config", str(config))
    sub = Subscriber(d.pub)
    try:
        await sub.ready()
        config.write_text("[nudge]\nenabled = true\nintervalMs = 100\n[daemon]\nheartbeatMs = 100\n")
        d.signal(signal.SIGHUP)
        topic, nudge = await sub.wait_for(lambda t, p: t == "memory/nudge", timeout_s=10)
        assert nudge["reason"] == "schedule"
        # a broken file on SIGHUP is refused and the daemon keeps serving with the old config
        config.write_text("[nudge]\nintervalMs = -5\n")
        d.signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "config.reload_refused" not in d.stderr() and time.monotonic() < deadline:
            await sub.next()
        assert "nudge.intervalMs" in d.stderr()
        client = Client(d.rpc)
        try:
            assert (await client.call("daemon.status"))["pid"] == d.proc.pid
        finally:
            client.close()
    finally:
        sub.close()


def test_under_systemd_it_sends_ready_watchdog_and_stopping(start_daemon, tmp_path: Path) -> None:
    path = f"/tmp/mmd-notify-{os.getpid()}-{time.monotonic_ns()}.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.settimeout(10)
    try:
        d = start_daemon(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
        messages = []
        while not any("WATCHDOG=1" in m for m in messages):
            messages.append(listener.recv(4096).decode())
        assert "READY=1" in messages[0] and f"MAINPID={d.proc.pid}" in messages[0]
        d.signal(signal.SIGTERM)
        while not any("STOPPING=1" in m for m in messages):
            messages.append(listener.recv(4096).decode())
        assert d.wait() == 0
    finally:
        listener.close()
        os.unlink(path)


def test_signal_handlers_only_queue_and_a_second_sigint_forces_the_exit(tmp_path: Path) -> None:
    from mmd.daemon.config import build_config
    from mmd.daemon.lifecycle import Daemon

    d = Daemon(build_config({"root": str(tmp_path / "root")}, {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": "/tmp"}))
    d.handle_signal(signal.SIGHUP)
    assert d._signals.get_nowait() == signal.SIGHUP and not d._stopping
    d.handle_signal(signal.SIGINT)
    assert d._signals.get_nowait() == signal.SIGINT and d._stopping and not d._force.is_set()
    d.handle_signal(signal.SIGINT)
    assert d._force.is_set() and d._signals.empty()
    assert not (tmp_path / "root").exists()  # nothing opens before startup


def test_tcp_with_curve_admits_only_the_configured_clients(start_daemon, tmp_path: Path) -> None:
    import shutil

    import zmq
    import zmq.auth

    keys, clients = tmp_path / "keys", tmp_path / "clients"
    keys.mkdir()
    clients.mkdir()
    server_public, server_secret = zmq.auth.create_certificates(keys, "server")
    client_public, client_secret = zmq.auth.create_certificates(keys, "client")
    _, stranger_secret = zmq.auth.create_certificates(keys, "stranger")
    shutil.copy(client_public, clients)
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    rpc = f"tcp://127.0.0.1:{ports[0]}"
    d = start_daemon("--rpc", rpc, "--pub", f"tcp://127.0.0.1:{ports[1]}", "--curve-secret-key-file",
                     server_secret, "--curve-client-keys-dir", str(clients), wait=False)
    server_key, _ = zmq.auth.load_certificate(server_public)

    def status(secret_file: str | None, timeout_ms: int) -> dict | None:
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if secret_file is not None:
            public, secret = zmq.auth.load_certificate(secret_file)
            sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = public, secret, server_key
        try:
            sock.connect(rpc)
            sock.send(b'{"jsonrpc": "2.0", "id": 1, "method": "daemon.status"}')
            return json.loads(sock.recv()) if sock.poll(timeout_ms) else None
        finally:
            sock.close()

    deadline = time.monotonic() + 30
    answer = None
    while answer is None and time.monotonic() < deadline:
        assert d.proc.poll() is None, d.stderr()
        answer = status(client_secret, 500)
    assert answer is not None and answer["result"]["pid"] == d.proc.pid
    assert status(stranger_secret, 700) is None  # a valid CURVE key that is not on the list
    assert status(None, 700) is None  # plain text


def test_with_no_arguments_it_creates_the_spec_root_and_serves(start_daemon, tmp_path: Path) -> None:
    d = start_daemon(bare=True)
    status = d.wait_ready()
    assert status["root"] == str(tmp_path / "dsh" / "memory")
    assert (tmp_path / "dsh" / "memory" / "MEMORY.md").is_file()
    assert (tmp_path / "dsh" / "memory" / ".mmd" / "lock").is_file()


def test_a_root_the_daemon_creates_is_private_whatever_the_umask(start_daemon, tmp_path: Path) -> None:
    """Issue 15: the root, .mmd/ and state.db (which holds text from session logs) are 0700/0600 under umask 022."""
    root = tmp_path / "fresh" / "memory"
    old = os.umask(0o022)  # inherited by the daemon process
    try:
        daemon = start_daemon(root=root)
    finally:
        os.umask(old)
    daemon.wait_ready()
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in (tmp_path / "fresh", root, root / ".mmd", *sorted((root / ".mmd").glob("state.db*")))}
    assert modes["fresh"] == modes["fresh/memory"] == modes["fresh/memory/.mmd"] == 0o700, modes
    assert {k: v for k, v in modes.items() if "state.db" in k} == {
        k: 0o600 for k in modes if "state.db" in k} and "fresh/memory/.mmd/state.db" in modes, modes


def test_sockets_whose_files_were_removed_are_bound_again(daemon) -> None:  # type: ignore[no-untyped-def]
    # a /tmp cleaner or `rm -rf $XDG_RUNTIME_DIR/mmd`: no client could connect, while the daemon looked healthy
    import shutil

    from tests.test_daemon_helpers import sync_call
    from tests.test_ingest_helpers import wait_until

    folder = Path(daemon.rpc[len("ipc://"):]).parent
    shutil.rmtree(folder)
    wait_until(lambda: os.path.exists(daemon.rpc[len("ipc://"):]) and os.path.exists(daemon.pub[len("ipc://"):]),
               what="the sockets bound again")
    assert os.stat(folder).st_mode & 0o777 == 0o700
    assert os.stat(daemon.rpc[len("ipc://"):]).st_mode & 0o777 == 0o600
    assert sync_call(daemon.rpc, "daemon.status", {})["result"]["pid"] == daemon.proc.pid
    assert "socket.rebound" in daemon.stderr()
