"""Issue 13's candidate identity, topics and marks, pure: normalized keys, near-duplicates, whole-word slugs,
append proposals, notes that already hold a statement, marks made on purpose, and a session's visible budget."""

from __future__ import annotations

from mmd.candidates import Seen, candidates_from
from mmd.candidates.identity import near_duplicate, norm_key, normalized, shingles
from mmd.candidates.topics import TOPIC_SLUG_MAX, NoteSubject, proposal, topic_slug
from mmd.daemon.ingest.candidacy import Candidacy
from mmd.sources import Position, Utterance


def said(who: str, text: str, n: int, session: str = "s-1") -> Utterance:
    return Utterance(who, text, "test", session, "/home/t/p", "2026-11-30T00:00:00.000Z",  # type: ignore[arg-type]
                     Position("/logs/a.jsonl", line=n, uuid=f"u{n}"))


def test_the_key_folds_width_case_punctuation_and_space_and_nothing_else() -> None:
    assert normalized("Don’t  USE\tpip!!") == normalized("don't use PIP") == "don t use pip"
    assert norm_key("ＡＢＣ：用 pip") == norm_key("abc 用 pip") != norm_key("abc 用 uv")
    assert normalized("Straße") == "strasse"


def test_near_duplicates_are_word_or_cjk_bigram_jaccard_at_least_0_8() -> None:
    a = shingles("staging deploys always need the corporate VPN connection first")
    assert near_duplicate(a, shingles("Staging deploys always need the corporate VPN connection first, ok"))  # 9/10
    assert not near_duplicate(a, shingles("staging deploys need the VPN"))
    assert shingles("以后不要用 pip") == {"以后", "后不", "不要", "要用", "pip"}
    assert near_duplicate(shingles("以后提交信息一律用英文写"), shingles("以后提交信息一律用英文写。"))
    assert not near_duplicate(frozenset(), frozenset())


def test_a_proposed_topic_is_whole_words_within_40_characters() -> None:
    slug = topic_slug("Always run the integration tests with `make check-all`, never bare pytest, on staging")
    assert slug == "always-run-integration-tests-make" and len(slug) <= TOPIC_SLUG_MAX  # five words at most
    long = topic_slug("supercalifragilisticexpialidocious-and-then-some-more-words-here " * 3)
    assert len(long) <= TOPIC_SLUG_MAX and all(w in "supercalifragilisticexpialidocious and then some more words here"
                                               for w in long.split("-"))
    assert topic_slug("以后回复请用中文").startswith("memo-") and len(topic_slug("以后回复请用中文")) == 13


def test_a_note_on_the_same_subject_is_proposed_for_an_append() -> None:
    notes = [NoteSubject.of("deploy", ["staging", "vpn"], "Staging deploys go through the bastion host."),
             NoteSubject.of("billing", ["stripe"], "Invoices go out monthly.")]
    assert proposal("Staging deploys need the VPN first", notes) == {"action": "append", "topic": "deploy"}
    assert proposal("The cafeteria opens at nine", notes) == {"action": "create", "topic": "cafeteria"}
    assert proposal("x", [], fallback="conventions") == {"action": "create", "topic": "conventions"}


def test_marks_are_pinned_headings_never_count_and_a_note_already_holding_it_drops_it() -> None:
    seen = Seen.of_index([("deploy", ("ops",), "how we deploy", "Deploy with make ship.\nThe VPN is required.")])
    got = candidates_from([
        said("human", "mm: the VPN is required!\nmm: invoices go out monthly.", 1),
        said("assistant", "## Plan\n\n### 1. Schema\n\nremember: the staging DB is read-only.", 2),
        said("human", "mm://local/conventions Commit messages are in English.", 3)], write_budget=4000, seen=seen)
    assert [(c.body, c.rule, c.pinned, c.visible, c.topic) for c in got] == [
        ("invoices go out monthly.", "mm.explicit", True, True, "invoices"),
        # the agent's own mark is its proposal (issue 28); staging: the deploy note
        ("the staging DB is read-only.", "agent.propose", True, True, "deploy"),
        ("Commit messages are in English.", "mm.uri", True, True, "conventions")]
    (first,) = [c for c in got if c.body.startswith("invoices")]
    assert [e.to_json() for e in first.evidence] == [{
        "agent": "test", "sessionId": "s-1", "project": "/home/t/p", "file": "/logs/a.jsonl",
        "position": {"file": "/logs/a.jsonl", "line": 1, "uuid": "u1"}, "at": "2026-11-30T00:00:00.000Z",
        "who": "human", "quote": "invoices go out monthly."}]


def test_per_session_caps_what_is_visible_never_what_is_marked() -> None:
    prompts = [said("human", text, n) for n, text in enumerate([
        "Always run the tests with make test-fast, never bare pytest.",
        "From now on, use ruff instead of flake8 for linting.",
        "We use Postgres 16 in every environment, never SQLite.",
        "MEMO: the release train leaves on Tuesdays.",
        "Never push to main directly; always open a pull request."])]
    capped = Candidacy(lambda: 1, lambda: None).run(prompts, write_budget=4000)
    assert [c.body for c in capped if c.visible and not c.pinned] and len(
        [c for c in capped if c.visible and not c.pinned]) <= 1
    assert [c.body for c in capped if c.pinned] == ["the release train leaves on Tuesdays."]
    assert len(capped) > 2  # the rest are kept, hidden
    # a second slice of the same session re-ranks with the whole session in view and adds no repeat
    again = Candidacy(lambda: 1, lambda: None)
    first = again.run(prompts[:3], write_budget=4000)
    second = again.run(prompts[3:] + prompts[:1], write_budget=4000)
    assert {c.body for c in first} <= {c.body for c in capped} and {c.body for c in second} <= {c.body for c in capped}
