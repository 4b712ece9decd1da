"""The ingestion's cheap pre-test never hides a candidate the mm digest rules would find."""

from __future__ import annotations

import random

from mmd.candidates import may_hold_candidates
from mmd.core.digest import distill
from mmd.sources.dsh.session import read_session
from tests.conftest import shared_path

PIECES = ["memo", "MEMO", "Memo", "remember", "REMEMBER", "ſummary", "Summary", "conclusion", "CONCLUſION", "记忆",
          "记住", "总结", "结论", ":", "：", "##", "###", "#", " ", "\t", "\n", "\r\n", "mm:", "mm://a/b", "mm:topic-1",
          "x", "body text", "-", "\u2028", "İ", "K"]


def test_every_text_with_a_candidate_passes_the_pre_test() -> None:
    rng = random.Random(11)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        if distill(text)["candidates"]:
            assert may_hold_candidates(text), repr(text)


def test_the_sample_messages_with_candidates_pass_and_plain_prose_does_not() -> None:
    for log in sorted(shared_path("sessions").rglob("session*.jsonl")):
        for record in read_session(log).records:
            if distill(record.text)["candidates"]:
                assert may_hold_candidates(record.text), record
    assert not may_hold_candidates("Let me look at what the plan says: the DB instance.")
    assert may_hold_candidates("OK, pin it.\n记住：prod 的任何 apply 都要先在 staging 跑一遍。")


def test_numbered_candidates_get_topics_of_their_own() -> None:
    from mmd.candidates import proposed_topic

    first = proposed_topic("explicit", "memo-1", "the state bucket lives in eu-west-1")
    second = proposed_topic("explicit", "memo-1", "run tests with make test-fast")
    assert first == "the-state-bucket-lives-in-eu" and second == "run-tests-with-make-test-fast"
    cjk = proposed_topic("explicit", "memo-1", "以后金额一律用整数分")
    assert cjk.startswith("memo-") and cjk != proposed_topic("explicit", "memo-1", "不要用浮点数")
    assert proposed_topic("summary", "summary-2", "部署") .startswith("summary-")
    assert proposed_topic("uri", "conventions", "x y z") == "conventions"
    assert proposed_topic("heading", "root-cause", "a b c") == "root-cause"
