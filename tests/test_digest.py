"""mmd.core.digest: candidate extraction, source location and session-log flattening (mm v1 §9)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mmd.core.digest import (
    DIGEST_NOTE,
    MAX_SOURCE_BYTES,
    NO_SOURCE_NOTE,
    digest,
    distill,
    resolve_session_log,
)
from mmd.core.errors import ErrorCode, MMError


def kinds(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(topic, kind, body)`` of every candidate."""
    return [(c["topic"], c["kind"], c["body"]) for c in result["candidates"]]


def bodies(text: str, **kwargs: Any) -> list[str]:
    return [c["body"] for c in distill(text, **kwargs)["candidates"]]


# --- explicit markers ---------------------------------------------------------------------------


def test_explicit_markers_need_a_colon_and_a_token_boundary() -> None:
    text = "\n".join(
        [
            "MEMO: keep deps minimal",
            "memo:lowercase works",
            "REMEMBER: remember with colon",
            "REMEMBER this without colon",
            "assistant: MEMO: mid-line marker",
            "记忆：中文冒号",
            "记住: ASCII colon",
            "请记住：preceded by CJK letter",
            "MEMO:",
            "MEMO:   ",
            "xMEMO: glued",
            "7MEMO: glued to a digit",
            "_MEMO: after underscore",
            "MEMORANDUM: not a marker",
        ]
    )
    assert kinds(distill(text)) == [
        ("memo-1", "explicit", "keep deps minimal"),
        ("memo-2", "explicit", "lowercase works"),
        ("memo-3", "explicit", "remember with colon"),
        ("memo-4", "explicit", "mid-line marker"),
        ("memo-5", "explicit", "中文冒号"),
        ("memo-6", "explicit", "ASCII colon"),
        ("memo-7", "explicit", "after underscore"),
    ]


def test_explicit_marker_accepts_full_width_colon_and_trims_body() -> None:
    assert bodies("MEMO：\u3000 spaced body \u00a0") == ["spaced body"]


def test_marker_case_folding_follows_javascript_unicode_rules() -> None:
    # JS /iu folds "ſ" (long s) to "s", but not dotless "ı" or dotted "İ" to "i"
    assert kinds(distill("ſummary: long s")) == [("summary-1", "summary", "long s")]
    assert distill("conclusıon: dotless i")["candidates"] == []
    assert distill("CONCLUSİON: dotted I")["candidates"] == []


def test_marker_body_must_not_hold_a_javascript_line_terminator() -> None:
    # JS `.` stops at \r, U+2028 and U+2029, and `$` is the end of the line: no match
    assert distill("MEMO: a\rb")["candidates"] == []
    assert distill("MEMO: a\u2028b")["candidates"] == []
    # but a trailing \r (CRLF) is trimmed first
    assert bodies("MEMO: crlf\r\nSummary: next\r\n") == ["crlf", "next"]


def test_topic_hint_names_every_explicit_candidate_so_only_the_first_is_kept() -> None:
    result = distill("MEMO: one\nMEMO: two\nSummary: three", topic_hint="deploy-region")
    assert kinds(result) == [("deploy-region", "explicit", "one"), ("summary-1", "summary", "three")]


def test_memo_numbers_count_non_empty_markers_even_when_deduplicated() -> None:
    # "mm:memo-1" takes the topic first; the first MEMO is still number 1, the second number 2
    result = distill("mm:memo-1 from a uri\nMEMO: first\nMEMO: second")
    assert kinds(result) == [("memo-1", "uri", "from a uri"), ("memo-2", "explicit", "second")]


# --- summary and heading ------------------------------------------------------------------------


def test_summary_markers() -> None:
    text = "Conclusion: first\nsummary: lower\n总结：中文总结\n结论: ascii colon\nSummary:\nMEMO: memo"
    assert kinds(distill(text)) == [
        ("memo-1", "explicit", "memo"),
        ("summary-1", "summary", "first"),
        ("summary-2", "summary", "lower"),
        ("summary-3", "summary", "中文总结"),
        ("summary-4", "summary", "ascii colon"),
    ]


