"""The review queue on all 51 labelled sessions, cross-validated by repository: the estimate for unseen sessions.

The 51: the 18 of ``../shared/real-sessions`` and the 33 of ``bench/extra_sessions.json`` (laid out under the ROOT
``bench/queue_quality.py --extra ROOT`` is given). Each session belongs to the public repository it comes from
(:func:`repository`); the held-back sets this estimate stands in for come from sessions, and for the newer one
repositories, that none of ours use, so a fold holds out one *repository* whole, never one file of it.

- ``cv phrases``: each session is read without the rule phrases whose gold support (sessions where a draft of its
  rule with the phrase in its body matches a gold item) lies in its own repository alone: phrases written from it.
- ``cv params+phrases`` (``--cv``): for each repository, :class:`mmd.candidates.score.Tuning` (who-factors, the
  noise factor, the visible budget, the score floor …) is picked on the other repositories — objective: the best
  precision at recall ≥ :data:`RECALL_FLOOR`, else the best recall — and scores the one held out, its sessions
  read without their repository's own phrases; the held-out counts summed are the estimate.
- ``cv weights+phrases`` (``--cv-weights``): the same over each rule's weight (:func:`cv_weights`), which the
  phrases' cross-validation cannot hold out: a weight whose folds' picks leave the held-out figures where the
  defaults put them was fitted to one repository.

Each estimate is printed for the 18 (set ``first``), the 33 and all 51: a change is kept when it raises the cv
phrases estimate on the 18 and the 33, or on one without lowering the other (``docs/candidates.md``).

What none holds out — which noise cues exist and how they are worded, the rule order, the rules' weights as they
stand (``cv weights`` measures tuning them further, not the tuning they had) — was also written reading sessions of
these repositories: read the estimate as an upper bound, and the held-back sets' figures as the judge. Run through
``bench/queue_quality.py --extra ROOT [--cv] [--repos] [--cv-weights]``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mmd.candidates.score import DEFAULT_TUNING, Draft, Tuning, budget, select, shown
from mmd.candidates.signals import RULES, Rule, fire, phrases, quiet, without
from mmd.candidates.statements import looks_pasted, split
from mmd.sources.base import Utterance

__all__ = ["RECALL_FLOOR", "WEIGHT_FACTORS", "Session", "cv_weights", "labelled", "misses", "report", "repository"]

RECALL_FLOOR = 0.35
"""The recall a tuning must reach on the training repositories before its precision counts: above the held-back
sets' floor (0.30), as precision matters more there (issue 28: the rules' drafts become the agent's fallback)."""
FLOOR = (0.45, 0.40)
"""Issue 30: cross-validated precision ≥ 0.45 at recall ≥ 0.40 on the 51 sessions."""
_REPOSITORIES = (  # a path part of the 18 → the public repository the README of real-sessions names for it
    ("charming", "tonyandrewmeyer/charming-with-claude"), ("operator-analysis", "tonyandrewmeyer/charming-with-claude"),
    ("entire-devenv-cli", "entireio/cli"), ("workspace-cli", "entireio/cli"),
    ("medgemma", "ElixirTrials/medgemma-hackathon"), ("chkit", "obsessiondb/chkit"),
    ("Workspace-chx", "obsessiondb/chkit"),
    ("tmp-claude-code-sessions", "moredip/session-share"), ("2026-02-13", "jerometremblay/codex_log_viewer"),
    ("2025-09-09", "dschwen/codex_log_viewer"))


def repository(name: str) -> str:
    """The public repository a session file of ``../shared/real-sessions`` comes from (its README's list), else its
    project folder (the older sessions, one repository each)."""
    for part, repo in _REPOSITORIES:
        if part in name:
            return repo
    parts = Path(name).parts
    return parts[2] if len(parts) > 2 and parts[0] == "claude" else parts[-1]


@dataclass
class Session:
    """One labelled session: its name, utterances, gold quotes, repository and set (``first`` = the 18)."""

    name: str
    utterances: list[Utterance]
    quotes: list[str]
    repo: str
    set: str
    matched: dict[int, frozenset[int]] = field(default_factory=dict)
    """Per draft (``id``) the gold quotes it matches, filled as drafts are scored."""


def labelled(root: Path, extra_root: Path, read: Any, files: Any) -> list[Session]:
    """The 51 sessions: ``root``'s (``gold.json``) then :data:`EXTRA`'s under ``extra_root``; ``read`` and ``files``
    are ``bench/queue_quality.py``'s :func:`read_session` and :func:`_files`."""
    gold = json.loads((root / "gold.json").read_text(encoding="utf-8"))
    out = [Session(name, read(root / name), [g["quote"] for g in gold if g["file"] == name], repository(name), "first")
           for name in files(root, gold)]
    doc = json.loads((Path(__file__).resolve().parent / "extra_sessions.json").read_text(encoding="utf-8"))
    out += [Session(s["layout"], read(extra_root / s["layout"]), [g["quote"] for g in doc["gold"]
                                                                   if g["file"] == s["layout"]], s["repo"], s["set"])
            for s in doc["sources"]]
    return out


