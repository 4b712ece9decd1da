"""Signals: each rule fires on its phrasing and stays quiet on look-alikes."""

from __future__ import annotations

import re

import pytest

from mmd.candidates.signals import RULES, Rule, fire, phrases, strength, without
from mmd.candidates.statements import Statement, split


def one(text: str, section: str = "") -> Statement:
    return Statement(text, section, bool(section), 0, 0)


def rule_of(text: str, who: str, section: str = "") -> str | None:
    rule = fire(one(text, section), who)
    return None if rule is None else rule.name


@pytest.mark.parametrize(("text", "rule"), [
    ("from now on run the linter before every commit", "human-from-now-on"),
    ("以后都用中文写提交说明，谢谢你", "human-from-now-on"),
    ("always use uv run to launch python code", "human-standing-rule"),
    ("解析失败的错误信息要写清楚是第几行出的错", "human-should"),
    ("never push directly to the main branch", "human-standing-rule"),
    ("don't use the browser tool to read web pages", "human-standing-rule"),
    ("不要在没有我同意的情况下提交代码", "human-standing-rule"),
    ("务必在合并之前跑完全部测试", "human-standing-rule"),
    ("提交信息一律用英文写，描述可以用中文", "human-standing-rule"),
    ("the repo is managed with poetry, so run the suite through it", "human-should"),
    ("I'd rather have one file per team than a single report", "human-preference"),
    ("we prefer tabs over spaces in the makefiles", "human-preference"),
    ("no, use the fetch tool to read that page", "human-correction"),
    ("we use squash merges for every pull request", "human-we-use"),
    ("the config loader should read the user folder first", "human-should"),
    ("also you have a virtual environment in /tmp/review-venv", "human-environment"),
    ("for the record: the release builds run on the old build box", "human-notice"),
    ("heads-up, the staging database is reset every night", "human-notice"),
    ("btw keep the changelog entries short, I read them all", "human-notice"),
    ("make sure you do not lose the data in the review database", "human-standing-rule"),
    ("please, don't open a pull request without my approval", "human-standing-rule"),
    ("i do want to know about every fix, tests and docs included", "human-preference"),
])
def test_human_rules_fire_on_their_phrasing(text: str, rule: str) -> None:
    assert rule_of(text, "human") == rule


@pytest.mark.parametrize(("text", "rule"), [
    ("The root cause is that the cache key ignores the tenant id.", "assistant-root-cause"),
    ("That error happens because the browser blocks modules loaded from file URLs.", "assistant-root-cause"),
    ("Fixed by passing the flag to the renderer so the text stays plain.", "assistant-fix"),
    ("The hook doesn't receive any session context from stdin.", "assistant-pitfall"),
    ("We'll use the thread pool since the default one is shared.", "assistant-decision"),
    ("You're right — the exporter writes to stdout in dev only.", "assistant-acknowledged"),
    ("The parser doesn't accept a leading minus, so the caller strips it.", "assistant-pitfall"),
    ("The settings module defaults to production, which needs a secret key.", "assistant-pitfall"),
    ("报错的根本原因是缓存键里没有租户编号", "assistant-root-cause"),
    ("The real issue was the stale lock file left by the crashed run.", "assistant-root-cause"),
    ("空列表时求和返回的是空值而不是零，所以要写默认值", "assistant-pitfall"),
    ("Good catch - the second call reads the stale value.", "assistant-acknowledged"),
    ("One thing to know: the importer skips rows with an empty id.", "assistant-lesson"),
    ("Pitfall I hit: the settings module defaults to production.", "assistant-lesson"),
    ("踩到一个坑：空列表时求和返回的是空值而不是零", "assistant-lesson"),
    ("I'm pinning the clock on every test so the results are the same on any machine.", "assistant-purpose"),
    ("`current_span_ctx()` returns a record, not an ok tuple.", "assistant-code-fact"),
    ("The symlinks in `.venv` are owned by nobody, a limit of the sandbox.", "assistant-code-fact"),
    ("Now I notice I used \"centre\" in CSS, which won't work: CSS spells it center.", "assistant-pitfall"),
])
def test_assistant_findings_fire(text: str, rule: str) -> None:
    assert rule_of(text, "assistant") == rule


