"""The queue's statement index: near-duplicates and restatements found through postings, common words skipped."""

from __future__ import annotations

from mmd.daemon.queue_index import COMMON_FLOOR, StatementIndex, same_idea


def test_near_duplicates_and_restatements_are_found_and_nothing_else() -> None:
    index = StatementIndex([
        (1, "staging deploys always need the corporate VPN connection first"),
        (2, "CI treats any clippy warning as an error, so run cargo clippy before each commit"),
        (3, "the cafeteria closes at three on Fridays")])
    assert index.near("Staging deploys always need the corporate VPN connection first, ok") == [1]
    assert index.near("staging deploys need a VPN") == []
    assert index.restated("CI fails on any clippy warning: run cargo clippy yourself before you say done") == [2]
    assert index.restated("the canteen shuts early") == []
    assert len(index) == 3


def test_common_words_are_skipped_when_gathering_but_never_hide_a_near_duplicate() -> None:
    filler = [(i, f"please run the tests now item{i}") for i in range(10, 10 + COMMON_FLOOR + 50)]
    index = StatementIndex([*filler, (1, "please run the tests now with make check-all")])
    assert index.near("please run the tests now with make check-all!") == [1]
    assert index.near("please run the tests now item42") == [42]
    assert same_idea(frozenset({"a1", "b2", "c3", "d4"}), frozenset({"a1", "b2", "c3", "d4", "e5"}))
    assert not same_idea(frozenset({"a1", "b2", "c3"}), frozenset({"a1", "b2", "c3"}))  # fewer than 4 words
