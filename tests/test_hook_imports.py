"""What the hook before every prompt may import, so its speed cannot quietly come back (issue 31).

A ``UserPromptSubmit`` hook of a Claude Code session in a project (a git repository with an origin, so the
project root and the user root are both read) runs as the agent runs it — a process, its JSON on stdin — under
a probe that prints the modules it loaded: through a running daemon (no pyzmq: the hook speaks ZMTP itself,
:mod:`mmctl.zmtp`) and without one (the files, with their lock). ``docs/speed.md`` has the figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mmctl.cli.hook import INJECT, INJECTED
from mmctl.injection import STALE_PROMPT, state_files

from mmd.wire.methods import MEMORY_INJECT, MEMORY_INJECTED
from tests.test_mmctl_daemon import cli
from tests.test_projects_daemon import git

THROUGH_DAEMON = {
    "mmctl", "mmctl.cli", "mmctl.cli.agents", "mmctl.cli.checks", "mmctl.cli.hook", "mmctl.cli.main",
    "mmctl.cli.output", "mmctl.cli.parser", "mmctl.cli.table", "mmctl.injection", "mmctl.pins", "mmctl.scope",
    "mmctl.scoped", "mmctl.zmtp", "mmd", "mmd.core", "mmd.core.clock", "mmd.core.errors", "mmd.core.lazyre",
    "mmd.core.paths", "mmd.core.projects", "mmd.core.record", "mmd.core.sha", "mmd.inject", "mmd.inject.scopes",
    "mmd.screen", "mmd.screen.hidden", "mmd.screen.secrets", "mmd.wire", "mmd.wire.endpoints", "mmd.wire.hooknames",
}
"""Every module of ours the hook loads when a daemon answers: the scope (the project found from the files), the
injection's shapes, the last guard on what it prints (issue 29: secrets redacted by the screen's own table, hidden
text escaped) and the wire; nothing of the core's store, nothing of the injection's planning."""
ON_THE_FILES = THROUGH_DAEMON | {
    "mmctl.backend", "mmd.core.budget", "mmd.core.config_file", "mmd.core.durable", "mmd.core.engine",
    "mmd.core.format", "mmd.core.index_state", "mmd.core.memory", "mmd.core.model", "mmd.core.options",
    "mmd.core.rootfs", "mmd.core.snapshot", "mmd.core.store", "mmd.core.text", "mmd.core.uri",
    "mmd.core.review_date", "mmd.inject.baseline", "mmd.inject.content", "mmd.inject.delta", "mmd.inject.due",
    "mmd.inject.held",
    "mmd.screen", "mmd.screen.hidden",
}
"""Without a daemon the hook reads the roots and plans the injection itself: the core's reading half and
:mod:`mmd.inject`'s planning (topics the daemon holds shown held), never the daemon's client or the search engines."""
HEAVY = ("zmq", "typing", "dataclasses", "inspect", "argparse", "asyncio", "tomllib", "mcp", "secrets", "hashlib",
         "socket", "sqlite3", "subprocess", "watchfiles", "apscheduler", "shutil")
"""Never loaded by the hook, either way: pyzmq (~36 ms), typing- and dataclass-heavy modules, the parser the
plain command line skips, the config file's parser (the hook has ``--root``), OpenSSL's hashlib, ``git``, and
shutil (its archive modules: ~3 ms for one ``which``)."""
PROBE = ("import sys, runpy; sys.argv = ['mmctl', *sys.argv[2:], '--root', sys.argv[1]]\n"
         "try:\n    runpy.run_module('mmctl', run_name='__main__')\nexcept SystemExit as done:\n"
         "    print('exit', done.code, file=sys.stderr)\n"
         "print(' '.join(sorted(sys.modules)), file=sys.stderr)")


def a_project(base: Path) -> Path:
    """``base/src/api``: a git repository with an origin (its project is ``api-<hash>``)."""
    api = base / "src" / "api"
    api.mkdir(parents=True)
    git(api, "init", "-q", "-b", "main")
    git(api, "remote", "add", "origin", "git@github.com:me/api.git")
    return api


def prompt_hook(daemon: Any, cwd: Path, sid: str) -> tuple[dict[str, Any] | None, set[str]]:
    """Run the ``UserPromptSubmit`` hook of session ``sid`` in ``cwd`` under the probe: its output (None when it
    printed nothing) and the modules it loaded."""
    payload = {"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt": "go on", "cwd": str(cwd)}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(daemon.root), "inject", "--format", "claude-hook"],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                          env={**daemon.env, "MMCTL_HOOK_BUDGET_MS": "30000"}, cwd=cwd)
    *_, code, modules = proc.stderr.strip().splitlines()
    assert code == "exit 0", proc.stderr
    return (json.loads(proc.stdout) if proc.stdout else None), set(modules.split())


def ours(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in ("mmd", "mmctl")}


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def context(output: dict[str, Any] | None) -> str:
    assert output is not None
    return str(output["hookSpecificOutput"]["additionalContext"])


def test_the_hook_sends_the_wires_own_method_names() -> None:
    assert (INJECT, INJECTED) == (MEMORY_INJECT.name, MEMORY_INJECTED.name)


def test_a_prompt_hook_imports_only_what_it_uses_through_a_daemon_and_without_one(
        start_daemon, tmp_path: Path) -> None:
    api = a_project(tmp_path)
    daemon = start_daemon("--heartbeat-ms", "200")
    assert cli(daemon, "write", "--user", "shell", "--content", "I use fish.")[0] == 0
    assert cli(daemon, "write", "--project", str(api), "deploy", "--content", "We ship with make ship.")[0] == 0
    first, _ = prompt_hook(daemon, api, "s-1")
    assert "We ship with make ship." in context(first) and "I use fish." in context(first)

    assert cli(daemon, "write", "--project", str(api), "deploy", "--content", "We ship on Fridays.")[0] == 0
    delta, loaded = prompt_hook(daemon, api, "s-1")
    assert "We ship on Fridays." in context(delta) and STALE_PROMPT not in context(delta)
    assert prompt_hook(daemon, api, "s-1")[0] is None  # the daemon kept the session's view: nothing new
    assert state_files(daemon.root) == []  # no view on the files: the daemon answered
    assert ours(loaded) - THROUGH_DAEMON == set(), sorted(ours(loaded) - THROUGH_DAEMON)
    assert heavy(loaded) == set(), sorted(heavy(loaded))

    daemon.stop()
    assert cli(daemon, "write", "--user", "shell", "--content", "I use zsh now.", env={"MMCTL_NO_DAEMON": "1"})[0] == 0
    files, loaded = prompt_hook(daemon, api, "s-2")
    assert "I use zsh now." in context(files) and "We ship on Fridays." in context(files)
    assert "may be stale" not in context(files) and state_files(daemon.root) != []  # the files, with their lock
    assert ours(loaded) - ON_THE_FILES == set(), sorted(ours(loaded) - ON_THE_FILES)
    assert heavy(loaded) == set(), sorted(heavy(loaded))
    assert "mmctl.zmtp" in loaded and "mmd.core.snapshot" in loaded  # the probe did look for the daemon, then read


def test_the_modules_the_hook_may_load_exist() -> None:
    """A renamed module would leave a name here that allows nothing: each one imports."""
    import importlib

    for name in sorted(ON_THE_FILES):
        importlib.import_module(name)


def test_sha256_hex_is_hashlibs_digest_and_loads_hashlib_only_for_long_data() -> None:
    """Short keys (a root's, a project's, an injection's hashes) use CPython's built-in SHA-256 and leave OpenSSL
    unloaded; data past :data:`mmd.core.sha.BUILTIN_MAX_BYTES` loads hashlib, which then hashes everything."""
    import hashlib

    from mmd.core.sha import BUILTIN_MAX_BYTES

    script = ("import sys, json; from mmd.core.sha import sha256_hex\n"
              "out = [sha256_hex(b''), sha256_hex(b'api'), 'hashlib' in sys.modules]\n"
              f"out += [sha256_hex(b'x' * {BUILTIN_MAX_BYTES + 1}), 'hashlib' in sys.modules, sha256_hex(b'api')]\n"
              "print(json.dumps(out))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    empty, short, loaded, long, loaded_after, short_after = json.loads(proc.stdout)
    assert (empty, short, short_after) == (hashlib.sha256(b"").hexdigest(), hashlib.sha256(b"api").hexdigest(),
                                           hashlib.sha256(b"api").hexdigest())
    assert long == hashlib.sha256(b"x" * (BUILTIN_MAX_BYTES + 1)).hexdigest()
    assert (loaded, loaded_after) == (False, True)
