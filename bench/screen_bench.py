"""Benchmark of the screen (issue 29), each figure printed beside its floor.

* Throughput, million code points a second, of ``find_secrets``, ``redact``, ``flags`` and ``find_hidden`` over
  real session logs (the 25 transcripts of ``../shared/real-sessions``, 28 MB; ``--root`` for others), beside
  one ``re.finditer`` pass of a token run (``[A-Za-z0-9]{20,}``): the least any scan of the text costs.
* What the scan reported (kinds and counts): on those transcripts, none is the expected answer.
* First-call cost: importing ``mmd.screen.secrets`` and its first ``find_secrets`` on a token-like text, which
  loads ``detect-secrets``' provider patterns (milliseconds, in a fresh process).

Target: ≥ 1 M code points a second for ``find_secrets`` (a 900 kB session screened in under a second).

Run: ``python bench/screen_bench.py [--root DIR]``. Not a test.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mmd.screen.hidden import find_hidden  # noqa: E402
from mmd.screen.instructions import flags  # noqa: E402
from mmd.screen.secrets import find_secrets, redact  # noqa: E402


def _texts(root: Path) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*.jsonl"))]


def _rate(fn: object, texts: list[str]) -> tuple[float, list[object]]:
    started = time.perf_counter()
    found = [fn(t) for t in texts]  # type: ignore[operator]
    took = time.perf_counter() - started
    return sum(len(t) for t in texts) / took / 1e6, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO.parent / "shared" / "real-sessions",
                        help="a folder of .jsonl session logs")
    args = parser.parse_args()
    texts = _texts(args.root)
    if not texts:
        sys.exit(f"no .jsonl file under {args.root}")
    size = sum(len(t) for t in texts)
    first = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); "
                            "from mmd.screen.secrets import find_secrets; "
                            "find_secrets('id tok_x9Zq4mB2pL7wR1vN8sD3kF'); "
                            "print(round((time.perf_counter() - t) * 1000))"], capture_output=True, text=True,
                           cwd=REPO, check=True).stdout.strip()
    token = re.compile(r"[A-Za-z0-9]{20,}")
    floor, _ = _rate(lambda t: sum(1 for _ in token.finditer(t)), texts)
    print(f"{len(texts)} logs, {size / 1e6:.1f} M code points; floor (one token-run scan): {floor:.1f} M/s")
    for name, fn in (("find_secrets", find_secrets), ("redact", redact), ("flags", flags),
                     ("find_hidden", find_hidden)):
        rate, found = _rate(fn, texts)
        kinds = Counter(f.kind for one in found if isinstance(one, list) for f in one)
        note = "  (target >= 1.0 M/s)" if name == "find_secrets" else ""
        shown = "-" if name == "redact" else dict(kinds) or "none"
        print(f"{name:<13} {rate:6.2f} M/s  {rate / floor:5.1%} of the floor{note}  found: {shown}")
    print(f"first call (import + provider patterns): {first} ms")


if __name__ == "__main__":
    main()
