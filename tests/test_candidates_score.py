"""Score, cap, hide: select() over small sessions of our own."""

from __future__ import annotations

from mmd.candidates.score import DEFAULT_TUNING, MIN_SCORE, Draft, Tuning, budget, select
from mmd.candidates.signals import RULES, without
from mmd.sources.base import Position, Utterance


def say(who: str, text: str, line: int, session: str = "s1") -> Utterance:
    return Utterance(who, text, "claude-code", session, "/work/app", f"2026-11-30T20:{line:02d}:00.000Z",  # type: ignore[arg-type]
                     Position(f"/logs/{session}.jsonl", line))


def test_a_standing_rule_becomes_a_visible_draft_with_its_evidence() -> None:
    rule = say("human", "never push directly to the main branch, we review everything first", 1)
    drafts = select([rule, say("assistant", "Understood, I will open pull requests.", 2)])
    assert [d.rule for d in drafts] == ["human-standing-rule"]
    (draft,) = drafts
    assert draft.visible and draft.kind == "rule" and draft.evidence == [rule] and draft.seen == 1
    assert draft.summary == "never push directly to the main branch, we review everything first"
    assert draft.score >= MIN_SCORE


def test_the_humans_words_outrank_the_assistants() -> None:
    drafts = select([
        say("assistant", "The build never finishes because the cache lock is not released.", 1),
        say("human", "never run the integration tests without the local database up", 2),
    ])
    assert [d.evidence[0].who for d in drafts] == ["human", "assistant"]


def test_the_budget_hides_the_rest_but_keeps_them() -> None:
    topics = [f"{a} {b}" for a in ("parser", "renderer", "exporter", "scheduler", "importer", "indexer")
              for b in ("cache", "queue", "schema", "config", "logger")]
    prompts = [say("human", f"never touch the {topic} without asking me first", i) for i, topic in enumerate(topics)]
    drafts = select(prompts)
    assert len(drafts) == 30
    assert budget(prompts) == 6  # 1.5 + sqrt(30), rounded to 7, capped to 6
    assert budget(prompts, Tuning(budget_max=8)) == 7
    # all 30 score at least Tuning.sure: the budget grows to its cap, the rest stay hidden
    assert sum(d.visible for d in drafts) == budget(prompts, DEFAULT_TUNING, drafts) == 6
    assert sum(d.visible for d in select(prompts, tuning=Tuning(budget_max=8))) == 8
    assert sum(d.visible for d in select(prompts, tuning=Tuning(sure=5.0, budget_max=8))) == 7
    assert [d.visible for d in select(prompts, per_session=2)].count(True) == 2
    assert not any(d.visible for d in select(prompts, per_session=0))


def test_a_budget_filled_by_the_person_still_shows_the_best_assistant_finding() -> None:
    rules = ["never touch the parser cache without asking me first", "always run the linter before you commit",
             "never push to main directly", "always write the changelog entry with the fix",
             "never bump a dependency in a feature branch", "always keep migrations reversible",
             "never log a customer's email address", "always pin the base image by digest",
             "never rename a public endpoint without a deprecation notice"]
    prompts = [say("human", rule, i) for i, rule in enumerate(rules)]
    finding = say("assistant", "The root cause is that the cache key ignores the tenant id.", 20)
    weak = say("assistant", "The exporter defaults to UTC, which the old reports assumed.", 21)
    drafts = select([*prompts, finding, weak])
    humans = [d for d in drafts if d.evidence[0].who == "human"]
    assert sum(d.visible for d in humans) == budget(prompts + [finding, weak], DEFAULT_TUNING, drafts)
    shown = [d.evidence[0] for d in drafts if d.visible and d.evidence[0].who == "assistant"]
    assert shown == [finding]  # beyond the budget, and only the best one
    assert not any(d.visible and d.evidence[0].who == "assistant"
                   for d in select([*prompts, finding, weak], per_session=3))  # a fixed budget is kept as it is


def test_a_long_agentic_run_after_few_prompts_has_a_larger_budget() -> None:
    prompts = [say("human", "port the exporter to the new schema", 1), say("human", "go on", 2)]
    replies = [say("assistant", f"Step {i} of the port is done.", 3 + i) for i in range(100)]
    assert budget(prompts) == 3  # 1.5 + sqrt(2), rounded
    assert budget(prompts + replies) == 6  # 1.5 + sqrt(2 + 100 / 4), capped to 6


def test_a_repeated_rule_is_one_draft_seen_twice_and_ranks_higher() -> None:
    once = select([say("human", "always run the formatter before you commit anything", 1)])[0]
    twice = select([
        say("human", "always run the formatter before you commit anything", 1),
        say("human", "Always run the formatter before you commit anything!", 5),
    ])
    assert len(twice) == 1 and twice[0].seen == 2 and len(twice[0].evidence) == 2
    assert twice[0].score > once.score


