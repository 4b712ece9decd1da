"""One injection from the roots of a scope: the project's root first, then the user root, each labelled.

``docs/projects.md``: an agent working in a project is told that project's memory
and the user's, never another project's. Each root keeps its own client view
(baseline, then deltas); this module only splits the byte budget between them
and joins their texts under a heading that says which root each part is from.

Owns: the section headings, the budget split, the joined result's shape. Never:
plans a root's injection (:mod:`.delta` does) or stores a view.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook before every prompt imports this module: nothing more at run time (issue 31)
    from collections.abc import Sequence
    from typing import Any

__all__ = ["DEFAULT_MAX_BYTES", "MODES", "budget_split", "heading", "join_injections", "join_texts"]

DEFAULT_MAX_BYTES = 6144
"""Default budget of one injection, UTF-8 bytes, every root's part in it (issue 28; it was 3072 when the baseline held
titles only; :mod:`.baseline` re-exports it). With the guide (at most 600 bytes, :mod:`.guide`) a session starts
with at most ~6.6 KiB: about 1,700 tokens of English (~4 bytes a token), 2,250 of code-heavy text (~3), under the
2,500 tokens Codex gives its own memory summary and a quarter of the 25 KiB of ``MEMORY.md`` Claude Code loads at
start; ``bench/inject_bench.py`` prints what a session gets."""

MODES = ("baseline", "delta", "reminder", "none")
"""Injection modes, the one that says most first: a joined injection takes the first any of its parts has."""
PROJECT_SHARE = 2 / 3
"""The project root's share of the byte budget when the user root is injected beside it."""


def budget_split(max_bytes: int, roots: int) -> list[int]:
    """The byte budget of each of ``roots`` parts (the project's first): all of it for one part, else
    :data:`PROJECT_SHARE` for the project and the rest for the user root (UTF-8 bytes)."""
    if roots <= 1:
        return [max_bytes]
    first = int(max_bytes * PROJECT_SHARE)
    return [first, max_bytes - first]


def heading(label: str, where: str | None = None) -> str:
    """The line above a part: ``Project memory (KEY, FOLDER):`` or ``User memory (every project):``."""
    if label == "user":
        return "User memory (every project):"
    return f"Project memory ({label}{f', {where}' if where else ''}):"


def join_texts(parts: Sequence[tuple[str, str]], where: str | None = None) -> str:
    """One text from ``(scope label, text)`` parts, the project's first: a single part as it is, else each
    non-empty one under its :func:`heading` (``where``: the project's folder), a blank line between."""
    if len(parts) == 1:
        return parts[0][1]
    return "\n\n".join(f"{heading(label, where)}\n{text}" for label, text in parts if text)


def join_injections(parts: Sequence[tuple[str, dict[str, Any]]], where: str | None = None) -> dict[str, Any]:
    """One ``memory.inject``-shaped result from ``(scope label, result)`` parts, the project's first.

    A single part is returned as it is (a user-root injection reads as before the memory home). With two, the
    non-empty texts are joined, each under its :func:`heading` (``where``: the project's folder); ``mode`` is
    the first of :data:`MODES` any part has; ``added``/``updated``/``removed``/``reminded`` list the parts'
    topics in order; ``unchanged`` and ``bytes`` are sums (``bytes``: UTF-8 of the joined text); ``roots`` keeps
    each part (``{scope, …its result}``); ``distill`` is the first part's distillation line, when one has it.
    """
    if len(parts) == 1:
        return parts[0][1]
    text = join_texts([(label, str(result.get("text") or "")) for label, result in parts], where)
    modes = {result.get("mode", "none") for _, result in parts}
    out: dict[str, Any] = {
        "mode": next(m for m in MODES if m in modes or m == "none"),
        "text": text,
        **{key: [t for _, r in parts for t in r.get(key, [])] for key in ("added", "updated", "removed", "reminded")},
        "unchanged": sum(int(r.get("unchanged", 0)) for _, r in parts),
        "bytes": len(text.encode("utf-8")),
        "roots": [{"scope": label, **result} for label, result in parts],
    }
    distill = next((r["distill"] for _, r in parts if r.get("distill")), None)
    if distill is not None:
        out["distill"] = distill
    return out
