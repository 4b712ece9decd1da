"""Who can reach the daemon (issue 11): the daemon binds only in a private socket folder, and the client
sends nothing to a folder, socket or listener another user owns.

Another local user is a child process that ``os.setuid``'s to ``nobody`` after the fork; these tests
need root for that and skip visibly otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from mmctl import Client, UnsafeEndpoint

from mmd.wire.endpoints import endpoints_for, ensure_private_dir, ipc_path
from tests.leakcheck import shared_temp

OTHER_UID = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="another uid is simulated with os.setuid: needs root")

class Attacker:
    """A ZeroMQ ROUTER bound at ``endpoint`` by uid 65534 (a forked child that ``os.setuid``'s), which logs
    what it receives into ``spool/got`` and forges answers."""

    def __init__(self, endpoint: str, spool: Path) -> None:
        ready = spool / "ready"
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.setgid(OTHER_UID)
                os.setuid(OTHER_UID)
                self._serve(endpoint, spool / "got", ready)
            finally:
                os._exit(code)
        deadline = time.monotonic() + 15
        while not ready.exists():
            if os.waitpid(self.pid, os.WNOHANG) != (0, 0) or time.monotonic() > deadline:
                raise AssertionError("the attacker did not start")
            time.sleep(0.02)

    @staticmethod
    def _serve(endpoint: str, log: Path, ready: Path) -> None:
        import zmq

        path = Path(endpoint[len("ipc://"):])
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in (path.parent.parent, path.parent):
            if folder.stat().st_uid == os.getuid():
                folder.chmod(0o777)
        sock = zmq.Context().socket(zmq.ROUTER)
        sock.bind(endpoint)
        path.chmod(0o777)
        ready.touch()
        with open(log, "ab", buffering=0) as out:
            while True:
                frames = sock.recv_multipart()
                out.write(frames[-1] + b"\n")
                answer = {"jsonrpc": "2.0", "id": json.loads(frames[-1])["id"], "result": {"forged": True}}
                sock.send_multipart([frames[0], json.dumps(answer).encode()])

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


@pytest.fixture
def spool():  # type: ignore[no-untyped-def]
    """A folder both users can write (what the attacker received lands here)."""
    folder = Path(tempfile.mkdtemp(prefix="mmdspool", dir=shared_temp()))  # not the run's own: that one is 0700
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_root
def test_the_client_sends_nothing_to_a_socket_folder_another_user_made(tmp_path: Path, spool: Path) -> None:
    base = Path(f"/tmp/mmdatk-{uuid.uuid4().hex[:8]}")  # the attacker's pre-made "runtime folder"
    env = {"XDG_RUNTIME_DIR": str(base), "DSH_HOME": str(tmp_path)}
    root = tmp_path / "root"
    attacker = Attacker(endpoints_for(root, env).rpc, spool)
    try:
        with Client(root, env=env, timeout_ms=2000) as client, pytest.raises(UnsafeEndpoint) as refused:
            client.write("secret", "the victim's content")
        assert str(OTHER_UID) in str(refused.value)
        assert not (spool / "got").exists() or b"victim" not in (spool / "got").read_bytes()
        with Client(root, env=env) as client, pytest.raises(UnsafeEndpoint):
            client.subscribe()  # events from there would be forged
    finally:
        attacker.stop()
        shutil.rmtree(base, ignore_errors=True)


@needs_root
def test_the_client_checks_the_listeners_uid_even_in_a_private_folder(tmp_path: Path, spool: Path) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="mmdrt"))
    env = {"XDG_RUNTIME_DIR": str(runtime), "DSH_HOME": str(tmp_path)}
    root = tmp_path / "root"
    endpoint = endpoints_for(root, env).rpc
    attacker_dir = spool / "a"
    attacker = Attacker(f"ipc://{attacker_dir}/x.rpc", spool)
    try:
        ensure_private_dir(endpoints_for(root, env).folder)
        target = ipc_path(endpoint)
        assert target is not None
        os.rename(attacker_dir / "x.rpc", target)  # a socket file of ours in our 0700 folder…
        os.chown(target, 0, 0)
        os.chmod(target, 0o600)
        assert stat.S_IMODE(os.stat(target.parent).st_mode) == 0o700
        with Client(root, env=env, timeout_ms=2000) as client, pytest.raises(UnsafeEndpoint) as refused:
            client.write("secret", "the victim's content")  # …but uid 65534 listens on it (SO_PEERCRED)
        assert f"runs as uid {OTHER_UID}" in str(refused.value)
        assert not (spool / "got").exists() or b"victim" not in (spool / "got").read_bytes()
    finally:
        attacker.stop()
        shutil.rmtree(runtime, ignore_errors=True)


@needs_root
def test_the_hook_sends_nothing_to_a_listener_of_another_user_and_answers_from_the_files(
        tmp_path: Path, spool: Path) -> None:
    """The hook's own wire (issue 31: ZMTP without pyzmq) checks the process at the other end of its connection
    before its greeting: uid 65534 listening on our socket gets nothing, and the prompt is told memory may be stale
    (the listener might hold the lock), exit 0."""
    from io import BytesIO, StringIO

    from mmctl.cli.main import main
    from mmctl.injection import STALE_PROMPT
    from mmctl.zmtp import Connection, Silent

    from mmd.core import Memory, MemoryOptions

    runtime = Path(tempfile.mkdtemp(prefix="mmdrt"))
    env = {"XDG_RUNTIME_DIR": str(runtime), "DSH_HOME": str(tmp_path), "HOME": str(tmp_path)}
    root = tmp_path / "root"
    Memory.ensure(MemoryOptions.create(root=root)).write("deploy", "We ship on Fridays.")
    target = ipc_path(endpoints_for(root, env).rpc)
    assert target is not None
    attacker = Attacker(f"ipc://{spool}/a/x.rpc", spool)
    try:
        ensure_private_dir(target.parent)
        os.rename(spool / "a" / "x.rpc", target)
        os.chown(target, 0, 0)
        os.chmod(target, 0o600)
        with pytest.raises(Silent, match=f"runs as uid {OTHER_UID}"):
            Connection(str(target)).open(time.monotonic() + 5)
        out, err = StringIO(), StringIO()
        hook = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "the victim's prompt"}
        code = main(["inject", "--format", "claude-hook", "--root", str(root)], env=env, stdout=out, stderr=err,
                    stdin=BytesIO(json.dumps(hook).encode()))
        assert code == 0 and json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"] == STALE_PROMPT
        assert not (spool / "got").exists() or (spool / "got").read_bytes() == b""  # not even a frame reached it
    finally:
        attacker.stop()
        shutil.rmtree(runtime, ignore_errors=True)


@needs_root
def test_the_daemon_refuses_a_runtime_folder_another_user_owns_or_can_write(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    theirs = Path(tempfile.mkdtemp(prefix="mmdtheirs"))
    os.chown(theirs, OTHER_UID, OTHER_UID)
    open_to_all = Path(tempfile.mkdtemp(prefix="mmdopen"))
    open_to_all.chmod(0o777)
    try:
        for base in (theirs, open_to_all):
            daemon = start_daemon(env={"XDG_RUNTIME_DIR": str(base)}, wait=False)
            assert daemon.wait(30) == 1
            assert "another user" in daemon.stderr(), daemon.stderr()
            assert not (base / "mmd").exists() or not any((base / "mmd").iterdir())
    finally:
        shutil.rmtree(theirs, ignore_errors=True)
        shutil.rmtree(open_to_all, ignore_errors=True)


def test_a_runtime_base_right_under_a_shared_sticky_folder_must_be_0700(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp
    base = shared / f"mmd-{os.getuid()}"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    with pytest.raises(PermissionError, match="mode 700") as refused:
        ensure_private_dir(base / "mmd")
    assert f"it sits right under {shared}, which every user can write" in str(refused.value)  # why this one
    assert f"chmod 700 {base}" in str(refused.value)
    base.chmod(0o700)
    ensure_private_dir(base / "mmd")
    assert stat.S_IMODE(os.stat(base / "mmd").st_mode) == 0o700
    fresh = shared / "fresh" / "mmd"  # what we create ourselves is 0700 all the way
    ensure_private_dir(fresh)
    assert stat.S_IMODE(os.stat(fresh.parent).st_mode) == 0o700
