"""JSON edited as text: a strict parser that records where each value lies, and edits at those spans (issue 28).

An agent's settings file is the user's: ``hooks install`` must change only the entries it adds and keep
every other byte (a number as written, ``1e400`` included, any indentation, objects on one line among
indented ones). So the file is never loaded and dumped again: :func:`parse` gives a tree of
:class:`Node` values with their character spans in the text, and :func:`append_member`,
:func:`append_item` and :func:`remove_at` return an :class:`Edit` of the text at those spans, with the
layout of the siblings around it (their separator, indentation, line breaks). Removing what was
appended gives the text back as it was, character for character.

The grammar is RFC 8259's, strictly (no comments, no trailing commas, no ``NaN``); a UTF-8 byte order
mark at the start is kept as it is.

Owns: the parser, the spans and the edits. Never: reads or writes files, or knows what a hook is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Edit", "JsonSyntaxError", "Node", "append_item", "append_member", "parse", "remove_at"]

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonSyntaxError(ValueError):
    """Raised by :func:`parse` for text that is not strict JSON; ``line`` and ``column`` count from 1."""

    def __init__(self, message: str, text: str, at: int) -> None:
        self.line = text.count("\n", 0, at) + 1
        self.column = at - (text.rfind("\n", 0, at) + 1) + 1
        self.message = message
        super().__init__(f"line {self.line}, column {self.column}: {message}")


@dataclass
class Node:
    """One JSON value and where it lies in the text.

    Attributes:
        kind: ``object`` | ``array`` | ``string`` | ``number`` | ``true`` | ``false`` | ``null``.
        start, end: its span (character offsets; ``end`` exclusive).
        value: a string's decoded value; a number's text as written; None otherwise.
        keys: an object's member keys (decoded), in order; ``key_spans`` their spans.
        children: an object's member values, or an array's items, in order.
    """

    kind: str
    start: int
    end: int
    value: str | None = None
    keys: list[str] = field(default_factory=list)
    key_spans: list[tuple[int, int]] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        """The value of the last member named ``key`` (as ``JSON.parse`` keeps it), or None."""
        for name, child in zip(reversed(self.keys), reversed(self.children), strict=True):
            if name == key:
                return child
        return None

    def index(self, key: str) -> int:
        """The position of the last member named ``key`` (-1 when absent)."""
        for i in range(len(self.keys) - 1, -1, -1):
            if self.keys[i] == key:
                return i
        return -1

    def member_start(self, i: int) -> int:
        """Where member (or item) ``i`` begins: its key for an object."""
        return self.key_spans[i][0] if self.kind == "object" else self.children[i].start


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``insert``."""

    start: int
    end: int
    insert: str

    def apply(self, text: str) -> str:
        """The edited text."""
        return text[:self.start] + self.insert + text[self.end:]


def parse(text: str) -> Node:
    """The tree of ``text`` (one JSON value, whitespace around it allowed; a leading BOM skipped).

    Raises:
        JsonSyntaxError: naming the line and column of the first error.
    """
    at = 1 if text.startswith("\ufeff") else 0
    node, at = _value(text, _skip(text, at))
    at = _skip(text, at)
    if at != len(text):
        raise JsonSyntaxError("extra data after the JSON value", text, at)
    return node


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def _value(text: str, at: int) -> tuple[Node, int]:
    if at >= len(text):
        raise JsonSyntaxError("a value was expected, the text ended", text, at)
    char = text[at]
    if char == "{":
        return _object(text, at)
    if char == "[":
        return _array(text, at)
    if char == '"':
        value, end = _string(text, at)
        return Node("string", at, end, value), end
    for word in ("true", "false", "null"):
        if text.startswith(word, at):
            return Node(word, at, at + len(word)), at + len(word)
    match = _NUMBER.match(text, at)
    if match:
        return Node("number", at, match.end(), match.group()), match.end()
    raise JsonSyntaxError(f"a value was expected, found {char!r}", text, at)


def _string(text: str, at: int) -> tuple[str, int]:
    out: list[str] = []
    i = at + 1
    while True:
        if i >= len(text):
            raise JsonSyntaxError("a string is not closed", text, at)
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\\":
            code = text[i + 1: i + 2]
            if code == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2: i + 6]):
                out.append(chr(int(text[i + 2: i + 6], 16)))
                i += 6
                continue
            if code not in _ESCAPES:
                raise JsonSyntaxError("an invalid escape in a string", text, i)
            out.append(_ESCAPES[code])
            i += 2
            continue
        if ord(char) < 0x20:
            raise JsonSyntaxError("a control character in a string", text, i)
        out.append(char)
        i += 1


def _object(text: str, at: int) -> tuple[Node, int]:
    return _container(text, at, Node("object", at, at), "}")


def _array(text: str, at: int) -> tuple[Node, int]:
    return _container(text, at, Node("array", at, at), "]")


