"""The claude-code source over small fixtures: which records are text, cursors, replays, live files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mmd.sources.base import Slice, Source, Utterance
from mmd.sources.claude_code import ClaudeCodeSource

FIXTURES = Path(__file__).parent / "fixtures" / "sources"
PROJECTS = FIXTURES / "claude" / "projects"
KILN = PROJECTS / "-home-ana-code-kiln"
MAIN = KILN / "11111111-2222-4333-8444-555555555555.jsonl"
OLD = KILN / "22222222-2222-4333-8444-555555555555.jsonl"
RESUMED = KILN / "33333333-2222-4333-8444-555555555555.jsonl"
BIG = 1 << 40


def read_all(source: Source, path: Path | str, cursor: dict[str, Any] | None = None,
             *, max_bytes: int = BIG, max_chars: int = BIG) -> tuple[list[Utterance], dict[str, Any], list[Slice]]:
    """Read until ``more`` is False, passing the cursor through JSON each time as the daemon stores it."""
    out: list[Utterance] = []
    slices: list[Slice] = []
    while True:
        got = source.read(str(path), cursor, max_bytes=max_bytes, max_chars=max_chars)
        slices.append(got)
        out.extend(got.utterances)
        cursor = json.loads(json.dumps(got.cursor))
        if not got.more:
            return out, cursor, slices


def pairs(utterances: list[Utterance]) -> list[tuple[str, str]]:
    return [(u.who, u.text) for u in utterances]


EXPECTED = [
    ("human", "KEEP-H1 always build kiln with `make release`, never plain make"),
    ("assistant", "KEEP-A1 Understood, `make release` it is."),
    ("human", "KEEP-H2 the config lives in kiln.toml"),
    ("human", "KEEP-Q1 btw use tabs in the Makefile"),
    ("human", "KEEP-Q2 and run the linter first"),
    ("summary", "This session is being continued from a previous conversation that ran out of context. "
                "The summary below covers the earlier portion.\n\n"
                "Summary:\n1. KEEP-S1 the user builds with make release"),
    ("assistant", "KEEP-A2 done, tabs everywhere."),
    ("human", "KEEP-H3 thanks"),
]


def test_only_typed_prompts_replies_and_summaries_are_utterances() -> None:
    utterances, _, _ = read_all(ClaudeCodeSource(), MAIN)
    assert pairs(utterances) == EXPECTED
    assert not [u.text for u in utterances if "NOISE" in u.text]


def test_utterances_carry_session_project_time_and_position() -> None:
    utterances, _, slices = read_all(ClaudeCodeSource(), MAIN)
    first = utterances[0]
    assert first.agent == "claude-code"
    assert first.session_id == "11111111-2222-4333-8444-555555555555"
    assert first.project == "/home/ana/code/kiln"
    assert first.at == "2026-02-12T10:01:00.000Z"
    assert first.position.file == str(MAIN) and first.position.line == 1 and first.position.uuid == "u-0001"
    queued = utterances[3]
    assert queued.position.line == 14 and queued.position.uuid is None and queued.at == "2026-02-12T10:40:00.000Z"
    assert slices[-1].session_id == first.session_id and slices[-1].project == "/home/ana/code/kiln"


def test_classify_takes_session_files_only(tmp_path: Path) -> None:
    source = ClaudeCodeSource()
    assert source.classify(MAIN, PROJECTS)
    assert not source.classify(KILN / "11111111-2222-4333-8444-555555555555" / "subagents" / "agent-a1b2c3d.jsonl",
                               PROJECTS)
    assert not source.classify(KILN / "agent-a1b2c3d4.jsonl", PROJECTS)  # 2.0.x subagent beside the sessions
    assert not source.classify(KILN / "subagents" / "agent-acompact-946d2b.jsonl", PROJECTS)
    assert not source.classify(PROJECTS / "11111111-2222-4333-8444-555555555555.jsonl", PROJECTS)
    assert not source.classify(MAIN, tmp_path)


def test_default_dir_honours_claude_config_dir() -> None:
    source = ClaudeCodeSource()
    assert source.default_dir({}, Path("/home/ana")) == Path("/home/ana/.claude/projects")
    assert source.default_dir({"CLAUDE_CONFIG_DIR": "/cfg"}, Path("/home/ana")) == Path("/cfg/projects")
    assert not source.is_live(MAIN)


def test_a_resumed_session_does_not_repeat_the_records_it_replays(tmp_path: Path) -> None:
    source = ClaudeCodeSource()
    old, _, _ = read_all(source, OLD)
    new, _, _ = read_all(source, RESUMED)
    assert [u.text for u in old] == ["KEEP-R1 first day prompt", "KEEP-R2 first day reply"]
    assert [u.text for u in new] == ["KEEP-R3 second day prompt", "KEEP-R4 second day reply"]
    assert {u.session_id for u in new} == {"33333333-2222-4333-8444-555555555555"}
    # the older transcript was cleaned up: its text survives only in the replay, so it is read there
    alone = tmp_path / RESUMED.name
    shutil.copy(RESUMED, alone)
    kept, _, _ = read_all(source, alone)
    assert [u.text for u in kept][:2] == ["KEEP-R1 first day prompt", "KEEP-R2 first day reply"]
    assert kept[0].session_id == "22222222-2222-4333-8444-555555555555"


def _lines() -> list[bytes]:
    return MAIN.read_bytes().splitlines(keepends=True)


def test_a_growing_file_read_line_by_line_with_torn_tails_gives_the_same_utterances(tmp_path: Path) -> None:
    source = ClaudeCodeSource()
    path = tmp_path / MAIN.name
    path.write_bytes(b"")
    got: list[Utterance] = []
    cursor: dict[str, Any] | None = None
    for line in _lines():
        with path.open("ab") as f:
            f.write(line[:-7])  # a torn tail: never read
        part, cursor, _ = read_all(source, path, cursor)
        got.extend(part)
        with path.open("ab") as f:
            f.write(line[-7:])
        part, cursor, _ = read_all(source, path, cursor)
        got.extend(part)
    assert pairs(got) == EXPECTED


def test_caps_split_a_read_without_losing_or_repeating() -> None:
    source = ClaudeCodeSource()
    by_bytes, _, slices = read_all(source, MAIN, max_bytes=200)
    assert len(slices) > 5 and all(s.more for s in slices[:-1])
    assert pairs(by_bytes) == EXPECTED
    by_chars, _, slices = read_all(source, MAIN, max_chars=10)
    assert pairs(by_chars) == EXPECTED
    assert all(len(s.utterances) <= 1 for s in slices)


def test_a_truncated_or_replaced_file_is_read_again_without_repeats(tmp_path: Path) -> None:
    source = ClaudeCodeSource()
    path = tmp_path / MAIN.name
    shutil.copy(MAIN, path)
    first, cursor, _ = read_all(source, path)
    assert pairs(first) == EXPECTED
    lines = _lines()
    path.write_bytes(b"".join(lines[:5]))  # truncated (a rewrite by another writer)
    again = source.read(str(path), cursor, max_bytes=BIG, max_chars=BIG)
    assert again.restarted and again.utterances == []
    replaced = tmp_path / "new.jsonl"
    replaced.write_bytes(b"".join(lines) + json.dumps(
        {"type": "user", "uuid": "u-new", "sessionId": "11111111-2222-4333-8444-555555555555",
         "message": {"role": "user", "content": "KEEP-H4 one more"}}).encode() + b"\n")
    replaced.replace(path)
    last = source.read(str(path), again.cursor, max_bytes=BIG, max_chars=BIG)
    assert last.restarted and pairs(last.utterances) == [("human", "KEEP-H4 one more")]


def test_a_record_written_twice_is_one_utterance(tmp_path: Path) -> None:
    source = ClaudeCodeSource()
    path = tmp_path / MAIN.name
    shutil.copy(MAIN, path)
    _, cursor, _ = read_all(source, path)
    with path.open("ab") as f:
        f.write(_lines()[1])  # a second writer repeats the first prompt's record
    repeat, _, _ = read_all(source, path, cursor)
    assert repeat == []


def test_a_corrupt_line_is_skipped_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / MAIN.name
    lines = _lines()
    path.write_bytes(lines[0] + b'{"type":"user","message":{"content":"KEEP broken\n' + b"".join(lines[1:]))
    utterances, _, _ = read_all(ClaudeCodeSource(), path)
    assert pairs(utterances) == EXPECTED


def test_a_vanished_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ClaudeCodeSource().read(str(tmp_path / "gone.jsonl"), None, max_bytes=BIG, max_chars=BIG)