@pytest.mark.parametrize(("text", "who"), [
    ("why does the build always fail on main?", "human"),       # a question
    ("yes do it", "human"),                                      # too short to be a memory
    ("no, keep it as is", "human"),                              # four words, but one of three letters or more
    ("no, we do it as is", "human"),
    ("Let me check why the tests never finish.", "assistant"),   # a progress note
    ("I'll use the other branch for now because it builds.", "assistant"),
    ("The page now renders the table as before.", "assistant"),  # plain narration
    ("Run the build and tell me what you see.", "human"),        # a one-off request
    ("src/app.py:12: error: never call this", "human"),          # pasted tool output
    ("npm error A complete log of this run should always be kept in the logs folder", "human"),
    ("Here is what I found in the logs:", "human"),              # a lead-in
    ("the report needs a --tz flag so times can be given in a named zone instead of offsets", "human"),  # a request
    ("You're absolutely right!", "assistant"),                   # an acknowledgment with nothing after it
    ("Good point, I will look at it.", "assistant"),
    ("The issue is that I need to make the helper work with blocks.", "assistant"),  # a plan, not a finding
    ("The fix is already applied, so the retry never fires twice.", "assistant"),  # the state of the work
    ("The hook is already in place and does not run on merges.", "assistant"),
    ("I don't think that matters here at all", "human"),         # a hedge, not a rule
    ("The issue is that the page background stays dark in the code block.", "assistant"),  # a diagnosis of the moment
    ("Understood, `make release` it is.", "assistant"),           # an agreement naming code
    ("I `pip install` it first, then the tests pass again.", "assistant"),  # first person: what it did
    ("I’m now updating the `render` defaults so it keeps the token events.", "assistant"),  # progress, curly
])
def test_look_alikes_stay_quiet(text: str, who: str) -> None:
    assert rule_of(text, who) is None


def test_dont_is_a_standing_rule_only_where_it_tells_someone_what_not_to_do() -> None:
    assert rule_of("the filter buttons at the top don't work with the keyboard", "human") != "human-standing-rule"
    assert rule_of("put the shortcuts on the screen so i don't need to memorise them", "human") != \
        "human-standing-rule"
    assert rule_of("the tests pass, and don't touch the writeups folder", "human") == "human-standing-rule"
    assert rule_of("the importer skips the files that don't parse at all", "human") != "human-standing-rule"


def test_a_typographic_apostrophe_reads_as_the_ascii_one() -> None:
    [rule] = split("don\u2019t write python code for the viewer anymore")
    assert rule.text == "don't write python code for the viewer anymore"
    assert fire(rule, "human") is not None and fire(rule, "human").name == "human-standing-rule"  # type: ignore[union-attr]
    [progress] = split("I\u2019ll update the `render` defaults so it keeps the token events.")
    assert fire(progress, "assistant") is None


def test_headings_and_code_never_reach_the_rules() -> None:
    statements = split("## Always use the cache\n```\n# never do this\nnever()\n```")
    assert statements == []


def test_summary_rules_read_durable_sections_only() -> None:
    assert rule_of("Fixed by pinning the driver to 2.3 after the pool leaked.", "summary",
                   "errors and fixes") == "summary-error-fix"
    assert rule_of("State bucket is in eu-west-1; never change backend region.", "summary",
                   "critical context") == "summary-critical"
    assert rule_of("User asked for the export endpoints to be added today.", "summary",
                   "primary request and intent") is None
    assert rule_of("Waiting for the test run to finish before merging.", "summary", "current work") is None
    assert rule_of("(none)", "summary", "errors and fixes") is None
    assert rule_of("Fixed by pinning the driver to 2.3 after the pool leaked.", "summary") is None


def test_human_rules_do_not_read_the_assistant_and_back() -> None:
    assert rule_of("always use uv run to launch python code", "assistant") is None
    assert rule_of("The root cause is the cache key that ignores tenants.", "human") is None


def test_a_request_for_the_task_at_hand_weighs_less_than_a_standing_rule() -> None:
    request = strength(one("let's see if the cache makes it faster"), "human")
    wish = strength(one("I'd like to write a viewer for these logs"), "human")
    standing = strength(one("let's never cache the tenant list"), "human")
    assert request < standing and wish < standing


