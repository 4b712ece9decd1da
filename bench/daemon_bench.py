"""Benchmark of the mmd daemon, each figure printed beside its floor.

* RPC: ``memory.read`` latency (p50/p99, microseconds) and throughput (requests/s)
  with 1 and 8 closed-loop clients (one process each), beside a raw pyzmq
  ROUTER/DEALER echo server on the same transport (ipc) — the floor.
* Durable writes: ``memory.write`` per second from one client, and from 8
  concurrent clients (one process each, each rewriting two notes of its own:
  group commit, issue 17), beside a raw loop of write + fsync + rename + fsync(folder) of one
  file in the same filesystem — the floor. A lone mm write replaces two files
  (the note, then MEMORY.md), so one client cannot exceed half of this floor;
  grouped writes share one index rewrite and one fsync of each folder.
* Idle: CPU (% of one core) and RSS (MiB) of the daemon over ``--idle-s`` seconds.
* Flood (last, so that it does not weigh on the idle figures): ``memory.write`` latency
  (p50/p99, ms) of one client while another floods the daemon with 4 MiB
  ``memory.digest`` requests as fast as it can send them, beside the target (p99 ≤ 1 s,
  issue 11) and the daemon's peak RSS.

Targets (issue 3): read p50 ≤ 3× the echo floor, ≥ 5,000 reads/s with 8
clients on 2 cores, writes ≥ 50% of the fsync floor (8 writers, issue 17), idle CPU < 1%, RSS < 60 MiB.

Run: ``python bench/daemon_bench.py [--seconds 3] [--idle-s 60]``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


# --- workers (run in spawned processes) -----------------------------------------------------------

def _echo_server(endpoint: str, ready: Any) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind(endpoint)
    ready.set()
    while True:
        frames = sock.recv_multipart()
        if frames[-1] == b"stop":
            break
        sock.send_multipart(frames)
    sock.close(0)
    ctx.term()


def _client(endpoint: str, payload: bytes, seconds: float, start_at: float, out: Any) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    for _ in range(200):  # warm up the connection
        sock.send(payload)
        sock.recv()
    while time.time() < start_at:
        time.sleep(0.001)
    lat: list[int] = []
    end = time.perf_counter() + seconds
    clock = time.perf_counter_ns
    while True:
        t0 = clock()
        sock.send(payload)
        sock.recv()
        lat.append(clock() - t0)
        if t0 > 0 and len(lat) % 64 == 0 and time.perf_counter() >= end:
            break
    sock.close()
    ctx.term()
    out.put(lat)


def _run_clients(endpoint: str, payload: bytes, n: int, seconds: float) -> dict[str, float]:
    mpc = mp.get_context("spawn")
    out = mpc.Queue()
    start_at = time.time() + 1.5 + 0.2 * n
    procs = [mpc.Process(target=_client, args=(endpoint, payload, seconds, start_at, out)) for _ in range(n)]
    for p in procs:
        p.start()
    lat = [x for _ in procs for x in out.get(timeout=120)]
    for p in procs:
        p.join()
    lat.sort()
    return {"p50_us": lat[len(lat) // 2] / 1000, "p99_us": lat[int(len(lat) * 0.99)] / 1000,
            "per_s": len(lat) / seconds}


def _writer(endpoint: str, number: int, seconds: float, start_at: float, out: Any) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    while time.time() < start_at:
        time.sleep(0.001)
    n = write_loop(sock, lambda n: f"n{number + 8 * (n % 2)}", seconds)  # writer i: n<i>, n<i+8> (of n0…n19)
    sock.close()
    ctx.term()
    out.put(n)


def write_loop(sock: Any, topic: Any, seconds: float) -> int:
    """Durable writes on ``sock`` one after the other for ``seconds``; ``topic(n)`` names write n. Their count."""
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sock.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": "memory.write",
                              "params": {"topic": topic(n), "content": f"write number {n}"}}).encode())
        answer = json.loads(sock.recv())
        assert answer["result"]["ok"], answer
        n += 1
    return n


def concurrent_writes(endpoint: str, writers: int, seconds: float) -> float:
    """Durable ``memory.write`` per second from ``writers`` (at most 10) closed-loop clients, each rewriting
    two notes of its own among the bench's 20 (no new topic: the index stays within its budget)."""
    mpc = mp.get_context("spawn")
    out = mpc.Queue()
    start_at = time.time() + 1.5 + 0.2 * writers
    procs = [mpc.Process(target=_writer, args=(endpoint, i, seconds, start_at, out)) for i in range(writers)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


# --- floors ---------------------------------------------------------------------------------------

def echo_floor(runtime: Path, seconds: float) -> dict[int, dict[str, float]]:
    endpoint = f"ipc://{runtime}/echo.sock"
    mpc = mp.get_context("spawn")
    ready = mpc.Event()
    server = mpc.Process(target=_echo_server, args=(endpoint, ready))
    server.start()
    ready.wait(30)
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory.read", "params": {"topic": "n7"}}).encode()
    try:
        return {n: _run_clients(endpoint, payload, n, seconds) for n in (1, 8)}
    finally:
        import zmq

        s = zmq.Context.instance().socket(zmq.DEALER)
        s.connect(endpoint)
        s.send(b"stop")
        server.join(10)
        s.close(0)


def fsync_floor(folder: Path, seconds: float) -> float:
    """Atomic replaces of one ~200-byte file per second: write, fsync, rename, fsync the folder."""
    target = folder / "floor.md"
    data = b"x" * 200
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        tmp = folder / f".floor.{n}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, target)
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
        n += 1
    return n / seconds


# --- the daemon -----------------------------------------------------------------------------------

class Daemon:
    """``python -m mmd.daemon.main`` on ``base/<name>`` with ``flags``, in a runtime folder of its own (a new one
    unless ``runtime`` is given); the daemon, web and git-daemon benches share it."""

    def __init__(self, base: Path, *flags: str, runtime: Path | None = None, name: str = "root",
                 start_wait_s: float = 20) -> None:
        from mmd.wire.endpoints import endpoints_for

        self.root = base / name
        runtime = runtime or Path(tempfile.mkdtemp(prefix="mmdrt"))
        self.env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "DSH_HOME": str(base / "dsh"),
                    "XDG_CONFIG_HOME": str(base / "xdg"), "PYTHONPATH": str(REPO)}
        self.env.pop("NOTIFY_SOCKET", None)
        self.rpc = endpoints_for(self.root, self.env).rpc
        self.proc = subprocess.Popen([sys.executable, "-m", "mmd.daemon.main", "--root", str(self.root),
                                      "--log-level", "warning", *flags], env=self.env)
        self.call("daemon.status", wait_s=start_wait_s)

    def call(self, method: str, params: dict[str, Any] | None = None, wait_s: float = 10) -> Any:
        """The result of ``method``; ``daemon.status`` is asked again every 500 ms until the daemon answers.

        Raises:
            RuntimeError: naming the error of an error answer. TimeoutError: after ``wait_s`` seconds.
        """
        import zmq

        deadline = time.monotonic() + wait_s
        while True:
            s = zmq.Context.instance().socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            try:
                s.connect(self.rpc)
                s.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode())
                if s.poll(500 if method == "daemon.status" else wait_s * 1000):
                    answer = json.loads(s.recv())
                    if "error" in answer:
                        raise RuntimeError(f"{method}: {answer['error']}")
                    return answer["result"]
            finally:
                s.close()
            if time.monotonic() > deadline:
                raise TimeoutError(method)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def idle(d: Daemon, seconds: float, step_s: float) -> tuple[float, list[float]]:
    """``(CPU % of one core, RSS samples in MiB)`` of the daemon over ``seconds``, sampled every ``step_s``."""
    cpu0, t0 = d.cpu_s(), time.monotonic()
    rss = [d.rss_mib()]
    while time.monotonic() - t0 < seconds:
        time.sleep(min(step_s, seconds))
        rss.append(d.rss_mib())
    return 100 * (d.cpu_s() - cpu0) / (time.monotonic() - t0), rss


