"""The root's life under the daemon (issue 15): a root removed or replaced while the daemon runs is never
written again nor recreated, and a second daemon never serves beside the first.

Real daemon in a subprocess, real files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .test_daemon_helpers import Client, RpcFailure

pytestmark = pytest.mark.timeout(90)


@pytest.mark.parametrize("how", ["removed", "replaced"])
async def test_a_root_removed_or_replaced_under_the_daemon_refuses_writes_and_is_never_recreated(
        start_daemon, tmp_path: Path, how: str) -> None:  # type: ignore[no-untyped-def]
    first = start_daemon()
    client = Client(first.rpc)
    try:
        assert (await client.call("memory.write", {"topic": "kept", "content": "before"}))["ok"]
        if how == "removed":
            shutil.rmtree(first.root)
        else:
            first.root.rename(tmp_path / "moved-away")
            first.root.mkdir()
        for method, params in (("memory.write", {"topic": "after", "content": "lost?"}),
                               ("memory.delete", {"topic": "kept"})):
            with pytest.raises(RpcFailure) as refused:
                await client.call(method, params)
            assert refused.value.code == "E_UNAVAILABLE"
            assert how in refused.value.error["message"] and "restart" in refused.value.error["message"]
        status = await client.call("daemon.status")
        assert how in status["rootLost"]
        assert (await client.call("memory.read", {"topic": "kept"}))["body"] == "before"  # reads go on
        if how == "removed":
            assert not first.root.exists()  # never recreated
        else:
            assert list(first.root.iterdir()) == []  # nothing written into the stranger
        assert "daemon.root_lost" in first.stderr()
        # a second daemon on the same root and endpoints refuses while the first one lives
        second = start_daemon(env={"XDG_RUNTIME_DIR": str(first.runtime)}, wait=False)
        assert second.wait(30) == 3
        assert f"pid {first.proc.pid}" in second.stderr(), second.stderr()
        assert (await client.call("daemon.status"))["pid"] == first.proc.pid
    finally:
        client.close()