def test_a_rule_that_stands_alone_is_its_body_without_the_rest_of_the_prompt() -> None:
    prompt = ("Do not create any PR or issue without my explicit approval. Then fix the typo in the readme, "
              "rerun the suite and tell me what changed in the parser since yesterday.")
    (draft,) = [d for d in select([say("human", prompt, 1)]) if d.summary.startswith("Do not")]
    assert draft.body == "Do not create any PR or issue without my explicit approval."


def test_a_replayed_record_is_no_new_sighting() -> None:
    rule = "always run the formatter before you commit anything"
    once = select([say("human", rule, 1)])[0]
    replayed = Utterance("human", rule, "claude-code", "s1", "/work/app", "2026-11-30T20:01:00.000Z",
                         Position("/logs/s1.jsonl", 90))  # a resumed session copies the record: its old time
    (draft,) = select([say("human", rule, 1), replayed, replayed, replayed])
    assert draft.seen == 1 and len(draft.evidence) == 1 and draft.score == once.score


def test_an_earlier_prompt_pasted_back_whole_is_no_new_sighting() -> None:
    first = "Nothing happens when I press save. It should always keep a backup copy of the previous version."
    pasted = say("human", f"The export still looks wrong, here is what it wrote:\n\nPrompt #3:\n{first}\n"
                          "Response: [none]\n\nFix the exporter.", 9)
    (draft,) = [d for d in select([say("human", first, 1), pasted]) if "backup" in d.summary]
    assert draft.seen == 1 and len(draft.evidence) == 1
    restated = say("human", "Again: it should always keep a backup copy of the previous version.", 9)
    (draft,) = [d for d in select([say("human", first, 1), restated]) if "backup" in d.summary]
    assert draft.seen == 2  # said again in the person's own words: a repetition


def test_an_acknowledged_correction_ranks_higher() -> None:
    text = "that is a false positive, the framework always sets the app name"
    plain = select([say("human", text, 1), say("assistant", "Okay.", 2)])[0]
    acked = select([say("human", text, 1), say("assistant", "You're right, I'll drop that finding.", 2)])[0]
    assert acked.score > plain.score


def test_a_pasted_plan_and_injected_blocks_give_nothing() -> None:
    plan = ("Implement the following plan:\n\n# Export plan\n\n## Rules\n- Always use the v2 client.\n"
            "- Never write to the old table.\n")
    injected = "<system_instruction>You must always answer in English and never use tables.</system_instruction>"
    assert select([say("human", plan, 1), say("human", injected, 2)]) == []


def test_summaries_give_one_draft_a_durable_bullet_and_none_from_transient_sections() -> None:
    summary = (
        "Summary:\n1. Primary Request and Intent:\n   - Always export everything to the new format now.\n"
        "2. Errors and fixes:\n   - Fixed by pinning the driver because the pool leaked connections.\n"
        "   - (none)\n3. Current Work:\n   - Never mind, the tests are running right now.\n"
    )
    drafts = select([say("summary", summary, 1)])
    assert [(d.rule, d.body) for d in drafts] == [
        ("summary-error-fix", "Fixed by pinning the driver because the pool leaked connections.")]


def test_sessions_are_capped_separately() -> None:
    stack = ("region", "bucket", "vpc")
    a = [say("human", f"never change the {what} of this stack", i, "a") for i, what in enumerate(stack)]
    b = [say("human", "always tag releases with the date in their name", 1, "b")]
    drafts = select(a + b, per_session=1)
    visible = [d.evidence[0].session_id for d in drafts if d.visible]
    assert sorted(visible) == ["a", "b"]


def test_a_finding_the_session_later_disproves_sinks() -> None:
    finding = say("assistant", "The root cause is that the cache key ignores the tenant id in the lookup.", 1)
    later = say("assistant", "I was wrong: the cache key and the tenant id are fine, the lookup times out.", 3)
    other = say("assistant", "The report renders in dark mode now, as it did before the change.", 3)

    def score_of(drafts: list[Draft]) -> float:
        return next(d.score for d in drafts if d.evidence[0] is finding)

    assert score_of(select([finding, later])) < score_of(select([finding, other]))


def test_the_tuning_sets_the_budget_formula_and_the_floor() -> None:
    topics = [f"{a} {b}" for a in ("parser", "renderer", "exporter", "scheduler")
              for b in ("cache", "queue", "schema", "config")]
    prompts = [say("human", f"never touch the {topic} without asking me first", i) for i, topic in enumerate(topics)]
    assert budget(prompts) == budget(prompts, DEFAULT_TUNING) == 6  # 2 + sqrt(16)
    flat = Tuning(budget_base=3.0, budget_slope=0.0, sure=5.0)
    assert budget(prompts, flat) == 3
    assert sum(d.visible for d in select(prompts, tuning=flat)) == 3
    assert budget(prompts, Tuning(budget_slope=5.0, budget_max=10)) == 10
    assert not any(d.visible for d in select(prompts, tuning=Tuning(min_score=5.0)))


