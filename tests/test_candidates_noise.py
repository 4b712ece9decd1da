"""Noise cues (issue 30 "Fewer, better rule drafts"): each cue names the shape it is for and no other, a
statement worded as a standing rule is never a task instruction or bug status, and each cue lowers a draft by
Tuning.noise (1.0: no effect)."""

from __future__ import annotations

import pytest

from mmd.candidates.noise import CUES, LONG_REPLY, cues
from mmd.candidates.score import Tuning, select
from mmd.candidates.statements import split
from mmd.sources import Position, Utterance


def _cues(text: str, who: str = "human") -> tuple[str, ...]:
    statements = split(text)
    return cues(statements[-1], who, len(statements))


LONG = "\n".join(f"Sentence {i} of the report says little." for i in range(LONG_REPLY)) + \
    "\n\n- the parser keeps its cache per file"

CASES = [  # (cue, said by, a text showing it, a text of the same kind that does not)
    ("list-in-long-reply", "assistant", LONG, "Two notes.\n\n- the parser keeps its cache per file"),
    ("bullet-under-heading", "assistant", "## Changes\n- the parser keeps its cache per file",
     "- the parser keeps its cache per file"),
    ("digit-heavy", "assistant", "Run 4812 took 93.4 s, 17 of 220 cases failed at 03:14",
     "The parser keeps its cache."),
    ("question", "human", "can we rename the clean files to cleanup too", "we renamed the clean files to cleanup"),
    ("question", "assistant", "Should the parser keep its cache per file?", "The parser keeps its cache per file."),
    ("next-step", "assistant", "Now updating the test expectations for the parser", "The parser keeps its cache."),
    ("next-step", "assistant", "I'm adding chart styles now so it appears as a top panel",
     "The chart styles live in the top panel's stylesheet."),
    ("task-instruction", "human", "ok lets get a pr up for this", "we keep one pr per change in this repository"),
    ("task-instruction", "human", "make it so i can drag and drop the pieces", "the pieces can be dragged and dropped"),
    ("task-instruction", "human", "Now, make it so that during drag and drop the piece itself follows the movement of "
                                  "the mouse and not just an icon of it", "the piece follows the mouse when dragged"),
    ("bug-status", "human", "the filter buttons at the top don't work", "the filter buttons sit at the top"),
    ("bug-status", "human", "no, i'm still seeing this happen", "this happens when the cache is cold"),
    ("narration", "assistant", "Reduced the search input's right padding from pr-24 to pr-16",
     "The search input's right padding is pr-16."),
    ("narration", "assistant", "I've updated the parser so it keeps its cache", "The parser keeps its cache per file."),
    ("fragment", "assistant", "The existing `.venv` breaks the build.",
     "The existing `.venv` was made by an older Python, so every build that reuses it fails to import the compiled "
     "parser module."),
    ("fragment", "summary", "## Errors and fixes\n- Using `with` instead of `case`",
     "## Errors and fixes\n- The exporter crashed on an empty cart: `Sum()` returns None on an empty queryset, so "
     "the totals are wrapped in `Coalesce` now"),
    ("in-progress", "assistant", "Six of the parser tests are timing out on the build machine at the default limit.",
     "Six of the parser tests time out on the build machine at the default limit."),
    ("in-progress", "assistant", "I'm cleaning that generated artifact out of the change set before the commit.",
     "The generated artifact is left out of the change set before the commit."),
]


@pytest.mark.parametrize(("cue", "who", "shows", "does_not"), CASES)
def test_each_cue_fires_on_its_shape_and_not_on_a_plain_statement(cue: str, who: str, shows: str,
                                                                  does_not: str) -> None:
    assert cue in _cues(shows, who), (shows, _cues(shows, who))
    assert cue not in _cues(does_not, who), (does_not, _cues(does_not, who))


def test_every_cue_has_a_case() -> None:
    assert {c for c, *_ in CASES} == set(CUES)


def test_a_standing_rule_is_never_a_task_instruction_or_bug_status() -> None:
    assert _cues("make sure you never push to main directly") == ()
    assert _cues("don't use playwright to browse the web, it doesn't work here") == ()
    assert "bug-status" not in _cues("if it works better the first document can be a folder")


def test_the_persons_short_rule_and_a_labelled_lesson_are_no_fragments() -> None:
    assert "fragment" not in _cues("don't use playwright here", "human")
    assert "fragment" not in _cues("Pitfall I hit: `Sum()` returns None on an empty queryset.", "assistant")
    assert "fragment" in _cues("`Sum()` returns None on an empty queryset.", "assistant")


def test_the_body_a_candidate_writes_decides_whether_it_is_a_fragment() -> None:
    (statement,) = split("The `Sum()` aggregate returns None here.")
    leaning = ("The `Sum()` aggregate returns None here. That is why every total on the page is wrapped in "
               "`Coalesce` and defaults to zero.")
    assert "fragment" in cues(statement, "assistant", 1)
    assert "fragment" not in cues(statement, "assistant", 1, leaning)


def test_a_noun_in_ing_is_not_something_in_progress() -> None:
    for text in ("The default value is nothing, and the locale is missing from the export file.",
                 "The flag is a string of letters that is read once at start-up by the parser module."):
        assert "in-progress" not in _cues(text, "assistant"), text
    assert "in-progress" not in _cues("we are now adding the cache to the parser, it keeps things fast", "human")
    # a choice the agent is making, with its purpose: the assistant-purpose rule's shape
    assert "in-progress" not in _cues("I'm pinning `TZ=UTC` on every call so the tests give the same result.",
                                      "assistant")


def test_the_agent_noticing_something_now_is_a_finding_not_its_next_step() -> None:
    # "Now I notice …" is not progress for the quiet rule (signals._PROGRESS), nor a next step for the cue
    finding = ("Now I notice the `centre` value in the stylesheet won't work, as every CSS property and value is "
               "spelled in US English.")
    for opening in ("Now I notice", "Now, I see", "Now I realize"):
        text = finding.replace("Now I notice", opening)
        assert "next-step" not in _cues(text, "assistant"), text
    assert "next-step" in _cues("Now fixing the `centre` value so the stylesheet spells it in US English.", "assistant")
    (draft,) = select([Utterance("assistant", finding, "test", "s", None, None, Position("/l", seq=1))])
    assert draft.visible and draft.noise == ()


def test_a_cue_lowers_the_draft_by_the_noise_factor_and_one_factor_changes_nothing() -> None:
    def draft(text: str, noise: float) -> float:
        return select([Utterance("human", text, "test", "s", None, None, Position("/l", seq=1))],
                      tuning=Tuning(noise=noise))[0].score

    plain = "we should keep one pull request per change in this repository"
    asked = "can we keep one pull request per change in this repository"
    assert draft(plain, 1.0) == draft(plain, 0.5)  # no cue: the factor does nothing
    assert draft(asked, 0.5) == pytest.approx(draft(asked, 1.0) * 0.5)
