"""``mm://`` URIs (mm v1 §5): the canonical ``mm://<memoryId>/<topic>`` and shorthand ``mm:<topic>``."""

from __future__ import annotations

import re

from .lazyre import lazy_compile
from .text import validate_topic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple

__all__ = ["ParsedUri", "parse_uri", "uri_for"]

_SLUG = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_CANONICAL = lazy_compile(rf"mm://({_SLUG})/({_SLUG})", re.ASCII)
_SHORTHAND = lazy_compile(rf"mm:({_SLUG})", re.ASCII)


if TYPE_CHECKING:
    class _UriParts(NamedTuple):
        memory_id: str | None
        topic: str
else:
    from collections import namedtuple

    _UriParts = namedtuple("_UriParts", ("memory_id", "topic"))


class ParsedUri(_UriParts):
    """A parsed URI (a named tuple ``(memory_id, topic)``); ``memory_id`` is None for the shorthand form."""

    __slots__ = ()

    def to_json(self) -> dict[str, str | None]:
        return {"memoryId": self.memory_id, "topic": self.topic}


def uri_for(memory_id: str, topic: str) -> str:
    """``mm://<memory_id>/<topic>``.

    Raises:
        MMError(E_INVALID): if ``topic`` is not a slug.
    """
    validate_topic(topic)
    return f"mm://{memory_id}/{topic}"


def parse_uri(uri: object) -> ParsedUri | None:
    """Parse an exact ``mm://<slug>/<slug>`` or ``mm:<slug>``; None for anything else.

    Like the reference, slugs are not length-checked here.
    """
    if not isinstance(uri, str):
        return None
    match = _CANONICAL.fullmatch(uri)
    if match:
        return ParsedUri(match.group(1), match.group(2))
    match = _SHORTHAND.fullmatch(uri)
    if match:
        return ParsedUri(None, match.group(1))
    return None
