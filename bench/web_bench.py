"""Benchmark of the review page (``mmd --http``), each figure printed beside its target.

* Queue page: the first and the last page of 100 pending candidates out of
  ``--candidates`` (10,000 by default; a real ``state.db`` filled beforehand with
  candidates shaped as a backfill of real sessions makes them: bodies of 60–500
  code points, median about 165, with inline code, one to three places of evidence,
  a third of them quoting words the body does not say, seven projects, 300 sessions),
  rendered by a real daemon whose index holds 60 notes; the time is the whole HTTP
  round trip on loopback (an upper bound of the server-side render), p50 and p95
  over ``--requests`` requests, and the page's size in bytes (cards counted).
* ``--real``: the same first page over the queue a backfill of ``../shared/real-sessions``
  (the 18 Claude Code and Codex transcripts) makes, hidden ones too (``?all=1``).
* Idle: CPU (% of one core) and RSS (MiB) of a daemon started with ``--http``
  over ``--idle-s`` seconds, one page open with its live event stream.

Targets (issue 30): a page of 100 cards ≤ 120 KB, served in ≤ 300 ms on this 2-core machine, the first
page of a 10,000-candidate queue as fast; idle CPU < 1 %, RSS < 60 MiB (the daemon bench's targets, issue 3).

Run: ``python bench/web_bench.py [--requests 30] [--idle-s 30] [--candidates 10000] [--real]``. Not a test.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CANDIDATES = 10_000
NOTES = 60
PAGE_KB = 120
PAGE_MS = 300
REAL = REPO.parent / "shared" / "real-sessions"

_COMMON = ("the", "a", "of", "on", "in", "after", "before", "never", "always", "with", "must", "run", "use", "is")
_SYLLABLES = ("ka", "lo", "mi", "ser", "dep", "tor", "val", "gen", "rix", "pa", "ne", "sto", "lum", "qua", "dre",
              "vo", "ti", "ban", "cor", "esh", "fil", "gor", "hem", "jun")
_CODE = ("`make check`", "`db/migrate`", "`X-Signature`", "`npm run test:ui`", "`engine.search()`", "`pg_trgm`")


def _text(rng: random.Random, chars: int) -> str:
    """About ``chars`` code points of statement-like text: common words, made-up content words (so that no two
    candidates are near-duplicates the queue would merge), an inline code span now and then."""
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        roll = rng.random()
        words.append(rng.choice(_CODE) if roll < 0.05 else rng.choice(_COMMON) if roll < 0.4 else
                     "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(3, 4))))
    return " ".join(words)[:chars].rstrip() + "."


def _name(i: int) -> str:
    """A made-up word of its own for each ``i`` (its digits in syllables): no two candidates say the same."""
    word = ""
    while True:
        i, digit = divmod(i, len(_SYLLABLES))
        word += _SYLLABLES[digit]
        if not i:
            return word


def fill_queue(root: Path, n: int, seed: int = 30) -> None:
    """``n`` pending candidates in ``root/.mmd/state.db``, as a backfill of real sessions would have added them."""
    from mmd.candidates import Evidence, NewCandidate
    from mmd.daemon.queue import ReviewQueue
    from mmd.daemon.statedb import StateDB

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    db = StateDB(root)
    db.open()
    queue = ReviewQueue(db, lambda: "2026-11-30T12:00:00.000Z")
    batch = []
    for i in range(n):
        chars = min(500, max(60, int(rng.lognormvariate(5.1, 0.45))))
        body = f"{_name(i)} {_name(i * 7 + 3)}: " + _text(rng, chars)
        project, session = f"/home/dev/project-{i % 7}", f"s-{i % 300}"
        file = f"/logs/--project-{i % 7}--/{session}/session.jsonl"
        quotes = [body if rng.random() < 0.67 else f"so, as I said: {_text(rng, chars // 2)}"
                  for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        evidence = tuple(Evidence("claude-code", session, project, file, {"file": file, "line": i * 3 + k},
                                  f"2026-11-2{k % 10}T10:00:00.000Z", "human", q)
                         for k, q in enumerate(quotes))
        batch.append(NewCandidate(rng.choice(("fact", "rule", "pitfall", "decision")), f"topic-{i}",
                                  body.split(": ", 1)[1][:80], body, len(body), False, session, file, i, f"m{i}",
                                  "user",
                                  rule="human-standing-rule", score=round(rng.uniform(0.4, 2.0), 3),
                                  evidence=evidence, proposal_action="append" if i % 4 == 0 else "create"))
        if len(batch) == 5000:
            queue.add(batch)
            batch = []
    queue.add(batch)
    db.close()


def fill_notes(d: Any, n: int) -> None:
    """``n`` notes in the daemon's index (the page lists them on a candidate's page, not on each card)."""
    for i in range(n):
        d.call("memory.write", {"topic": f"note-{i}", "content": f"note {i}: " + "words " * 40,
                                "summary": f"note number {i}"})


def page_figures(host: str, port: int, cookie: str, path: str, requests: int) -> tuple[list[float], bytes]:
    """``(sorted round-trip times in ms, the last body)`` of ``requests`` GETs of ``path`` on one connection."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    times, body = [], b""
    for _ in range(requests):
        start = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie})
        got = conn.getresponse()
        body = got.read()
        times.append((time.perf_counter() - start) * 1000)
        assert got.status == 200, (got.status, body[:200])
    conn.close()
    return sorted(times), body