def _container(text: str, at: int, node: Node, close: str) -> tuple[Node, int]:
    """The members (object) or items (array) of ``node`` from its opening bracket at ``at`` to ``close``."""
    i = _skip(text, at + 1)
    if text[i: i + 1] == close:
        node.end = i + 1
        return node, i + 1
    while True:
        if node.kind == "object":
            if text[i: i + 1] != '"':
                raise JsonSyntaxError("a member name (a string) was expected", text, i)
            key, key_end = _string(text, i)
            node.keys.append(key)
            node.key_spans.append((i, key_end))
            i = _skip(text, key_end)
            if text[i: i + 1] != ":":
                raise JsonSyntaxError("':' was expected after a member name", text, i)
            i = _skip(text, i + 1)
        child, i = _value(text, i)
        node.children.append(child)
        i = _skip(text, i)
        if text[i: i + 1] == close:
            node.end = i + 1
            return node, i + 1
        if text[i: i + 1] != ",":
            raise JsonSyntaxError(f"',' or '{close}' was expected", text, i)
        i = _skip(text, i + 1)


# --- edits -------------------------------------------------------------------------------------------


def _line_indent(text: str, at: int) -> str:
    """The whitespace that begins the line holding ``at``."""
    start = text.rfind("\n", 0, at) + 1
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _layout(text: str, container: Node) -> tuple[str, str, str]:
    """``(separator before a new member, its line's indentation, one indentation step)`` of ``container``.

    The separator is what precedes the last member (after the comma, or the opening bracket); an empty
    container borrows the layout of its parent's lines: a line break and one step deeper when the text
    has line breaks, else nothing.
    """
    closing = _line_indent(text, container.end - 1)
    if container.children:
        last = container.member_start(len(container.children) - 1)
        before = container.children[-2].end if len(container.children) > 1 else container.start
        gap = text[before:last]
        sep = gap[gap.index(",") + 1:] if "," in gap else gap[1:] if gap[:1] in "{[" else gap
        indent = sep[sep.rfind("\n") + 1:] if "\n" in sep else ""
        step = indent[len(closing):] if "\n" in sep and indent.startswith(closing) else "  "
        return sep, indent, step or "  "
    step = _guess_step(text)
    if "\n" not in text:
        return "", "", step
    return "\n" + closing + step, closing + step, step


def _guess_step(text: str) -> str:
    """The file's smallest indentation (a tab, or N spaces), ``"  "`` when it has none."""
    indents = {m.group(1) for m in re.finditer(r"\n([ \t]+)\S", text)}
    if not indents:
        return "  "
    return min(indents, key=len) if all(i[:1] == " " for i in indents) else "\t"


def _render(value: Any, text: str, container: Node, sep: str, indent: str, step: str) -> str:
    """``value`` as JSON in the layout of ``container``'s members: on one line when they are, else indented."""
    colon = ": "
    if container.kind == "object" and container.keys:
        colon = text[container.key_spans[-1][1]: container.children[-1].start]
    if "\n" not in sep:
        comma = "," + sep if container.children else ", "
        return json.dumps(value, ensure_ascii=False, separators=(comma, colon))
    dumped = json.dumps(value, ensure_ascii=False, indent=step, separators=(",", colon))
    newline = "\r\n" if "\r\n" in text else "\n"
    return dumped.replace("\n", newline + indent)


def append_member(text: str, obj: Node, key: str, value: Any) -> Edit:
    """Add ``"key": value`` after the last member of ``obj``, laid out as its members are."""
    sep, indent, step = _layout(text, obj)
    body = _render(value, text, obj, sep, indent, step)
    colon = text[obj.key_spans[-1][1]: obj.children[-1].start] if obj.keys else ": "
    return _append(text, obj, json.dumps(key, ensure_ascii=False) + colon + body, sep)


def append_item(text: str, array: Node, value: Any) -> Edit:
    """Add ``value`` after the last item of ``array``, laid out as its items are."""
    sep, indent, step = _layout(text, array)
    return _append(text, array, _render(value, text, array, sep, indent, step), sep)


def _append(text: str, container: Node, item: str, sep: str) -> Edit:
    if container.children:
        end = container.children[-1].end
        return Edit(end, end, "," + sep + item)
    interior = text[container.start + 1: container.end - 1]
    closing = "\n" + _line_indent(text, container.end - 1) if "\n" in sep and not interior else ""
    return Edit(container.start + 1, container.start + 1, sep + item + closing)


def remove_at(text: str, container: Node, i: int) -> Edit:
    """Take member (or item) ``i`` out of ``container``, with the separator that :func:`append_member` or
    :func:`append_item` added with it: removing what was appended restores the text exactly."""
    node = container.children[i]
    if len(container.children) == 1:
        rest = text[node.end: container.end - 1]
        closing = "\n" + _line_indent(text, container.end - 1)
        end = container.end - 1 if rest == closing else node.end
        return Edit(container.start + 1, end, "")
    if i > 0:
        return Edit(container.children[i - 1].end, node.end, "")
    return Edit(container.member_start(0), container.member_start(1), "")
