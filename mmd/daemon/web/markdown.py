"""A note's or a candidate's body as HTML: markdown-it-py's ``js-default`` preset, safe without a sanitizer.

Owns: the one parser the page renders bodies with, and its link rule. Raw HTML is
off (``<script>`` shows as text), images are off (the page loads nothing from
elsewhere: its CSP would block them anyway), and a link is kept only when it is
``http://``, ``https://``, ``mailto:`` or an ``mm:`` URI of this memory, which
becomes a link to the note's page (``/note/<topic>``); any other target
(``javascript:``, ``vbscript:``, ``data:``, ``file:``, a relative path, an
``mm://`` URI of another memory) leaves the text as written, without a link. A
kept link carries ``rel="noopener noreferrer nofollow"``. Line breaks in the
text are kept (``breaks``: a chat message's lines are lines). The last
:data:`CACHED` renderings are kept (a page shown again after each decision
renders the same bodies: half its time was markdown). Never: an ``id``
or ``name`` attribute from the text (no DOM clobbering; no plugin that makes
them is loaded).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from mmd.core.text import TOPIC_RE
from mmd.core.uri import parse_uri

__all__ = ["CACHED", "LINK_SCHEMES", "Markdown", "cut_text"]

CACHED = 2048
"""Renderings kept, by text (most recently used first out)."""
LINK_SCHEMES = ("http://", "https://", "mailto:")
"""The link targets kept besides ``mm:`` URIs (compared lowercased)."""
NOTE_PATH = "/note/"


class Markdown:
    """Renders markdown bodies for the page.

    Args:
        memory_id: returns the memory id (``mm://<id>/<topic>`` of another id is not a link to this memory).
    """

    def __init__(self, memory_id: Callable[[], str]) -> None:
        self._memory_id = memory_id
        md = MarkdownIt("js-default", {"breaks": True})
        md.disable("image")
        md.normalizeLink = self._normalize  # type: ignore[method-assign]
        md.validateLink = _valid  # type: ignore[method-assign]
        md.add_render_rule("link_open", _link_open)
        self._md = md
        self._cached = functools.lru_cache(maxsize=CACHED)(self._render)

    def render(self, text: str) -> str:
        """``text`` (markdown, any length) as an HTML fragment (UTF-8 text, safe to insert as it is)."""
        return self._cached(text, self._memory_id())

    def _render(self, text: str, memory_id: str) -> str:
        return str(self._md.render(text))

    def _normalize(self, url: str) -> str:
        """An ``mm:`` URI of this memory → its note's page; anything else as markdown-it normalizes it."""
        parsed = parse_uri(url.strip())
        if parsed is not None and parsed.memory_id in (None, self._memory_id()) and TOPIC_RE.fullmatch(parsed.topic):
            return NOTE_PATH + parsed.topic
        return str(MarkdownIt.normalizeLink(self._md, url))


def _valid(url: str) -> bool:
    """Whether a normalized link target stays a link: :data:`LINK_SCHEMES` or a note's page."""
    lowered = url.lower()
    if lowered.startswith(NOTE_PATH):
        return bool(TOPIC_RE.fullmatch(url[len(NOTE_PATH):]))
    return lowered.startswith(LINK_SCHEMES)


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    if not str(token.attrGet("href") or "").startswith(NOTE_PATH):
        token.attrSet("rel", "noopener noreferrer nofollow")
    return str(self.renderToken(tokens, idx, options, env))


def cut_text(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` code points at the last space before it: ``(shown, code points left out)``.

    A text within ``limit`` comes back whole (``left out`` 0); one without a space in its second half is cut at
    ``limit`` exactly.
    """
    if len(text) <= limit:
        return text, 0
    head = text[:limit]
    space = head.rfind(" ")
    shown = head[:space] if space > limit // 2 else head
    return shown.rstrip(), len(text) - len(shown.rstrip())