def _matches(session: Session, drafts: Sequence[Draft], match: Any) -> list[frozenset[int]]:
    """Per draft the indices of the gold quotes it matches (cached by the draft's text)."""
    out = []
    for d in drafts:
        text = d.summary + "\n" + d.body
        key = hash(text)
        if key not in session.matched:
            session.matched[key] = frozenset(i for i, q in enumerate(session.quotes) if match(q, text))
        out.append(session.matched[key])
    return out


def _count(session: Session, drafts: Sequence[Draft], match: Any) -> tuple[int, int, int, int]:
    """(shown, good, gold, found) of the visible ``drafts`` of one session."""
    hits = _matches(session, drafts, match)
    return len(drafts), sum(1 for h in hits if h), len(session.quotes), len(frozenset().union(*hits)) if hits else 0


def _figures(rows: Sequence[tuple[int, int, int, int]]) -> tuple[float, float, float]:
    shown_, good, gold, found = (sum(r[i] for r in rows) for i in range(4))
    return good / max(1, shown_), found / max(1, gold), shown_ / max(1, len(rows))


def _objective(rows: Sequence[tuple[int, int, int, int]]) -> tuple[bool, float, float]:
    p, r, _ = _figures(rows)
    return (r >= RECALL_FLOOR, p if r >= RECALL_FLOOR else r, r)


def _support(sessions: Sequence[Session], match: Any) -> dict[tuple[str, int], set[str]]:
    """Per rule phrase, the repositories where a draft of its rule with the phrase in its body matches gold."""
    by_name = {rule.name: rule for rule in RULES}
    support: dict[tuple[str, int], set[str]] = {(r.name, i): set() for r in RULES for i in range(len(phrases(r)))}
    for s in sessions:
        drafts = select(s.utterances, per_session=1 << 30)
        for draft, hit in zip(drafts, _matches(s, drafts, match), strict=True):
            if hit:
                rule = by_name[draft.rule]
                for i, phrase in enumerate(phrases(rule)):
                    if re.search(phrase, draft.body, rule.pattern.flags):
                        support[(rule.name, i)].add(s.repo)
    return support


def _own(sessions: Sequence[Session], match: Any) -> dict[str, Sequence[Rule]]:
    """Per repository, the rules without the phrases whose gold support lies in that repository alone."""
    support = _support(sessions, match)
    return {repo: without(RULES, {key for key, repos in support.items() if repos and not repos - {repo}})
            for repo in {s.repo for s in sessions}}


def _print(label: str, rows: Sequence[tuple[int, int, int, int]], floor: tuple[float, float] | None = FLOOR) -> None:
    p, r, per = _figures(rows)
    beside = f"  (target precision {floor[0]:.2f} at recall {floor[1]:.2f})" if floor else ""
    print(f"{label:30} sessions {len(rows):2}  precision {p:.3f}  recall {r:.3f}  candidates/session {per:.1f}{beside}")


GRID_SCORING: dict[str, tuple[float, ...]] = {"assistant": (0.55, 0.7, 0.85), "same_turn": (0.6, 0.8),
                                              "noise": (1.0, 0.8, 0.65, 0.5)}
"""Parameters that change the ranking: select() runs once a combination."""
GRID_SHOWING: dict[str, tuple[float, ...]] = {"min_score": (0.4, 0.5, 0.6), "budget_base": (1.0, 1.5, 2.0),
                                              "budget_slope": (0.5, 0.75, 1.0), "budget_max": (4, 6, 8),
                                              "sure": (math.inf, 0.9, 0.8)}
"""Parameters that only cut the ranking."""


def _grid(grid: dict[str, tuple[float, ...]]) -> list[dict[str, float]]:
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


def _split(label: str, sessions: Sequence[Session], rows: Sequence[tuple[int, int, int, int]]) -> None:
    """``rows`` (one a session) printed for the 18 (set ``first``), the 33 (the others) and all 51."""
    _print(f"{label}, the 18", [r for s, r in zip(sessions, rows, strict=True) if s.set == "first"], None)
    _print(f"{label}, the 33", [r for s, r in zip(sessions, rows, strict=True) if s.set != "first"], None)
    _print(f"{label}, all", rows)


