"""Text measurement and identifier helpers (mm v1 §1, reference ``text.ts``).

A *character* is a Unicode code point, a *byte* a UTF-8 byte, and a *line* an
editor-displayed line: a trailing ``\\n`` does not open a new line and ``\\r`` is
not a line break. Whitespace means JavaScript's ``\\s`` set, so trimming and
folding agree byte for byte with the reference.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import ErrorCode, MMError
from .lazyre import lazy_compile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TypedDict

__all__ = [
    "JS_WS",
    "Measure",
    "TOPIC_MAX_LENGTH",
    "TOPIC_RE",
    "byte_length",
    "check_line_field",
    "check_text_field",
    "check_write_fields",
    "count_chars",
    "count_lines",
    "first_line",
    "fold_line_breaks",
    "js_trim",
    "measure",
    "normalize_line",
    "parse_tags",
    "refuse_case_twin",
    "slug_for_topic",
    "validate_topic",
]

JS_WS = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""JavaScript's ``\\s`` as a regex character-class body (differs from Python's ``\\s``)."""

_WS_CHARS = "".join(
    ["\t\n\x0b\x0c\r \xa0\u1680", *map(chr, range(0x2000, 0x200B)), "\u2028\u2029\u202f\u205f\u3000\ufeff"])
_WS_RUN = lazy_compile(f"[{JS_WS}]+")
_TAG_SPLIT = lazy_compile("[,，;；]")
_SLUG_JUNK = lazy_compile(r"[^a-z0-9._-]+")

TOPIC_MAX_LENGTH = 64
"""Longest topic slug, in characters (all ASCII)."""
TOPIC_RE = lazy_compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
"""The topic slug grammar (mm v1 §1); use with ``fullmatch``."""


if TYPE_CHECKING:
    class Measure(TypedDict):
        """Sizes of one text: code points, UTF-8 bytes, §1 lines, UTF-16 code units."""

        chars: int
        bytes: int
        lines: int
        utf16: int

else:
    Measure = dict

def js_trim(value: str) -> str:
    """Strip leading and trailing whitespace as JavaScript's ``String.prototype.trim`` does."""
    return value.strip(_WS_CHARS)


def count_chars(value: str) -> int:
    """Number of Unicode code points in ``value``."""
    return len(value)


def byte_length(value: str) -> int:
    """Number of UTF-8 bytes of ``value`` (lone surrogates count 3, as Node's replacement does)."""
    return len(value.encode("utf-8", "surrogatepass"))


def count_lines(text: str) -> int:
    """Editor lines of ``text`` (mm v1 §1): 0 for ``""``; a final ``\\n`` opens no line."""
    if not text:
        return 0
    newlines = text.count("\n")
    return newlines if text.endswith("\n") else newlines + 1


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def measure(text: str) -> Measure:
    """All four sizes of ``text`` at once (see :class:`Measure`)."""
    return {
        "chars": count_chars(text),
        "bytes": byte_length(text),
        "lines": count_lines(text),
        "utf16": _utf16_len(text),
    }


def validate_topic(topic: object) -> str:
    """Return ``topic`` unchanged if it is a valid slug (mm v1 §1).

    Raises:
        MMError(E_INVALID): if it is not a string, is empty, is longer than
            :data:`TOPIC_MAX_LENGTH` characters, or does not match :data:`TOPIC_RE`.
    """
    if isinstance(topic, str) and len(topic) <= TOPIC_MAX_LENGTH and TOPIC_RE.fullmatch(topic):
        return topic  # the common case: one regex, no UTF-16 count
    if not isinstance(topic, str):
        raise MMError(ErrorCode.E_INVALID, "topic must be a string")
    if not topic:
        raise MMError(ErrorCode.E_INVALID, "topic must not be empty")
    if _utf16_len(topic) > TOPIC_MAX_LENGTH:
        raise MMError(ErrorCode.E_INVALID, f"topic must be at most {TOPIC_MAX_LENGTH} characters")
    if not TOPIC_RE.fullmatch(topic):
        raise MMError(
            ErrorCode.E_INVALID,
            f"topic {_js_quote(topic)} is not a valid slug: use letters, digits, '.', '_' and '-' "
            "(no separators, no leading separators)",
        )
    return topic


_UNREADABLE = lazy_compile("[\x00\ud800-\udfff]")
_LINE_BREAKING = lazy_compile("[\x00\ud800-\udfff\n\r\x0b\x0c\x85\u2028\u2029]")