def open_page(url: str) -> tuple[str, int, str]:
    """``(host, port, cookie)`` once the token URL set the page's cookie."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", f"/?{parts.query}")
    answer = conn.getresponse()
    answer.read()
    return str(parts.hostname), int(parts.port or 80), answer.getheader("set-cookie", "").split(";")[0]


def print_page(label: str, times: list[float], body: bytes) -> None:
    cards = body.count(b'class="candidate"')
    p95 = times[int(0.95 * (len(times) - 1))]
    print(f"  {label + ' p50 ms':<40}{statistics.median(times):10.1f}    {'≤ ' + str(PAGE_MS):>10}")
    print(f"  {label + ' p95 ms':<40}{p95:10.1f}    {'≤ ' + str(PAGE_MS):>10}")
    if not cards:  # a candidate's page: its size, no card target
        print(f"  {label + ' kB':<40}{len(body) / 1000:10.1f}")
        return
    per100 = len(body) / 1000 * (100 / cards)
    print(f"  {label + ' kB (' + str(cards) + ' cards)':<40}{len(body) / 1000:10.1f}    "
          f"{'≤ ' + str(PAGE_KB * cards // 100):>10}   ({per100:.1f} kB per 100 cards)")


def real_queue(base: Path, runtime: Path, requests: int) -> None:
    """The first page of the queue a backfill of the real sessions makes (hidden ones too)."""
    from daemon_bench import Daemon

    if not REAL.is_dir():
        print(f"\n  --real: no {REAL}; skipped")
        return
    (base / "real-dsh").mkdir()
    d = Daemon(base, "--sessions", str(base / "real-dsh"), "--source", f"claude-code={REAL / 'claude' / 'projects'}",
               "--source", f"codex={REAL / 'codex' / 'sessions'}", "--http", "127.0.0.1:0", runtime=runtime,
               name="real", start_wait_s=30)
    try:
        deadline = time.monotonic() + 300
        while not d.call("daemon.status")["ingest"]["backfill"]["done"] and time.monotonic() < deadline:
            time.sleep(0.5)
        status = d.call("daemon.status")
        host, port, cookie = open_page(status["http"]["url"])
        print(f"\n  the real sessions' queue: {status['queue']['pending']} pending")
        print_page("first page, hidden ones too", *page_figures(host, port, cookie, "/?all=1", requests))
    finally:
        d.stop()


def measure(d: Any, args: argparse.Namespace) -> None:
    """The page figures and the idle figures of the daemon ``d`` over the filled queue."""
    from daemon_bench import idle

    fill_notes(d, NOTES)
    status = d.call("daemon.status")
    pending = status["queue"]["pending"]  # the few near-duplicates the queue merged are not there
    host, port, cookie = open_page(status["http"]["url"])
    print(f"  {pending:,} pending once near-duplicates merged; {NOTES} notes in the index")
    print(f"\n  {'figure':<40}{'measured':>10}    {'target':>10}")
    for label, path in ((f"first page (100 of {pending:,})", "/"), ("last page", f"/?offset={pending - 100}"),
                        ("grouped by session", "/?group=session")):
        times, body = page_figures(host, port, cookie, path, args.requests)
        assert body.count(b'class="candidate"') == 100, len(body)
        print_page(label, times, body)
    cpu0 = d.cpu_s()
    page_figures(host, port, cookie, "/", args.requests)
    print(f"  {'the daemon CPU ms per first page':<40}{(d.cpu_s() - cpu0) * 1000 / args.requests:10.1f}    "
          f"{'':>10}   (what a busy machine multiplies)")
    first = d.call("queue.list", {"limit": 1})["candidates"][0]["id"]
    print_page(f"a candidate's page ({NOTES} notes to pick)",
               *page_figures(host, port, cookie, f"/queue/{first}", args.requests))
    stream = threading.Thread(target=_hold_stream, args=(host, port, cookie), daemon=True)
    stream.start()
    time.sleep(1.0)
    cpu_pct, rss = idle(d, args.idle_s, 1.0)
    print(f"\n  idle with --http and one live page, {args.idle_s:g} s:")
    print(f"  {'CPU % of one core':<40}{cpu_pct:10.2f}    {'< 1':>10}")
    print(f"  {'RSS MiB (max)':<40}{max(rss):10.1f}    {'< 60':>10}   (median {statistics.median(rss):.1f}; "
          f"{pending:,} candidates in the queue)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=30, help="page requests timed per page")
    parser.add_argument("--idle-s", type=float, default=30.0, help="idle CPU/RSS sampling window, s")
    parser.add_argument("--candidates", type=int, default=CANDIDATES, help="candidates in the queue")
    parser.add_argument("--real", action="store_true", help=f"also the queue of {REAL}")
    args = parser.parse_args()
    print(f"mmd review page bench — {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    base = Path(tempfile.mkdtemp(prefix="mmdweb"))
    runtime = Path(tempfile.mkdtemp(prefix="mmdrt"))
    sys.path.insert(0, str(REPO / "bench"))
    from daemon_bench import Daemon

    try:
        t0 = time.perf_counter()
        fill_queue(base / "root", args.candidates)
        print(f"  queue filled: {args.candidates:,} candidates in {time.perf_counter() - t0:.1f} s")
        (base / "sessions").mkdir()
        d = Daemon(base, "--sessions", str(base / "sessions"), "--http", "127.0.0.1:0", runtime=runtime,
                   start_wait_s=30)
        try:
            measure(d, args)
        finally:
            d.stop()
        if args.real:
            real_queue(base, runtime, args.requests)
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