def test_headings_collect_following_lines_until_the_next_heading() -> None:
    text = (
        "## Heading One!\nbody of one\nMEMO: swallowed by heading\n\nsee mm:uri-inside heading\n"
        "### Ｆｕｌｌ Width Title\nsecond body\n#### too deep\n## 部署\nafter cjk-only heading\n"
        "Summary: after cjk heading\n## Empty Section\n## Last\nlast body\n"
    )
    assert kinds(distill(text)) == [
        ("uri-inside", "uri", "heading"),
        ("summary-1", "summary", "after cjk heading"),
        ("heading-one", "heading", "body of one\nMEMO: swallowed by heading"),
        ("full-width-title", "heading", "second body\n#### too deep"),
        ("last", "heading", "last body"),
    ]


def test_heading_summary_is_the_first_body_line() -> None:
    (candidate,) = distill("## Plan\n\n  first line  \nsecond line")["candidates"]
    assert candidate["summary"] == "first line"
    assert candidate["body"] == "first line\nsecond line"


def test_heading_needs_whitespace_after_the_hashes() -> None:
    assert distill("##NoSpace\ntext")["candidates"] == []
    assert kinds(distill("##\tTabbed\ntext")) == [("tabbed", "heading", "text")]


# --- uri ----------------------------------------------------------------------------------------


def test_uri_lines_take_topic_and_rest_of_line() -> None:
    text = (
        "note mm:deploy-region: us-east-1 is home\n- mm://shared/ci use actions, mm:second ignored\n"
        "see mm:deploy.\nmm:bare\nagain mm:deploy-region duplicate\nxmm:nope here\nmm://local only-id\n"
        "(mm:paren) inside parens\n"
    )
    assert kinds(distill(text)) == [
        ("deploy-region", "uri", "us-east-1 is home"),
        ("ci", "uri", "use actions, mm:second ignored"),
        ("deploy.", "uri", "see mm:deploy."),
        ("bare", "uri", "mm:bare"),
        ("paren", "uri", ") inside parens"),
    ]


def test_uri_word_boundary_is_ascii_like_javascript_without_u_flag() -> None:
    # "é" is not an ASCII word character, so "émm:" has a boundary; "_" and digits do not
    assert kinds(distill("émm:accent rest")) == [("accent", "uri", "rest")]
    assert distill("_mm:under rest\n1mm:digit rest")["candidates"] == []


def test_uri_body_strips_leading_separators() -> None:
    assert bodies("mm:x ：, - : body") == ["body"]


def test_uri_line_wins_over_markers() -> None:
    assert kinds(distill("MEMO: mm:topic text")) == [("topic", "uri", "text")]


# --- order, trimming, limits ----------------------------------------------------------------------


def test_candidates_are_ordered_by_kind_then_encounter() -> None:
    text = "## Head\nbody\n"  # heading first in the text
    text = "Summary: s1\n" + "MEMO: m1\n" + "mm:u1 first\n" + "Summary: s2\n" + text
    assert [c["kind"] for c in distill(text)["candidates"]] == ["uri", "explicit", "summary", "summary", "heading"]


def test_bodies_are_trimmed_to_the_budget_in_code_points() -> None:
    text = "MEMO: " + "🎉" * 12 + " tail\nMEMO: short one\nSummary: " + "word " * 60
    result = distill(text, default_write_budget=10)
    first, second, third = result["candidates"]
    assert first == {
        "topic": "memo-1",
        "kind": "explicit",
        "summary": "🎉" * 12 + " tail",
        "body": "🎉" * 10,
        "chars": 10,
        "budget": 10,
        "overBudget": True,
    }
    assert (second["body"], second["overBudget"]) == ("short one", False)
    assert third["summary"] == ("word " * 60).strip()[:200] + "…"
    assert third["body"] == "word word "
    assert result["usage"] == {"chars": 29, "budget": 10, "overflow": 19}


def test_result_shape_and_key_order() -> None:
    result = distill("MEMO: abc")
    assert list(result) == ["source", "sourceKind", "candidates", "usage", "note"]
    assert list(result["candidates"][0]) == ["topic", "kind", "summary", "body", "chars", "budget", "overBudget"]
    assert result["source"] == "" and result["sourceKind"] == "text" and result["note"] == DIGEST_NOTE


@pytest.mark.parametrize("value", [None, 0, -5, 2.5, True, "10"])
def test_non_positive_or_non_integer_budget_means_4000(value: Any) -> None:
    assert distill("MEMO: abc", default_write_budget=value)["usage"]["budget"] == 4000


