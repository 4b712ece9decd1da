"""Benchmark of the memory home (issue 27): 20 project roots of 200 topics each beside one root.

Two homes are built on the files (``mmd.core`` group writes): *one* (a user root of 200 topics) and *many*
(the same user root plus 20 project roots of 200 topics, each the root of a plain folder where an agent
session ran). Each figure is measured alternately on both, in one run, and printed as a ratio beside its
target:

* daemon start: ``mmd --no-ingest`` until ``daemon.status`` answers (median of ``--starts``), target ≤ 1.5×;
* inject: the ``UserPromptSubmit`` hook (``mmctl inject --format claude-hook``, a whole process) of a session
  in a project folder (*many*: the project's root and the user root) against one in a plain folder (*one*:
  the user root), median of ``--runs``, target ≤ 1.2×; and the RPC alone (``memory.inject`` with ``reset``,
  the baseline a new session gets), median of 200;
* idle RSS of the *many* daemon after ``--idle-s`` seconds, target < 80 MiB.

Run: ``python bench/home_bench.py [--starts 5] [--runs 15] [--idle-s 5]``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
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

PROJECTS = 20
TOPICS = 200


def fill(root: Path, memory_id: str) -> None:
    """``root`` as an mm v1 root of :data:`TOPICS` notes (a few lines each), written in groups."""
    from mmd.core.clock import iso_ms, system_clock
    from mmd.core.options import MemoryOptions
    from mmd.core.store import MemoryStore

    options = MemoryOptions.create(root=root, env={}, memory_id=memory_id, index_lines=100_000,
                                   index_bytes=10_000_000)
    store = MemoryStore(options, lambda: iso_ms(system_clock()))
    store.ensure_root()
    writes = [(f"topic-{i:03}", f"Fact {i}: the service {i} listens on port {8000 + i} in {memory_id}.",
               {"summary": f"service {i} of {memory_id}", "tags": "bench"}) for i in range(TOPICS)]
    for start in range(0, TOPICS, 50):
        store.write_many(writes[start:start + 50])


def build(base: Path, projects: int) -> tuple[Path, list[Path]]:
    """A home under ``base`` with ``projects`` project roots; ``(user root, the projects' folders)``."""
    from mmd.core.projects import PROJECTS_DIR, project_for, project_root

    home = base / "memory"
    fill(home, "local")
    folders = []
    for n in range(projects):
        folder = base / "work" / f"project-{n:02}"
        folder.mkdir(parents=True)
        project = project_for(folder, home, session=True)
        assert project is not None
        root = project_root(home, project)
        assert root.parent.name == PROJECTS_DIR
        fill(root, project.key)
        folders.append(folder)
    return home, folders


class Daemon:
    def __init__(self, home: Path, runtime: Path) -> None:
        self.home, self.env = home, {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(REPO),
                                     "HOME": str(home.parent)}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start it; seconds until ``daemon.status`` answers."""
        from mmctl import Client

        began = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(self.home),
                                      "--no-ingest", "--heartbeat-ms", "60000"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=open(self.home.parent / "mmd.log", "ab"))
        while True:
            try:
                with Client(self.home, env=self.env, timeout_ms=200) as client:
                    client.status()
                return time.perf_counter() - began
            except Exception:  # noqa: BLE001 - not up yet
                if self.proc.poll() is not None:
                    raise RuntimeError("mmd exited") from None
                time.sleep(0.005)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
            self.proc = None

    def rss_mib(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")


def hook_once(daemon: Daemon, cwd: Path, n: int) -> float:
    """One ``UserPromptSubmit`` hook process in ``cwd``, seconds."""
    mmctl = Path(sys.executable).with_name("mmctl")
    command = [str(mmctl)] if mmctl.exists() else [sys.executable, "-m", "mmctl"]
    stdin = json.dumps({"session_id": f"bench-{n}", "hook_event_name": "UserPromptSubmit", "cwd": str(cwd)})
    began = time.perf_counter()
    done = subprocess.run([*command, "inject", "--format", "claude-hook", "--root", str(daemon.home)],
                          input=stdin.encode(), env=daemon.env, capture_output=True, cwd=cwd)
    took = time.perf_counter() - began
    assert done.returncode == 0 and done.stdout, done.stderr
    return took


def rpc_inject_ms(daemon: Daemon, project: str | None, runs: int = 200) -> float:
    """Median ``memory.inject {reset}`` of the scope's roots through one client, milliseconds."""
    from mmctl import Client

    took = []
    with Client(daemon.home, env=daemon.env) as client:
        for n in range(runs):
            began = time.perf_counter()
            if project is not None:
                client.inject(f"rpc-{n}", reset=True, project=project, max_bytes=2048)
            client.inject(f"rpc-{n}", reset=True, project="user", max_bytes=1024 if project else 3072)
            took.append(time.perf_counter() - began)
    return statistics.median(took) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--idle-s", type=float, default=5.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mmd-home-bench-") as scratch:
        base = Path(scratch)
        os.chmod(base, 0o700)
        began = time.perf_counter()
        one_home, _ = build(base / "one", 0)
        many_home, folders = build(base / "many", PROJECTS)
        plain = base / "one" / "work" / "plain"
        plain.mkdir(parents=True)
        print(f"built: 1 root and {PROJECTS + 1} roots of {TOPICS} topics in {time.perf_counter() - began:.1f} s")
        runtime = base / "run"
        runtime.mkdir(mode=0o700)
        one, many = Daemon(one_home, runtime), Daemon(many_home, runtime)
        starts: dict[str, list[float]] = {"one": [], "many": []}
        for _ in range(args.starts):
            for name, daemon in (("one", one), ("many", many)):
                starts[name].append(daemon.start())
                daemon.stop()
        one.start()
        many.start()
        hooks: dict[str, list[float]] = {"one": [], "many": []}
        for n in range(args.runs):
            hooks["one"].append(hook_once(one, plain, n))
            hooks["many"].append(hook_once(many, folders[n % len(folders)], n))
        rpc_one, rpc_many = rpc_inject_ms(one, None), rpc_inject_ms(many, str(folders[0]))
        time.sleep(args.idle_s)
        rss = many.rss_mib()
        one.stop()
        many.stop()
    s1, s20 = statistics.median(starts["one"]), statistics.median(starts["many"])
    h1, h20 = statistics.median(hooks["one"]), statistics.median(hooks["many"])
    print(f"daemon start   1 root {s1 * 1000:7.0f} ms   {PROJECTS + 1} roots {s20 * 1000:7.0f} ms   "
          f"ratio {s20 / s1:.2f}  (target <= 1.50)")
    print(f"hook (process) 1 root {h1 * 1000:7.0f} ms   project+user {h20 * 1000:7.0f} ms   "
          f"ratio {h20 / h1:.2f}  (target <= 1.20)")
    print(f"inject (RPC)   1 root {rpc_one:7.2f} ms   project+user {rpc_many:7.2f} ms   ratio {rpc_many / rpc_one:.2f}")
    print(f"idle RSS       {PROJECTS + 1} roots {rss:.1f} MiB  (target < 80)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
