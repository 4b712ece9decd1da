"""An agent's proposal as a candidate (issue 28): its mark, score and reason; ``mm:`` lines of the agent's own reply are
its proposals, a person's stay their marked lines; what a note holds or a replace that changes nothing is dropped."""

from __future__ import annotations

import pytest

from mmd.candidates import Seen, candidates_from
from mmd.candidates.model import Evidence
from mmd.candidates.pipeline import MARKED_SCORE
from mmd.candidates.proposals import (
    PROPOSAL_RULE,
    PROPOSAL_SCORE,
    REASON_MAX,
    make_proposal,
    proposal_reason,
    proposal_text,
    summary_to_write,
)
from mmd.core.errors import MMError
from mmd.sources import Position, Utterance

EVIDENCE = [Evidence("codex", "s-1", "/p", "codex:s-1", {"file": "codex:s-1", "uuid": "u1"}, None, "assistant", "x",
                     "why not")]


def said(who: str, text: str, seq: int) -> Utterance:
    return Utterance(who, text, "claude-code", "s-1", "/p", None, Position("/logs/s-1.jsonl", seq))  # type: ignore[arg-type]


def test_mm_lines_in_the_agents_reply_are_its_proposals_and_a_persons_stay_marked_lines() -> None:
    seen = Seen.of_index([("deploy", (), "Deploys", "We deploy on Fridays.")])
    out = candidates_from([said("human", "mm: always run the linters before a commit", 1),
                           said("assistant", "Done.\nmm: the flaky test is a race in the cache warmer\n"
                                             "mm://local/deploy staging deploys need the VPN", 2)],
                          write_budget=4000, seen=seen)
    by_body = {c.body: c for c in out}
    person = by_body["always run the linters before a commit"]
    assert (person.rule, person.score, person.kind) == ("mm.explicit", MARKED_SCORE, "explicit")
    agent = by_body["the flaky test is a race in the cache warmer"]
    assert (agent.rule, agent.kind, agent.score, agent.pinned, agent.visible) == (
        PROPOSAL_RULE, "proposal", PROPOSAL_SCORE, True, True)
    assert agent.evidence[0].who == "assistant" and agent.session_id == "s-1"
    named = by_body["staging deploys need the VPN"]
    assert (named.rule, named.topic, named.proposal_action) == (PROPOSAL_RULE, "deploy", "append")


def test_what_a_note_holds_and_a_replace_with_the_notes_own_text_are_dropped() -> None:
    seen = Seen.of_index([("deploy", (), "Deploys", "We deploy on Fridays.")])
    assert make_proposal(seen, action="create", body="we deploy on fridays", evidence=EVIDENCE) is None
    assert make_proposal(seen, action="replace", body="We deploy on Fridays.\n", topic="deploy",
                         note_body="We deploy on Fridays.", evidence=EVIDENCE) is None
    made = make_proposal(seen, action="replace", body="We deploy on Mondays.", topic="deploy",
                         note_body="We deploy on Fridays.", evidence=EVIDENCE, scope="api-0123abcd")
    assert made is not None and (made.topic, made.proposal_action, made.scope) == ("deploy", "replace", "api-0123abcd")
    assert summary_to_write(made.summary, made.body) is None  # no summary given: the note keeps its own
    given = make_proposal(seen, action="replace", body="We deploy on Mondays.", topic="deploy", summary="Mondays",
                          note_body="x", evidence=EVIDENCE)
    assert given is not None and summary_to_write(given.summary, given.body) == "Mondays"


def test_a_proposals_text_is_checked_where_it_enters_and_never_cut() -> None:
    assert proposal_text("line one\r\nline two\r  \n") == "line one\nline two"
    for bad in ("", "  \n", "a\x00b", "bell\x07", 3):
        with pytest.raises(MMError):
            proposal_text(bad)
    assert proposal_reason(None) is None and proposal_reason("  ") is None
    assert proposal_reason("because\nit broke twice") == "because it broke twice"
    assert len(proposal_reason("w " * 400) or "") == REASON_MAX
    with pytest.raises(MMError) as caught:
        make_proposal(Seen(), action="create", body="x" * 41, evidence=EVIDENCE, max_chars=40)
    assert "over the write budget of 40" in caught.value.message
    for action, topic in (("explode", None), ("append", None), ("create", "not a slug")):
        with pytest.raises(MMError):
            make_proposal(Seen(), action=action, body="x", topic=topic, evidence=EVIDENCE)
    gone = make_proposal(Seen(), action="delete", body="", topic="old", evidence=EVIDENCE)
    assert gone is not None and gone.body == "Delete the note old." and gone.evidence[0].reason == "why not"