def report(sessions: list[Session], match: Any, *, params: bool, repos: bool = False, weights: bool = False) -> None:
    """Print the 51 sessions' figures with the defaults, per set, the cv phrases estimate on the 18, the 33 and all
    51 (a change is kept when it raises one without lowering the other: ``docs/candidates.md``), with ``repos`` the
    cv phrases figures of each repository, with ``params`` the cv params+phrases estimate with the tunings picked,
    with ``weights`` the cv weights+phrases estimate (:func:`cv_weights`)."""
    rows = {s.name: _count(s, [d for d in select(s.utterances) if d.visible], match) for s in sessions}
    for name in ("first", "second", "third"):
        _print(f"51: set {name}", [rows[s.name] for s in sessions if s.set == name], None)
    _print("51: all, defaults (in-sample)", list(rows.values()))
    own = _own(sessions, match)
    held = [_count(s, [d for d in select(s.utterances, rules=own[s.repo]) if d.visible], match) for s in sessions]
    _split("51: cv phrases (by repository)", sessions, held)
    if repos:
        for repo in sorted({s.repo for s in sessions}):
            _print(f"  {repo[-28:]}", [r for s, r in zip(sessions, held, strict=True) if s.repo == repo], None)
    if params:
        _params(sessions, match, own)
    if weights:
        cv_weights(sessions, match, own, held)


WEIGHT_FACTORS = (1.0, 0.6, 0.8, 1.25, 1.5)
"""What :func:`cv_weights` multiplies one rule's weight by (the default first: a tie keeps it)."""


def _reweighed(rules: Sequence[Rule], factors: dict[str, float]) -> tuple[Rule, ...]:
    return tuple(replace(r, weight=r.weight * factors[r.name]) if r.name in factors else r for r in rules)


def _pick(table: dict[tuple[str, float], list[tuple[int, int, int, int]]], name: str, inside: Sequence[int]) -> float:
    """The factor of :data:`WEIGHT_FACTORS` whose rows of the sessions ``inside`` score best (``--cv``'s objective)."""
    return max(WEIGHT_FACTORS, key=lambda f: _objective([table[(name, f)][i] for i in inside]))


def cv_weights(sessions: list[Session], match: Any, own: dict[str, Sequence[Rule]],
               defaults: Sequence[tuple[int, int, int, int]]) -> None:
    """Leave one repository out over the rules' weights, which ``cv phrases`` cannot hold out: for each repository,
    each rule's weight is picked among :data:`WEIGHT_FACTORS` × its own on the other repositories (one rule at a
    time, the others at theirs; objective as ``--cv``'s) and the held-out repository is scored with every pick at
    once, its sessions read without their repository's own phrases. A weight whose in-sample best differs from the
    default but whose picks leave the estimate where the defaults put it (``defaults``: the cv phrases rows) helped
    one repository: fitting. Prints the estimate, then per rule its in-sample best factor, the folds' picks and the
    estimate when only that rule's weight is picked (the others at theirs)."""
    names = [r.name for r in RULES]
    table: dict[tuple[str, float], list[tuple[int, int, int, int]]] = {}
    for name in names:
        table[(name, 1.0)] = list(defaults)
        for factor in WEIGHT_FACTORS[1:]:
            table[(name, factor)] = [
                _count(s, [d for d in select(s.utterances, rules=_reweighed(own[s.repo], {name: factor})) if d.visible],
                       match) for s in sessions]
    held: dict[int, tuple[int, int, int, int]] = {}
    alone: dict[str, dict[int, tuple[int, int, int, int]]] = {name: {} for name in names}
    picks: dict[str, Counter[float]] = {name: Counter() for name in names}
    for repo in sorted({s.repo for s in sessions}):
        inside = [i for i, s in enumerate(sessions) if s.repo != repo]
        chosen = {name: _pick(table, name, inside) for name in names}
        for name, factor in chosen.items():
            picks[name][factor] += 1
            alone[name].update({i: table[(name, factor)][i] for i, s in enumerate(sessions) if s.repo == repo})
        factors = {name: factor for name, factor in chosen.items() if factor != 1.0}
        for i, s in enumerate(sessions):
            if s.repo == repo:
                rules = _reweighed(own[s.repo], factors)
                held[i] = _count(s, [d for d in select(s.utterances, rules=rules) if d.visible], match)
    _split("51: cv weights+phrases", sessions, [held[i] for i in range(len(sessions))])
    for name in names:
        best = _pick(table, name, range(len(sessions)))
        folds = ", ".join(f"×{f:g} in {n}" for f, n in sorted(picks[name].items()))
        p, r, _ = _figures([alone[name][i] for i in range(len(sessions))])
        print(f"  {name:24} in-sample best ×{best:g}; picked {folds}; this one alone picked: {p:.3f} / {r:.3f}")


