"""The last guard on everything the MCP server gives an agent (issue 29; docs/trust.md, "The last guard").

Every tool result (its text blocks and every string of its ``structuredContent``), every tool error's message,
every resource's text and every resource listing's title and description passes
:func:`mmctl.injection.guarded`, the guard of the hooks and exports: secrets redacted (``‹secret: github token›``),
hidden text escaped (``\\u{202E}``). What the write door and the holds let through is never a secret nor hidden text;
a person's own ``mmctl write --allow-secret`` (or ``--allow-hidden``) note is kept in its file as written and still
reaches no agent raw, whichever tool or resource shows it (a read, a search's snippet, a queue candidate's
``current`` text, a digest of a file that holds one).

The MCP server lives as long as its agent session, so it pays once for loading ``detect-secrets``' provider patterns
(only when a text holds a token-like run) and redacts every kind the write door refuses, the providers' too.

Owns: the walk over a result. Never: redacts or escapes by itself (:mod:`mmd.screen` does), or changes a shape
(a string stays a string: the structured content still validates against the tool's output schema).
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from ..injection import guarded

__all__ = ["guarded_data", "guarded_result", "guarded_text"]


def guarded_text(text: str) -> str:
    """``text`` as an agent may read it: secrets redacted (every kind the write door refuses), hidden text escaped."""
    return guarded(text, providers=True)


def guarded_data(value: Any) -> Any:
    """``value`` (JSON: dicts, lists, strings, numbers, booleans, None) with every string guarded
    (:func:`guarded_text`); keys are kept, and a value without anything to guard is returned as it is."""
    if isinstance(value, str):
        return guarded_text(value)
    if isinstance(value, list):
        return [guarded_data(v) for v in value]
    if isinstance(value, dict):
        return {k: guarded_data(v) for k, v in value.items()}
    return value


def guarded_result(result: CallToolResult) -> CallToolResult:
    """A tool's ``result`` with its text blocks and its structured content guarded; other blocks are kept."""
    content = [c.model_copy(update={"text": guarded_text(c.text)}) if isinstance(c, TextContent) else c
               for c in result.content]
    structured = None if result.structured_content is None else guarded_data(result.structured_content)
    return result.model_copy(update={"content": content, "structured_content": structured})