def test_max_items_defaults_to_50_and_cuts_after_ordering() -> None:
    text = "\n".join(f"Summary: s{i}" for i in range(60)) + "\nmm:late uri"
    assert len(distill(text)["candidates"]) == 50
    assert kinds(distill(text, max_items=2)) == [("late", "uri", "uri"), ("summary-1", "summary", "s0")]
    assert len(distill(text, max_items=0)["candidates"]) == 50
    assert len(distill(text, max_items=3.0)["candidates"]) == 3  # type: ignore[arg-type]


# --- sources ------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def write_session(home: Path, name: str, text: str, mtime: int) -> Path:
    sessions = home / "sessions"
    sessions.mkdir(exist_ok=True)
    path = sessions / name
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def test_digest_prefers_file_then_text_then_session_log(home: Path, tmp_path: Path) -> None:
    write_session(home, "a.md", "MEMO: from log", 1000)
    source = tmp_path / "notes.md"
    source.write_text("## Release Plan\nship friday\n", encoding="utf-8")
    from_file = digest(file=source, text="MEMO: from text", dsh_home=home, default_write_budget=100)
    assert from_file["source"] == str(source)
    assert from_file["sourceKind"] == "text"
    assert kinds(from_file) == [("release-plan", "heading", "ship friday")]
    assert from_file["usage"] == {"chars": 11, "budget": 100, "overflow": 0}
    assert kinds(digest(text="MEMO: from text", dsh_home=home)) == [("memo-1", "explicit", "from text")]
    assert digest(text="MEMO: from text", dsh_home=home)["source"] == "<text>"
    from_log = digest(text=" \n\t", file="", dsh_home=home)
    assert from_log["source"] == str(home / "sessions" / "a.md")
    assert kinds(from_log) == [("memo-1", "explicit", "from log")]


def test_digest_without_any_source_reports_none_with_budget_4000(home: Path) -> None:
    result = digest(dsh_home=home, default_write_budget=100)
    assert result == {
        "source": "<none>",
        "sourceKind": "none",
        "candidates": [],
        "usage": {"chars": 0, "budget": 4000, "overflow": 0},
        "note": NO_SOURCE_NOTE,
    }


