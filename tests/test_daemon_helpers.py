"""Helpers for the daemon tests: the real ``mmd`` in a subprocess, and small ZeroMQ clients.

The fixtures built on these live at the end of ``tests/conftest.py``. This
module holds no tests of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio

from mmd.wire.endpoints import endpoints_for
from tests.leakcheck import end_tree

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 15.0


class DaemonProcess:
    """``python -m mmd.daemon.main`` on a temp root with its own runtime folder.

    The runtime folder is a short ``/tmp`` path: AF_UNIX socket paths must stay under 108 bytes.
    """

    def __init__(self, base: Path, *extra: str, root: Path | None = None, env: dict[str, str] | None = None,
                 bare: bool = False) -> None:
        self.base = base
        self.bare = bare  # run ``mmd`` with no arguments at all: the root comes from $DSH_HOME
        self.root = base / "dsh" / "memory" if bare else root or base / "root"
        self.runtime = Path(tempfile.mkdtemp(prefix="mmdrt"))
        self.env = {**os.environ, "XDG_RUNTIME_DIR": str(self.runtime), "DSH_HOME": str(base / "dsh"),
                    "XDG_CONFIG_HOME": str(base / "xdg-config"), "PYTHONPATH": str(REPO)}
        self.env["HOME"] = str(base / "home")  # a fake home: never the machine's own agent logs
        for name in ("DSH_MEMORY_ROOT", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
            self.env.pop(name, None)
        self.env.pop("NOTIFY_SOCKET", None)
        self.env.update(env or {})
        self.extra = list(extra)
        endpoints = endpoints_for(self.root, self.env)
        self.rpc, self.pub, self.folder = endpoints.rpc, endpoints.pub, endpoints.folder
        self.stderr_path = base / f"mmd-stderr-{id(self)}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> DaemonProcess:
        """Spawn the daemon; with ``wait``, return once it answers ``daemon.status``."""
        args = [sys.executable, "-m", "mmd.daemon.main", *self.extra]
        if not self.bare:
            args[3:3] = ["--root", str(self.root), "--sessions", str(self.base / "sessions")]
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(args, env=self.env, stderr=err, stdout=subprocess.DEVNULL,
                                         start_new_session=True)  # its group is ended with it (``stop``)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Poll ``daemon.status`` until it answers; fail with the daemon's stderr if it exits."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"mmd exited {self.proc.returncode}: {self.stderr()}")
            if os.path.exists(self.rpc[len("ipc://"):]):
                try:
                    return sync_call(self.rpc, "daemon.status", timeout_ms=500)["result"]
                except TimeoutError:
                    pass
            time.sleep(0.02)
        raise AssertionError(f"mmd did not answer within {timeout_s} s: {self.stderr()}")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout_s: float = 15.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout_s)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL to its process group if it does not exit in 10 s; any process it started is
        ended too (:func:`tests.leakcheck.end_tree`); remove the runtime folder."""
        if self.proc is not None:
            end_tree(self.proc, wait_s=10.0)
        shutil.rmtree(self.runtime, ignore_errors=True)


def sync_call(endpoint: str, method: str, params: dict[str, Any] | None = None, *,
              timeout_ms: int = 5000, raw: bytes | None = None) -> dict[str, Any]:
    """One request on a fresh DEALER; raises TimeoutError when no answer comes in ``timeout_ms``."""
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        payload = raw if raw is not None else json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode()
        sock.send(payload)
        if not sock.poll(timeout_ms):
            raise TimeoutError(method)
        answer: dict[str, Any] = json.loads(sock.recv())
        return answer
    finally:
        sock.close()


class Client:
    """An asyncio DEALER speaking JSON-RPC; requests may be pipelined (replies matched by id)."""

    def __init__(self, endpoint: str) -> None:
        self.ctx = zmq.asyncio.Context.instance()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self._ids = itertools.count(1)
        self._early: dict[Any, dict[str, Any]] = {}

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        rid = next(self._ids)
        await self.sock.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                         "params": params or {}}).encode())
        return rid

    async def send_raw(self, frame: bytes) -> None:
        await self.sock.send(frame)

    async def recv(self, timeout_s: float = 10.0) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(await asyncio.wait_for(self.sock.recv(), timeout_s))
        return answer

    async def reply_to(self, rid: Any, timeout_s: float = 10.0) -> dict[str, Any]:
        while rid not in self._early:
            answer = await self.recv(timeout_s)
            self._early[answer.get("id")] = answer
        return self._early.pop(rid)

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 10.0) -> Any:
        """The result; raises RpcFailure with the error object on a JSON-RPC error."""
        answer = await self.reply_to(await self.send(method, params), timeout_s)
        if "error" in answer:
            raise RpcFailure(answer["error"])
        return answer["result"]

    def close(self) -> None:
        self.sock.close()


class RpcFailure(Exception):
    """A JSON-RPC error answer; ``error`` is its error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error)
        self.error = error

    @property
    def code(self) -> str:
        return str(self.error["data"]["code"])


class Subscriber:
    """An asyncio SUB on the daemon's PUB endpoint, subscribed to everything."""

    def __init__(self, endpoint: str) -> None:
        self.sock = zmq.asyncio.Context.instance().socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(endpoint)

    async def next(self, timeout_s: float = 10.0) -> tuple[str, dict[str, Any]]:
        topic, payload = await asyncio.wait_for(self.sock.recv_multipart(), timeout_s)
        return topic.decode(), json.loads(payload)

    async def wait_for(self, pred: Callable[[str, dict[str, Any]], bool],
                       timeout_s: float = 10.0) -> tuple[str, dict[str, Any]]:
        """The first event matching ``pred`` within ``timeout_s`` seconds."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching event")
            topic, payload = await self.next(left)
            if pred(topic, payload):
                return topic, payload

    async def ready(self, timeout_s: float = 10.0) -> None:
        """Wait until the subscription is live (any event arrives): run the daemon with a short heartbeat."""
        await self.wait_for(lambda t, p: True, timeout_s)

    def close(self) -> None:
        self.sock.close()


class Lines:
    """The lines a process writes to ``path`` (its stdout or stderr sent to a file, never a pipe that can fill and
    block it), read as they come: :meth:`next` waits for the next whole line with a deadline that bounds a hang."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = b""

    def next(self, timeout_s: float = 30.0) -> str:
        """The next whole line (with its newline); raises TimeoutError after ``timeout_s`` seconds without one."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._partial:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                more = f.read()
            self.offset += len(more)
            self._partial += more
            if b"\n" in self._partial:
                break
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no whole line in {self.path} within {timeout_s} s (so far: {self._partial!r})")
            time.sleep(0.02)
        line, self._partial = self._partial.split(b"\n", 1)
        return line.decode("utf-8", "replace") + "\n"

    def until(self, pred: Callable[[str], bool], timeout_s: float = 30.0) -> str:
        """The first next line for which ``pred`` holds, skipping the others; TimeoutError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.next(max(0.0, deadline - time.monotonic()))
            if pred(line):
                return line

    def skip_to_end(self) -> None:
        """Forget what was written so far: the next line is one written after this call."""
        self.offset = self.path.stat().st_size if self.path.exists() else 0
        self._partial = b""