def _params(sessions: list[Session], match: Any, own: dict[str, Sequence[Rule]]) -> None:
    """Leave one repository out over :class:`Tuning` (and the phrases, as :func:`report`)."""
    table: dict[Tuning, list[tuple[int, int, int, int]]] = {}
    for scoring in _grid(GRID_SCORING):
        loose = Tuning(**scoring, min_score=-1e9)  # type: ignore[arg-type]
        ranked = [select(s.utterances, per_session=1 << 30, tuning=loose, rules=own[s.repo]) for s in sessions]
        for showing in _grid(GRID_SHOWING):
            tuning = Tuning(**scoring, **showing)  # type: ignore[arg-type]
            table[tuning] = [_count(s, shown(r, budget(s.utterances, tuning, r), tuning), match)
                             for s, r in zip(sessions, ranked, strict=True)]
    repos = sorted({s.repo for s in sessions})
    held: list[tuple[int, int, int, int]] = []
    picked: Counter[Tuning] = Counter()
    for repo in repos:
        inside = [i for i, s in enumerate(sessions) if s.repo != repo]
        best = max(table, key=lambda t: _objective([table[t][i] for i in inside]))
        picked[best] += 1
        held += [table[best][i] for i, s in enumerate(sessions) if s.repo == repo]
    if DEFAULT_TUNING in table:
        _print("51: defaults+phrases", table[DEFAULT_TUNING])
    _print("51: cv params+phrases", held)
    for tuning, count in picked.most_common(4):
        print(f"  picked for {count:2} of {len(repos)} repositories: {tuning}")


# --- the error analysis (``--misses``) --------------------------------------------------------------


def _why_missed(s: Session, quote: str, ranked: Sequence[Draft], rules: Sequence[Rule], match: Any,
                overlap: Any) -> str:
    """Why one gold quote of ``s`` is not matched by a visible draft of ``ranked`` (the session's drafts)."""
    texts = [d.summary + "\n" + d.body for d in ranked]
    hidden = next((d for d, t in zip(ranked, texts, strict=True) if match(quote, t)), None)
    if hidden is not None:
        return "drafted, below the floor" if hidden.score < DEFAULT_TUNING.min_score else "drafted, beyond the budget"
    said = [u for u in s.utterances if overlap(quote, u.text) >= 0.7]
    if not said:
        return "its quote is not in the log as read"
    utterance = max(said, key=lambda u: overlap(quote, u.text))
    if any(utterance in d.evidence and overlap(quote, t) >= 0.3 for d, t in zip(ranked, texts, strict=True)):
        return f"drafted ({utterance.who}), the body misses it"
    if utterance.who == "human" and looks_pasted(utterance.text):
        return "not drafted (human): a pasted prompt"
    nearest = max(split(utterance.text), key=lambda st: overlap(quote, st.text), default=None)
    if nearest is None or utterance.who not in ("human", "assistant", "summary"):
        return f"not drafted ({utterance.who}): no statement"
    if quiet(nearest, utterance.who):
        return f"not drafted ({utterance.who}): a quiet statement"
    if fire(nearest, utterance.who, rules) is None:
        return f"not drafted ({utterance.who}): no rule fires"
    return f"not drafted ({utterance.who}): its rule's draft went to another statement"


def misses(sessions: list[Session], match: Any, overlap: Any) -> None:
    """Print the error analysis of the cv phrases estimate (each session read without its repository's own phrases):
    the gold items by why they were missed, and the visible false positives by speaker and rule, and by noise cue,
    each counted on the 18 (set ``first``) and the 33. ``overlap(quote, text)`` is the share of the quote's words in
    the text (``bench/queue_quality.py``)."""
    own = _own(sessions, match)
    why: Counter[tuple[str, bool]] = Counter()
    wrong: Counter[tuple[str, bool]] = Counter()
    cue: Counter[tuple[str, bool]] = Counter()
    for s in sessions:
        first = s.set == "first"
        ranked = select(s.utterances, rules=own[s.repo])
        visible = [d for d in ranked if d.visible]
        for d, hit in zip(visible, _matches(s, visible, match), strict=True):
            if not hit:
                wrong[(f"{d.evidence[0].who} {d.rule}", first)] += 1
                for c in d.noise or ("(no cue)",):
                    cue[(c, first)] += 1
        for quote in s.quotes:
            seen = any(match(quote, d.summary + "\n" + d.body) for d in visible)
            why[("visible" if seen else _why_missed(s, quote, ranked, own[s.repo], match, overlap), first)] += 1
    for title, table in (("gold items", why), ("visible false positives", wrong), ("false positives' cues", cue)):
        print(f"51, cv phrases: {title}{'':>{50 - len(title)}} the 18  the 33")
        for key in sorted({k for k, _ in table}, key=lambda k: -(table[(k, True)] + table[(k, False)])):
            print(f"  {key:64} {table[(key, True)]:5} {table[(key, False)]:6}")
