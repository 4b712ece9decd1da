"""The short guide every agent gets at session start: under 600 bytes in each language, and in every place an agent
looks — the hooks' SessionStart context, the AGENTS.md block, the MCP server's instructions, ``mmctl guide``
(issue 28)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mmd.core.guide import guide_text
from mmd.inject.guide import DISTILL, GUIDE_MAX_BYTES, agent_guide, distill_line, instructions, with_guide
from tests.test_mmctl_agents import mm, runner  # noqa: F401  (the fixture)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_guide_fits_its_600_bytes_and_says_what_to_propose_what_never_and_how(lang: str) -> None:
    guide = agent_guide(lang)
    assert len(guide.encode("utf-8")) < GUIDE_MAX_BYTES == 600
    assert "`mm: <" in guide and "mem_propose" in guide and "mmctl propose" in guide
    if lang == "en":
        for needed in ("standing rule or correction", "decision and its reason", "root cause", "build",
                       "Never secrets", "current task's state", "distill"):
            assert needed in guide
    assert len(distill_line(lang).encode()) < 300 and "`mm: …`" in distill_line(lang)
    assert agent_guide("auto") == agent_guide("fr") == agent_guide("en") and distill_line("auto") == DISTILL


def test_the_guide_comes_first_then_the_memory_and_alone_when_there_is_none() -> None:
    assert with_guide("Memory mm://local/ — …") == f"{agent_guide()}\n\nMemory mm://local/ — …"
    assert with_guide("") == agent_guide()
    assert instructions("zh", index_lines=300) == f"{agent_guide('zh')}\n\n{guide_text('zh', index_lines=300)}"


def test_mmctl_guide_prints_the_guide_then_the_reference(mm: Any) -> None:  # noqa: F811
    out = mm("guide").out
    assert out.startswith(agent_guide() + "\n\n") and out == instructions("en")
    assert mm("guide", "--lang", "zh").out.startswith(agent_guide("zh"))


def test_a_session_start_hook_and_the_exported_block_open_with_the_guide(mm: Any, tmp_path: Path) -> None:  # noqa: F811
    assert mm("write", "ui-tests", "--content", "Don't use playwright.", "--summary", "UI tests").code == 0
    start = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"}
    for form in ("claude-hook", "codex-hook"):
        out = mm("inject", "--format", form, stdin=json.dumps(start).encode()).out
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert context.startswith(agent_guide() + "\n\nMemory mm://local/") and "  Don't use playwright." in context
    resumed = mm("inject", "--format", "claude-hook", stdin=json.dumps({**start, "source": "resume"}).encode()).out
    assert json.loads(resumed)["hookSpecificOutput"]["additionalContext"] == agent_guide()  # nothing changed since
    prompt = {"session_id": "s-1", "hook_event_name": "UserPromptSubmit", "prompt": "go"}
    assert mm("inject", "--format", "claude-hook", stdin=json.dumps(prompt).encode()).out == ""
    agents = tmp_path / "AGENTS.md"
    assert mm("export", "agents-md", "--file", str(agents)).code == 0
    block = agents.read_text()
    assert block.startswith(f"<!-- mm:begin -->\n{agent_guide()}\n\nMemory mm://local/")
    assert "  Don't use playwright." in block
