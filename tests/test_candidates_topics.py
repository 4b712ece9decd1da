"""Proposed topics: readable slugs of whole words, one topic per statement (issue 13 "Topics that fit")."""

from __future__ import annotations

from mmd.candidates import candidates_from
from mmd.candidates.topics import TOPIC_SLUG_MAX, topic_slug
from mmd.sources import Position, Utterance


def said(text: str, seq: int) -> Utterance:
    return Utterance("human", text, "test", "s-1", None, None,  # type: ignore[arg-type]
                     Position("/logs/a.jsonl", seq=seq, uuid=f"m{seq}"))


def test_contractions_fold_into_their_word_and_filler_and_fragments_are_left_out() -> None:
    cases = {
        "don't use playwright browse for this, it's slow": "use-playwright-browse-slow",
        "'s standalone script, don't add dependencies": "standalone-script-add-dependencies",
        "you're right, OMOP CDM age is computed at visit": "omop-cdm-age-computed-visit",
        "I'd like to render those checklists": "render-checklists",
        "Also ask why it didn't work, because the build failed": "work-build-failed",
        "Please do not browse the web with playwright; use fetch": "browse-web-playwright-use-fetch",
        "I want the logs kept, we need them for audits": "logs-kept-audits",
    }
    for text, slug in cases.items():
        got = topic_slug(text)
        assert got == slug, (text, got)
        assert len(got) <= TOPIC_SLUG_MAX and not any(len(w) == 1 for w in got.split("-"))


def test_a_taken_topic_is_not_proposed_again_for_another_statement() -> None:
    first = topic_slug("styles.css hover darkening on nav links stays")
    second = topic_slug("styles.css hover darkening on nav links breaks", taken={first})
    assert first == "styles-css-hover-darkening-nav" and second != first and len(second) <= TOPIC_SLUG_MAX
    assert all(w in "styles css hover darkening on nav links breaks".split() for w in second.split("-"))


def test_two_statements_of_one_batch_never_share_a_proposed_topic() -> None:
    got = candidates_from([said("REMEMBER: styles.css hover darkening on nav links stays", 1),
                           said("REMEMBER: styles.css hover darkening on nav links breaks", 2)], write_budget=4000)
    assert len(got) == 2 and len({c.topic for c in got}) == 2
