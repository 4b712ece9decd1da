"""What a write may carry (issue 29): no hidden text in one-line fields, no secret unless a person allows it.

Owns: :func:`check_carried`, the write door's screen after :func:`.text.check_write_fields`. Hidden text
(bidi controls, zero-width and tag characters, other invisible format characters: :mod:`mmd.screen.hidden`,
standard library only, always on) is refused in a summary and in tags, and in a body unless the write
passes ``allow_hidden``; a topic is an ASCII slug, so it never holds any. Secrets are found by the
``screen`` the store's caller hands in (the daemon and ``mmctl`` pass :func:`mmd.screen.secrets.find_secrets`;
the core itself stays standard-library only), in the topic, the body, the summary and the tags; refused
unless the write passes ``allow_secret`` (never for a topic: it names files, URIs and commits). What a
person let through is returned, kinds and lines only, for the version history and the daemon's journal.

Errors name the field, the kind and the line, never the value: ``E_INVALID`` for hidden text,
``E_SECRET`` for a secret, each with ``details`` ``{field, hidden | secrets: [...]}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import ErrorCode, MMError

__all__ = ["SecretScreen", "check_carried"]

SecretScreen = Callable[[str], Sequence[Any]]
"""Finds the secrets of a text: items with ``kind`` (``github token``, …) and ``line`` (1-based) attributes."""

_MOST_NAMED = 3
"""Most findings a message names (``details`` holds them all)."""


def _hidden(field: str, value: str) -> list[dict[str, Any]]:
    from mmd.screen.hidden import find_hidden  # standard library only; loaded by writes, never by a read

    return [{"field": field, "code": h.code, "name": h.name, "kind": h.kind, "line": h.line, "index": h.index}
            for h in find_hidden(value)]


def _named(rows: Sequence[Mapping[str, Any]], what: Callable[[Mapping[str, Any]], str]) -> str:
    named = ", ".join(what(r) for r in rows[:_MOST_NAMED])
    return named + (f" and {len(rows) - _MOST_NAMED} more" if len(rows) > _MOST_NAMED else "")


def check_carried(fields: Mapping[str, str | None], *, screen: SecretScreen | None, allow_hidden: bool = False,
                  allow_secret: bool = False) -> dict[str, Any] | None:
    """Screen a write's ``fields`` (``topic``, ``content``, ``summary``, ``tags``; None: not written).

    Returns:
        What was let through, ``{secrets?: [{field, kind, line}], hidden?: [{field, code, name, kind, line,
        index}]}``, or None when nothing was.

    Raises:
        MMError(E_INVALID): for hidden text in ``summary`` or ``tags``, or in ``content`` without ``allow_hidden``.
        MMError(E_SECRET): for a secret in the topic, or elsewhere without ``allow_secret``.
    """
    allowed: dict[str, Any] = {}
    for field in ("summary", "tags", "content"):
        value = fields.get(field)
        found = _hidden(field, value) if isinstance(value, str) and value else []
        if not found:
            continue
        if field != "content" or not allow_hidden:
            how = "remove it" if field != "content" else "remove it, or pass --allow-hidden for a body of your own"
            raise MMError(ErrorCode.E_INVALID, f"{field} holds hidden text: " + _named(
                found, lambda h: f"{h['code']} {h['name']} ({h['kind']}) at line {h['line']}") + f"; {how}",
                details={"field": field, "hidden": found})
        allowed.setdefault("hidden", []).extend(found)
    if screen is None:
        return allowed or None
    for field in ("topic", "content", "summary", "tags"):
        value = fields.get(field)
        if not isinstance(value, str) or not value:
            continue
        secrets = [{"field": field, "kind": str(f.kind), "line": int(f.line)} for f in screen(value)]
        if not secrets:
            continue
        if field == "topic" or not allow_secret:
            how = "choose a topic that names no secret" if field == "topic" else \
                "write it without the value (say where it is kept), or pass --allow-secret for a write of your own"
            count = f"{len(secrets)} secrets" if len(secrets) > 1 else "a secret"
            raise MMError(ErrorCode.E_SECRET, f"{field} holds {count}: " + _named(
                secrets, lambda s: f"{s['kind']} at line {s['line']}") + f"; {how}",
                details={"field": field, "secrets": secrets})
        allowed.setdefault("secrets", []).extend(secrets)
    return allowed or None