def check_text_field(name: str, value: str) -> str:
    """Return ``value`` unchanged if a reader can read back what a writer writes (issue 11).

    Raises:
        MMError(E_INVALID): naming ``name`` and the code point's index, if ``value``
            holds a NUL or a lone surrogate (UTF-8 cannot carry it; a NUL ends C strings).
    """
    bad = _UNREADABLE.search(value)
    if bad is not None:
        raise MMError(ErrorCode.E_INVALID, f"{name} must not contain U+{ord(bad.group()):04X} "
                                           f"(at code point {bad.start()})", details=name)
    return value


def check_line_field(name: str, value: str) -> str:
    """Return ``value`` unchanged if it fits on one line of an mm v1 file (issue 11).

    Besides what :func:`check_text_field` refuses: CR, LF, VT, FF, NEL, U+2028 and U+2029,
    the characters some reader takes for a line break.

    Raises:
        MMError(E_INVALID): naming ``name``, the code point and its index.
    """
    bad = _LINE_BREAKING.search(value)
    if bad is not None:
        raise MMError(ErrorCode.E_INVALID, f"{name} must be a single line without U+{ord(bad.group()):04X} "
                                           f"(at code point {bad.start()})", details=name)
    return value


def fold_line_breaks(value: str) -> str:
    """``value`` with each character :func:`check_line_field` refuses turned into a space."""
    return _LINE_BREAKING.sub(" ", value)


def slug_for_topic(value: str) -> str | None:
    """A topic slug made from free text (NFKC, lower case, junk runs to ``-``), or None.

    The result is cut to :data:`TOPIC_MAX_LENGTH` characters. None when nothing
    usable remains or the result starts with ``.``/``_`` (not a valid slug).
    """
    cleaned = _SLUG_JUNK.sub("-", unicodedata.normalize("NFKC", value).lower())
    cleaned = re.sub("-{2,}", "-", cleaned.strip("-"))
    if not cleaned or not TOPIC_RE.fullmatch(cleaned):
        return None
    return cleaned[:TOPIC_MAX_LENGTH]


def first_line(value: str, limit: int = 200) -> str:
    """The first line of ``value``, cut to ``limit`` code points plus ``…`` when longer."""
    line = value.split("\n", 1)[0]
    return line[:limit] + "…" if len(line) > limit else line


def normalize_line(value: str) -> str:
    """Fold every whitespace run (newlines included) to one space and trim: a one-line field."""
    return js_trim(_WS_RUN.sub(" ", value))


def parse_tags(value: str) -> list[str]:
    """Split a tag string on ``, ， ; ；``; trim, whitespace runs to ``-``, lower case, dedupe."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in _TAG_SPLIT.split(value):
        tag = _WS_RUN.sub("-", js_trim(raw)).lower()
        if tag and tag not in seen:
            seen.add(tag)
            out.append(tag)
    return out


def _js_quote(value: str) -> str:
    """``JSON.stringify`` of a string, for messages that must match the reference's."""
    import json

    return json.dumps(value, ensure_ascii=False)


def check_write_fields(content: Any, *, summary: Any, tags: Any, updated: Any) -> None:
    """Refuse what a reader could not read back (issue 11): NUL and lone surrogates anywhere,
    line breaks in the one-line fields. Non-string content is left to the write's ``ok: False``.

    Raises:
        MMError(E_INVALID): naming the field.
    """
    for name, value in (("summary", summary), ("tags", tags), ("updated", updated)):
        if value is None:
            continue
        if not isinstance(value, str):
            raise MMError(ErrorCode.E_INVALID, f"{name} must be a single-line string, got {value!r}")
        check_line_field(name, value)
    if isinstance(content, str):
        check_text_field("content", content)


def refuse_case_twin(topic: str, topics: Iterable[str]) -> None:
    """Refuse a new ``topic`` that differs from one of ``topics`` (the indexed ones) only by case (issue 15).

    Raises:
        MMError(E_CONFLICT): naming the existing topic (``details``).
    """
    folded = topic.lower()
    twin = next((t for t in topics if t.lower() == folded and t != topic), None)
    if twin is not None:
        raise MMError(ErrorCode.E_CONFLICT, f"topic {topic!r} differs only by case from the existing topic {twin!r}; "
                                            f"write {twin!r} instead (one file on case-insensitive filesystems)",
                      details=twin)
