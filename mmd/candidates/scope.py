"""Which root a candidate is proposed to: its project's, or the user root (``docs/projects.md``).

A candidate said in a project's session belongs to that project's root, with one
exception: a person's standing rule or preference about *themselves* — how the
agent should talk to them, the tools of their own machine — holds in every
project, so it is proposed to the user root ("always answer in English", "I use
fish", "keep replies short"). The test is deliberately narrow, because a rule
wrongly sent to the user root is injected into every project:

- the person said it (``who == human``), as a standing rule or preference
  (the ``rule`` and ``preference`` kinds, or a line marked on purpose);
- it names nothing of a code base: no backticks, paths, file names, URLs,
  identifiers (``snake_case``, ``camelCase``, ``a.b()``), version numbers;
- it is about the person or the conversation: replies, language, tone, length,
  asking before acting in general, or their own machine (``I use …``, ``my
  shell/editor/OS``). English and Chinese cues.

Everything else stays with its project; a person moves a candidate with
``queue accept --user`` (or ``--project``). Pure: no I/O.
"""

from __future__ import annotations

from mmd.core.lazyre import lazy_compile

from .model import NewCandidate

__all__ = ["PERSONAL_KINDS", "is_personal", "proposed_scope"]

PERSONAL_KINDS = frozenset({"rule", "preference", "explicit", "uri"})
"""Kinds a person's standing rule or preference takes (the rules' families, and marks made on purpose)."""

_CODE = lazy_compile(
    r"`|https?://|\b[\w.-]+/[\w./-]+|\b\w+\.(?:py|ts|tsx|js|jsx|go|rs|java|rb|md|json|ya?ml|toml|sh|sql|c|h|cpp|css|html)\b"
    r"|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\w\(\)|\bv?\d+\.\d+(?:\.\d+)?\b|::")
"""Marks of a code base: code spans, URLs, paths, file names, identifiers, calls, versions."""
_PERSONAL = lazy_compile(
    r"(?i)\b(?:answer|answers|reply|replies|respond|responses?|talk to me|speak|explain(?:ing)? (?:things )?to me"
    r"|in (?:english|chinese|french|german|spanish|japanese|portuguese)|language|tone|emojis?|concise|verbose"
    r"|short(?:er)? (?:answers|replies|responses)|my (?:shell|editor|terminal|os|machine|laptop|keyboard|name)"
    r"|i (?:use|prefer|like) (?:fish|zsh|bash|vim|neovim|emacs|vs ?code|macos|linux|windows|dark mode|tabs|spaces)"
    r"|call me|address me|ask me before|don't ask me|do not ask me|check with me)\b"
    r"|(?:回答|回复|用中文|用英文|语气|简洁|我的(?:终端|编辑器|电脑|系统)|叫我)")
"""Cues of a statement about the person or the conversation, not a project."""


def is_personal(text: str) -> bool:
    """Whether ``text`` reads as a person's rule about themselves or the conversation (see the module docstring)."""
    return _CODE.search(text) is None and _PERSONAL.search(text) is not None


def proposed_scope(candidate: NewCandidate, project_key: str | None) -> str:
    """``user`` or ``project_key``: the root ``candidate`` is proposed to (``user`` when it has no project)."""
    if project_key is None:
        return "user"
    human = any(e.who == "human" for e in candidate.evidence)
    if human and candidate.kind in PERSONAL_KINDS and is_personal(candidate.body):
        return "user"
    return project_key
