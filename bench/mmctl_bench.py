"""Benchmark: one-shot ``mmctl`` calls on a 20-topic root, direct and through a daemon, beside their floors.

Every figure is the wall time of a whole process, p50 and p95 of ``--runs`` rounds. In each round every command
runs once, one after the other, so machine load moves them alike (issue 31: "measured alternately in one run"):

- the floors: ``python -c pass`` of this interpreter and, when the reference CLI's build is present
  (``MM_REF_DIR`` holding ``lib/cli.js``, run by ``MM_REF_NODE`` or the ``node`` on PATH; issue 31 measures it
  on Node 22), the reference's ``read`` and ``search`` and that node's own start (``node -e 0``);
- ``mmctl read`` and ``mmctl search``, direct (``MMCTL_NO_DAEMON=1``) and through the running daemon, each with
  its ratio to the floor (issue 17: <= 2.0x ``python -c pass``; issue 31: <= 2.5x) and to the reference
  (issues 17 and 31: <= 0.5x);
- ``mmctl write`` through the daemon, then direct once it has stopped (it holds the root's lock), and the peak
  RSS of each command (issue 5: reads <= 40 ms, writes <= 60 ms, <= 30 MiB);
- with ``--mcp-runs N`` (default 5; 0 skips it): the MCP ``initialize`` answer of ``mmctl mcp`` beside a minimal
  MCP SDK server with one tool, alternated (issue 31: <= 1.3x).

Always exits 0: read the figures. Compile the ``.pyc`` files first (``python -m compileall -q mmd client``) when
``PYTHONDONTWRITEBYTECODE`` is set, or every call pays for compiling.

    python bench/mmctl_bench.py [--runs N] [--topics N] [--mcp-runs N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READ_TARGET_MS = 40.0
"""Target median of ``mmctl read`` and ``mmctl search``, milliseconds (issue 5)."""
WRITE_TARGET_MS = 60.0
"""Target median of ``mmctl write``, milliseconds (issue 5)."""
RSS_TARGET_MIB = 30.0
"""Target peak resident set of any one call, MiB (issue 5)."""
PASS_RATIO = 2.0
"""One-shot ``read``/``search``: at most this many times ``python -c pass`` (issue 17; issue 31 asks 2.5x)."""
REF_RATIO = 0.5
"""One-shot ``read``/``search``: at most this many times the reference CLI's (issues 17 and 31)."""
MCP_RATIO = 1.3
"""MCP ``initialize``: at most this many times a minimal SDK server's (issue 31)."""

TIME = "/usr/bin/time"
"""GNU time: reports the peak RSS of the command alone (``ru_maxrss`` from ``wait4`` here would
also count the forked copy of this benchmark process before ``exec``)."""

MINIMAL_MCP = '''from mcp.server.mcpserver import MCPServer

app = MCPServer("minimal")


@app.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


app.run()
'''
"""The floor of MCP start: the official SDK's server with one tool, over stdio."""
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "mmctl-bench", "version": "0"}}}

Command = tuple[list[str], dict[str, str]]


