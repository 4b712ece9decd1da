"""Review-queue merge speed: adding statements to a queue that already holds many candidates.

Every statement is matched against the queue's whole history (exact normalized text, near-duplicate
Jaccard ≥ 0.8, a person's restatement), through :class:`mmd.daemon.queue_index.StatementIndex`'s
postings rather than a scan. Figures, on a real SQLite state.db in a temp folder, each beside its
target:

- filling the queue with ``--candidates`` distinct human statements in batches of 50 (one
  transaction each, as ingestion slices do): statements per second (target ≥ 1,000/s);
- then 50 new statements of another session, half of them rewordings of queued ones: the
  batch's time (target ≤ 500 ms: a live slice never waits long for the queue), and how many merged.

The statements are 14 words drawn from a 5,000-word vocabulary (a dense, unfavourable case: real
statements share far fewer words). Run: ``python bench/queue_bench.py [--candidates 10000]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mmd.candidates import Evidence, NewCandidate  # noqa: E402
from mmd.daemon.queue import ReviewQueue  # noqa: E402
from mmd.daemon.statedb import StateDB  # noqa: E402

WORDS = [f"w{i}" for i in range(5000)]
FILL_TARGET = 1000.0
BATCH_TARGET_MS = 500.0


def statement(rng: random.Random, n: int, session: str, body: str | None = None) -> NewCandidate:
    """A human statement of ``session`` (14 random words and a unique one, unless ``body`` is given)."""
    text = body or " ".join(rng.choice(WORDS) for _ in range(14)) + f" n{n}"
    ev = Evidence("dsh", session, "/home/bench/p", "/bench/log", {"file": "/bench/log", "line": n}, None, "human",
                  text)
    return NewCandidate("rule", f"t{n}", text[:100], text, len(text), False, session, "/bench/log", None, None,
                        "user", "human-standing-rule", 0.9, True, (ev,))


def main() -> None:
    """Print the fill rate and the merge batch's time beside their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    args = parser.parse_args()
    rng = random.Random(13)
    with tempfile.TemporaryDirectory() as tmp:
        db = StateDB(Path(tmp))
        db.open()
        queue = ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")
        queued = [statement(rng, i, "s-1") for i in range(args.candidates)]
        start = time.perf_counter()
        for i in range(0, len(queued), 50):
            queue.add(queued[i:i + 50])
        fill = time.perf_counter() - start
        rate = len(queued) / fill
        print(f"fill: {len(queued)} statements in {fill:.1f} s = {rate:,.0f}/s (target >= {FILL_TARGET:,.0f}/s)")
        again = [statement(rng, args.candidates + i, "s-2",
                           queued[i * 7].body + " ok" if i % 2 == 0 else None) for i in range(50)]
        before = queue.merged
        start = time.perf_counter()
        added = queue.add(again)
        ms = (time.perf_counter() - start) * 1000
        print(f"batch of 50 into {len(queued)}: {ms:.0f} ms (target <= {BATCH_TARGET_MS:.0f} ms), "
              f"{len(added)} added, {queue.merged - before} merged (25 rewordings)")
        db.close()


if __name__ == "__main__":
    main()
