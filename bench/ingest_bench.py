"""Session-log ingestion speed in the real daemon, each figure beside its floor.

A DSH v4 log of at least 100 MB is generated with realistic turns: human
prompts (every fifth with a ``REMEMBER:``), assistant messages whose text is
repeated in their ``stream`` (text-chunks runs) beside reasoning and a tool
call, large tool outputs (200–1,500 lines each), the v4 system prompt and
step/turn bookkeeping. Figures, each from a fresh ``mmd`` process:

- backfill throughput of the plain log (floor: 340 MB/s, a Node implementation
  that loads the whole file and flattens every line) and of the same log as
  zstd (one frame per append batch of 8 lines);
- the daemon's peak RSS (``VmHWM``) after each backfill (target: under 60 MiB
  whatever the log's size);
- the slowest ``daemon.status`` answer during the plain backfill (the RPC must stay responsive);
- append-to-queue latency while the daemon follows the log: a line holding a
  ``MEMO:`` is appended every 100 ms and timed until its ``queue/added``
  event arrives, p50 and p95 (target: p95 ≤ 500 ms with default settings);
- 10,000 small Claude Code transcripts already there at start
  (``--transcripts``): the backfill's time, files/s and peak RSS, and the
  slowest ``daemon.status`` and ``memory.index`` answers while it runs (reads
  and RPC must not wait for it), and whether the newest file came first;
- a Claude Code case through the daemon (``--source claude-code=…``): a
  transcript of at least ``--mb`` MB from :func:`bench.sources_bench.generate`
  (the real 2.1.x shapes: big tool results, ``progress`` records nesting them,
  thinking, snapshots), its backfill throughput (target ≥ 150 MB/s) beside
  the floor (the same lines read and ``json.loads``-ed, in this process) and
  the daemon's peak RSS (target < 60 MiB).

Every daemon runs with ``HOME`` in the bench's temp folder, so the machine's
own agent logs are never read. Run: ``python bench/ingest_bench.py [--mb 110]
[--appends 60] [--only dsh|claude-code]``. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import zmq
import zstandard

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mmd.wire.endpoints import endpoints_for  # noqa: E402

FLOOR_MB_S = 340.0
RSS_TARGET_MIB = 60.0
P95_TARGET_MS = 500.0
CLAUDE_TARGET_MB_S = 150.0
WORDS = ("the retry path idempotency key merchant refund capture ledger settles invoice tenant shard replica "
         "queue worker backoff jitter cache eviction schema migration index vacuum deploy region").split()


# --- the log ----------------------------------------------------------------------------------------


class LogWriter:
    """Writes DSH v4 events as live writes do (``type, seq, time, data``), one JSON line each."""

    def __init__(self, path: Path, rng: random.Random) -> None:
        self.f = open(path, "w", encoding="utf-8")
        self.rng = rng
        self.seq = 0
        self.f.write(json.dumps({"type": "session", "version": 4, "id": "session-bench", "createdAt": 1791383412345,
                                 "cwd": "/home/dev/bench", "isSeeded": False, "delegationDepth": 0}) + "\n")

    def sentence(self, n: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    def event(self, etype: str, data: dict[str, Any], **extra: Any) -> None:
        record = {"type": etype, "seq": self.seq, "time": 1791383412345 + self.seq * 7, "data": data, **extra}
        self.seq += 1
        self.f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")

    def turn(self, turn: int) -> None:
        self.event("turn/start", {"turn": turn})
        self.event("step/start", {"turn": turn, "step": 1})
        self.event("system/message", {"turn": turn, "step": 1, "message": {
            "role": "system", "content": [{"type": "text", "text": "You are DSH.\n\n## Tools\n" + self.sentence(40)}],
            "source": {"kind": "system-prompt"}}})
        prompt = self.sentence(25) + (f"\nREMEMBER: {self.sentence(8)} ({turn})" if turn % 5 == 0 else "")
        self.event("user/message", {"content": [{"type": "text", "text": prompt}], "source": {"kind": "user"},
                                    "role": "user", "id": f"u-{turn}"}, surfaceOp="append")
        for step in range(1, 4):
            text = " ".join(self.sentence(15) for _ in range(6))
            if step == 3 and turn % 3 == 0:
                text = f"## Finding {turn}\n{text}\n\nConclusion: {self.sentence(10)}"
            chunks = [text[i:i + 40] for i in range(0, len(text), 40)]
            call = f"call-{turn}-{step}"
            stream = [{"type": "chunk", "time": 0, "chunk": {"type": "block-start", "index": 1, "blockType": "text"}},
                      {"type": "text-chunks", "time0": 0, "index": 1, "dt": [3] * len(chunks), "texts": chunks},
                      {"type": "chunk", "time": 0, "chunk": {"type": "block-end", "index": 1,
                                                             "block": {"type": "text", "text": text}}}]
            message = {"role": "assistant", "content": [
                {"type": "reasoning", "text": "MEMO: " + self.sentence(30)}, {"type": "text", "text": text},
                {"type": "tool-call", "id": call, "name": "bash", "arguments": "{\"command\":\"make test\"}"}],
                "source": {"kind": "model", "provider": "deepseek", "model": "v4"}, "id": f"a-{turn}-{step}"}
            self.event("assistant/message", {"turn": turn, "step": step, "message": message,
                                             "usage": {"inputTokens": 900, "outputTokens": 120}, "stream": stream})
            self.event("tool/call", {"turn": turn, "step": step, "callId": call, "name": "bash",
                                     "arguments": "{\"command\":\"make test\"}"})
            output = "\n".join(f"{i}: {self.sentence(12)}" for i in range(self.rng.randint(200, 1500)))
            self.event("tool/result", {"turn": turn, "step": step, "message": {
                "role": "tool", "source": {"kind": "tool", "callId": call}, "toolCallId": call,
                "content": [{"type": "text", "text": output}], "isError": False, "id": f"t-{turn}-{step}"}},
                surfaceOp="append")
            self.event("step/end", {"turn": turn, "step": step})
        self.event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def generate(path: Path, megabytes: float) -> None:
    writer = LogWriter(path, random.Random(7))
    turn = 0
    while writer.f.tell() < megabytes * 1e6:
        turn += 1
        writer.turn(turn)
    writer.f.close()


def to_zstd(src: Path, dest: Path, per_frame: int = 8) -> None:
    """The header alone in frame 1, then one frame per batch of ``per_frame`` lines (as DSH appends)."""
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
    with open(src, "rb") as f, open(dest, "wb") as out:
        out.write(cctx.compress(f.readline()))
        batch: list[bytes] = []
        for line in f:
            batch.append(line)
            if len(batch) == per_frame:
                out.write(cctx.compress(b"".join(batch)))
                batch = []
        if batch:
            out.write(cctx.compress(b"".join(batch)))


# --- the daemon -------------------------------------------------------------------------------------


class Daemon:
    def __init__(self, base: Path, sessions: Path, *extra: str) -> None:
        self.runtime = Path(tempfile.mkdtemp(prefix="mmdb"))
        self.root = base / "root"
        self.env = {**os.environ, "XDG_RUNTIME_DIR": str(self.runtime), "PYTHONPATH": str(REPO),
                    "DSH_HOME": str(base / "dsh"), "HOME": str(base / "home")}
        for name in ("DSH_MEMORY_ROOT", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
            self.env.pop(name, None)
        ep = endpoints_for(self.root, self.env)
        self.rpc, self.pub = ep.rpc, ep.pub
        self.proc = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(self.root),
                                      "--sessions", str(sessions), "--log-level", "warning", *extra],
                                     env=self.env, stdout=subprocess.DEVNULL)
        self.ctx = zmq.Context.instance()

    def call(self, method: str, params: dict[str, Any] | None = None, timeout_ms: int = 10_000) -> Any:
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.connect(self.rpc)
            sock.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode())
            if not sock.poll(timeout_ms):
                raise TimeoutError(method)
            return json.loads(sock.recv())["result"]
        finally:
            sock.close()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if os.path.exists(self.rpc[len("ipc://"):]):
                try:
                    self.call("daemon.status", timeout_ms=500)
                    return
                except TimeoutError:
                    pass
            time.sleep(0.01)
        raise SystemExit("mmd did not start")

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)
        shutil.rmtree(self.runtime, ignore_errors=True)


def backfill(base: Path, sessions: Path, *extra: str) -> tuple[float, float, float, int]:
    """(MB/s, peak RSS MiB, slowest daemon.status ms during the backfill, candidates)."""
    daemon = Daemon(base, sessions, *extra)
    try:
        daemon.wait_ready()
        slowest = 0.0
        while True:
            t0 = time.perf_counter()
            st = daemon.call("daemon.status")
            slowest = max(slowest, (time.perf_counter() - t0) * 1000)
            if st["ingest"]["backfill"]["done"]:
                break
            time.sleep(0.02)
        b = st["ingest"]["backfill"]
        return b["bytes"] / 1e6 / b["seconds"], daemon.peak_rss_mib(), slowest, st["queue"]["total"]
    finally:
        daemon.stop()


def latency(base: Path, sessions: Path, log: Path, appends: int) -> list[float]:
    """Milliseconds from appending a line to its ``queue/added`` event, while the daemon follows ``log``."""
    daemon = Daemon(base, sessions)
    sub = daemon.ctx.socket(zmq.SUB)
    try:
        daemon.wait_ready()
        while not daemon.call("daemon.status")["ingest"]["phase"] == "following":
            time.sleep(0.05)
        sub.setsockopt(zmq.SUBSCRIBE, b"queue/added")
        sub.connect(daemon.pub)
        time.sleep(0.3)
        seq = 10_000_000
        out: list[float] = []
        for i in range(appends):
            line = {"type": "user/message", "seq": seq + i, "time": 0, "data": {
                "content": [{"type": "text", "text": f"MEMO: latency probe {i} {random.random()}"}],
                "source": {"kind": "user"}, "role": "user", "id": f"probe-{i}"}}
            t0 = time.perf_counter()
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
            if not sub.poll(5000):
                raise SystemExit(f"no queue/added for append {i}")
            sub.recv_multipart()
            out.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.1)
        return out
    finally:
        sub.close(linger=0)
        daemon.stop()


def claude_code(base: Path, megabytes: float) -> None:
    """The Claude Code case: one generated transcript backfilled by a daemon that reads only that source."""
    from bench import sources_bench

    projects = base / "claude" / "projects"
    transcript = projects / sources_bench.CWD.replace("/", "-") / f"{sources_bench.SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    t0 = time.perf_counter()
    size = sources_bench.generate(transcript, int(megabytes + 0.999))
    print(f"claude-code transcript: {size / 1e6:.1f} MB generated in {time.perf_counter() - t0:.1f} s")
    sources_bench.floor(transcript)  # warm the page cache
    floor_mbs = size / 1e6 / sources_bench.floor(transcript)
    mbs, rss, slowest, n = backfill(base / "run-claude", base / "no-dsh", "--source", f"claude-code={projects}",
                                    "--no-source", "codex")
    print(f"claude-code backfill: {mbs:7.1f} MB/s   (target >= {CLAUDE_TARGET_MB_S:.0f} MB/s; floor, read + "
          f"json.loads of the same lines: {floor_mbs:.0f} MB/s)   candidates {n}")
    print(f"claude-code peak RSS: {rss:7.1f} MiB  (target < {RSS_TARGET_MIB:.0f} MiB)")
    print(f"slowest daemon.status during the claude-code backfill: {slowest:.1f} ms")


def many_transcripts(base: Path, count: int) -> None:
    """``count`` small Claude Code transcripts already there at start: the backfill runs in the background
    (newest first) while reads and ``daemon.status`` stay answered."""
    projects = base / "many" / "projects"
    now = time.time()
    for i in range(count):
        sid = f"{i:08x}-2222-4333-8444-555555555555"
        path = projects / f"-home-dev-p{i % 200}" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"type": "user", "uuid": f"{sid}-{n}", "sessionId": sid, "cwd": f"/home/dev/p{i % 200}",
                  "timestamp": "2026-02-17T03:00:00.000Z", "message": {"role": "user", "content": text}}
                 for n, text in enumerate((f"MEMO: service {i} deploys from tag v{i}.", "please run the tests",
                                           f"REMEMBER: service {i} listens on port {10000 + i}."))]
        path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines), encoding="utf-8")
        os.utime(path, (now - count + i, now - count + i))  # the last one is the newest
    daemon = Daemon(base / "run-many", base / "no-dsh", "--source", f"claude-code={projects}", "--no-source", "codex")
    try:
        daemon.wait_ready()
        slowest_status = slowest_read = 0.0
        while True:
            t0 = time.perf_counter()
            st = daemon.call("daemon.status")
            t1 = time.perf_counter()
            daemon.call("memory.index")
            t2 = time.perf_counter()
            slowest_status, slowest_read = max(slowest_status, (t1 - t0) * 1000), max(slowest_read, (t2 - t1) * 1000)
            source = next(s for s in st["ingest"]["sources"] if s["kind"] == "claude-code")
            if source["backfill"]["done"]:
                break
            time.sleep(0.05)
        b = source["backfill"]
        first = daemon.call("queue.list", {"limit": 1})["candidates"][0]
        rate = b["files"] / b["seconds"]
        print(f"{count} claude-code transcripts at start: backfill {b['seconds']:.1f} s ({rate:.0f} files/s), "
              f"candidates {st['queue']['total']}, peak RSS {daemon.peak_rss_mib():.1f} MiB")
        print(f"  during it: slowest daemon.status {slowest_status:.1f} ms, slowest memory.index {slowest_read:.1f} ms;"
              f" first candidate from {Path(first['source']['file']).name} (newest: {count - 1:08x}-…)")
    finally:
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=110.0, help="size of the generated log, MB (default 110)")
    parser.add_argument("--appends", type=int, default=60, help="appends timed for the latency figure")
    parser.add_argument("--only", choices=("dsh", "claude-code", "many"), help="run one case only")
    parser.add_argument("--transcripts", type=int, default=10_000, help="transcripts of the many case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mmd-ingest-bench-") as tmp:
        base = Path(tmp)
        if args.only in (None, "many"):
            many_transcripts(base, args.transcripts)
        if args.only in (None, "claude-code"):
            claude_code(base, args.mb)
        if args.only not in (None, "dsh"):
            return
        plain_dir = base / "plain" / "--home-dev-bench--" / "session-bench"
        plain_dir.mkdir(parents=True)
        log = plain_dir / "session.v4.jsonl"
        t0 = time.perf_counter()
        generate(log, args.mb)
        size = log.stat().st_size
        print(f"log: {size / 1e6:.1f} MB DSH v4 generated in {time.perf_counter() - t0:.1f} s")
        zdir = base / "zstd" / "--home-dev-bench--" / "session-bench"
        zdir.mkdir(parents=True)
        to_zstd(log, zdir / "session.v4.jsonl.zstd")
        zsize = (zdir / "session.v4.jsonl.zstd").stat().st_size
        print(f"zstd: {zsize / 1e6:.1f} MB compressed ({size / zsize:.1f}x, one frame per 8 lines)")

        mbs, rss, slowest, n = backfill(base / "run-plain", base / "plain")
        print(f"plain backfill: {mbs:7.1f} MB/s   (floor {FLOOR_MB_S:.0f} MB/s)   candidates {n}")
        print(f"plain peak RSS: {rss:7.1f} MiB  (target < {RSS_TARGET_MIB:.0f} MiB)")
        print(f"slowest daemon.status during the backfill: {slowest:.1f} ms")
        zmbs, zrss, zslowest, zn = backfill(base / "run-zstd", base / "zstd")
        print(f"zstd backfill:  {zmbs:7.1f} MB/s of compressed input, "
              f"{zmbs * size / zsize:.1f} MB/s of log text   candidates {zn}")
        print(f"zstd peak RSS:  {zrss:7.1f} MiB  (target < {RSS_TARGET_MIB:.0f} MiB)")
        print(f"slowest daemon.status during the zstd backfill: {zslowest:.1f} ms")

        # latency on a small live log beside the big one (already backfilled in this run's folder)
        live_dir = base / "plain" / "--home-dev-bench--" / "session-live"
        live_dir.mkdir()
        live = live_dir / "session.v4.jsonl"
        live.write_text(json.dumps({"type": "session", "version": 4, "id": "session-live", "createdAt": 0,
                                    "isSeeded": False, "delegationDepth": 0}) + "\n")
        ms = latency(base / "run-plain", base / "plain", live, args.appends)
        qs = statistics.quantiles(ms, n=100)
        print(f"append-to-queue latency: p50 {statistics.median(ms):.0f} ms, p95 {qs[94]:.0f} ms "
              f"(target p95 <= {P95_TARGET_MS:.0f} ms, {len(ms)} appends)")


if __name__ == "__main__":
    main()
