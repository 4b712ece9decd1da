"""The README's examples and the docs pages', run as written (issue 10): the MCP registration and the Python example.

- The MCP registration (the ``mcpServers`` JSON of ``docs/agents.md``, every ``claude mcp add`` and ``codex mcp
  add`` line of the README's tour and of that page) names ``mmctl`` by its absolute path and the root with
  ``--root``: started as an MCP client starts it — the SDK's stdio client, which passes only a few variables
  (``HOME``, ``PATH``, …), no ``DSH_HOME`` — a write lands in that root and nothing appears under ``$HOME/.dsh``.
- The Python example of ``docs/python.md`` reads what it wrote (the direct ``Memory`` after ``reload``, and the
  ``Client`` through a real daemon on the default root).

The README's five-minute tour is run by ``tests/test_readme_tour.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.test_daemon_helpers import DaemonProcess

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
AGENTS = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
PYTHON = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
MMCTL = Path(sys.executable).with_name("mmctl")
README_MMCTL = "/home/you/.local/bin/mmctl"


def _block(text: str, after: str, language: str) -> str:
    """The first fenced ``language`` block of ``text`` after the line ``after``."""
    start = text.index(after)
    found = re.search(rf"```{language}\n(.*?)```", text[start:], re.S)
    assert found, f"no {language} block after {after!r}"
    return found.group(1)


def _mcp_config() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(_block(AGENTS, "**Any MCP client**", "json"))["mcpServers"]["memory"]
    return config


def test_every_mcp_registration_runs_mmctl_by_its_absolute_path_with_a_root() -> None:
    config = _mcp_config()
    assert config["command"] == README_MMCTL and os.path.isabs(config["command"])
    adds = {name: [line.split(" -- ", 1)[1] for line in text.splitlines() if re.match(r"(claude|codex) mcp add ", line)]
            for name, text in (("README.md", README), ("docs/agents.md", AGENTS))}
    assert all(len(found) == 2 for found in adds.values()), adds  # claude's and codex's, in each
    assert all(shlex.split(a) == [config["command"], *config["args"]] for found in adds.values() for a in found), adds
    assert config["args"][:2] == ["mcp", "--root"] and os.path.isabs(config["args"][2])


async def test_the_mcp_registration_writes_to_its_root_with_an_mcp_clients_few_variables(tmp_path: Path) -> None:
    config = _mcp_config()
    you = tmp_path / "you"
    args = [a.replace("/home/you", str(you)) for a in config["args"]]
    root = Path(args[2])
    home = tmp_path / "client-home"  # the MCP client's own HOME: the default root would be under it
    (home / ".config" / "mmd").mkdir(parents=True)  # writes at once (no daemon here to take proposals)
    (home / ".config" / "mmd" / "config.toml").write_text('[agents]\nwrites = "direct"\n', encoding="utf-8")
    from mcp import ClientSession, StdioServerParameters, stdio_client  # here: ~1 s of CPU, not at collection
    params = StdioServerParameters(command=str(MMCTL) if MMCTL.exists() else sys.executable,
                                   args=args if MMCTL.exists() else ["-m", "mmctl", *args],
                                   env={"HOME": str(home), "XDG_RUNTIME_DIR": str(tmp_path / "run")})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            wrote = await session.call_tool("mem_write", {"topic": "from-mcp", "content": "written over MCP"})
            assert not wrote.is_error, wrote.content
    assert (root / "memories" / "from-mcp.md").read_text(encoding="utf-8").rstrip().endswith("written over MCP")
    assert not (home / ".dsh").exists()


def test_the_python_example_reads_what_it_wrote(tmp_path: Path) -> None:
    code = _block(PYTHON, "## An example", "python")
    daemon = DaemonProcess(tmp_path, bare=True).start()  # `mmd &` with no flags: the default root
    try:
        env = {**daemon.env, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client")]),
               "TMPDIR": str(tmp_path)}  # the example's tempfile.mkdtemp() root goes with the test's folder
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                              cwd=tmp_path)
    finally:
        daemon.stop()
    assert done.returncode == 0, done.stderr
    body, refused, read = done.stdout.splitlines()
    assert body == "We deploy to us-east-1."
    assert refused.startswith("{'ok': False, 'code': 'E_WRITE_BUDGET_EXCEEDED'")
    assert "'body': 'We deploy to us-east-1.'" in read and "'summary': 'Deploy region'" in read
    assert (daemon.root / "memories" / "deploy-region.md").is_file()
