"""mm v1 core speed on a large root, each figure beside its floor.

A root of N topics (default 20,000; caps raised to hold them) is generated
with the core's own serializers. Figures:

- snapshot load vs its floor: reading the same files from disk (open + read, no parsing);
- scan search p50 and FTS5 search p50/p99 over the loaded snapshot (targets 100 ms; 5 ms / 20 ms), for
  Latin, CJK and mixed queries that each match 20-50 % of the notes (bodies hold Latin prose plus a run of
  glued Han/kana/Hangul words), three rounds (the first meets each query cold);
- one write vs its floor: a raw write + fsync + rename + folder fsync of the same
  two files (the note and the index) — the least any durable write must do.

Run: ``python bench/core_bench.py [--topics N]``. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmd.core import Memory, MemoryOptions  # noqa: E402
from mmd.core.durable import fsync_dir  # noqa: E402
from mmd.core.format import serialize_index, serialize_note  # noqa: E402
from mmd.core.model import IndexEntry  # noqa: E402
from mmd.core.search import fts5_available  # noqa: E402

CJK_WORDS = ("部署", "修复", "金额", "雨", "区域", "缓存", "デプロイ", "キャッシュ", "배포", "캐시", "重跑gen-itgc后")
"""Glued three at a time into each note's CJK run: each one is in about 27 % of the notes."""

WORDS = ("deploy region cache queue retry schema index budget token snapshot agent review "
         "payments ledger invoice kafka redis postgres python rust tokio watcher daemon").split()


def vocabulary(rng: random.Random, size: int = 5000) -> tuple[list[str], list[float]]:
    """Project words plus ``size`` made-up ones, Zipf-weighted (rank r has weight 1/r) like real prose."""
    made_up = ["".join(rng.choice("abcdefghijklmnoprstuvwy") for _ in range(rng.randint(3, 9))) for _ in range(size)]
    words = made_up[:50] + WORDS + made_up[50:]
    return words, [1 / rank for rank in range(1, len(words) + 1)]


def build_root(root: Path, topics: int, options: MemoryOptions) -> None:
    rng = random.Random(7)
    words, weights = vocabulary(rng)
    (root / "memories").mkdir(parents=True)
    entries = []
    for i in range(topics):
        topic = f"topic-{i:05d}"
        body = " ".join(rng.choices(words, weights, k=60)) + " " + "".join(rng.choices(CJK_WORDS, k=3)) + "。"
        (root / "memories" / f"{topic}.md").write_text(
            serialize_note(topic=topic, memory_id="local", file=f"memories/{topic}.md", body=body))
        entries.append(IndexEntry(topic, "local", f"{rng.choice(WORDS)} {rng.choice(WORDS)} notes",
                                  (rng.choice(WORDS),), f"memories/{topic}.md", "2026-01-01T00:00:00.000Z",
                                  len(body), 4000, ""))
    (root / "MEMORY.md").write_text(serialize_index(entries, memory_id="local", index_lines=options.index_lines,
                                                    index_bytes=options.index_bytes))


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def timings(fn, queries: list[str], rounds: int = 3) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    """``(first-round times, all times)`` in seconds of ``fn(q)`` for every query, ``rounds`` times over."""
    times = []
    for _ in range(rounds):
        for q in queries:
            start = time.perf_counter()
            fn(q)
            times.append(time.perf_counter() - start)
    return times[: len(queries)], times


def p50(times: list[float]) -> float:
    return statistics.median(times)


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[98]


def read_floor(root: Path) -> None:
    (root / "MEMORY.md").read_bytes()
    for name in os.listdir(root / "memories"):
        (root / "memories" / name).read_bytes()


def raw_durable_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.floor.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def line(name: str, value_ms: float, floor_ms: float | None, target: str) -> None:
    ratio = f"{value_ms / floor_ms:6.2f}x floor ({floor_ms:8.2f} ms)" if floor_ms else " " * 29
    print(f"{name:<28} {value_ms:9.2f} ms  {ratio}  target {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        options = MemoryOptions.create(root=root, env={"DSH_HOME": tmp}, index_lines=args.topics * 8 + 20,
                                       index_bytes=args.topics * 400, default_write_budget=4000)
        build_root(root, args.topics, options)
        print(f"root: {args.topics} topics, MEMORY.md {(root / 'MEMORY.md').stat().st_size / 1e6:.1f} MB, "
              f"fts5 {'available' if fts5_available() else 'unavailable'}")
        memory = Memory.ensure(options, fts5=fts5_available())
        load = best(memory.reload, 3)
        floor = best(lambda: read_floor(root), 3)
        line("snapshot load", load * 1e3, floor * 1e3, "<= 3x floor")
        # Zipf ranks 10-30 are each in 20-50 % of the notes; the CJK words in ~27 %.
        words = vocabulary(random.Random(7))[0]
        queries = [words[9], words[14], words[19], words[24], words[29], f"{words[19]} {words[29]}",
                   "部署", "修复", "金额", "雨", "デプロイ", "배포", "itgc", "gen-itgc", f"部署 {words[24]}"]
        snap = memory.snapshot
        scan_index = snap.search_index("scan").prepare()  # built once per snapshot, as the daemon does at load
        shares = [scan_index.search(q, 1, 10)["total"] / args.topics for q in queries]
        print(f"{len(queries)} queries (Latin, CJK, mixed) matching {min(shares):.0%}-{max(shares):.0%} of the notes")
        scan = p50(timings(lambda q: memory.search(q, mode="scan"), queries)[1])
        line("scan search p50", scan * 1e3, None, "<= 100 ms")
        if fts5_available():
            snap.search_index("fts5").search("warm", 1, 10)
            cold, times = timings(lambda q: memory.search(q, mode="fts5"), queries)
            line("fts5 search p50", p50(times) * 1e3, None, "<= 5 ms")
            line("fts5 search p99", p99(times) * 1e3, None, "<= 20 ms")
            line("fts5 search p50, 1st round", p50(cold) * 1e3, None, "(each query cold)")
            latin = timings(lambda q: memory.search(q, mode="fts5"), queries[:6])[1]
            line("fts5 search p50, Latin only", p50(latin) * 1e3, None, "<= 5 ms")
            fts_totals = [memory.search(q, mode="fts5")["total"] for q in queries]
            covered = sum(t >= share * args.topics for t, share in zip(fts_totals, shares, strict=True))
            print(f"fts5 finds at least what scan finds for {covered}/{len(queries)} queries (target all)")
        counter = iter(range(10**6))
        write = best(lambda: memory.write("topic-00042", f"rewritten body {next(counter)}"), 5)
        note = (root / "memories" / "topic-00042.md").read_bytes()
        index = (root / "MEMORY.md").read_bytes()
        wfloor = best(lambda: (raw_durable_write(root / "memories" / "floor.md", note),
                               raw_durable_write(root / "floor-index.md", index)), 5)
        line("one write", write * 1e3, wfloor * 1e3, "<= 3x floor")


if __name__ == "__main__":
    main()
