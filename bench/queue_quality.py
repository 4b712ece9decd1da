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

Utterances come from the Claude Code and Codex adapters (``mmd.sources``) when they are
present, else from a minimal reader here that follows docs/agent-session-formats.md §1.6/§2.7.

Run: ``python bench/queue_quality.py [--root DIR] [--per-session N] [--show] [--rules]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mmd.candidates.score import Draft, select  # noqa: E402
from mmd.sources.base import Position, Utterance  # noqa: E402

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

_SKIP_PREFIX = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                "<local-command-stderr>", "<local-command-caveat>", "<bash-input>", "<bash-stdout>",
                "<bash-stderr>", "<task-notification>", "[Request interrupted by user",
                "Caveat: The messages below")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_CODEX_MARKERS = ("# agents.md instructions", "<user_instructions>", "<environment_context>",
                  "<turn_aborted>", "<user_shell_command>", "<skill>", "<subagent_notification>")


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append((i, record))
    return out


def _blocks_text(content: Any, kind: str = "text") -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") in (kind, "text"))


def _claude_one(record: dict[str, Any], typed: set[str]) -> tuple[str, str] | None:
    kind = record.get("type")
    if record.get("isSidechain"):
        return None
    if kind == "assistant" and not record.get("isApiErrorMessage"):
        return "assistant", _blocks_text(record.get("message", {}).get("content"))
    if kind == "queue-operation" and record.get("operation") == "enqueue":
        text = (record.get("content") or "").strip()
        if text.startswith(("/", "<task-notification")) or text in typed:
            return None
        return "human", text
    if kind != "user":
        return None
    content = record.get("message", {}).get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    text = _REMINDER.sub("", _blocks_text(content)).strip()
    if record.get("isCompactSummary"):
        return "summary", text
    if record.get("isMeta") or record.get("isVisibleInTranscriptOnly") or text.startswith(_SKIP_PREFIX):
        return None
    return "human", text


def _claude(path: Path) -> list[Utterance]:
    records = _records(path)
    typed = {r["message"]["content"].strip() for _, r in records
             if r.get("type") == "user" and isinstance(r.get("message", {}).get("content"), str)}
    out: list[Utterance] = []
    seen: set[str] = set()
    for i, record in records:
        uuid = record.get("uuid")
        if uuid in seen:
            continue
        if uuid:
            seen.add(uuid)
        got = _claude_one(record, typed)
        if got and got[1].strip():
            out.append(Utterance(got[0], got[1].strip(), "claude-code", record.get("sessionId") or path.stem,  # type: ignore[arg-type]
                                 record.get("cwd"), record.get("timestamp"), Position(str(path), i, None, uuid)))
    return out


def _codex(path: Path) -> list[Utterance]:
    records = _records(path)
    events = any(r.get("type") == "event_msg" and (r.get("payload") or {}).get("type") == "user_message"
                 for _, r in records)
    out: list[Utterance] = []
    for i, record in records:
        payload = record.get("payload") if "payload" in record else record
        kind = record.get("type") if "payload" in record else "response_item"
        who = text = None
        if kind == "event_msg" and payload.get("type") == "user_message" and payload.get("kind") in (None, "plain"):
            who, text = "human", payload.get("message") or ""
        elif kind == "response_item" and payload.get("type") == "message":
            text = _blocks_text(payload.get("content"), "output_text")
            text = "\n".join(c.get("text", "") for c in payload.get("content") or [] if isinstance(c, dict))
            who = {"assistant": "assistant", "user": None if events else "human"}.get(payload.get("role"))
        elif kind == "compacted":
            who, text = "summary", payload.get("message") or ""
        text = (text or "").strip()
        if not who or not text or (who == "human" and text.casefold().startswith(_CODEX_MARKERS)):
            continue
        if who == "human" and any(o.text == text for o in out[-3:]):
            continue
        out.append(Utterance(who, text, "codex", path.stem, None, record.get("timestamp"),  # type: ignore[arg-type]
                             Position(str(path), i)))
    return out


def _adapter_reader() -> Callable[[Path], list[Utterance]] | None:
    """The real adapters when the sources package has them (``mmd.sources.SOURCES`` by name)."""
    try:
        import mmd.sources as sources
        registry = sources.SOURCES  # type: ignore[attr-defined]
        claude, codex = registry["claude-code"], registry["codex"]
    except (ImportError, AttributeError, KeyError, TypeError):
        return None

    def read(path: Path) -> list[Utterance]:
        source = codex if "/codex/" in path.as_posix() else claude
        out: list[Utterance] = []
        cursor = None
        while True:
            piece = source.read(str(path), cursor, max_bytes=1 << 30, max_chars=1 << 30)
            out.extend(piece.utterances)
            cursor = piece.cursor
            if not piece.more:
                return out
    return read


def read_session(path: Path) -> list[Utterance]:
    """The utterances of one main session file, by the adapters or the minimal reader."""
    reader = _adapter_reader()
    if reader is not None:
        return reader(path)
    return _codex(path) if "/codex/" in path.as_posix() else _claude(path)


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
                print(f"  {'+' if ok else '-'} {draft.score:.2f} {draft.rule:22} {draft.evidence[0].who[:3]} {draft.summary}")
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
        print(f"{r['file'][-64:]:64} {'*' if r['held'] else ' ':4} {r['shown']:5} {r['good']:4} {r['gold']:4} {r['found']:5}")
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
