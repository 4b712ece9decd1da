"""When to ask a session to distill: the prompt count behind ``DISTILL_AFTER_PROMPTS`` (issue 28).

For each of the 18 real sessions of ``../shared/real-sessions`` (Claude Code and Codex, with gold labels) this reads
the person's prompts as mmd's own sources read them, and where each gold item is first said (the prompt it comes
after). For each count N from 1 to 10 it prints, if the line came with prompt N + 1 (after N prompts):

- sessions nudged: those with more than N prompts (the others end before the line);
- gold said before the nudge: what the session could propose when asked (more is better);
- gold in sessions never nudged: lost to a late line (fewer is better);
- empty sessions nudged: sessions with nothing worth keeping that get the line anyway (fewer is better).

Run: ``python bench/distill_bench.py [--root ../shared/real-sessions]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmd.inject.guide import DISTILL_AFTER_PROMPTS  # noqa: E402
from mmd.sources import SOURCES  # noqa: E402

DEFAULT_ROOT = Path(__file__).resolve().parent.parent.parent / "shared" / "real-sessions"


def _norm(text: str) -> str:
    """The gold's matching rule: NFKC, casefolded, whitespace collapsed, markdown backticks and asterisks out."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold().replace("`", "").replace("*", "")).strip()


def sessions(root: Path) -> list[tuple[str, int, list[int]]]:
    """``(file, prompts, [the prompt count at which each gold item is first said])`` per main session file."""
    gold = json.loads((root / "gold.json").read_text(encoding="utf-8"))
    by_file: dict[str, list[str]] = {}
    for item in gold:
        by_file.setdefault(item["file"], []).append(_norm(item["quote"]))
    files = sorted({str(p.relative_to(root)) for p in root.rglob("*.jsonl") if "subagents" not in p.parts})
    out = []
    for name in files:
        source = SOURCES["codex" if name.startswith("codex") else "claude-code"]
        cursor, utterances = None, []
        while True:
            part = source.read(str(root / name), cursor, max_bytes=1 << 30, max_chars=1 << 30)
            utterances += part.utterances
            cursor = part.cursor
            if not part.more:
                break
        prompts, first, found = 0, [], set()
        for u in utterances:
            prompts += u.who == "human"
            text = _norm(u.text)
            for i, quote in enumerate(by_file.get(name, [])):
                if i not in found and quote in text:
                    found.add(i)
                    first.append(prompts)
        out.append((name, prompts, sorted(first)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    args = parser.parse_args()
    if not (args.root / "gold.json").is_file():
        sys.exit(f"no labelled sessions at {args.root} (gold.json): give --root")
    rows = sessions(args.root)
    total = sum(len(g) for _, _, g in rows)
    print(f"{len(rows)} sessions, {total} gold items; the line comes with prompt N + 1 (chosen: N = "
          f"{DISTILL_AFTER_PROMPTS})")
    print(f"{'N':>3} {'sessions nudged':>16} {'gold before it':>15} {'gold never nudged':>18} {'empty nudged':>13}")
    for n in range(1, 11):
        nudged = [(p, g) for _, p, g in rows if p > n]
        before = sum(sum(1 for at in g if at <= n) for _, g in nudged)
        missed = sum(len(g) for _, p, g in rows if p <= n)
        empty = sum(1 for _, g in nudged if not g)
        mark = "  <- chosen" if n == DISTILL_AFTER_PROMPTS else ""
        print(f"{n:>3} {len(nudged):>10}/{len(rows):<5} {before:>9}/{total:<5} {missed:>18} {empty:>13}{mark}")


if __name__ == "__main__":
    main()
