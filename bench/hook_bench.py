"""How long an agent's prompt waits for the memory hook (issue 26: "a hook never holds a prompt").

A real ``mmd`` on a 27-topic root, and the hooks run as the agents run them (a process, the event's JSON on
stdin): ``mmctl inject --format claude-hook`` and ``--format codex-hook``, for ``SessionStart`` and
``UserPromptSubmit``, N times each, in three states:

- the daemon answering (the normal case);
- the daemon SIGSTOPped (it holds the root's lock and its socket accepts, but nothing answers): the hook
  answers from the files, saying that memory may be stale;
- no daemon (the files, with the root's lock).

Each figure is the p50 and the max of the wall time of the whole process, beside two floors: the target
(1 s: issue 26) and the start of the interpreter with ``mmctl``'s CLI imported (``mmctl --version``), which no
hook can go below. Before issue 26 the stopped daemon cost 11.2 s a prompt and exit status 1.

Run: ``python bench/hook_bench.py [--runs N]``.
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "client"))

TARGET_S = 1.0
EVENTS = {"SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
          "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "go on"}}


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, int, bytes]:
    started = time.monotonic()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=60)
    return time.monotonic() - started, done.returncode, done.stdout


def figures(label: str, samples: list[float], codes: set[int], stale: bool) -> None:
    print(f"  {label:<44} p50 {statistics.median(samples) * 1000:7.1f} ms   max {max(samples) * 1000:7.1f} ms   "
          f"exit {sorted(codes)}   stale line: {'yes' if stale else 'no'}")


def run_state(name: str, root: Path, env: dict[str, str], runs: int) -> None:
    print(f"{name}:")
    for form in ("claude-hook", "codex-hook"):
        for event, fields in EVENTS.items():
            samples, codes, stale = [], set(), False
            for i in range(runs):
                payload = {"session_id": f"{name}-{form}-{i}", "cwd": str(root), **fields}
                took, code, out = timed([sys.executable, "-m", "mmctl", "inject", "--format", form, "--root",
                                         str(root)], json.dumps(payload).encode(), env)
                samples.append(took)
                codes.add(code)
                stale = stale or b"may be stale" in out
            figures(f"{form} {event}", samples, codes, stale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hookbench"))
    runtime = Path(tempfile.mkdtemp(prefix="hbrt"))
    root = tmp / "root"
    env = {**os.environ, "HOME": str(tmp), "DSH_HOME": str(tmp / "dsh"), "XDG_RUNTIME_DIR": str(runtime),
           "PYTHONPATH": f"{REPO}:{REPO / 'client'}"}
    env.pop("MMCTL_NO_DAEMON", None)
    mmctl = [sys.executable, "-m", "mmctl", "--root", str(root)]
    subprocess.run([*mmctl, "init"], env=env, check=True, capture_output=True)
    for i in range(27):
        subprocess.run([*mmctl, "write", f"topic-{i:02d}", "--content", f"Fact number {i} about the build.",
                        "--summary", f"Topic {i}"], env=env, check=True, capture_output=True)
    floor = [timed([sys.executable, "-m", "mmctl", "--version"], b"", env)[0] for _ in range(args.runs)]
    print(f"floors: target {TARGET_S * 1000:.0f} ms; interpreter + mmctl CLI start (mmctl --version) "
          f"p50 {statistics.median(floor) * 1000:.1f} ms")
    daemon = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(root)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while subprocess.run([*mmctl, "status", "--json"], env=env, capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise SystemExit("mmd did not start")
            time.sleep(0.1)
        run_state("daemon answering", root, env, args.runs)
        daemon.send_signal(signal.SIGSTOP)
        run_state("daemon SIGSTOPped", root, env, args.runs)
        run_state("daemon SIGSTOPped, again", root, env, args.runs)
        daemon.send_signal(signal.SIGCONT)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(20)
    run_state("no daemon (the files)", root, env, args.runs)
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    main()
