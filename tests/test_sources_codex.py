"""The codex source over small fixtures: prompts once, injected context never, both line formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mmd.sources.codex import CodexSource, typed_prompt
from tests.test_sources_claude_code import FIXTURES, pairs, read_all

SESSIONS = FIXTURES / "codex" / "sessions"
ROLLOUT = SESSIONS / "2026/02/17/rollout-2026-02-17T07-50-05-019c68dc-783e-7226-b63c-5ab791b7584a.jsonl"
WORKER = SESSIONS / "2026/02/17/rollout-2026-02-17T08-00-00-019c68dc-0000-7226-b63c-5ab791b7584a.jsonl"
LEGACY = SESSIONS / "2025/09/09/rollout-2025-09-09T20-47-38-981d779b-eff6-469e-bb55-b423fe135b79.jsonl"

EXPECTED = [
    ("human", "KEEP-CH1 run clippy before you say done"),
    ("assistant", "KEEP-CA1 clippy is clean now."),
    ("human", "KEEP-CH2 add a --tail option to the CLI, default 10 lines"),
    ("assistant", "KEEP-CA2 --tail added."),
    ("summary", "KEEP-CS1 clippy must be clean; --tail exists."),
    ("human", "KEEP-CH3 now the docs"),
]


def test_each_prompt_and_reply_once_and_no_injected_context() -> None:
    utterances, _, slices = read_all(CodexSource(), ROLLOUT)
    assert pairs(utterances) == EXPECTED
    assert not [u.text for u in utterances if "NOISE" in u.text]
    first = utterances[0]
    assert first.agent == "codex" and first.session_id == "019c68dc-783e-7226-b63c-5ab791b7584a"
    assert first.project == "/home/ana/code/kiln" and first.at == "2026-02-16T23:50:11.000Z"
    assert first.position.file == str(ROLLOUT) and first.position.line == 6
    assert slices[-1].session_id == first.session_id


def test_a_prompt_waits_for_its_turn_to_stand_across_reads(tmp_path: Path) -> None:
    source = CodexSource()
    path = tmp_path / ROLLOUT.name
    lines = ROLLOUT.read_bytes().splitlines(keepends=True)
    got = []
    cursor = None
    for line in lines:
        with path.open("ab") as f:
            f.write(line)
        part, cursor, _ = read_all(source, path, cursor)
        got.extend(part)
    assert pairs(got) == EXPECTED


def test_an_export_without_prompt_events_keeps_its_prompts_once(tmp_path: Path) -> None:
    """A rollout exported without its ``user_message`` events (a dedupe tool keeping only the response
    items) still gives every prompt, once, also when read a line at a time."""
    path = tmp_path / ROLLOUT.name
    lines = []
    for line in ROLLOUT.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        if record["payload"].get("type") == "user_message":  # the prompt as its response item, if not there yet
            item = {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": record["payload"]["message"]}]}
            line = json.dumps({**record, "type": "response_item", "payload": item}).encode() + b"\n"
            if lines and json.loads(lines[-1])["payload"] == item:
                continue
        lines.append(line)
    assert not [line for line in lines if b"user_message" in line]
    path.write_bytes(b"".join(lines))
    assert pairs(read_all(CodexSource(), path)[0]) == EXPECTED
    path.write_bytes(b"")
    got, cursor = [], None
    for line in lines:
        with path.open("ab") as f:
            f.write(line)
        part, cursor, _ = read_all(CodexSource(), path, cursor)
        got.extend(part)
    assert pairs(got) == EXPECTED


def test_a_rollout_naming_no_session_is_the_session_its_file_name_says(tmp_path: Path) -> None:
    """An export without ``session_meta`` and without a uuid in its name: its utterances carry the file's name as
    their session id (the queue can filter and group by it), not none."""
    path = tmp_path / "rollout-20260214002446_in-the-json-i-have-doubles.jsonl"
    path.write_bytes(b"".join(line for line in ROLLOUT.read_bytes().splitlines(keepends=True)
                              if b'"session_meta"' not in line))
    utterances = read_all(CodexSource(), path)[0]
    assert pairs(utterances) == EXPECTED
    assert {u.session_id for u in utterances} == {"20260214002446_in-the-json-i-have-doubles"}


def test_legacy_rollouts_take_prompts_from_response_items() -> None:
    utterances, _, slices = read_all(CodexSource(), LEGACY)
    assert pairs(utterances) == [("human", "KEEP-LH1 write a viewer for the logs"),
                                 ("assistant", "KEEP-LA1 the viewer is in render.py")]
    assert utterances[0].session_id == "981d779b-eff6-469e-bb55-b423fe135b79"
    assert utterances[0].project == "/home/ana/code/viewer" and utterances[0].at is None


def test_subagent_rollouts_yield_nothing() -> None:
    utterances, _, _ = read_all(CodexSource(), WORKER)
    assert utterances == []


def test_classify_and_default_dir(tmp_path: Path) -> None:
    source = CodexSource()
    assert source.classify(ROLLOUT, SESSIONS) and source.classify(LEGACY, SESSIONS)
    assert not source.classify(SESSIONS / "2026/02/17/notes.jsonl", SESSIONS)
    assert not source.classify(SESSIONS / "rollout-x.jsonl", SESSIONS)
    assert not source.classify(SESSIONS / "archived/02/17/rollout-x.jsonl", SESSIONS)
    assert source.default_dir({}, Path("/h")) == Path("/h/.codex/sessions")
    assert source.default_dir({"CODEX_HOME": "/c"}, Path("/h")) == Path("/c/sessions")
    assert not source.is_live(ROLLOUT)


def test_injected_user_texts_are_recognised() -> None:
    assert typed_prompt("  <ENVIRONMENT_CONTEXT>\n<cwd>/x</cwd>\n</environment_context>") is None
    assert typed_prompt("<user_instructions>\nrules\n</user_instructions>") is None
    assert typed_prompt("# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>…</INSTRUCTIONS>") is None
    assert typed_prompt("# Context from my IDE setup:\n\n## My request for Codex:\nfix it\n") == "fix it"
    assert typed_prompt("# Context from my IDE setup:\n\n## Open tabs:\n- a.py") is None
    assert typed_prompt("use <environment_context> tags in the docs") == "use <environment_context> tags in the docs"


def test_a_rewritten_file_is_read_again_without_repeats(tmp_path: Path) -> None:
    source = CodexSource()
    path = tmp_path / ROLLOUT.name
    shutil.copy(ROLLOUT, path)
    first, cursor, _ = read_all(source, path)
    assert pairs(first) == EXPECTED
    copy = tmp_path / "copy.jsonl"
    shutil.copy(ROLLOUT, copy)
    copy.replace(path)  # the same content under a new inode
    again = source.read(str(path), cursor, max_bytes=1 << 30, max_chars=1 << 30)
    assert again.restarted and again.utterances == []


def test_caps_split_a_read_without_losing_or_repeating() -> None:
    utterances, _, slices = read_all(CodexSource(), ROLLOUT, max_bytes=300)
    assert len(slices) > 5 and pairs(utterances) == EXPECTED
