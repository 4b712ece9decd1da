"""Benchmark of the review page (``mmd --http``), each figure printed beside its target.

* Queue page: the first and the last page of 100 pending candidates out of
  100,000 (a real ``state.db`` filled beforehand), rendered by a real daemon; the
  time is the whole HTTP round trip on loopback (an upper bound of the
  server-side render), p50 and p95 over ``--requests`` requests.
* Idle: CPU (% of one core) and RSS (MiB) of a daemon started with ``--http``
  over ``--idle-s`` seconds, one page open with its live event stream.

Targets (issue 16): a queue page of 100 out of 100,000 in ≤ 50 ms; idle CPU < 1 %, RSS < 60 MiB
(the daemon bench's targets, issue 3).

Run: ``python bench/web_bench.py [--requests 50] [--idle-s 60]``. Not a test.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CANDIDATES = 100_000


def fill_queue(root: Path, n: int) -> None:
    """``n`` pending candidates in ``root/.mmd/state.db``, as ingestion would have added them."""
    from mmd.candidates import NewCandidate
    from mmd.daemon.queue import ReviewQueue
    from mmd.daemon.statedb import StateDB

    root.mkdir(parents=True, exist_ok=True)
    db = StateDB(root)
    db.open()
    queue = ReviewQueue(db, lambda: "2026-11-30T12:00:00.000Z")
    batch = []
    for i in range(n):
        body = f"fact number {i}: the service {i % 97} answers on port {1000 + i % 5000} behind the gateway"
        batch.append(NewCandidate("explicit", f"topic-{i}", f"summary of fact {i}", body, len(body), False,
                                  f"s-{i % 300}", f"/logs/--project-{i % 7}--/s-{i % 300}/session.jsonl", i,
                                  f"m{i}", "user"))
        if len(batch) == 5000:
            queue.add(batch)
            batch = []
    queue.add(batch)
    db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50, help="page requests timed per page")
    parser.add_argument("--idle-s", type=float, default=60.0, help="idle CPU/RSS sampling window, s")
    parser.add_argument("--candidates", type=int, default=CANDIDATES, help="candidates in the queue")
    args = parser.parse_args()
    print(f"mmd review page bench — {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    base = Path(tempfile.mkdtemp(prefix="mmdweb"))
    runtime = Path(tempfile.mkdtemp(prefix="mmdrt"))
    sys.path.insert(0, str(REPO / "bench"))
    from daemon_bench import Daemon, idle

    try:
        t0 = time.perf_counter()
        fill_queue(base / "root", args.candidates)
        print(f"  queue filled: {args.candidates:,} candidates in {time.perf_counter() - t0:.1f} s")
        (base / "sessions").mkdir()
        d = Daemon(base, "--sessions", str(base / "sessions"), "--http", "127.0.0.1:0", runtime=runtime,
                   start_wait_s=30)
        url = d.call("daemon.status")["http"]["url"]
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        conn.request("GET", f"/?{parts.query}")
        answer = conn.getresponse()
        cookie = answer.getheader("set-cookie", "").split(";")[0]
        answer.read()
        print(f"\n  {'figure':<34}{'measured':>10}    {'target':>10}")
        for label, path in (("first page (100 of 100,000)", "/"),
                            ("last page", f"/?offset={args.candidates - 100}"),
                            ("grouped by session", "/?group=session")):
            times = []
            for _ in range(args.requests):
                start = time.perf_counter()
                conn.request("GET", path, headers={"Cookie": cookie})
                got = conn.getresponse()
                body = got.read()
                times.append((time.perf_counter() - start) * 1000)
                assert got.status == 200 and body.count(b'class="candidate"') == 100, (got.status, len(body))
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            print(f"  {label + ' p50 ms':<34}{statistics.median(times):10.1f}    {'≤ 50':>10}")
            print(f"  {label + ' p95 ms':<34}{p95:10.1f}    {'≤ 50':>10}")
        stream = threading.Thread(target=_hold_stream, args=(parts.hostname, parts.port, cookie), daemon=True)
        stream.start()
        time.sleep(1.0)
        cpu_pct, rss = idle(d, args.idle_s, 1.0)
        print(f"\n  idle with --http and one live page, {args.idle_s:g} s:")
        print(f"  {'CPU % of one core':<34}{cpu_pct:10.2f}    {'< 1':>10}")
        print(f"  {'RSS MiB (max)':<34}{max(rss):10.1f}    {'< 60':>10}   (median {statistics.median(rss):.1f}; "
              f"{args.candidates:,} candidates in the queue)")
        d.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    return 0


def _hold_stream(host: str, port: int, cookie: str) -> None:
    """Keep one live event stream open, as an open page does."""
    conn = http.client.HTTPConnection(host, port, timeout=None)
    conn.request("GET", "/events", headers={"Cookie": cookie})
    answer = conn.getresponse()
    while answer.read(1):
        pass


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    raise SystemExit(main())
