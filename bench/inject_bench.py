"""Injection: what an agent gets per session, the bytes deltas save, the per-call cost on a big root (issues 14, 28).

0. What an agent (Claude Code or Codex, through its hooks) gets in one session on a 27-topic and a 200-topic root
   whose notes have realistic bodies (80 to 1,800 characters): the guide and the baseline at ``SessionStart`` (the
   newest notes with their text, the rest by title), the distillation line on the sixth prompt, and the deltas of
   12 prompts with 4 writes between them (each changed note's text), beside the budgets of the agents' own memory:
   Claude Code loads 25 KiB of ``MEMORY.md`` at start, Codex gives its memory summary 2,500 tokens (~4 bytes a
   token of English; the table shows bytes / 4).

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
3. The same root served by a real ``mmd`` (subprocess, ipc): ``memory.inject``
   p50 through the daemon for a baseline (a new client each call), a ``none``
   and a one-topic delta (uncommitted, so each call plans it again), and a
   committed delta, beside the floor of one round trip (``memory.read`` of one
   topic, answered on the loop). Target: p50 <= 5 ms (issue 14).

Run: ``python bench/inject_bench.py [--topics N] [--no-daemon]``.
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
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from core_bench import build_root  # noqa: E402

from mmd.core import Memory, MemoryOptions  # noqa: E402
from mmd.inject.baseline import render_baseline  # noqa: E402
from mmd.inject.delta import ClientView, plan_injection, prepare  # noqa: E402
from mmd.inject.guide import DISTILL, DISTILL_AFTER_PROMPTS, agent_guide, with_guide  # noqa: E402

CLAUDE_CODE_BYTES = 25 * 1024
"""What Claude Code loads of its own ``MEMORY.md`` at session start (200 lines / 25 KiB)."""
CODEX_TOKENS = 2500
"""What Codex gives its own memory summary, tokens."""

TODAY = date(2026, 3, 1)
SUBJECTS = ("deploy region", "ci cache", "db migrations", "release checklist", "api auth", "log retention",
            "python version", "test flakes", "docs build", "feature flags")


def clocked(start: datetime) -> Callable[[], datetime]:
    minutes = iter(range(10**6))
    return lambda: start + timedelta(minutes=next(minutes))


def agent_session(tmp: Path, topics: int) -> None:
    """One hook session on a ``topics``-topic root: bytes per part beside the agents' own budgets."""
    import random

    rng = random.Random(topics)
    options = MemoryOptions.create(root=tmp / f"agents-{topics}", env={"DSH_HOME": str(tmp)}, index_lines=2000,
                                   index_bytes=200_000)
    memory = Memory.ensure(options, now=clocked(datetime(2026, 1, 1, tzinfo=UTC)), fts5=False)
    words = "deploy region cache queue retry schema budget token snapshot agent review build test release".split()
    for i in range(topics):
        subject = SUBJECTS[i % len(SUBJECTS)]
        size = min(1800, max(80, int(rng.lognormvariate(6.0, 0.7))))  # median ~400 characters
        body = " ".join(rng.choice(words) for _ in range(size // 6))[:size]
        assert memory.write(f"{subject.replace(' ', '-')}-{i:03d}", f"How we handle {subject}: {body}",
                            summary=f"{subject.capitalize()}: the rule we settled on (note {i})")["ok"]
    snap = memory.reload().snapshot
    start = plan_injection(None, snap, today=TODAY)
    view = start.view
    rows = [("guide", len(agent_guide().encode())), ("baseline", start.bytes)]
    deltas, writes = 0, [3, 5, 8, 10]
    for prompt in range(1, 13):
        if prompt in writes:
            topic = f"{SUBJECTS[prompt % 10].replace(' ', '-')}-{prompt:03d}" if prompt != 10 else "new-finding"
            assert memory.write(topic, f"Rewritten at prompt {prompt}: " + "new details " * 50,
                                summary=f"{topic} (prompt {prompt})")["ok"]
        plan = plan_injection(view, memory.reload().snapshot, today=TODAY)
        view = plan.view
        deltas += plan.bytes
    rows += [("distillation line (once)", len(DISTILL.encode()) + 2), (f"deltas ({len(writes)} writes)", deltas)]
    import re

    listed = len([ln for ln in start.text.split("\n") if ln.startswith("- ")])
    with_text = re.search(r", (\d+) with their text", start.text.split("\n")[0])[1]  # type: ignore[index]
    print(f"\nwhat an agent gets in one session, {topics} topics: {with_text} notes with their text, "
          f"{listed - int(with_text)} more by title, {topics - listed} by count; 12 prompts, the distillation line "
          f"after {DISTILL_AFTER_PROMPTS}:")
    print(f"{'part':<28} {'bytes':>7} {'~tokens':>8} {'of Claude Code 25 KiB':>22} {'of Codex 2,500 tokens':>22}")
    for name, size in rows + [("session start (guide+base)", len(with_guide(start.text).encode())),
                              ("whole session", sum(size for _, size in rows))]:
        print(f"{name:<28} {size:>7} {size // 4:>8} {size / CLAUDE_CODE_BYTES:>21.0%} "
              f"{size / 4 / CODEX_TOKENS:>21.0%}")


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


class Rpc:
    """A real ``mmd`` on ``root`` and one DEALER socket to it."""

    def __init__(self, tmp: Path, root: Path, topics: int) -> None:
        import zmq

        from mmd.wire.endpoints import endpoints_for

        runtime = Path(tempfile.mkdtemp(prefix="mmdib", dir="/tmp"))
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "DSH_HOME": str(tmp / "dsh"),
               "XDG_CONFIG_HOME": str(tmp / "xdg"), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        env.pop("NOTIFY_SOCKET", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mmd.daemon.main", "--root", str(root), "--no-ingest", "--log-level", "warning",
             "--index-lines", str(topics * 8 + 20), "--index-bytes", str(topics * 400)], env=env)
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoints_for(root, env).rpc)
        self.ids = iter(range(10**9))
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("daemon.status", wait_ms=500)
                break
            except TimeoutError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise

    def call(self, method: str, params: dict[str, object] | None = None, wait_ms: int = 30_000) -> dict[str, object]:
        rid = next(self.ids)
        self.sock.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode())
        while True:
            if not self.sock.poll(wait_ms):
                raise TimeoutError(method)
            answer = json.loads(self.sock.recv())
            if answer["id"] == rid:
                assert "result" in answer, answer
                return answer["result"]  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.sock.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def through_daemon(tmp: Path, topics: int) -> None:
    root = tmp / "big"
    rpc = Rpc(tmp, root, topics)
    try:
        rpc.call("memory.inject", {"client": "warm-up", "commit": True})  # the first revision is prepared
        floor = p50(lambda: rpc.call("memory.read", {"topic": "topic-00007"}))
        print(f"\nthrough the daemon (ipc), {topics} topics")
        clients = iter(range(10**6))
        base = p50(lambda: rpc.call("memory.inject", {"client": f"new-{next(clients)}"}))
        line("baseline p50 (a new client each)", base, floor, "<= 5 ms")
        rpc.call("memory.inject", {"client": "steady", "commit": True})
        line("none p50", p50(lambda: rpc.call("memory.inject", {"client": "steady"})), floor, "<= 5 ms")
        assert rpc.call("memory.write", {"topic": "topic-00042", "content": "rewritten through the daemon",
                                         "summary": "changed"})["ok"]
        first = time.perf_counter()
        plan = rpc.call("memory.inject", {"client": "steady"})
        first_ms = (time.perf_counter() - first) * 1e3
        assert plan["updated"] == ["topic-00042"], plan
        line("first delta after the write", first_ms, floor, "(may wait for prepare)")
        line("one-topic delta p50", p50(lambda: rpc.call("memory.inject", {"client": "steady"})), floor, "<= 5 ms")
        committed = iter(range(10**6))

        def commit_delta() -> None:
            client = f"c-{next(committed)}"
            rpc.call("memory.inject", {"client": client, "commit": True})

        line("committed baseline p50", p50(commit_delta), floor, "<= 5 ms")
    finally:
        rpc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20_000)
    parser.add_argument("--no-daemon", action="store_true", help="skip the figures through a real mmd")
    parser.add_argument("--sessions-only", action="store_true", help="only what an agent gets per session (0.)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for topics in (27, 200):
            agent_session(Path(tmp), topics)
        if args.sessions_only:
            return
        session(Path(tmp))
        big_root(Path(tmp), args.topics)
        if not args.no_daemon:
            through_daemon(Path(tmp), args.topics)


if __name__ == "__main__":
    main()