def test_a_request_after_a_clause_weighs_as_one_at_the_start() -> None:
    after = strength(one("okay, the fix is pushed, let's update the branch from main"), "human")
    start = strength(one("let's update the branch from main, the fix is pushed"), "human")
    decision = strength(one("okay, the fix is pushed, we use the branch from main"), "human")
    assert after == start < decision


def test_an_assistant_guess_weighs_less_than_its_finding() -> None:
    guess = strength(one("The cache key probably ignores the tenant, so entries leak."), "assistant")
    finding = strength(one("The cache key ignores the tenant, so entries leak."), "assistant")
    either = strength(one("Either the hook does not fire or the log is rotated away."), "assistant")
    assert guess < finding and either < finding
    may = strength(one("The cache key may ignore the tenant, so entries leak."), "assistant")
    month = strength(one("The certificate expires in May, so the cron job renews it."), "assistant")
    assert may < finding and month == strength(one("The certificate expires soon, so the cron job renews it."),
                                               "assistant")


def test_something_said_of_the_moment_weighs_less() -> None:
    one_off = strength(one("don't push yet, I will review the diff tomorrow"), "human")
    standing = strength(one("don't push to the release branch, I review every diff"), "human")
    assert one_off < standing


def test_strength_halves_a_question_and_lifts_a_reason() -> None:
    plain = strength(one("we use squash merges for pull requests"), "human")
    reason = strength(one("we use squash merges because the history stays linear"), "human")
    question = strength(one("we use squash merges for pull requests, right?"), "human")
    assert reason > plain > question


def test_make_sure_is_a_request_not_a_standing_rule() -> None:
    assert rule_of("make sure the exported file keeps every field", "human") == "human-should"
    assert rule_of("never export the secrets, make sure of it", "human") == "human-standing-rule"


def test_phrases_split_a_rule_at_its_top_level_alternatives_only() -> None:
    rule = Rule("r", "fact", 0.5, ("human",), re.compile(r"[|a]b|c(?:d|e)|x\|y|[^]|]z", re.IGNORECASE))
    assert phrases(rule) == ("[|a]b", "c(?:d|e)", r"x\|y", "[^]|]z")
    for each in RULES:
        assert "|".join(phrases(each)) == each.pattern.pattern


def test_without_takes_phrases_out_and_a_rule_left_empty_goes() -> None:
    text = "from now on run the formatter before every commit"
    assert rule_of(text, "human") == "human-from-now-on"
    fewer = without(RULES, {("human-from-now-on", 0)})
    assert fire(one(text), "human", fewer) is None
    kept = fire(one("going forward run the formatter first"), "human", fewer)
    assert kept is not None and kept.name == "human-from-now-on"
    rule = next(r for r in RULES if r.name == "human-from-now-on")
    every = {(rule.name, i) for i in range(len(phrases(rule)))}
    assert [r.name for r in without(RULES, every)] == [r.name for r in RULES if r is not rule]


def test_a_labelled_aside_is_a_notice_a_labelled_lesson_more() -> None:
    assert rule_of("**Note:** the importer may use a callback pattern here.", "assistant") == "assistant-notice"
    assert rule_of("Gotcha: the importer skips rows with an empty id.", "assistant") == "assistant-lesson"
    lesson = next(r for r in RULES if r.name == "assistant-lesson")
    notice = next(r for r in RULES if r.name == "assistant-notice")
    assert lesson.weight > notice.weight


def test_the_future_as_a_time_not_as_a_noun_is_a_standing_rule() -> None:
    assert rule_of("In the future, run the linter before you commit anything.", "human") == "human-from-now-on"
    assert rule_of("please keep the old flags working in the future", "human") == "human-from-now-on"
    assert rule_of("these tables need to exist in the future state of the schema", "human") != "human-from-now-on"


@pytest.mark.parametrize(("text", "rule"), [
    ("Local Postgres is the docker compose one on port 5433, not the default", "human-environment"),
    ("the api answers at localhost:8080 when the compose stack is up", "human-environment"),
    ("tests need DATABASE_URL=postgres://app@db/app set in the shell", "human-environment"),
    ("the report on the numbers looks plain and fine to me", None),  # "port" inside a word, no variable set
])
def test_where_things_are_is_an_environment_fact(text: str, rule: str | None) -> None:
    assert rule_of(text, "human") == rule
