"""The agent-facing reference to the memory protocol, in English and Chinese.

``mmctl guide`` prints it and the MCP server sends it as its instructions, after the short guide every agent
gets at session start (:mod:`mmd.inject.guide`), so an agent learns the rules (index first, budgets, frozen
snapshot, proposals and the review queue) before its first tool call. Text only; nothing here reads or writes
memory.
"""

from __future__ import annotations

__all__ = ["GUIDE_LANGS", "guide_text"]

GUIDE_LANGS = ("en", "zh")

_EN = """\
You have a durable memory in the Memory Standard format (mm v1): plain markdown that outlives this session.

- Index first: MEMORY.md is the index, one entry per topic with a one-line summary. Read it (mem_read with no topic) \
before you start; open a note (mem_read with a topic) only when its summary says you need it.
- Notes: each topic has one detail file, memories/<topic>.md. Topics are ASCII slugs (letters, digits, '.', '_', \
'-'); content may be in any language. Address a note as mm://<memoryId>/<topic>, e.g. mm://local/deploy-region.
- Budgets never truncate: a write over its character budget, a note over its byte cap or an index over \
{lines} lines / {bytes} bytes fails with usage figures and writes nothing. Compress and retry; when the index is \
full, merge or delete entries (deletes are always allowed).
- Frozen snapshot: your reads show memory as it was when the session opened, so your prompt cache stays valid. \
Your writes reach disk at once and appear in the next session; mem_budget shows how many are pending. \
mem_reload takes a new snapshot; rewriting a note another agent changed since yours is refused until you reload \
and read it.
- What to keep: durable facts another session or agent will need (decisions and their reasons, constraints, \
environment, where things are, how to run them). Put the one-liner in the summary and the details in the note. \
Never store secrets.
- Proposals: a person decides what memory keeps. What you propose — a line "mm: <the fact>" in a reply, \
"mm://<memoryId>/<topic> <the fact>" to add to that note, or mem_propose (append to a note, or replace it with \
new text) — waits in the review queue, marked as yours with your reason, until a person accepts or rejects it. \
Unless the person set [agents] writes = "direct", mem_write and mem_delete are proposals too: the reply says \
"queued for review as #N" and the note stays as it is until it is accepted. mem_digest distills a session log or \
text into candidates without writing. Once per session, after a few prompts without a proposal, a line asks \
you to propose what the session settled: do so, or ignore it.
- By itself the queue also picks up a person's standing rules and corrections ("always …", "never \
…", "from now on …", "we use X", "prefer X over Y"), marks a person made ("mm:", "remember: …", "MEMO: …", \
记住：/记忆：), an agent's findings (a root cause, a fix, a pitfall, a decision with its reason, a plain \
statement about named code) and the durable sections of compaction summaries, one statement each, a few per \
session; a statement already in a note is not queued, and one said again (another session, another agent) \
ranks higher.
"""

_ZH = """\
你拥有一份遵循记忆标准（mm v1）的持久记忆：普通 Markdown 文件，会话结束后依然保留。

- 先读索引：MEMORY.md 是索引，每个主题一条，附一行摘要。开始工作前先读它（mem_read 不带 topic）；\
只有摘要表明需要时，才打开对应笔记（mem_read 带 topic）。
- 笔记：每个主题对应一个详细文件 memories/<topic>.md。主题是 ASCII slug（字母、数字、'.'、'_'、'-'），\
内容可用任何语言。用 mm://<memoryId>/<topic> 指代笔记，例如 mm://local/deploy-region。
- 预算绝不截断：写入超过字符预算、笔记超过字节上限、或索引超过 {lines} 行 / {bytes} 字节时，操作失败并返回用量，\
不写入任何内容。请压缩后重试；索引已满时，合并或删除条目（删除总是允许的）。
- 冻结快照：读取看到的是会话开始时的记忆，因此提示词缓存保持有效。写入立即落盘，在下一会话生效；\
mem_budget 显示待生效的写入数。mem_reload 重新取快照；改写其他 agent 在你的快照之后改过的笔记会被拒绝，\
需先 reload 并读取它。
- 记什么：其他会话或 agent 以后会用到的持久事实（决策及其理由、约束、环境、东西在哪、如何运行）。\
一行概述写进摘要，细节写进笔记。切勿保存密钥等机密。
- 提议：记忆保留什么由人决定。你的提议——回复中的一行 “mm: <事实>”、追加到某笔记的 \
“mm://<memoryId>/<topic> <事实>”，或 mem_propose（追加到笔记，或用新文本替换它）——会标记为你的提议并附上理由，\
进入审查队列，直到有人接受或拒绝。除非用户设置了 [agents] writes = "direct"，mem_write 和 mem_delete 也是提议：\
回复会说 “queued for review as #N”，笔记在被接受前保持不变。mem_digest 从会话日志或文本中提炼候选记忆，不写入。\
每个会话在若干轮提示都没有提议后，会有一行请你提议本会话确定的内容：照做，或忽略它。
- 队列还会自动收集：用户的长期规则与纠正（“always …”“never …”“以后…”“不要…”\
“我们用 X”“优先 X 而不是 Y”）、用户的标记（“mm:”“remember: …”“MEMO: …”“记住：”“记忆：”）、\
agent 的发现（根因、修复、坑、带理由的决定、关于具体代码的陈述）以及压缩摘要中的持久部分，\
每条一句，每个会话少量；已在笔记中的内容不会再入队，在其他会话或其他 agent 中重复出现的会排得更靠前。
"""


def guide_text(lang: str = "en", *, index_lines: int = 200, index_bytes: int = 25600) -> str:
    """The guide in ``lang`` (``en`` | ``zh``; ``auto`` or anything else gives English).

    ``index_lines`` (lines) and ``index_bytes`` (UTF-8 bytes) are the caps quoted in the text.
    """
    template = _ZH if lang == "zh" else _EN
    return template.format(lines=index_lines, bytes=index_bytes)
