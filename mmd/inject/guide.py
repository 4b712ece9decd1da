"""The short guide every agent gets at the start of a session, and the one distillation line (issue 28).

The guide says what memory is here, what is worth proposing and what never is, and how to propose: a line
``mm: …`` in a reply, or the proposal tool. It is the first thing of the ``SessionStart`` hook's context
(Claude Code, Codex), of the ``AGENTS.md`` block, of the MCP server's instructions and of ``mmctl guide``, so
it is kept under :data:`GUIDE_MAX_BYTES` in every language (``tests/test_agents_guide.py`` measures it).
:data:`DISTILL` is the one line a session gets once it has run :data:`DISTILL_AFTER_PROMPTS` prompts without
proposing anything (``[nudge] distill``); the guide tells the agent what to do with it.

Owns: those texts and their numbers. Never: reads config, files or clocks (standard library only: the hook
before every prompt imports it; the reference of :func:`instructions` is imported only when asked for).
"""

from __future__ import annotations

__all__ = ["DISTILL", "DISTILL_AFTER_PROMPTS", "GUIDE_MAX_BYTES", "agent_guide", "distill_line",
           "instructions", "with_guide"]

GUIDE_MAX_BYTES = 600
"""The most UTF-8 bytes the guide may take, in any language."""
DISTILL_AFTER_PROMPTS = 5
"""Prompts a session runs without a proposal before the next prompt carries :data:`DISTILL`. Measured on the 18
real sessions of ``../shared/real-sessions`` (``bench/distill_bench.py``): after 5 prompts the line reaches 14 of
the 18 sessions, more of the gold (35 of 102 items) has been said before it than for any other count up to 7, and no
session with nothing worth keeping gets it (after 1 to 4 prompts, one or two such sessions do); after 6 or more it
comes after less of the gold and misses more sessions (12 gold items in sessions it never reaches at 6, 17 at 7)."""

_GUIDE = {
    "en": (
        "Memory here outlasts this session; a person reviews what you propose. Propose what a later session "
        "needs: a person's standing rule or correction, a decision and its reason, a root cause, how to build, "
        "test or deploy. Never secrets, never the current task's state. How: a line `mm: <the fact>` in your "
        "reply, one fact each (`mm://<id>/<topic> <the fact>` adds to that note), or the mem_propose tool "
        "(`mmctl propose`), which can also replace a note. When asked to distill, propose what this session "
        "settled, or nothing."),
    "zh": (
        "这里的记忆在会话结束后保留；你提出的内容由人审核。只提议以后的会话需要的：用户的长期规则或纠正、"
        "决定及其理由、根因、如何构建/测试/部署。绝不提议密钥，也不提议当前任务的进度。方法：在回复中写一行 "
        "`mm: <事实>`，每行一条（`mm://<id>/<topic> <事实>` 追加到该笔记），或用 mem_propose 工具"
        "（`mmctl propose`，也可替换笔记）。被要求提炼时，提议本会话确定的内容，或什么都不提。"),
}
DISTILL = ("Memory: this session has proposed nothing yet. If it settled something a later session needs "
           "(a rule, a decision and its reason, a root cause, how to build or test), propose it now with "
           "`mm: …` lines; else ignore this.")
"""The distillation line (once per session, ``[nudge] distill = "once"``)."""
_DISTILL_ZH = ("记忆：本会话尚未提议任何内容。若它确定了以后的会话需要的东西"
               "（规则、决定及其理由、根因、如何构建或测试），现在用 `mm: …` 行提议；否则忽略本条。")


def agent_guide(lang: str = "en") -> str:
    """The guide in ``lang`` (``en`` | ``zh``; ``auto`` or anything else gives English), one paragraph, no final
    newline, at most :data:`GUIDE_MAX_BYTES` UTF-8 bytes."""
    return _GUIDE.get(lang, _GUIDE["en"])


def distill_line(lang: str = "en") -> str:
    """The distillation line in ``lang`` (as :func:`agent_guide` picks it)."""
    return _DISTILL_ZH if lang == "zh" else DISTILL


def with_guide(text: str, lang: str = "en") -> str:
    """The guide, a blank line, then ``text`` (the memory itself); the guide alone when ``text`` is empty."""
    guide = agent_guide(lang)
    return f"{guide}\n\n{text}" if text else guide


def instructions(lang: str = "en", *, index_lines: int = 200, index_bytes: int = 25600) -> str:
    """The MCP server's instructions and ``mmctl guide``: the guide, a blank line, then the protocol's reference
    (:func:`mmd.core.guide.guide_text`, quoting the index caps ``index_lines`` lines and ``index_bytes`` bytes)."""
    from mmd.core.guide import guide_text

    return f"{agent_guide(lang)}\n\n{guide_text(lang, index_lines=index_lines, index_bytes=index_bytes)}"
