"""A stand-in for an agent that rewrites its own settings file while ``mmctl`` edits it (issue 26).

Run as ``python concurrent_writer.py FILE STOPFILE REPORT``: until STOPFILE exists it rewrites FILE every
few milliseconds as Claude Code does (read, change its own ``"counter": N``, temp file, rename), and before
each write checks that the file still holds the counter it wrote last: a smaller one means another writer
replaced the file with bytes based on an older version, so one of its writes was lost, unless its own counter comes
back within :data:`SETTLE_S` (the other writer swapped its file back: counted as ``transient``). A file that is not
whole JSON is counted too. At the end it writes one last counter and the report
``{"writes", "lost", "broken", "last", "transient"}`` as JSON to REPORT.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

COUNTER = re.compile(rb'"counter": (\d+)')
SETTLE_S = 2.0
"""How long a counter not this writer's may stay before its write counts as lost (bounds the other editor's
swap back; on a loaded machine it can be descheduled between its swap and the swap back)."""


def main(path: str, stop: str, report: str) -> None:
    last, writes, lost, broken, transient = None, 0, 0, 0, 0
    while True:
        data = open(path, "rb").read()
        try:
            json.loads(data)
        except ValueError:
            broken += 1
        seen = _counter(data)
        if last is not None and seen != last:
            data, seen = _settled(path, last, data, seen)
            if seen == last:
                transient += 1
            else:
                lost += 1
        last = (seen or 0) + 1
        new = COUNTER.sub(b'"counter": %d' % last, data, count=1)
        tmp = f"{path}.writer-{os.getpid()}.tmp"
        with open(tmp, "wb") as handle:
            handle.write(new)
        os.replace(tmp, path)
        writes += 1
        if os.path.exists(stop):
            break
        time.sleep(0.003)
    with open(report, "w") as handle:
        json.dump({"writes": writes, "lost": lost, "broken": broken, "last": last, "transient": transient}, handle)


def _counter(data: bytes) -> int | None:
    found = COUNTER.search(data)
    return int(found[1]) if found else None


def _settled(path: str, last: int, data: bytes, seen: int | None) -> tuple[bytes, int | None]:
    """Read ``path`` again for up to :data:`SETTLE_S` seconds until it holds ``last`` again: an editor that swapped
    its file in, found it had displaced this writer's, and swapped this one back (``mmd.core.userfile``) leaves its
    version visible for the microseconds in between; a write really lost never comes back."""
    deadline = time.monotonic() + SETTLE_S
    while seen != last and time.monotonic() < deadline:
        time.sleep(0.001)
        data = open(path, "rb").read()
        seen = _counter(data)
    return data, seen


@contextlib.contextmanager
def rewriting(path: Path, scratch: Path) -> Iterator[dict[str, Any]]:
    """This program rewriting ``path`` while the block runs (started, and writing, before it begins); the dict
    it yields holds the report once the block has ended."""
    stop, report = scratch / "writer.stop", scratch / "writer.report.json"
    before = path.read_bytes()
    writer = subprocess.Popen([sys.executable, __file__, str(path), str(stop), str(report)])
    result: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 30
        while path.read_bytes() == before and time.monotonic() < deadline:
            time.sleep(0.005)
        yield result
    finally:
        stop.touch()
        writer.wait(30)
    result.update(json.loads(report.read_text()))


if __name__ == "__main__":
    main(*sys.argv[1:4])
