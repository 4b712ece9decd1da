"""The git engine's cost (issue 18), each figure beside its floor.

- N writes (default 1,000, over 100 topics; caps raised to hold them) without git, then with
  one commit per write (:meth:`GitHistory.commit`): ms per write each, and the commit's cost per
  write beside its floor — spawning the two git processes a commit needs (``git add``,
  ``git commit``) doing nothing (``git --version``).
- A sync of those N revisions between two roots through a bare repository: the first push
  (laptop), then the build box — which wrote a revision of its own — fetching, merging by topic
  and pushing; beside the floor: a plain ``git fetch`` of the same history into an empty repository.

Run: ``python bench/git_bench.py [--writes N]``. Prints one line per figure. Uses a private git
configuration (identity, ``main``), never the user's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmd.core import Memory, MemoryOptions  # noqa: E402
from mmd.daemon.git import GitHistory, ensure_repo, sync  # noqa: E402

TOPICS = 100


def options(root: Path) -> MemoryOptions:
    return MemoryOptions.create(root=root, index_lines=100_000, index_bytes=10_000_000)


def write_all(root: Path, writes: int, history: GitHistory | None) -> float:
    """Seconds for ``writes`` writes (and a commit after each when ``history`` is given)."""
    memory = Memory.ensure(options(root))
    if history is not None:
        history.commit(0, "init", [])
    start = time.perf_counter()
    for i in range(writes):
        topic = f"topic-{i % TOPICS:03d}"
        outcome = memory.write(topic, f"{topic} body as of write {i}: " + "words " * 40, summary=f"write {i}")
        assert outcome["ok"], outcome
        if history is not None:
            history.commit(i + 1, "write", [topic])
    return time.perf_counter() - start


def spawn_floor(repeat: int = 50) -> float:
    """Seconds for the two git process starts a commit needs, doing nothing (``git --version`` twice)."""
    start = time.perf_counter()
    for _ in range(repeat):
        subprocess.run(["git", "--version"], capture_output=True, check=True)
        subprocess.run(["git", "--version"], capture_output=True, check=True)
    return (time.perf_counter() - start) / repeat


def private_git_config(base: Path) -> None:
    """Point git at a configuration of our own under ``base`` (identity, ``main``), never the user's."""
    config = base / "gitconfig"
    config.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    os.environ.update(GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1000)
    n = parser.parse_args().writes
    with tempfile.TemporaryDirectory(prefix="mmd-git-bench-") as tmp:
        base = Path(tmp)
        private_git_config(base)

        plain = write_all(base / "plain", n, None)
        laptop = base / "laptop"
        ensure_repo(laptop)
        committed = write_all(laptop, n, GitHistory(laptop))
        floor = spawn_floor()
        per_plain, per_git = plain / n * 1000, committed / n * 1000
        print(f"{n} writes without git: {per_plain:.2f} ms/write")
        print(f"{n} writes with a commit each: {per_git:.2f} ms/write; commit cost {per_git - per_plain:.2f} ms/write"
              f" (floor: two git process starts {floor * 1000:.2f} ms)")

        remote = base / "remote.git"
        subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
        git(laptop, "remote", "add", "origin", str(remote))
        start = time.perf_counter()
        first = sync(laptop)
        push_s = time.perf_counter() - start
        assert first.ok and first.pushed, first.to_json()

        box = base / "box"
        ensure_repo(box)
        write_all(box, 1, GitHistory(box))
        git(box, "remote", "add", "origin", str(remote))
        start = time.perf_counter()
        second = sync(box)
        merge_s = time.perf_counter() - start
        assert second.ok and second.merged == "merge" and second.pushed, second.to_json()

        empty = base / "empty"
        subprocess.run(["git", "init", "--quiet", str(empty)], check=True)
        start = time.perf_counter()
        git(empty, "fetch", "--quiet", str(remote), "main")
        fetch_s = time.perf_counter() - start
        print(f"sync of {n} revisions, first push: {push_s * 1000:.0f} ms")
        print(f"sync of {n} revisions into a root with its own revision (fetch, merge by topic, checkout, push): "
              f"{merge_s * 1000:.0f} ms; {len(second.changed)} files changed, {len(second.conflicts)} conflicts"
              f" (floor: plain git fetch of that history {fetch_s * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
