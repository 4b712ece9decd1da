"""Spans of a text replaced: what :func:`~.secrets.redact` and :func:`~.hidden.escape_hidden` share."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["replace_spans"]


def replace_spans(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, replacement)`` put in place of ``text[start:end]`` (code points; the spans
    in order and apart)."""
    out, last = [], 0
    for start, end, replacement in spans:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)
