"""Claude Code adapter speed on a large transcript, beside its floor.

Generates a Claude Code transcript of at least 100 MB in the real shapes of
2.1.x logs: typed prompts, assistant records one block each (thinking, text,
tool_use), tool results as user records with ``toolUseResult`` (file reads with
``N→`` prefixes, 200–1,500 lines each), ``progress`` records nesting subagent
messages, ``file-history-snapshot`` and ``system`` records. Then prints:

- the adapter's throughput reading it with :class:`ClaudeCodeSource` in 8 MB slices
  (target: ≥ 150 MB/s), beside the floor: the same lines read and ``json.loads``-ed;
- the peak RSS of the process (``ru_maxrss``) after the adapter's read, measured in a
  fresh subprocess (target: < 60 MiB).

Run: ``python bench/sources_bench.py [--mb 110]``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SID = "5905150d-e45f-467d-b7b7-7f2fd21f04b6"
CWD = "/Users/user/Workspace/chx"


def _env(kind: str, n: int, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {
        "parentUuid": f"{n - 1:08x}-0000-4000-8000-000000000000", "isSidechain": False, "userType": "external",
        "cwd": CWD, "sessionId": SID, "version": "2.1.44", "gitBranch": "main", "slug": "wise-swimming-meadow",
        "type": kind, "uuid": f"{n:08x}-0000-4000-8000-000000000000",
        "timestamp": f"2026-02-17T03:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"}
    record.update(extra)
    return record


def _file_read(rng: random.Random) -> str:
    lines = rng.randint(200, 1500)
    return "\n".join(f"{i + 1:6}→    const value{i} = compute(input, {rng.random():.6f}); // {'x' * rng.randint(0, 40)}"
                     for i in range(lines))


def generate(path: Path, mb: int) -> int:
    """Write a transcript of at least ``mb`` MB; returns its size in bytes."""
    rng = random.Random(7)
    n = 0
    size = 0
    with path.open("w", encoding="utf-8") as f:
        def put(record: dict[str, object]) -> None:
            nonlocal size
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            f.write(line)
            size += len(line.encode("utf-8"))
        while size < mb * 1_000_000:
            n += 1
            put({"type": "file-history-snapshot", "messageId": f"m{n}", "snapshot": {
                "messageId": f"m{n}", "trackedFileBackups": {"src/a.ts": {"backupFileName": "x", "version": 2}},
                "timestamp": "2026-02-17T03:00:00.000Z"}, "isSnapshotUpdate": False})
            n += 1
            put(_env("user", n, message={"role": "user", "content": f"please fix the release script, step {n}"},
                     thinkingMetadata={"maxThinkingTokens": 31999}, todos=[], permissionMode="default"))
            for _ in range(rng.randint(3, 8)):
                n += 1
                put(_env("assistant", n, requestId="req_1", message={
                    "model": "claude-opus-4-6", "id": f"msg_{n}", "type": "message", "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "", "signature": "s" * 400}]}))
                n += 1
                put(_env("assistant", n, requestId="req_1", message={
                    "model": "claude-opus-4-6", "id": f"msg_{n}", "type": "message", "role": "assistant",
                    "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                                 "input": {"file_path": "/Users/user/Workspace/chx/scripts/release.ts"}}]}))
                body = _file_read(rng)
                for _ in range(rng.randint(1, 3)):
                    n += 1
                    put(_env("progress", n, toolUseID=f"toolu_{n}", parentToolUseID=f"toolu_{n}", data={
                        "type": "agent_progress", "agentId": "a5c1e07", "message": {
                            "type": "user", "message": {"role": "user", "content": [
                                {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": body[:20000]}]}}}))
                n += 1
                put(_env("user", n, sourceToolAssistantUUID="x", message={"role": "user", "content": [
                    {"tool_use_id": f"toolu_{n}", "type": "tool_result", "content": body}]},
                    toolUseResult={"type": "text", "file": {"filePath": "/x/release.ts", "content": body,
                                                            "numLines": body.count("\n") + 1}}))
            n += 1
            put(_env("assistant", n, message={
                "model": "claude-opus-4-6", "id": f"msg_{n}", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "The script now uses npm publish; bun publish does not "
                             "resolve `workspace:*` in this setup."}]}))
            n += 1
            put(_env("system", n, subtype="turn_duration", durationMs=51234, isMeta=False))
    return size


def floor(path: Path) -> float:
    """Seconds to read every line and ``json.loads`` it."""
    start = time.perf_counter()
    with path.open("rb") as f:
        for line in f:
            json.loads(line)
    return time.perf_counter() - start


def adapter(path: Path) -> tuple[float, int]:
    """Seconds for the claude-code source to read the whole file in 8 MB slices, and the utterance count."""
    from mmd.sources.claude_code import ClaudeCodeSource

    source = ClaudeCodeSource()
    cursor = None
    count = 0
    start = time.perf_counter()
    while True:
        got = source.read(str(path), cursor, max_bytes=8 << 20, max_chars=1 << 30)
        count += len(got.utterances)
        cursor = got.cursor
        if not got.more:
            return time.perf_counter() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=110, help="transcript size in MB (default 110)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        seconds, count = adapter(Path(args.child))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"seconds": seconds, "count": count, "rss_mib": rss}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{SID}.jsonl"
        size = generate(path, args.mb)
        mb = size / 1e6
        floor(path)  # warm the page cache
        base = floor(path)
        out = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                             capture_output=True, text=True).stdout
        child = json.loads(out)
        print(f"claude-code transcript: {mb:.1f} MB, {child['count']} utterances")
        print(f"adapter read: {mb / child['seconds']:.0f} MB/s (target >= 150)   "
              f"floor (read + json.loads): {mb / base:.0f} MB/s")
        print(f"adapter peak RSS: {child['rss_mib']:.1f} MiB (target < 60)")


if __name__ == "__main__":
    main()
