"""The mm v1 marker rules (mm v1 §9) as named, weighted rules, each with its cheap prefilter.

Owns: :class:`Rule` and :data:`MM_V1`, the four reference rules (``uri``,
``explicit``, ``summary``, ``heading``); :func:`may_hold_candidates`, the
union of their prefilters in one pass; :func:`apply`, the family run once.
The reference's rules interact (a heading section takes the marker lines
under it; a topic is taken once across kinds; results are ordered by kind),
so the family runs :func:`mmd.core.digest.distill` once and each rule claims
its kind; a rule's own :attr:`Rule.match` gives the same candidates of its
kind for a caller that wants one rule. The marker words are
:data:`mmd.core.digest.EXPLICIT_MARKERS` / :data:`~mmd.core.digest.SUMMARY_MARKERS`,
written there once.

Never: changes what the reference finds (the conformance vectors pin
:mod:`mmd.core.digest`); the prefilters are supersets, never stricter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mmd.core.digest import EXPLICIT_MARKERS, SUMMARY_MARKERS, distill
from mmd.core.lazyre import lazy_compile

__all__ = ["MM_V1", "Found", "Rule", "apply", "may_hold_candidates"]

Found = dict[str, Any]
"""One candidate as :func:`mmd.core.digest.distill` returns it: ``{topic, kind, summary, body, chars, budget,
overBudget}`` (``chars`` and ``budget`` in code points)."""


@dataclass(frozen=True)
class Rule:
    """One candidate rule.

    Attributes:
        name: ``<family>.<kind>``, e.g. ``mm.explicit``.
        kind: the candidate ``kind`` it yields.
        weight: how much a candidate of this rule is worth, 0..1 (the reference's kind order:
            ``uri`` > ``explicit`` > ``summary`` > ``heading``); for ranking, never for identity.
        prefilter: ``text -> bool``, a cheap test that is True whenever :attr:`match` could find something.
        match: ``(text, write budget in code points) -> candidates of this kind``.
    """

    name: str
    kind: str
    weight: float
    prefilter: Callable[[str], bool]
    match: Callable[[str, int], list[Found]]


_COLON = lazy_compile("[:\uff1a]")


def _marker_test(words: tuple[str, ...]) -> Callable[[str], bool]:
    """A test for one of ``words`` right before a colon; the few characters before each colon are casefolded,
    which also folds ``ſ`` to ``s`` as JavaScript's ``/iu`` does, so it never misses what the digest finds."""
    folded = tuple(w.casefold() for w in words)
    window = max(len(w) for w in folded)

    def test(text: str) -> bool:
        for m in _COLON.finditer(text):
            if text[max(0, m.start() - window):m.start()].casefold().endswith(folded):
                return True
        return False

    return test


def _of_kind(kind: str) -> Callable[[str, int], list[Found]]:
    def match(text: str, budget: int) -> list[Found]:
        return [c for c in distill(text, default_write_budget=budget)["candidates"] if c["kind"] == kind]

    return match


MM_V1: tuple[Rule, ...] = (
    Rule("mm.uri", "uri", 1.0, lambda text: "mm:" in text, _of_kind("uri")),
    Rule("mm.explicit", "explicit", 0.9, _marker_test(EXPLICIT_MARKERS), _of_kind("explicit")),
    Rule("mm.summary", "summary", 0.6, _marker_test(SUMMARY_MARKERS), _of_kind("summary")),
    Rule("mm.heading", "heading", 0.4, lambda text: "##" in text, _of_kind("heading")),
)
"""The mm v1 rules, in the reference's kind order."""

_ANY_MARKER = _marker_test(EXPLICIT_MARKERS + SUMMARY_MARKERS)


def may_hold_candidates(text: str) -> bool:
    """Whether any :data:`MM_V1` rule could find a candidate in ``text``: the union of their prefilters, one pass.

    A candidate needs ``mm:``, a ``##`` heading, or a marker right before ``:`` / ``：``.
    """
    return "##" in text or "mm:" in text or _ANY_MARKER(text)


def apply(text: str, budget: int) -> list[Found]:
    """Every :data:`MM_V1` candidate of ``text`` (one :func:`~mmd.core.digest.distill` run; kind order, at most 50).

    Args:
        text: model-visible text.
        budget: the default write budget, code points; bodies are cut to it.
    """
    return list(distill(text, default_write_budget=budget)["candidates"])
