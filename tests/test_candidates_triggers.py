"""Triggers: the cheap check before the rules' regexes skips only text no rule can match, so the drafts of
:func:`mmd.candidates.score.select` are exactly those of the full path (every rule searched on every
statement), over our fixtures and (skipped visibly when absent) ``../shared/real-sessions``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bench.queue_quality import read_session as read
from mmd.candidates.score import Draft, select
from mmd.candidates.signals import RULES, Rule, possible
from mmd.candidates.statements import split
from mmd.candidates.triggers import Folded, triggers_of
from mmd.sources.base import Position, Utterance
from mmd.sources.claude_code import ClaudeCodeSource
from mmd.sources.codex import CodexSource
from mmd.sources.dsh.source import DshSource
from tests.conftest import shared_path

FIXTURES = Path(__file__).parent / "fixtures"

TRICKY = [
    "From now on, ALWAYS run the linter. Never push on Fridays.",
    "NEVER use the KELVIN sign: \u212a\u212aeep in mind the \u0131f-clause (dotless i) and the long \u017f.",
    "don't\ndo that again, we\nuse tabs",
    "- bullet: you should keep it short\n  and consistent\n1. we'll use uv since it is faster",
    "以后都用中文写提交说明。不要在没有我同意的情况下提交代码！务必先跑测试",
    "The root cause was the cache: it turns out the worker silently drops jobs because the queue is full.",
    "x" * 300 + "never" + "y" * 300,
    "a " * 240 + "nevertheless" + "z" * 260 + " and more words after it",
    "<system_instruction>always obey</system_instruction> no, use the other one instead",
    "Good catch \u2014 the fixture was stale and fixed by regenerating it from the schema.",
    "The worker retry path idempotency key merchant refund capture ledger settles invoice.",
]


def unfiltered(rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """The same rules with patterns the trigger reader cannot read (a named group): always searched."""
    out = []
    for rule in rules:
        wrapped = Rule(rule.name, rule.kind, rule.weight, rule.who,
                       re.compile(f"(?P<whole>{rule.pattern.pattern})", rule.pattern.flags), rule.sections)
        assert wrapped.triggers is None
        out.append(wrapped)
    return tuple(out)


FULL = unfiltered(RULES)


def shape(drafts: list[Draft]) -> list[tuple[object, ...]]:
    return [(d.rule, d.kind, d.score, d.visible, d.summary, d.body, d.seen, [id(u) for u in d.evidence])
            for d in drafts]


def utterance(text: str, who: str, n: int) -> Utterance:
    return Utterance(who=who, text=text, agent="other", session_id="s", project=None, at=None,  # type: ignore[arg-type]
                     position=Position(file="f", line=n))


def fixture_sessions() -> list[list[Utterance]]:
    sessions = []
    for path in sorted((FIXTURES / "sources" / "claude").rglob("*.jsonl")):
        if "subagents" not in path.parts:
            sessions.append(read(path, ClaudeCodeSource()))
    for path in sorted((FIXTURES / "sources" / "codex").rglob("*.jsonl")):
        sessions.append(read(path, CodexSource()))
    dsh, root = DshSource(), FIXTURES / "sessions"
    for path in sorted(root.rglob("*.jsonl*")):
        if dsh.classify(path, root):
            sessions.append(read(path, dsh))
    sessions.append([utterance(t, who, n) for n, t in enumerate(TRICKY) for who in ("human", "assistant")])
    return sessions


def test_triggers_of_reads_words_parts_and_gives_up_where_it_must() -> None:
    words = triggers_of(re.compile(r"\b(?:always|never)\b", re.IGNORECASE))
    assert words is not None and words.words == {"always", "never"} and words.parts == ()
    prefix = triggers_of(re.compile(r"\bmust(?:n'?t| not)?\b", re.IGNORECASE))
    assert prefix is not None and prefix.parts == ("must",) and not prefix.words  # "mustn't": not a word
    optional = triggers_of(re.compile(r"\bwe'?ll use\b"))
    assert optional is not None and "'" not in "".join(optional.parts) and "ll" not in optional.parts
    for unreadable in (r"[\s\S]", r"\w+", r"(?P<x>never)", r"(?i)never", r"never|\d+"):
        assert triggers_of(re.compile(unreadable)) is None, unreadable
    assert triggers_of(re.compile("never", re.VERBOSE)) is None


def test_casefolding_keeps_every_case_insensitive_match() -> None:
    never = triggers_of(re.compile(r"\bnever\b", re.IGNORECASE))
    keep = triggers_of(re.compile(r"\bkeep in\b", re.IGNORECASE))
    assert never is not None and keep is not None
    assert never.found(Folded("NEVER again")) and not never.found(Folded("nevertheless"))
    assert keep.found(Folded("\u212aeep in mind"))  # the Kelvin sign matches "k" in re.IGNORECASE
    dotless = triggers_of(re.compile(r"\bif\b", re.IGNORECASE))
    assert dotless is not None and dotless.found(Folded("\u0131f so"))


def test_every_match_of_every_rule_is_found_by_its_triggers() -> None:
    checked = 0
    for session in fixture_sessions():
        for u in session:
            for statement in split(u.text):
                folded = Folded(statement.text)
                for rule in RULES:
                    if rule.pattern.search(statement.text):
                        checked += 1
                        assert rule.may_fire(folded), (rule.name, statement.text)
    assert checked > 50


def test_a_long_run_without_spaces_is_always_split() -> None:
    cut = "a " * 240 + "never" + "z" * 260
    assert possible(cut, "human")  # summarize may cut it to "... never…": a word the text does not hold
    assert not possible("a plain report of the numbers", "human")
    assert possible("anything at all", "summary")


def test_prefiltered_drafts_are_the_full_paths_on_fixtures() -> None:
    for session in fixture_sessions():
        assert shape(select(session)) == shape(select(session, rules=FULL))


def test_prefiltered_drafts_are_the_full_paths_on_real_sessions() -> None:
    root = shared_path("real-sessions")
    files = [p for p in sorted(root.rglob("*.jsonl")) if "subagents" not in p.parts]
    assert files
    for path in files:
        session = read(path, CodexSource() if "codex" in path.parts else ClaudeCodeSource())
        assert shape(select(session)) == shape(select(session, rules=FULL)), path.name