def test_digest_missing_file_raises_digest_source_error(home: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.md")
    with pytest.raises(MMError) as info:
        digest(file=missing, dsh_home=home)
    assert info.value.code == ErrorCode.E_DIGEST_SOURCE
    assert info.value.to_json() == {
        "name": "MemoryError",
        "code": "E_DIGEST_SOURCE",
        "message": f"digest source file not found: {missing}",
    }


def test_digest_directory_as_file_raises_digest_source_error(home: Path, tmp_path: Path) -> None:
    with pytest.raises(MMError) as info:
        digest(file=tmp_path, dsh_home=home)
    assert info.value.code == ErrorCode.E_DIGEST_SOURCE


def test_resolve_session_log_picks_newest_then_smallest_name(home: Path) -> None:
    assert resolve_session_log(home) is None  # no sessions folder
    write_session(home, "old.jsonl", "", 1000)
    write_session(home, "b.json", "", 2000)
    write_session(home, "a.md", "", 2000)
    write_session(home, "newest.txt", "", 9000)  # not a log extension
    write_session(home, "newest.md.bak", "", 9000)
    (home / "sessions" / "dir.md").mkdir()  # folders never count
    os.utime(home / "sessions" / "dir.md", (9000, 9000))
    nested = home / "sessions" / "sub"
    nested.mkdir()
    (nested / "deep.md").write_text("x", encoding="utf-8")
    os.utime(nested / "deep.md", (9000, 9000))
    assert resolve_session_log(home) == os.path.join(str(home), "sessions", "a.md")


def test_digest_decodes_invalid_utf8_with_replacement_and_drops_bom(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "bytes.md"
    path.write_bytes(b"\xef\xbb\xbfMEMO: caf\xe9 \xf0\x9f\x98\n")
    assert bodies_of(digest(file=path, dsh_home=home)) == ["caf\ufffd \ufffd"]


def test_digest_reads_at_most_8_mib(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_bytes(b"MEMO: head\n" + b"x" * (MAX_SOURCE_BYTES - 11) + b"\nMEMO: beyond the cap\n")
    result = digest(file=path, dsh_home=home, default_write_budget=5)
    assert bodies_of(result) == ["head"]


def bodies_of(result: dict[str, Any]) -> list[str]:
    return [c["body"] for c in result["candidates"]]


# --- session logs -------------------------------------------------------------------------------


def session_digest(lines: list[Any], home: Path) -> dict[str, Any]:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines)
    return digest(text=text, dsh_home=home)


def test_session_log_is_sniffed_from_the_first_non_blank_line(home: Path) -> None:
    assert session_digest(["", "  ", {"type": "x", "text": "MEMO: a"}], home)["sourceKind"] == "session-log"
    assert session_digest([{"text": "MEMO: a"}, {"type": "x"}], home)["sourceKind"] == "text"
    assert session_digest(['"just a string"', {"type": "x"}], home)["sourceKind"] == "text"
    assert session_digest(["[1, 2]", {"type": "x"}], home)["sourceKind"] == "text"
    assert session_digest(["not json", {"type": "x"}], home)["sourceKind"] == "text"
    assert session_digest(['{"type": "x", "v": NaN}'], home)["sourceKind"] == "text"  # JSON.parse rejects NaN


def test_session_records_flatten_to_type_and_joined_strings(home: Path) -> None:
    lines = [
        {"type": "session/user", "id": "u1", "timestamp": "t", "content": {"text": "set up"}},
        {
            "type": "session/assistant",
            "role": "assistant",
            "content": [{"type": "text", "text": "MEMO: keep it minimal"}, {"type": "tool", "value": 42}],
        },
        {"type": "session/user", "content": {"text": "REMEMBER this: mm:deploy-region we deploy"}},
        {"type": "session/assistant", "content": {"text": "总结：REST 架构。"}, "callId": "c1", "traceId": "t1"},
        {"type": "", "message": "no type string"},
        {"content": "line one\nSummary: multi-line text inside json"},
        '"plain JSON string line"',
        "12345",
        {"type": "session/tool", "extra": {"deep": {"deeper": ["nested Conclusion: found deep"]}}},
        "not json at all MEMO: raw line",
    ]
    assert kinds(session_digest(lines, home)) == [
        ("deploy-region", "uri", "we deploy"),
        ("memo-1", "explicit", "keep it minimal | assistant"),
        ("memo-2", "explicit", "raw line"),
        ("summary-1", "summary", "REST 架构。"),
        ("summary-2", "summary", "multi-line text inside json"),
        ("summary-3", "summary", "found deep"),
    ]


def test_flattening_puts_text_keys_first_and_array_index_keys_before_others(home: Path) -> None:
    record = (
        '{"type": "t", "zeta": "z", "10": "ten", "2": "two", "message": "m", "content": "mm:probe", '
        '"id": "skipped", "time": "skipped", "01": "not an index", "n": 7, "ok": true}'
    )
    # flattened: "t mm:probe | m | two | ten | z | not an index" (text keys content, message first;
    # then JS Object.entries order: integer-like keys ascending, the rest as inserted; ids and
    # non-strings dropped). The uri candidate's body is what follows "mm:probe".
    result = digest(text=record, dsh_home=home)
    assert result["sourceKind"] == "session-log"
    assert kinds(result) == [("probe", "uri", "| m | two | ten | z | not an index")]


def test_flattening_stops_below_depth_8(home: Path) -> None:
    # the record is depth 0, its values depth 1, so a string inside k lists sits at depth k + 1
    deep: Any = "Summary: too deep"
    for _ in range(8):
        deep = [deep]  # depth 9: dropped
    shallow: Any = "Summary: deep enough"
    for _ in range(7):
        shallow = [shallow]  # depth 8: kept
    result = session_digest([{"type": "x", "a": deep}, {"type": "x", "b": shallow}], home)
    assert bodies_of(result) == ["deep enough"]


def test_record_with_only_a_type_flattens_to_the_type(home: Path) -> None:
    result = session_digest([{"type": "x"}, {"type": "## Heading", "n": 1}, {"type": "y", "text": "body"}], home)
    assert kinds(result) == [("heading", "heading", "y body")]


def test_bom_before_a_session_log_still_flattens_the_first_record(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"type": "u", "text": "MEMO: first"}).encode() + b"\n")
    result = digest(file=path, dsh_home=home)
    assert result["sourceKind"] == "session-log"
    assert bodies_of(result) == ["first"]
