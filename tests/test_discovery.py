"""A client finds the daemon of a root from the root itself (issues 26, 28): a hook started with another
``$XDG_RUNTIME_DIR`` than the daemon's, or none, still reaches it through ``<root>/.mmd/endpoints.json``, which
is taken only as the socket folder is (ours, 0600, no symlink, ``ipc://``), and goes with the daemon.

A real daemon, real hook processes.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

from mmctl.injection import STALE

from mmd.wire.endpoints import discover, endpoints_for, record_path, recorded_endpoints
from tests.test_hook_outputs import CLAUDE_START, CODEX_START, context, hook, valid
from tests.test_mmctl_agents import runner


def test_a_hook_with_another_runtime_dir_or_none_gets_the_memory_from_the_daemon(mmd: Any, tmp_path: Path) -> None:
    record = record_path(mmd.root)
    assert json.loads(record.read_text()) == {"rpc": mmd.rpc, "pub": mmd.pub, "pid": mmd.proc.pid}
    assert record.stat().st_mode & 0o777 == 0o600
    run = runner(mmd.root, dict(mmd.env))
    assert run("write", "alpha", "--content", "Use pnpm, never npm.", "--summary", "Package manager").code == 0
    elsewhere = {**mmd.env, "XDG_RUNTIME_DIR": tempfile.mkdtemp(prefix="otherrt", dir=tmp_path)}
    bare = {k: v for k, v in mmd.env.items() if k != "XDG_RUNTIME_DIR"}
    for env, (form, start) in ((elsewhere, ("claude-hook", CLAUDE_START)), (bare, ("codex-hook", CODEX_START))):
        assert discover(mmd.root, env).rpc == mmd.rpc != endpoints_for(mmd.root, env).rpc
        code, out, _ = hook(form, start, mmd.root, env)
        text = context(valid(form, "SessionStart", out))
        assert code == 0 and "- alpha: Package manager" in text and STALE not in text
    assert not (mmd.root / ".mmd" / "inject").exists()  # the daemon answered: no view was kept on the files
    status = run("status", "--json")  # any client, not only hooks
    assert status.code == 0
    mmd.signal(signal.SIGTERM)
    assert mmd.wait() == 0
    assert not record.exists()  # it goes with the daemon


def test_a_record_that_is_not_safely_ours_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".mmd").mkdir(parents=True)
    record = record_path(root)
    good = {"rpc": "ipc:///run/x/mmd/k.rpc", "pub": "ipc:///run/x/mmd/k.pub", "pid": 1}
    record.write_text(json.dumps(good))
    os.chmod(record, 0o600)
    assert recorded_endpoints(root) is not None and recorded_endpoints(root).rpc == good["rpc"]  # type: ignore[union-attr]
    os.chmod(record, 0o644)
    assert recorded_endpoints(root) is None  # readable by others: anyone could have written what it says
    os.chmod(record, 0o600)
    os.chmod(root / ".mmd", 0o777)
    assert recorded_endpoints(root) is None  # in a folder others can write
    os.chmod(root / ".mmd", 0o700)
    record.write_text(json.dumps({**good, "rpc": "tcp://10.0.0.9:5555"}))
    assert recorded_endpoints(root) is None  # ipc only: a tcp daemon needs CURVE keys, named explicitly
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps(good))
    os.chmod(elsewhere, 0o600)
    record.unlink()
    record.symlink_to(elsewhere)
    assert recorded_endpoints(root) is None  # never through a symlink
    record.unlink()
    record.write_text("not json")
    os.chmod(record, 0o600)
    assert recorded_endpoints(root) is None
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "run")}
    assert discover(root, env).rpc == endpoints_for(root, env).rpc  # nothing usable recorded: the derived ones
