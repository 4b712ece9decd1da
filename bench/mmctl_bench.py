"""Benchmark: one-shot ``mmctl`` calls on a 20-topic root, with and without a daemon.

Prints, for each command, the median and p90 wall time (ms) and the peak RSS
(MiB) of the process, beside the floors (``python -c pass``, ``python -c
"import zmq"``) measured in the same run, and the targets: issue 5's (reads and
searches <= 40 ms median in both modes, writes <= 60 ms, peak RSS <= 30 MiB) and
issue 17's (one-shot ``read``/``search`` <= 2.0x ``python -c pass``, direct and
with a daemon running; <= 0.5x the reference CLI when its build is present:
``MM_REF_DIR`` holding ``lib/cli.js``). Always exits 0: read the figures. They
move with machine load; run it on an idle machine. Compile the ``.pyc`` files
first (``python -m compileall mmd client``) when ``PYTHONDONTWRITEBYTECODE`` is
set, or every call pays for compiling.

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
PASS_RATIO = 2.0
"""Target of one-shot ``read``/``search``: at most this many times ``python -c pass`` (issue 17)."""
REF_RATIO = 0.5
"""Target of one-shot ``read``/``search``: at most this many times the reference CLI, when present (issue 17)."""


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


def row(name: str, figures: tuple[float, float, float, int], target_ms: float | None,
        floor: tuple[str, float, float] | None = None) -> None:
    """One line: the figures, the target in ms and, with ``floor`` ``(name, median ms, target ratio)``, the ratio."""
    median, p90, rss, code = figures
    goal = f"<= {target_ms:.0f} ms, <= {RSS_TARGET_MIB:.0f} MiB" if target_ms else "floor"
    ok = "" if target_ms is None else ("  ok" if median <= target_ms and rss <= RSS_TARGET_MIB else "  OVER")
    bad = f"  (exit {code})" if code else ""
    ratio = ""
    if floor is not None:
        what, base, most = floor
        ratio = f"   {median / base:4.2f}x {what} (<= {most:.1f}x: {'ok' if median / base <= most else 'OVER'})"
    print(f"{name:<34} {median:8.1f} {p90:8.1f} {rss:9.1f}   {goal}{ok}{bad}{ratio}")


def reference_argv() -> list[str] | None:
    """The reference CLI (``node $MM_REF_DIR/lib/cli.js``) when its build is present, else None."""
    ref = os.environ.get("MM_REF_DIR", "")
    cli = Path(ref) / "lib" / "cli.js"
    node = shutil.which("node")
    return [node, str(cli)] if ref and cli.is_file() and node else None


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
        python = measure([sys.executable, "-c", "pass"], env, opts.runs)
        row("python -c pass", python, None)
        row('python -c "import zmq"', measure([sys.executable, "-c", "import zmq"], env, opts.runs), None)
        row("mmctl help", measure([*mmctl_argv(), "help"], env, opts.runs), None)
        floors: dict[str, tuple[str, float, float]] = {}
        ref = reference_argv()
        for command in (["read", "topic-07"], ["search", "pipeline"]):
            floors[command[0]] = ("python -c pass", python[0], PASS_RATIO)
            if ref is not None:
                figures = measure([*ref, *command, "--root", str(root)], env, opts.runs)
                row(f"reference {' '.join(command)}", figures, None)
                floors[command[0]] = ("the reference", figures[0], REF_RATIO)
        for mode in ("direct", "daemon"):
            daemon = start_daemon(root, env, base) if mode == "daemon" else None
            if mode == "daemon" and daemon is None:
                continue
            try:
                row(f"mmctl read topic-07 ({mode})", measure([*mm[:1], "read", "topic-07", *mm[1:]], env, opts.runs),
                    READ_TARGET_MS, floors["read"])
                row(f"mmctl search pipeline ({mode})",
                    measure([*mm[:1], "search", "pipeline", *mm[1:]], env, opts.runs), READ_TARGET_MS,
                    floors["search"])
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
