"""How long an agent's prompt waits for the memory hook (issue 26: "a hook never holds a prompt"; issue 31: at the
interpreter's floor).

A real ``mmd`` on a memory home — a user root of 20 notes and, for a session in a git repository with an origin,
that project's root of 10 notes (both roots are read: docs/projects.md) — and the hooks run as the agents run them:
a process, the event's JSON on stdin, ``mmctl inject --format claude-hook --root ROOT`` (``codex-hook`` is the
same path). Figures, each the p50 and p95 of the whole process's wall time:

- ``UserPromptSubmit`` (before every prompt; the same session prompt after prompt) and ``SessionStart`` (a new
  session each time: the guide and the baseline), with the daemon answering and with no daemon (the files, with
  their lock);
- beside the floor, ``python -c pass`` of the same interpreter, measured in the same loop: each round runs the
  floor, then every command once, so machine load moves all of them alike. Targets (issue 31): through the daemon
  p50 <= 2x the floor's p50 and p95 <= 3x; without one p50 <= 3x;
- with ``--stopped``, the daemon SIGSTOPped (it holds the lock and its socket accepts, nothing answers): the hook
  answers from the files within its 0.7 s budget, saying memory may be stale (issue 26's 1 s target).

Run: ``python bench/hook_bench.py [--runs N] [--stopped]``. Compile the ``.pyc`` files first (``python -m
compileall -q mmd client``) when ``PYTHONDONTWRITEBYTECODE`` is set, or every call pays for compiling.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "client"))

TARGETS = {"daemon": (2.0, 3.0), "files": (3.0, None)}
"""``(p50, p95)`` targets as multiples of the floor's p50, per state (issue 31)."""
STALE_TARGET_S = 1.0
"""A stopped daemon: the hook answers within this (issue 26)."""


def mmctl_argv() -> list[str]:
    """The console script beside this Python (what ``mmctl hooks install`` writes), else ``python -m mmctl``."""
    script = Path(sys.executable).with_name("mmctl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mmctl"]


def timed(argv: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    """Wall seconds of one process, and its stdout."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=60, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return took, done.stdout


def quantiles(samples: list[float]) -> tuple[float, float]:
    """``(p50, p95)`` of ``samples`` (milliseconds), p95 by the nearest rank."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def make_home(base: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """``(user root, project folder)``: 20 notes in the user root, 10 in the project's root."""
    root, repo = base / "root", base / "src" / "api"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "remote", "add", "origin", "git@github.com:me/api.git"], cwd=repo, check=True)
    from mmd.core import Memory, MemoryOptions
    from mmd.core.projects import project_for, project_options, project_root, record_project

    user = Memory.ensure(MemoryOptions.create(root=root, env=env))
    for i in range(20):
        user.write(f"topic-{i:02d}", f"Fact {i} about the build, deploys and the regions we ship to. " * 3,
                   summary=f"Topic {i}", tags="bench")
    project = project_for(repo, root)
    assert project is not None
    proot = project_root(root, project)
    record_project(proot, project, repo, "2026-01-01T00:00:00.000Z")
    mine = Memory.ensure(project_options(MemoryOptions.create(root=root, env=env), proot, project.key))
    for i in range(10):
        mine.write(f"api-{i:02d}", f"The api's fact {i}: make ship from the release branch. " * 3, summary=f"Api {i}")
    return root, repo


def measure(label: str, root: Path, repo: Path, env: dict[str, str], runs: int) -> dict[str, list[float]]:
    """``{name: ms samples}`` of the floor and both hooks, alternated round by round."""
    hook = [*mmctl_argv(), "inject", "--format", "claude-hook", "--root", str(root)]
    session = f"{label}-prompts"
    timed(hook, json.dumps({"session_id": session, "hook_event_name": "SessionStart", "source": "startup",
                            "cwd": str(repo)}).encode(), env, repo)  # the session's baseline, once
    commands: dict[str, tuple[list[str], Callable[[int], bytes]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], lambda i: b""),
        "UserPromptSubmit": (hook, lambda i: json.dumps({"session_id": session, "prompt": "go on", "cwd": str(repo),
                                                         "hook_event_name": "UserPromptSubmit"}).encode()),
        "SessionStart": (hook, lambda i: json.dumps({"session_id": f"{label}-{i}", "source": "startup",
                                                     "cwd": str(repo), "hook_event_name": "SessionStart"}).encode()),
    }
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        for name, (argv, stdin) in commands.items():
            took, out = timed(argv, stdin(i), env, repo)
            samples[name].append(took * 1000)
            if name != "python -c pass" and b"may be stale" in out:
                raise SystemExit(f"{label}: the hook answered stale: its daemon (or lock) did not answer")
    return samples


