"""Review-queue quality on real agent sessions: precision, recall, candidates per session.

Reads ``../shared/real-sessions`` (18 real Claude Code and Codex transcripts, ``gold.json`` with
102 items a careful reviewer keeps; see its README), runs :func:`mmd.candidates.score.select`
with the defaults over each main session file (subagent files skipped, as the adapters skip
them) and scores the *visible* candidates by the README's fair matching rule: a candidate
matches a gold item when the quote (NFKC-casefolded, whitespace collapsed, backticks and
asterisks removed) is a substring of its summary + body, or when at least 70% of the quote's
words of 3+ characters appear in it; only candidates of at most 800 code points can match.

Held out of tuning, picked up front by a fixed rule: every 4th file in name order, starting with
the first (5 of 18). Targets (issue 13): all files precision ≥ 0.45 and recall ≥ 0.40; the
held-out files stand in for "real sessions we do not have": ≥ 0.35 / 0.35.

Utterances come from the Claude Code and Codex adapters (``mmd.sources.claude_code``,
``mmd.sources.codex``), each file read whole.

Run: ``python bench/queue_quality.py [--root DIR] [--per-session N] [--show] [--rules]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mmd.candidates.score import Draft, select  # noqa: E402
from mmd.sources.base import Utterance  # noqa: E402
from mmd.sources.claude_code import ClaudeCodeSource  # noqa: E402
from mmd.sources.codex import CodexSource  # noqa: E402

ROOT = next((d / "shared" / "real-sessions" for d in REPO.parents if (d / "shared" / "real-sessions").is_dir()),
            REPO.parent / "shared" / "real-sessions")
"""../shared/real-sessions beside the checkout, or beside a folder above it (a worktree)."""
FLOOR_ALL = (0.45, 0.40)
FLOOR_HELD = (0.35, 0.35)

# --- the matching rule (README of real-sessions) -------------------------------------------------


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("`", "").replace("*", "")
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text) if len(w) >= 3]


def matches(quote: str, candidate: str) -> bool:
    """The README's fair matching rule: substring, or ≥ 70% of the quote's 3+ character words."""
    if len(candidate) > 800:
        return False
    q, c = _norm(quote), _norm(candidate)
    if q in c:
        return True
    words = _words(q)
    present = set(_words(c))
    return bool(words) and sum(1 for w in words if w in present) / len(words) >= 0.7


# --- reading the logs -----------------------------------------------------------------------------


def read_session(path: Path) -> list[Utterance]:
    """The utterances of one main session file, read whole by its adapter (Claude Code or Codex)."""
    source: ClaudeCodeSource | CodexSource = CodexSource() if "codex" in path.parts else ClaudeCodeSource()
    out: list[Utterance] = []
    cursor = None
    while True:
        piece = source.read(str(path), cursor, max_bytes=1 << 30, max_chars=1 << 30)
        out.extend(piece.utterances)
        cursor = piece.cursor
        if not piece.more:
            return out


# --- the measure ------------------------------------------------------------------------------------


def _figures(rows: list[dict[str, Any]]) -> tuple[float, float, float]:
    shown = sum(r["shown"] for r in rows)
    good = sum(r["good"] for r in rows)
    gold = sum(r["gold"] for r in rows)
    found = sum(r["found"] for r in rows)
    return (good / shown if shown else 0.0, found / gold if gold else 0.0, shown / max(1, len(rows)))


def measure(root: Path, per_session: int | None, show: bool) -> tuple[list[dict[str, Any]], Counter[str], Counter[str]]:
    """One row per main session file, plus per-rule counts of visible and matching candidates."""
    gold = json.loads((root / "gold.json").read_text(encoding="utf-8"))
    files = sorted({g["file"] for g in gold} | {p.relative_to(root).as_posix() for p in root.rglob("*.jsonl")
                                                  if "subagents" not in p.parts})
    rows = []
    fired: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    for n, name in enumerate(files):
        quotes = [g["quote"] for g in gold if g["file"] == name]
        drafts: list[Draft] = [d for d in select(read_session(root / name), per_session=per_session) if d.visible]
        texts = [d.summary + "\n" + d.body for d in drafts]
        good = [any(matches(q, t) for q in quotes) for t in texts]
        found = sum(1 for q in quotes if any(matches(q, t) for t in texts))
        for draft, ok in zip(drafts, good, strict=True):
            fired[draft.rule] += 1
            hit[draft.rule] += ok
        rows.append({"file": name, "held": n % 4 == 0, "shown": len(drafts), "good": sum(good),
                     "gold": len(quotes), "found": found})
        if show:
            print(f"== {name}")
            for draft, ok in zip(drafts, good, strict=True):
                mark = "+" if ok else "-"
                print(f"  {mark} {draft.score:.2f} {draft.rule:22} {draft.evidence[0].who[:3]} {draft.summary}")
    return rows, fired, hit


def main() -> None:
    """Print per-file rows, then all / tuning / held-out figures beside their floors."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--per-session", type=int, default=None)
    parser.add_argument("--show", action="store_true", help="print every visible candidate, + when it matches")
    parser.add_argument("--rules", action="store_true", help="print per-rule precision")
    args = parser.parse_args()
    if not (args.root / "gold.json").is_file():
        sys.exit(f"no gold.json under {args.root}: the real sessions are not beside this checkout")
    rows, fired, hit = measure(args.root, args.per_session, args.show)
    print(f"{'file':64} held  shown good gold found")
    for r in rows:
        held = "*" if r["held"] else " "
        print(f"{r['file'][-64:]:64} {held:4} {r['shown']:5} {r['good']:4} {r['gold']:4} {r['found']:5}")
    if args.rules:
        for rule, count in fired.most_common():
            print(f"rule {rule:24} visible {count:3}  match {hit[rule]:3}  precision {hit[rule] / count:.2f}")
    for label, part, floor in (("all", rows, FLOOR_ALL), ("tuning", [r for r in rows if not r["held"]], None),
                               ("held-out", [r for r in rows if r["held"]], FLOOR_HELD)):
        p, r, per = _figures(part)
        beside = f"  (floor precision {floor[0]:.2f}, recall {floor[1]:.2f})" if floor else ""
        print(f"{label:9} files {len(part):2}  precision {p:.3f}  recall {r:.3f}  candidates/session {per:.1f}{beside}")


if __name__ == "__main__":
    main()