def test_the_budget_grows_to_show_every_sure_draft() -> None:
    rules = ("never touch the parser cache without asking. always run the schema check first. "
             "don't ever commit the generated files. never push to the release branch. always sign the release tags.")
    prompt = [say("human", rules, 1)]
    assert budget(prompt) == 2  # 1.5 + sqrt(1), rounded half to even
    drafts = select(prompt, tuning=Tuning(sure=0.8))
    assert len(drafts) == 5 and all(d.score >= 0.8 for d in drafts)
    assert budget(prompt, Tuning(sure=0.8), drafts) == 5 and all(d.visible for d in drafts)
    assert budget(prompt, Tuning(sure=0.8, budget_max=4), drafts) == 4
    assert sum(d.visible for d in select(prompt, tuning=Tuning(sure=5.0))) == 2


def test_statements_of_one_short_paragraph_are_one_draft_of_its_best_rule() -> None:
    # both sentences fire; a short paragraph is the body of each: one candidate, not two of the same text
    prompt = say("human", "We should keep the exports small. The raw logs must stay out of them.", 1)
    (draft,) = select([prompt])
    assert draft.body == "We should keep the exports small. The raw logs must stay out of them."
    assert draft.rule == "human-standing-rule" and draft.score >= 0.9  # the better of human-should and it
    apart = select([say("human", "We should keep the exports small.\n\nThe raw logs must stay out of them.", 1)])
    assert [d.body for d in apart] == ["The raw logs must stay out of them.", "We should keep the exports small."]


def test_a_plain_fact_about_code_is_shown_and_a_fragment_of_one_is_not() -> None:
    plain = say("assistant", "Checked the loader. `parse_config()` returns a frozen mapping, so callers that try to "
                             "update it in place get a TypeError at run time instead of a silent change.", 1)
    short = say("assistant", "Checked the loader. `parse_config()` returns a frozen mapping.", 1, session="s2")
    (shown,) = select([plain])
    (hidden,) = select([short])
    assert shown.rule == hidden.rule == "assistant-code-fact"
    assert shown.visible and shown.score >= MIN_SCORE and shown.noise == ()
    assert not hidden.visible and hidden.score < MIN_SCORE and hidden.noise == ("fragment",)


def test_the_tuning_weighs_the_assistant() -> None:
    finding = say("assistant", "The build never finishes because the cache lock is not released.", 1)
    low = select([finding], tuning=Tuning(assistant=0.5))[0].score
    high = select([finding], tuning=Tuning(assistant=0.9))[0].score
    assert high > low


def test_select_fires_the_rules_it_is_given() -> None:
    prompt = say("human", "from now on run the formatter before every commit", 1)
    assert [d.rule for d in select([prompt])] == ["human-from-now-on"]
    assert select([prompt], rules=without(RULES, {("human-from-now-on", 0)})) == []


def test_an_agreeing_reply_ranks_below_the_correction_it_agrees_with() -> None:
    correction = say("human", "no, the exporter must never write to the shared folder", 1)
    reply = say("assistant", "You're right — the exporter should keep to its own folder from here.", 2)
    drafts = select([correction, reply])
    assert [d.evidence[0] for d in drafts] == [correction, reply]
    assert drafts[0].visible and drafts[0].score > drafts[1].score + 0.3


def test_a_marked_line_is_left_to_the_marker_rules_and_is_no_neighbours_context() -> None:
    prompt = say("human", "Yes: soft delete it. Orders have to keep the original row, which is why we can't "
                          "hard-delete.\nREMEMBER: never edit migration files by hand", 1)
    drafts = select([prompt])
    assert [d.rule for d in drafts] == ["human-we-use"]  # the REMEMBER line is pinned by the pipeline
    assert "REMEMBER" not in drafts[0].body and drafts[0].body.startswith("Soft delete it.")  # "Yes:" trimmed


def test_a_labelled_lesson_and_a_choice_with_its_purpose_from_the_assistant() -> None:
    drafts = select([
        say("human", "the totals page crashes on an empty cart", 1),
        say("assistant", "Pitfall I hit: `Sum()` returns None on an empty queryset, so wrap it in `Coalesce`.", 2),
        say("assistant", "Checked the rest. I'm pinning `TZ=UTC` on every test call so the tests give the same "
                         "result on any machine.", 3)])
    rules = {d.rule: d for d in drafts}
    assert rules["assistant-lesson"].visible and rules["assistant-lesson"].score >= DEFAULT_TUNING.sure
    assert rules["assistant-purpose"].visible and rules["assistant-purpose"].score >= MIN_SCORE


def test_a_rule_said_again_gives_its_place_to_another() -> None:
    said = [say("human", "never push to main directly, open a pull request for every change", 1),
            say("human", "again: never push to main directly, every change gets a pull request", 2),
            say("human", "always pin the base image by its digest", 3)]
    drafts = select(said, per_session=2)
    assert len(drafts) == 3
    assert {d.evidence[0].position.line for d in drafts if d.visible} == {1, 3}  # not the same rule twice
    # a draft that only shares a few words with a better one keeps its place
    other = [said[0], say("human", "never merge a pull request without a linked issue and a test", 2), said[2]]
    assert {d.evidence[0].position.line for d in select(other, per_session=2) if d.visible} == {1, 2}