def report(state: str, samples: dict[str, list[float]]) -> None:
    """The figures of one state beside the floor and the targets."""
    floor, floor_p95 = quantiles(samples["python -c pass"])
    most_p50, most_p95 = TARGETS[state]
    print(f"  {'python -c pass (the floor)':<30} p50 {floor:6.1f} ms  p95 {floor_p95:6.1f} ms")
    for name in ("UserPromptSubmit", "SessionStart"):
        p50, p95 = quantiles(samples[name])
        verdict = "ok" if p50 <= most_p50 * floor and (most_p95 is None or p95 <= most_p95 * floor) else "OVER"
        goal = f"p50 <= {most_p50:g}x" + (f", p95 <= {most_p95:g}x" if most_p95 else "")
        print(f"  {name:<30} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms   {p50 / floor:4.2f}x / {p95 / floor:4.2f}x "
              f"the floor's p50 ({goal}: {verdict})")


def stopped(root: Path, repo: Path, env: dict[str, str], runs: int) -> None:
    """The hook with its daemon SIGSTOPped: every answer from the files, within :data:`STALE_TARGET_S`."""
    hook = [*mmctl_argv(), "inject", "--format", "claude-hook", "--root", str(root)]
    for event in ("UserPromptSubmit", "SessionStart"):
        samples, stale = [], 0
        for i in range(runs):
            took, out = timed(hook, json.dumps({"session_id": f"stopped-{i}", "hook_event_name": event,
                                                "source": "startup", "cwd": str(repo)}).encode(), env, repo)
            samples.append(took * 1000)
            stale += b"may be stale" in out
        p50, p95 = quantiles(samples)
        print(f"  {event:<30} p50 {p50:6.1f} ms  max {max(samples):6.1f} ms   stale line {stale}/{runs}   "
              f"(<= {STALE_TARGET_S * 1000:.0f} ms: {'ok' if max(samples) <= STALE_TARGET_S * 1000 else 'OVER'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="rounds (default 30)")
    parser.add_argument("--stopped", action="store_true", help="also the daemon SIGSTOPped (issue 26)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="hookbench"))
    base.chmod(0o700)
    env = {**os.environ, "HOME": str(base), "DSH_HOME": str(base / "dsh"), "XDG_RUNTIME_DIR": str(base / "run"),
           "PYTHONPATH": f"{REPO}:{REPO / 'client'}", "MMCTL_HOOK_BUDGET_MS": "700"}
    for name in ("MMCTL_NO_DAEMON", "DSH_MEMORY_ROOT", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    (base / "run").mkdir(mode=0o700)
    root, repo = make_home(base, env)
    print(f"the hook on a home of 20 user notes and a project of 10 (both read), {args.runs} rounds; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    daemon = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(root),
                               "--no-source", "claude-code", "--no-source", "codex", "--no-source", "dsh"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run([*mmctl_argv(), "status", "--root", str(root)], env=env,
                             capture_output=True).returncode != 0:
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit("mmd did not start")
            time.sleep(0.1)
        print("through the daemon:")
        report("daemon", measure("daemon", root, repo, env, args.runs))
        if args.stopped:
            daemon.send_signal(signal.SIGSTOP)
            print("the daemon SIGSTOPped (the files, without the lock):")
            stopped(root, repo, env, max(5, args.runs // 3))
            daemon.send_signal(signal.SIGCONT)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
    print("no daemon (the files, with their lock):")
    report("files", measure("files", root, repo, env, args.runs))
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
