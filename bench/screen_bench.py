"""Benchmark of the screen (issue 29), each figure printed beside its floor.

* Throughput, million code points a second, of ``find_secrets``, ``redact``, ``flags`` and ``find_hidden`` over
  real session logs (the 25 transcripts of ``../shared/real-sessions``, 28 MB; ``--root`` for others), beside
  one ``re.finditer`` pass of a token run (``[A-Za-z0-9]{20,}``): the least any scan of the text costs.
* What the scan reported (kinds and counts): on those transcripts, none is the expected answer.
* First-call cost: importing ``mmd.screen.secrets`` and its first ``find_secrets`` on a token-like text, which
  loads ``detect-secrets``' provider patterns (milliseconds, in a fresh process).
* The queue's door (issue 29, :func:`mmd.candidates.screening.screen_candidate`): milliseconds a candidate over
  every candidate the pipeline makes of those transcripts, beside what making them cost (its floor: the door
  must not cost more than finding the candidates).
* The last guard on what reaches an agent (:func:`mmctl.injection.guarded` on a 6 KiB injection, the hook's):
  milliseconds, beside one ``find_hidden`` pass (a guard cannot cost less than reading the text once).

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
    _door(args.root)


def _door(root: Path) -> None:
    """The door's cost a candidate beside the pipeline's, and the last guard's on a 6 KiB text."""
    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO / "client"))
    from mmctl.injection import guarded
    from queue_quality import read_session

    from mmd.candidates import candidates_from
    from mmd.candidates.screening import screen_candidate

    sessions = [read_session(p) for p in sorted(root.rglob("*.jsonl"))]
    started = time.perf_counter()
    made = [c for utterances in sessions for c in candidates_from(utterances, write_budget=4000)]
    making = time.perf_counter() - started
    started = time.perf_counter()
    screened = [screen_candidate(c) for c in made]
    door = time.perf_counter() - started
    flagged = Counter(f["kind"] for c in screened for f in c.flags)
    print(f"the door: {door / len(made) * 1000:.3f} ms a candidate over {len(made)} candidates; making them "
          f"{making / len(made) * 1000:.3f} ms each (floor); flagged: {dict(flagged) or 'none'}")
    text = "".join(f"- note-{i}: {c.summary} <mm://local/note-{i}>\n" for i, c in enumerate(screened))[:6144]
    rounds = 50
    started = time.perf_counter()
    for _ in range(rounds):
        guarded(text)
    guard = (time.perf_counter() - started) / rounds * 1000
    started = time.perf_counter()
    for _ in range(rounds):
        find_hidden(text)
    floor = (time.perf_counter() - started) / rounds * 1000
    print(f"the last guard on {len(text.encode())} bytes: {guard:.2f} ms (floor, one find_hidden pass: {floor:.2f} ms)")


if __name__ == "__main__":
    main()
