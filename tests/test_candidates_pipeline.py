"""mmd.candidates: utterances from any source become the queue's candidates through one pipeline and one rule table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mmd.candidates import MM_V1, Seen, body_key, candidates_from, may_hold_candidates
from mmd.core.digest import EXPLICIT_MARKERS, SUMMARY_MARKERS, distill
from mmd.sources import Position, Utterance


def said(who: str, text: str, *, seq: int | None = None) -> Utterance:
    return Utterance(who, text, "test", "s-1" if who != "text" else None, None, None,  # type: ignore[arg-type]
                     Position("/logs/a.jsonl", seq=seq, uuid=f"m{seq}" if seq is not None else None))


def test_the_rules_are_the_reference_kinds_in_order_and_each_prefilter_admits_its_own_markers() -> None:
    assert [(r.name, r.kind) for r in MM_V1] == [("mm.uri", "uri"), ("mm.explicit", "explicit"),
                                                 ("mm.summary", "summary"), ("mm.heading", "heading")]
    assert [r.weight for r in MM_V1] == sorted((r.weight for r in MM_V1), reverse=True)
    rules = {r.kind: r for r in MM_V1}
    for word in EXPLICIT_MARKERS:
        assert rules["explicit"].prefilter(f"x {word.lower()}：y") and may_hold_candidates(f"{word.upper()}: y")
    for word in SUMMARY_MARKERS:
        assert rules["summary"].prefilter(f"{word}: y") and not rules["explicit"].prefilter(f"{word}: y")
    assert rules["uri"].prefilter("see mm:deploys") and rules["heading"].prefilter("## Deploys")
    assert not may_hold_candidates("nothing to see: here")


def test_each_rule_matches_only_its_kind_and_together_they_give_the_digest() -> None:
    text = "mm:deploys staging first\nMEMO: pin the provider\nSummary: it works\n## Root cause\nthe retry path"
    found = [c for r in MM_V1 for c in r.match(text, 4000)]
    assert [c["kind"] for c in found] == ["uri", "explicit", "summary", "heading"]
    assert found == distill(text, default_write_budget=4000)["candidates"]


def test_agent_utterances_carry_their_provenance_and_topics_are_proposed_from_the_body() -> None:
    got = candidates_from([said("human", "REMEMBER: run tests with make test-fast", seq=7),
                           said("assistant", "no markers here", seq=8),
                           said("summary", "Conclusion: the retry path regenerates keys", seq=9)], write_budget=4000)
    assert [(c.kind, c.topic, c.source_kind, c.seq, c.message_id, c.session_id, c.file) for c in got] == [
        ("explicit", "testing", "user", 7, "m7", "s-1", "/logs/a.jsonl"),  # a note of its kind, grown by accepts
        ("summary", "retry-path", "compaction", 9, "m9", "s-1", "/logs/a.jsonl")]


def test_every_conclusion_is_visible_and_one_worded_as_a_rule_ranks_higher() -> None:
    # mm v1 §9 makes each marker line a candidate: held-back DSH logs lost their plain 结论： and Conclusion: lines
    got = candidates_from([said("assistant", "Conclusion: the capture suite passes again after the rebase.", seq=1),
                           said("assistant", "结论：幂等键必须由商户编号和请求编号派生，不能随机生成。", seq=2),
                           said("assistant", "Conclusion: refund keys must be derived from the merchant id.", seq=3)],
                          write_budget=4000)
    assert {c.seq: c.visible for c in got} == {1: True, 2: True, 3: True}, got
    score = {c.seq: c.score for c in got}
    assert score[2] > score[1] < score[3]


def test_text_utterances_are_digested_as_the_reference_digests_a_source() -> None:
    log = '{"type":"note","text":"MEMO: flattened first"}\n{"type":"note","text":"more"}'
    (c,) = candidates_from([said("text", log)], write_budget=4000)
    assert (c.body, c.source_kind, c.session_id, c.seq) == ("flattened first", "session-log", None, None)
    (d,) = candidates_from([said("text", "plain\nMEMO: as it is")], write_budget=4000)
    assert (d.body, d.source_kind) == ("as it is", "text")
    cut = candidates_from([said("human", "MEMO: " + "x" * 50)], write_budget=10)[0]
    assert (cut.body, cut.chars, cut.over_budget) == ("x" * 9 + "…", 10, True)  # one statement, cut with an ellipsis


def test_a_blank_text_utterance_never_makes_the_digest_look_for_a_log_of_its_own(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "x.md").write_text("MEMO: from an unrelated log\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert candidates_from([said("text", "\ufeff \u3000")], write_budget=4000) == []


def test_what_the_caller_has_seen_is_dropped() -> None:
    items = [said("human", "MEMO: keep this one"), said("human", "MEMO: already  a note")]
    seen = Seen.of_notes(["already a note\n"])
    assert [c.body for c in candidates_from(items, write_budget=4000, seen=seen)] == ["keep this one"]
    known = candidates_from(items[:1], write_budget=4000)[0].key
    assert candidates_from(items[:1], write_budget=4000, seen=Seen(frozenset(), frozenset({known}))) == []
    assert body_key("already  a note") in seen.note_bodies


def test_the_package_imports_neither_the_daemon_nor_its_dependencies() -> None:
    code = ("import sys, mmd.candidates; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('zstandard', 'zmq', 'watchfiles', 'apscheduler') or m.startswith('mmd.daemon')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[1])
    assert out.stdout.strip() == "[]"


def test_a_uri_naming_an_existing_note_proposes_to_append_to_it() -> None:
    # the proposal was "create lint-rule", which accept refused (E_EXISTS) pointing at replace: true, and a replace
    # overwrote the note with the one new line
    seen = Seen.of_index([("lint-rule", ["ci"], "Lint before commit", "Run make lint before committing."),
                          ("deploy", ["ops"], "Deploys", "Typecheck deploys with make typecheck before committing.")])
    items = [said("human", "mm://local/lint-rule Also run make typecheck before committing."),
             said("human", "mm://local/release-notes Write release notes for every tag.")]
    got = {c.topic: c.proposal_action for c in candidates_from(items, write_budget=4000, seen=seen)}
    assert got == {"lint-rule": "append", "release-notes": "create"}