def daemon_writes(d: Daemon, seconds: float) -> float:
    import zmq

    s = zmq.Context.instance().socket(zmq.DEALER)
    s.connect(d.rpc)
    n = write_loop(s, lambda n: f"n{n % 20}", seconds)
    s.close(0)
    return n / seconds


def _flooder(endpoint: str, stop_at: float, out: Any) -> None:
    """Send 4 MiB ``memory.digest`` requests as fast as the socket takes them until ``stop_at``; count answers."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    frame = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory.digest",
                        "params": {"text": "remember: " + "x" * (4 * 1024 * 1024 - 200)}}).encode()  # just fits
    sent = answered = busy = 0
    while time.time() < stop_at:
        if sock.poll(0, zmq.POLLOUT):
            sock.send(frame, zmq.NOBLOCK)
            sent += 1
        while sock.poll(0):
            answer = json.loads(sock.recv())
            answered += 1
            busy += answer.get("error", {}).get("data", {}).get("code") == "E_BUSY"
        time.sleep(0.001)
    sock.close()
    ctx.term()
    out.put({"sent": sent, "answered": answered, "busy": busy})


def writes_under_flood(d: Daemon, seconds: float) -> dict[str, float]:
    """One client's write latency while a second process floods the daemon with 4 MiB digests."""
    import zmq

    mpc = mp.get_context("spawn")
    out = mpc.Queue()
    start = time.time() + 1.5
    flood = mpc.Process(target=_flooder, args=(d.rpc, start + seconds + 1.0, out))
    flood.start()
    while time.time() < start:
        time.sleep(0.01)
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(d.rpc)
    lat: list[float] = []
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        s.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": "memory.write",
                           "params": {"topic": f"n{n % 20}", "content": f"under flood {n}"}}).encode())
        if not s.poll(30_000):
            lat.append(30.0)
            break
        answer = json.loads(s.recv())
        assert answer.get("result", {}).get("ok"), answer
        lat.append(time.perf_counter() - t0)
        n += 1
    s.close(0)
    counts = out.get(timeout=120)
    flood.join(30)
    peak = float("nan")
    for line in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    lat.sort()
    return {"p50_ms": 1000 * lat[len(lat) // 2], "p99_ms": 1000 * lat[int(len(lat) * 0.99)], "writes": len(lat),
            "peak_rss_mib": peak, **counts}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each throughput run, s")
    parser.add_argument("--idle-s", type=float, default=60.0, help="idle CPU/RSS sampling window, s")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mmdbench"))
    runtime = Path(tempfile.mkdtemp(prefix="mmdbrt"))
    print(f"mmd daemon bench — {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {args.seconds:g} s per run")
    try:
        floor = echo_floor(runtime, args.seconds)
        d = Daemon(base, runtime=runtime)
        try:
            for i in range(20):
                d.call("memory.write", {"topic": f"n{i}", "content": f"note {i} " * 20, "summary": f"note {i}"})
            payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory.read",
                                  "params": {"topic": "n7"}}).encode()
            reads = {n: _run_clients(d.rpc, payload, n, args.seconds) for n in (1, 8)}
            print("\nRPC memory.read (ipc)          daemon        echo floor    ratio")
            for n in (1, 8):
                r, f = reads[n], floor[n]
                print(f"  {n} client(s) p50 µs        {r['p50_us']:10.1f}    {f['p50_us']:10.1f}    "
                      f"{r['p50_us'] / f['p50_us']:5.2f}×")
                print(f"  {n} client(s) p99 µs        {r['p99_us']:10.1f}    {f['p99_us']:10.1f}    "
                      f"{r['p99_us'] / f['p99_us']:5.2f}×")
                print(f"  {n} client(s) requests/s    {r['per_s']:10.0f}    {f['per_s']:10.0f}    "
                      f"{r['per_s'] / f['per_s']:5.2f}×")
            # The disk is shared: the floor is measured before and after, and the better one is kept.
            floor_w = fsync_floor(d.root / "memories", args.seconds)
            writes = daemon_writes(d, args.seconds)
            grouped = concurrent_writes(d.rpc, 8, args.seconds)
            floor_w = max(floor_w, fsync_floor(d.root / "memories", args.seconds))
            print("\nDurable writes                 daemon        fsync floor   ratio")
            print(f"  writes/s (1 client)         {writes:10.0f}    {floor_w:10.0f}    {writes / floor_w:5.2f}×"
                  "   (a mm write replaces 2 files: ceiling 0.50×)")
            print(f"  writes/s (8 clients)        {grouped:10.0f}    {floor_w:10.0f}    {grouped / floor_w:5.2f}×"
                  "   (target ≥ 0.50×: group commit)")
            print(f"  1-client latency ms         {1000 / writes:10.2f}")
            (d.root / "memories" / "floor.md").unlink(missing_ok=True)
            time.sleep(2.0)  # let the watcher settle after the writes
            cpu_pct, rss = idle(d, args.idle_s, 5.0)
            print(f"\nIdle over {args.idle_s:g} s                 daemon        target")
            print(f"  CPU % of one core           {cpu_pct:10.2f}    {'< 1':>10}")
            print(f"  RSS MiB (max)               {max(rss):10.1f}    {'< 60':>10}"
                  f"   (median {statistics.median(rss):.1f})")
            flood = writes_under_flood(d, args.seconds)
            print("\nWrites under a flood of 4 MiB digests   daemon        target")
            print(f"  write p50 ms                {flood['p50_ms']:10.1f}")
            print(f"  write p99 ms                {flood['p99_ms']:10.1f}    {'≤ 1000':>10}"
                  f"   ({flood['writes']:.0f} writes; flood sent {flood['sent']:.0f}, "
                  f"{flood['answered']:.0f} answered, {flood['busy']:.0f} of them E_BUSY)")
            print(f"  daemon peak RSS MiB         {flood['peak_rss_mib']:10.1f}"
                  "   (digests run in a worker process of their own, not counted)")
        finally:
            d.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
