"""Benchmark: one-shot ``mmctl`` calls on a 20-topic root, with and without a daemon.

Prints, for each command, the median and p90 wall time (ms) and the peak RSS
(MiB) of the process, beside the floors (``python -c pass``, ``python -c
"import zmq"``) and the targets of issue 5: reads and searches <= 40 ms median
in both modes, writes <= 60 ms, peak RSS <= 30 MiB. Always exits 0: read the
figures. They move with machine load; run it on an idle machine.

    python bench/mmctl_bench.py [--runs N] [--topics N]
"""

from __future__ import annotations

import argparse
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
"""Target median of ``mmctl read`` and ``mmctl search``, milliseconds."""
WRITE_TARGET_MS = 60.0
"""Target median of ``mmctl write``, milliseconds."""
RSS_TARGET_MIB = 30.0
"""Target peak resident set of any one call, MiB."""


TIME = "/usr/bin/time"
"""GNU time: reports the peak RSS of the command alone (``ru_maxrss`` from ``wait4`` here would
also count the forked copy of this benchmark process before ``exec``)."""


def peak_rss_mib(argv: list[str], env: dict[str, str]) -> float:
    """Peak resident set of one run of ``argv``, MiB (NaN without GNU time)."""
    if not os.path.exists(TIME):
        return math.nan
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run([TIME, "-f", "%M", "-o", out.name, *argv], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        return int(out.read().split()[-1]) / 1024


def measure(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float, float, int]:
    """``(median_ms, p90_ms, peak_rss_mib, last_exit_code)`` of ``runs`` fresh processes."""
    times: list[float] = []
    code = 0
    for _ in range(runs):
        started = time.perf_counter()
        code = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              check=False).returncode
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))], peak_rss_mib(argv, env), code


def mmctl_argv() -> list[str]:
    """The console script next to this Python, else ``python -m mmctl``."""
    script = Path(sys.executable).with_name("mmctl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mmctl"]


def start_daemon(root: Path, env: dict[str, str], base: Path) -> subprocess.Popen[bytes] | None:
    """``mmd`` on ``root``; None (with a message) when it cannot start."""
    proc = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(root), "--sessions",
                             str(base / "sessions")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from mmctl import Client, MmctlError

    deadline = time.monotonic() + 15
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


def row(name: str, figures: tuple[float, float, float, int], target_ms: float | None) -> None:
    median, p90, rss, code = figures
    goal = f"<= {target_ms:.0f} ms, <= {RSS_TARGET_MIB:.0f} MiB" if target_ms else "floor"
    ok = "" if target_ms is None else ("  ok" if median <= target_ms and rss <= RSS_TARGET_MIB else "  OVER")
    bad = f"  (exit {code})" if code else ""
    print(f"{name:<34} {median:8.1f} {p90:8.1f} {rss:9.1f}   {goal}{ok}{bad}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="processes per command (default 21)")
    parser.add_argument("--topics", type=int, default=20, help="topics in the root (default 20)")
    opts = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mmctlbench"))
    root = base / "root"
    env = {**os.environ, "DSH_HOME": str(base / "home"), "XDG_RUNTIME_DIR": str(base / "run")}
    env.pop("DSH_MEMORY_ROOT", None)
    (base / "run").mkdir(mode=0o700)
    mm = [*mmctl_argv(), "--root", str(root)]
    try:
        from mmd.core import Memory, MemoryOptions

        memory = Memory.ensure(MemoryOptions.create(root=root, env=env))
        for i in range(opts.topics):
            memory.write(f"topic-{i:02d}", f"note {i} about deploys, regions and the build pipeline " * 8,
                         summary=f"Topic {i}", tags="bench")
        print(f"mmctl one-shot calls on a {opts.topics}-topic root, {opts.runs} runs each; "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
        print(f"{'command':<34} {'med ms':>8} {'p90 ms':>8} {'peak MiB':>9}   target")
        row("python -c pass", measure([sys.executable, "-c", "pass"], env, opts.runs), None)
        row('python -c "import zmq"', measure([sys.executable, "-c", "import zmq"], env, opts.runs), None)
        row("mmctl help", measure([*mmctl_argv(), "help"], env, opts.runs), None)
        for mode in ("direct", "daemon"):
            daemon = start_daemon(root, env, base) if mode == "daemon" else None
            if mode == "daemon" and daemon is None:
                continue
            try:
                row(f"mmctl read topic-07 ({mode})", measure([*mm[:1], "read", "topic-07", *mm[1:]], env, opts.runs),
                    READ_TARGET_MS)
                row(f"mmctl search pipeline ({mode})",
                    measure([*mm[:1], "search", "pipeline", *mm[1:]], env, opts.runs), READ_TARGET_MS)
                row(f"mmctl write ({mode})", measure([*mm[:1], "write", "bench-w", "--content", "a short fact",
                                                      *mm[1:]], env, opts.runs), WRITE_TARGET_MS)
            finally:
                if daemon is not None:
                    daemon.terminate()
                    daemon.wait(15)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
