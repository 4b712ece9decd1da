"""The cost of ``mmd --git`` in a real daemon (issue 18), each figure beside its floor.

- N writes (default 1,000, over 100 topics) from one client through a daemon without git, then
  through one with ``--git``: ms per write each (the write's reply does not wait for its commit,
  which a worker thread makes under the write lock, batching the revisions that landed meanwhile),
  then the time until every revision is committed (``memory.log`` waits for the commit worker),
  the commits made, and the commit cost per write beside its floor: the same N writes without git.
- A sync of those N revisions to a bare repository and into a second ``--git`` daemon
  (``memory.sync`` on each: the first push, then a fetch, merge by topic and reload), beside a
  plain ``git fetch`` of the same history into an empty repository.

Run: ``python bench/git_daemon_bench.py [--writes N]``. Prints one line per figure. Uses a
private git configuration (identity, ``main``), never the user's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from daemon_bench import Daemon  # noqa: E402
from git_bench import private_git_config  # noqa: E402

TOPICS = 100


def start_daemon(base: Path, name: str, *flags: str) -> Daemon:
    """The daemon bench's daemon on ``base/name``, without ingestion and with room for ``TOPICS`` notes."""
    return Daemon(base, "--no-ingest", "--index-lines", "100000", "--index-bytes", "10000000", *flags, name=name)


def writes(d: Daemon, n: int) -> float:
    """Seconds for ``n`` writes from one client, each waiting for its reply."""
    import zmq

    s = zmq.Context.instance().socket(zmq.DEALER)
    s.connect(d.rpc)
    start = time.perf_counter()
    for i in range(n):
        topic = f"topic-{i % TOPICS:03d}"
        s.send(json.dumps({"jsonrpc": "2.0", "id": i, "method": "memory.write", "params": {
            "topic": topic, "content": f"{topic} body as of write {i}: " + "words " * 40,
            "summary": f"write {i}"}}).encode())
        answer = json.loads(s.recv())
        assert answer["result"]["ok"], answer
    elapsed = time.perf_counter() - start
    s.close(0)
    return elapsed


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=1000)
    n = parser.parse_args().writes
    with tempfile.TemporaryDirectory(prefix="mmd-git-daemon-bench") as tmp:
        base = Path(tmp)
        private_git_config(base)
        plain = start_daemon(base, "plain")
        floor_s = writes(plain, n)
        plain.stop()
        laptop = start_daemon(base, "laptop", "--git")
        git_s = writes(laptop, n)
        start = time.perf_counter()
        laptop.call("memory.log", {"limit": 1}, wait_s=600)
        settle_s = time.perf_counter() - start
        commits = int(git("rev-list", "--count", "HEAD", cwd=laptop.root))
        print(f"writes without git: {floor_s / n * 1000:.2f} ms/write (floor)")
        print(f"writes with --git:  {git_s / n * 1000:.2f} ms/write; all committed {settle_s * 1000:.0f} ms after "
              f"the last reply, in {commits} commits for {n} revisions")
        print(f"commit cost per write: {(git_s + settle_s - floor_s) / n * 1000:.2f} ms "
              f"(beside the floor of {floor_s / n * 1000:.2f} ms/write without git)")
        remote = base / "remote.git"
        git("init", "--quiet", "--bare", str(remote))
        git("remote", "add", "origin", str(remote), cwd=laptop.root)
        start = time.perf_counter()
        first = laptop.call("memory.sync", wait_s=600)
        push_s = time.perf_counter() - start
        assert first["pushed"], first
        box = start_daemon(base, "box", "--git")
        git("remote", "add", "origin", str(remote), cwd=box.root)
        start = time.perf_counter()
        merged = box.call("memory.sync", wait_s=600)
        merge_s = time.perf_counter() - start
        assert merged["pushed"] and merged["merged"] in ("merge", "fast-forward"), merged
        assert len(box.call("memory.list")["notes"]) == TOPICS
        empty = base / "empty"
        git("init", "--quiet", str(empty))
        start = time.perf_counter()
        git("fetch", "--quiet", str(remote), "main", cwd=empty)
        fetch_s = time.perf_counter() - start
        print(f"sync of {n} revisions: first push {push_s * 1000:.0f} ms; the other daemon's fetch + merge + push "
              f"+ reload {merge_s * 1000:.0f} ms ({merged['merged']}, {len(merged['topics'])} topics) "
              f"(beside a plain git fetch of the same history: {fetch_s * 1000:.0f} ms, the floor)")
        laptop.stop()
        box.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