def peak_rss_mib(argv: list[str], env: dict[str, str]) -> float:
    """Peak resident set of one run of ``argv``, MiB (NaN without GNU time)."""
    if not os.path.exists(TIME):
        return math.nan
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run([TIME, "-f", "%M", "-o", out.name, *argv], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        return int(out.read().split()[-1]) / 1024


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    """Wall milliseconds of one process (a non-zero exit stops the bench: a figure of a failure is no figure)."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return took


def alternated(commands: dict[str, Command], runs: int) -> dict[str, list[float]]:
    """``{name: ms samples}``: ``runs`` rounds, each running every command once in order."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, env) in commands.items():
            samples[name].append(wall_ms(argv, env))
    return samples


def quantiles(samples: list[float]) -> tuple[float, float]:
    """``(p50, p95)`` of ``samples``, p95 by the nearest rank."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def verdict(value: float, most: float) -> str:
    return "ok" if value <= most else "OVER"


def mmctl_argv() -> list[str]:
    """The console script next to this Python, else ``python -m mmctl``."""
    script = Path(sys.executable).with_name("mmctl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mmctl"]


def start_daemon(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """``mmd`` on ``root`` (no session sources), once it answers; None (with a message) when it cannot start."""
    proc = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(root), "--no-source",
                             "claude-code", "--no-source", "codex", "--no-source", "dsh"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from mmctl import Client, MmctlError

    deadline = time.monotonic() + 30
    with Client(root, env=env, timeout_ms=300) as client:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                client.status()
                return proc
            except MmctlError:
                time.sleep(0.05)
    print(f"(the daemon did not start: exit {proc.poll()}; daemon rows skipped)")
    proc.kill()
    return None


def reference() -> tuple[list[str], str] | None:
    """``(argv, node version)`` of the reference CLI when its build is present, else None."""
    ref = os.environ.get("MM_REF_DIR", "")
    cli = Path(ref) / "lib" / "cli.js"
    node = os.environ.get("MM_REF_NODE") or shutil.which("node")
    if not (ref and cli.is_file() and node):
        return None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return [node, str(cli)], version


def one_shots(root: Path, env: dict[str, str], runs: int, daemon: bool) -> None:
    """The read and search table: the floors, the reference, mmctl direct and through the daemon, alternated."""
    mm = mmctl_argv()
    direct = {**env, "MMCTL_NO_DAEMON": "1"}
    commands: dict[str, Command] = {"python -c pass": ([sys.executable, "-c", "pass"], env)}
    ref = reference()
    if ref is not None:
        argv, version = ref
        commands[f"node -e 0 ({version})"] = ([argv[0], "-e", "0"], env)
        commands["reference read"] = ([*argv, "read", "topic-07", "--root", str(root)], env)
        commands["reference search"] = ([*argv, "search", "pipeline", "--root", str(root)], env)
    for mode, its_env in (("direct", direct), ("daemon", env)):
        if mode == "daemon" and not daemon:
            continue
        commands[f"mmctl read ({mode})"] = ([*mm, "read", "topic-07", "--root", str(root)], its_env)
        commands[f"mmctl search ({mode})"] = ([*mm, "search", "pipeline", "--root", str(root)], its_env)
    samples = alternated(commands, runs)
    floor = quantiles(samples["python -c pass"])[0]
    if ref is None:
        print("(no reference build: set MM_REF_DIR to a built memory-standard checkout, MM_REF_NODE to a Node 22)")
    print(f"{'command':<32} {'p50 ms':>7} {'p95 ms':>7} {'MiB':>5}   ratios (p50)")
    for name, times in samples.items():
        p50, p95 = quantiles(times)
        argv, its_env = commands[name]
        ratios = f"{p50 / floor:4.2f}x python -c pass"
        if name.startswith("mmctl"):
            verb = name.split()[1]
            ratios += f" (<= {PASS_RATIO:g}x: {verdict(p50 / floor, PASS_RATIO)})"
            if f"reference {verb}" in samples:
                theirs = quantiles(samples[f"reference {verb}"])[0]
                ratios += (f", {p50 / theirs:4.2f}x the reference (<= {REF_RATIO:g}x: "
                           f"{verdict(p50 / theirs, REF_RATIO)})")
            ratios += f", <= {READ_TARGET_MS:.0f} ms: {verdict(p50, READ_TARGET_MS)}"
        print(f"{name:<32} {p50:7.1f} {p95:7.1f} {peak_rss_mib(argv, its_env):5.1f}   {ratios}")


def writes(root: Path, env: dict[str, str], runs: int, mode: str) -> None:
    """``mmctl write`` (``mode``: ``direct`` before the daemon starts, which then holds the root's lock, or
    ``daemon``), beside issue 5's target."""
    name = f"mmctl write ({mode})"
    argv = [*mmctl_argv(), "write", f"bench-{mode}", "--content", "a short fact", "--root", str(root)]
    its_env = {**env, "MMCTL_NO_DAEMON": "1"} if mode == "direct" else env
    p50, p95 = quantiles(alternated({name: (argv, its_env)}, runs)[name])
    rss = peak_rss_mib(argv, its_env)
    print(f"{name:<32} {p50:7.1f} {p95:7.1f} {rss:5.1f}   <= {WRITE_TARGET_MS:.0f} ms: "
          f"{verdict(p50, WRITE_TARGET_MS)}, <= {RSS_TARGET_MIB:.0f} MiB: {verdict(rss, RSS_TARGET_MIB)}")


def initialize_ms(argv: list[str], env: dict[str, str]) -> float:
    """Milliseconds from starting an MCP server over stdio to its answer to ``initialize``."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    took = (time.perf_counter() - started) * 1000
    proc.stdin.close()
    proc.wait(30)
    if b'"result"' not in line:
        raise SystemExit(f"{' '.join(argv)} did not answer initialize: {line[:300]!r}")
    return took


def mcp_start(root: Path, env: dict[str, str], base: Path, runs: int) -> None:
    """``mmctl mcp``'s ``initialize`` beside a minimal SDK server's, alternated."""
    minimal = base / "minimal_mcp.py"
    minimal.write_text(MINIMAL_MCP)
    servers = {"minimal MCP SDK server": [sys.executable, str(minimal)],
               "mmctl mcp": [*mmctl_argv(), "mcp", "--root", str(root)]}
    samples: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(runs):
        for name, argv in servers.items():
            samples[name].append(initialize_ms(argv, env))
    floor = quantiles(samples["minimal MCP SDK server"])[0]
    for name, times in samples.items():
        p50, p95 = quantiles(times)
        ratio = p50 / floor
        print(f"{name + ' initialize':<32} {p50:7.1f} {p95:7.1f}          {ratio:4.2f}x the minimal server"
              + (f" (<= {MCP_RATIO:g}x: {verdict(ratio, MCP_RATIO)})" if name == "mmctl mcp" else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="rounds of the one-shot commands (default 21)")
    parser.add_argument("--topics", type=int, default=20, help="topics in the root (default 20)")
    parser.add_argument("--mcp-runs", type=int, default=5, help="rounds of MCP initialize (default 5; 0: none)")
    opts = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mmctlbench"))
    root = base / "root"
    env = {**os.environ, "HOME": str(base), "DSH_HOME": str(base / "home"), "XDG_RUNTIME_DIR": str(base / "run")}
    for name in ("DSH_MEMORY_ROOT", "MMCTL_NO_DAEMON", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    (base / "run").mkdir(mode=0o700)
    daemon = None
    try:
        from mmd.core import Memory, MemoryOptions

        memory = Memory.ensure(MemoryOptions.create(root=root, env=env))
        for i in range(opts.topics):
            memory.write(f"topic-{i:02d}", f"note {i} about deploys, regions and the build pipeline " * 8,
                         summary=f"Topic {i}", tags="bench")
        print(f"mmctl one-shot calls on a {opts.topics}-topic root, {opts.runs} alternated rounds; "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
        daemon = start_daemon(root, env)
        one_shots(root, env, opts.runs, daemon is not None)
        if daemon is not None:
            writes(root, env, max(5, opts.runs // 2), "daemon")
            daemon.terminate()
            daemon.wait(15)
            daemon = None
        writes(root, env, max(5, opts.runs // 2), "direct")
        if opts.mcp_runs > 0:
            mcp_start(root, env, base, opts.mcp_runs)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(15)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
