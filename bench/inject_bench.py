"""Injection: bytes saved by deltas over a session, and the per-call cost on a big root (issue 14).

1. A simulated agent session on a 40-topic root: 30 prompts, 15 writes between
   them (10 updates, 5 new topics, one topic's review date coming due). Each
   prompt gets :func:`mmd.inject.delta.plan_injection` against the committed
   view, side by side with re-injecting the whole index every prompt (the
   3072-byte baseline text, and MEMORY.md itself).
2. The per-call cost on a root of N topics (default 20,000, built as
   ``bench/core_bench.py`` builds it): ``prepare`` of a new snapshot (once per
   revision), the baseline, a ``none`` call and a one-topic delta, each p50
   beside its floor (a dict comparison of the two hash maps) and the issue's
   daemon target (p50 <= 5 ms through the daemon; here in-process).

Run: ``python bench/inject_bench.py [--topics N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from core_bench import build_root  # noqa: E402

from mmd.core import Memory, MemoryOptions  # noqa: E402
from mmd.inject.baseline import render_baseline  # noqa: E402
from mmd.inject.delta import ClientView, plan_injection, prepare  # noqa: E402

TODAY = date(2026, 3, 1)
SUBJECTS = ("deploy region", "ci cache", "db migrations", "release checklist", "api auth", "log retention",
            "python version", "test flakes", "docs build", "feature flags")


def clocked(start: datetime) -> Callable[[], datetime]:
    minutes = iter(range(10**6))
    return lambda: start + timedelta(minutes=next(minutes))


def session(tmp: Path) -> None:
    options = MemoryOptions.create(root=tmp / "session", env={"DSH_HOME": str(tmp)}, index_lines=1000,
                                   index_bytes=100_000)
    memory = Memory.ensure(options, now=clocked(datetime(2026, 1, 1, tzinfo=UTC)), fts5=False)
    for i in range(40):
        subject = SUBJECTS[i % len(SUBJECTS)]
        assert memory.write(f"{subject.replace(' ', '-')}-{i:02d}", f"How we handle {subject}: " + "details " * 40,
                            summary=f"{subject.capitalize()}: the rule we settled on, with the reason (note {i})",
                            tags=subject.split()[0])["ok"]
    writes = [("update", f"{SUBJECTS[i % 10].replace(' ', '-')}-{i:02d}") for i in range(0, 40, 4)]
    writes += [("create", f"new-finding-{i}") for i in range(5)]
    writes.insert(7, writes.pop())  # mix creates between updates
    view: ClientView | None = None
    rows = []
    totals = {"delta": 0, "baseline": 0, "all": 0, "index": 0}
    for prompt in range(1, 31):
        snap = memory.reload().snapshot
        plan = plan_injection(view, snap, today=TODAY)
        view = plan.view  # the hook printed it: commit
        whole = render_baseline(snap.entries, memory_id=snap.memory_id).bytes
        every = render_baseline(snap.entries, memory_id=snap.memory_id, max_bytes=10**9).bytes
        index = snap.index_byte_count
        for key, value in (("delta", plan.bytes), ("baseline", whole), ("all", every), ("index", index)):
            totals[key] += value
        rows.append((prompt, plan.mode, plan.bytes, whole, every, index))
        if prompt % 2 == 1 and writes:
            kind, topic = writes.pop(0)
            extra = {"review_after": "2026-02-01"} if prompt == 5 else {}  # due at once: one reminder later
            assert memory.write(topic, f"{kind}d at prompt {prompt}: " + "new details " * 20,
                                summary=f"{topic} ({kind}d at prompt {prompt})", **extra)["ok"]
    print("session: 40 topics, 30 prompts, 15 writes between them")
    print("bytes (UTF-8) given to the agent at each prompt: this plan vs re-injecting, every prompt, the 3072-byte")
    print("baseline / every entry line without a cap / MEMORY.md itself")
    print(f"{'prompt':>6} {'mode':<9} {'delta':>7} {'baseline':>9} {'all lines':>10} {'MEMORY.md':>10}")
    for prompt, mode, delta_b, whole, every, index in rows:
        print(f"{prompt:>6} {mode:<9} {delta_b:>7} {whole:>9} {every:>10} {index:>10}")
    t = totals
    print(f"{'total':>6} {'':<9} {t['delta']:>7} {t['baseline']:>9} {t['all']:>10} {t['index']:>10}")
    print(f"deltas inject {t['delta'] / t['baseline']:.1%} of the capped baseline's bytes, "
          f"{t['delta'] / t['all']:.1%} of all lines', {t['delta'] / t['index']:.1%} of MEMORY.md's")


def p50(fn: Callable[[], object], repeat: int = 31) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def line(name: str, value_ms: float, floor_ms: float | None, target: str) -> None:
    floor = f"{value_ms / floor_ms:7.1f}x floor ({floor_ms:6.3f} ms)" if floor_ms else " " * 30
    print(f"{name:<34} {value_ms:8.3f} ms  {floor}  target {target}")


def big_root(tmp: Path, topics: int) -> None:
    root = tmp / "big"
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(tmp)}, index_lines=topics * 8 + 20,
                                   index_bytes=topics * 400)
    build_root(root, topics, options)
    memory = Memory.ensure(options, fts5=False)
    snap = memory.snapshot
    start = time.perf_counter()
    prep = prepare(snap)
    cold = (time.perf_counter() - start) * 1e3
    print(f"\nroot: {topics} topics")
    line("prepare, first snapshot (hashing)", cold, None, "once per revision")
    view = plan_injection(None, prep, today=TODAY).view
    other = dict(view.hashes)
    floor = p50(lambda: other == prep.hashes)
    line("baseline p50", p50(lambda: plan_injection(None, prep, today=TODAY)), floor, "<= 5 ms (daemon)")
    line("none p50", p50(lambda: plan_injection(view, prep, today=TODAY)), floor, "<= 5 ms (daemon)")
    memory.write("topic-00042", "a rewritten body", summary="changed")
    snap2 = memory.reload().snapshot
    start = time.perf_counter()
    prep2 = prepare(snap2)
    warm = (time.perf_counter() - start) * 1e3
    line("prepare after one write (reuse)", warm, None, "once per revision")
    delta = plan_injection(view, prep2, today=TODAY)
    assert delta.updated == ("topic-00042",), delta.to_json()
    line("one-topic delta p50", p50(lambda: plan_injection(view, prep2, today=TODAY)), floor, "<= 5 ms (daemon)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        session(Path(tmp))
        big_root(Path(tmp), args.topics)


if __name__ == "__main__":
    main()
