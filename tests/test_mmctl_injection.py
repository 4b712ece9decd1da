"""Injection without a daemon (issue 14): the client's view is a file under ``<root>/.mmd/inject/``, written
only on commit, under the root's lock; and the Claude Code hook's input and output shapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mmctl.injection import hook_input, hook_output, plan_direct, state_files

from mmd.core import Memory, MemoryOptions
from mmd.core.errors import MMError

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def root(tmp_path: Path) -> tuple[MemoryOptions, Memory, Clock]:
    clock = Clock()
    options = MemoryOptions.create(root=tmp_path / "root", env={"DSH_HOME": str(tmp_path)})
    memory = Memory.ensure(options, now=clock, fts5=False)
    assert memory.write("alpha", "First.", summary="The first note")["ok"]
    assert memory.write("beta", "Second.", summary="The second note")["ok"]
    return options, memory, clock


def test_on_the_files_baseline_none_delta_dropped_and_removed(root: tuple[MemoryOptions, Memory, Clock]) -> None:
    options, memory, clock = root
    first = plan_direct(options, "agent", now=clock)
    assert first.result["mode"] == "baseline" and "- alpha: The first note <mm://local/alpha>" in first.text
    assert state_files(options.root) == []  # nothing stored before the commit
    first.commit()
    assert first.result["committed"] is True and len(state_files(options.root)) == 1
    none = plan_direct(options, "agent", now=clock)
    assert none.result["mode"] == "none" and none.text == ""
    none.commit()

    assert memory.write("gamma", "Third.", summary="The third note")["ok"]
    dropped = plan_direct(options, "agent", now=clock)
    assert dropped.result["mode"] == "delta" and dropped.result["added"] == ["gamma"]
    again = plan_direct(options, "agent", now=clock)  # the first was never committed
    assert again.result["added"] == ["gamma"]
    again.commit()
    assert plan_direct(options, "agent", now=clock).result["mode"] == "none"
    assert memory.delete("alpha")["removed"]
    gone = plan_direct(options, "agent", now=clock)
    assert gone.result["removed"] == ["alpha"] and gone.result["unchanged"] == 2

    other = plan_direct(options, "other", now=clock)  # a second client has its own view
    assert other.result["mode"] == "baseline"
    assert plan_direct(options, "agent", now=clock, reset=True).result["mode"] == "baseline"


def test_an_expired_or_damaged_view_gives_a_baseline(root: tuple[MemoryOptions, Memory, Clock]) -> None:
    options, _, clock = root
    plan_direct(options, "agent", now=clock).commit()
    clock.now = START + timedelta(days=29)
    assert plan_direct(options, "agent", now=clock).result["mode"] == "none"
    clock.now = START + timedelta(days=31)
    assert plan_direct(options, "agent", now=clock).result["mode"] == "baseline"
    plan_direct(options, "agent", now=clock).commit()
    view = state_files(options.root)[0]
    view.write_text("{not json")
    assert plan_direct(options, "agent", now=clock).result["mode"] == "baseline"
    with pytest.raises(MMError):
        plan_direct(options, "a\nb", now=clock)
    with pytest.raises(MMError):
        plan_direct(options, "agent", now=clock, max_bytes=5)


def test_a_missing_root_is_not_initialized(tmp_path: Path) -> None:
    options = MemoryOptions.create(root=tmp_path / "nowhere", env={"DSH_HOME": str(tmp_path)})
    with pytest.raises(MMError) as error:
        plan_direct(options, "agent", now=Clock())
    assert error.value.code.value == "E_NOT_INITIALIZED" and not (tmp_path / "nowhere").exists()


def test_the_claude_code_hook_input_and_output_shapes() -> None:
    start = hook_input(json.dumps({"session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": "/p",
                                   "permission_mode": "default", "hook_event_name": "SessionStart",
                                   "source": "compact"}).encode())
    assert (start.client_key, start.event, start.reset) == ("claude-code:abc123", "SessionStart", True)
    prompt = hook_input(b'{"session_id": "abc123", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}')
    assert prompt.client_key == start.client_key and not prompt.reset
    assert json.loads(hook_output("SessionStart", "Memory …")) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "Memory …"}}
    assert hook_output("UserPromptSubmit", "") == ""
    for bad in (b"not json", b"[]", b'{"hook_event_name": "SessionStart"}',
                b'{"session_id": "x", "hook_event_name": "PreToolUse"}'):
        with pytest.raises(MMError):
            hook_input(bad)
