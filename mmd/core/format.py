"""The mm v1 file grammar: parse and serialize MEMORY.md and detail notes (mm v1 §3, §4).

Byte-compatible with the reference's ``format.ts``: the serializers emit the
exact bytes it emits, and the parsers read what it reads. Where the reference
loses data we read more, never less:

- CRLF, CR-only and mixed line endings parse as LF (the reference silently
  drops every CRLF entry and reads a CR-only file as one line); the writers
  always emit LF.
- A leading UTF-8 BOM is ignored.
- A line break inside a single-line field can never reach the file: the
  serializers refuse it (``E_INVALID``) instead of writing extra index lines.
  A section a write does not touch is written back as it was read
  (``strict=False``), so one hand-edited entry never blocks other writes.
- Hand-written lines in MEMORY.md's header area (free text, unknown ``>``
  meta) are kept by rewrites (:func:`header_extras`); the reference drops them.
- A root's index is read with ``strict_files=False``: an entry whose ``file`` is
  not a safe relative path (``../x``, ``/etc/passwd``) is kept as it was written,
  so that one entry is reported and never read (:func:`.rootfs.note_problem`),
  instead of the whole root being refused as the reference refuses it.

This module is pure: it never touches the disk.
"""

from __future__ import annotations

import functools
import re

from .errors import ErrorCode, MMError
from .lazyre import lazy_compile
from .model import DEFAULT_MEMORY_ID, FORMAT_VERSION, REVIEW_AFTER_KEY, REVIEW_AFTER_LINE, IndexEntry
from .record import Record
from .text import JS_WS, byte_length, count_lines, js_trim, parse_tags, validate_topic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "IndexHeader",
    "entry_block",
    "entry_problems",
    "header_extras",
    "index_header",
    "join_index",
    "ParsedIndex",
    "ParsedNote",
    "js_parse_int",
    "parse_index",
    "parse_note",
    "safe_rel_path",
    "serialize_index",
    "serialize_note",
    "twin_entries",
    "with_review_after",
]

# JavaScript's `.` stops at these; `$` without the m flag is the end of input.
_DOT = "[^\n\r\u2028\u2029]"
_S = f"[{JS_WS}]"
_NS = f"[^{JS_WS}]"
_HEADER_META = lazy_compile(f"^>{_S}*({_NS}+?):{_S}*({_DOT}*)\\Z")
_ENTRY_HEADING = lazy_compile(f"^##{_S}+({_NS}{_DOT}*)\\Z")
_IS_HEADING = lazy_compile(f"^##{_S}+{_NS}")
_ENTRY_META = lazy_compile(f"^-{_S}*\\*\\*(\\w+):\\*\\*{_S}*({_DOT}*)\\Z", re.ASCII)
_BUDGET = lazy_compile(r"^(\d+)/(\d+)", re.ASCII)
_NOTE_TITLE = lazy_compile(f"^#{_S}+({_DOT}+)\\Z")
_NOTE_META = lazy_compile(f"^>{_S}*(mm-[\\w-]+):{_S}*({_DOT}*)\\Z", re.ASCII)
_JS_INT = lazy_compile(f"^{_S}*([+-]?\\d+)", re.ASCII)
_DRIVE = lazy_compile(r"^[A-Za-z]:")
_LINE_BREAK = lazy_compile("[\x00\n\r\u2028\u2029\x85\x0b\x0c]")

ENTRY_META_KEYS = frozenset({"summary", "tags", "file", "updated", "budget"})


class IndexHeader(Record):
    """The ``> mm-*:`` header of MEMORY.md; ``kind``/``caps`` are None when absent."""

    __slots__ = ("memory_id", "version", "kind", "caps")

    def __init__(self, memory_id: str, version: int | None, kind: str | None = None, caps: str | None = None) -> None:
        self.memory_id = memory_id
        self.version = version
        self.kind = kind
        self.caps = caps

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"memoryId": self.memory_id, "version": self.version}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.caps is not None:
            out["caps"] = self.caps
        return out


class ParsedIndex(Record):
    """A parsed MEMORY.md: header, entries in file order, and the text's lines / UTF-8 bytes."""

    __slots__ = ("header", "entries", "line_count", "byte_count")

    def __init__(self, header: IndexHeader, entries: tuple[IndexEntry, ...], line_count: int, byte_count: int) -> None:
        self.header = header
        self.entries = entries
        self.line_count = line_count
        self.byte_count = byte_count

    def to_json(self) -> dict[str, Any]:
        return {
            "header": self.header.to_json(),
            "entries": [e.to_json() for e in self.entries],
            "lineCount": self.line_count,
            "byteCount": self.byte_count,
        }


class ParsedNote(Record):
    """A parsed detail file: its topic ('' when headerless), body, and header meta."""

    __slots__ = ("topic", "body", "memory_id", "version", "has_version")

    def __init__(self, topic: str, body: str, memory_id: str | None = None, version: int | None = None,
                 has_version: bool = False) -> None:
        self.topic = topic
        self.body = body
        self.memory_id = memory_id
        self.version = version
        self.has_version = has_version

    def to_json(self) -> dict[str, Any]:
        header: dict[str, Any] = {}
        if self.memory_id is not None:
            header["memoryId"] = self.memory_id
        if self.has_version:
            header["version"] = self.version
        return {"topic": self.topic, "body": self.body, "header": header}


def js_parse_int(value: str) -> int | None:
    """JavaScript ``Number.parseInt(value, 10)``; None where it gives NaN."""
    match = _JS_INT.match(value)
    return int(match.group(1)) if match else None


def _lines(text: str) -> list[str]:
    """Split on LF, CRLF or a lone CR after dropping a BOM (the reference splits on LF only)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


_STANDARD_HEADER = lazy_compile(
    f"^(# MEMORY\\.md|Memory Standard Index — .*|Hard caps: .*|>{_S}*mm-(id|version|kind|caps):.*|{_S}*)\\Z")
_FIRST_HEADING = lazy_compile(f"(?<![^\r\n])##{_S}+{_NS}")


def header_extras(text: str) -> list[str]:
    """The hand-written lines of MEMORY.md's header area, in file order (issue 15).

    The header area is everything before the first ``## `` heading. Our own lines
    (the title, the two standard prose lines, ``> mm-id|mm-version|mm-kind|mm-caps``)
    are not extras; blank lines are kept between extras, dropped around them.
    """
    first = _FIRST_HEADING.search(text)
    head = text if first is None else text[:first.start()]
    if not head:
        return []
    kept: list[str] = []
    for line in _lines(head):
        if not js_trim(line):
            if kept and kept[-1] != "":
                kept.append("")
        elif not _STANDARD_HEADER.match(line):
            kept.append(line)
    while kept and kept[-1] == "":
        kept.pop()
    return kept


def safe_rel_path(rel: object) -> str:
    """Return ``rel`` unchanged if it is a safe relative POSIX path (mm v1 §3 ``file``).

    Raises:
        MMError(E_PARSE): if it is empty or not a string, holds a backslash or a
            NUL, is absolute or starts with a drive letter, or has a ``..`` segment.
    """
    if not isinstance(rel, str) or not rel:
        raise MMError(ErrorCode.E_PARSE, "file path must be a non-empty relative path")
    if "\\" in rel:
        raise MMError(ErrorCode.E_PARSE, f"file path must use POSIX separators (no backslash): {_quote(rel)}")
    if rel.startswith("/") or _DRIVE.match(rel):
        raise MMError(ErrorCode.E_PARSE, f"file path must be relative, got {_quote(rel)}")
    if ".." in rel.split("/"):
        raise MMError(ErrorCode.E_PARSE, f"file path must not traverse directories: {_quote(rel)}")
    if "\x00" in rel:
        raise MMError(ErrorCode.E_PARSE, f"file path must not contain NUL: {_quote(rel)}")
    return rel


def parse_index(text: str, memory_id: str | None = None, *, strict_files: bool = True) -> ParsedIndex:
    """Parse MEMORY.md text (mm v1 §3).

    Header meta comes from ``> key: value`` lines before the first ``## `` heading;
    inside a section, ``- **summary|tags|file|updated|budget:** v`` lines are meta
    and every other line is kept as the entry body (trimmed). ``budget`` reads a
    ``<bodyChars>/<writeBudget>`` prefix, else 0/0. ``line_count``/``byte_count``
    measure ``text`` as given.

    Args:
        text: the file's text.
        memory_id: the id used when the header has no ``mm-id`` (default ``local``).
        strict_files: refuse the whole text for one unsafe ``file`` value (the reference's
            rule, see :func:`safe_rel_path`); False keeps such a value as written, for the
            reader to report and never follow (how a root is loaded: one bad entry does
            not make every other topic unreadable).

    Raises:
        MMError(E_PARSE): for a ``## `` heading that is not a topic slug (the
            message names its 1-based line), or (``strict_files``) an unsafe ``file`` value.
    """
    lines = _lines(text)
    header_id = memory_id if memory_id is not None else DEFAULT_MEMORY_ID
    version: int | None = FORMAT_VERSION
    kind: str | None = None
    caps: str | None = None
    i = 0
    while i < len(lines) and not (lines[i].startswith("##") and _IS_HEADING.match(lines[i])):
        pair = _HEADER_META.match(lines[i])
        i += 1
        if pair is None:
            continue
        key, value = pair.group(1), js_trim(pair.group(2))
        if key == "mm-id":
            header_id = value
        elif key == "mm-version":
            number = js_parse_int(value)
            if number is not None:
                version = number
        elif key == "mm-kind":
            kind = value
        elif key == "mm-caps":
            caps = value

    entries: list[IndexEntry] = []
    while i < len(lines):
        heading = _ENTRY_HEADING.match(lines[i]) if lines[i].startswith("##") else None
        if heading is None:
            i += 1
            continue
        raw_topic = js_trim(heading.group(1))
        try:
            topic = validate_topic(raw_topic)
        except MMError:
            raise MMError(
                ErrorCode.E_PARSE,
                f"index line {i + 1}: heading {_quote(raw_topic)} is not a valid topic slug",
            ) from None
        i += 1
        meta: dict[str, str] = {}
        body: list[str] = []
        while i < len(lines) and not (lines[i].startswith("##") and _IS_HEADING.match(lines[i])):
            match = _ENTRY_META.match(lines[i]) if lines[i].startswith("-") else None
            if match is not None and match.group(1) in ENTRY_META_KEYS:
                meta[match.group(1)] = js_trim(match.group(2))
            else:
                body.append(lines[i])
            i += 1
        budget = _BUDGET.match(meta.get("budget", "0/0"))
        file = meta.get("file", f"memories/{topic}.md")
        entries.append(
            IndexEntry(
                topic=topic,
                memory_id=header_id,
                summary=meta.get("summary", ""),
                tags=tuple(parse_tags(meta.get("tags", ""))),
                file=safe_rel_path(file) if strict_files else file,
                updated=meta.get("updated", ""),
                body_chars=int(budget.group(1)) if budget else 0,
                write_budget=int(budget.group(2)) if budget else 0,
                entry_body=js_trim("\n".join(body)),
            )
        )
    header = IndexHeader(memory_id=header_id, version=version, kind=kind, caps=caps)
    return ParsedIndex(header, tuple(entries), count_lines(text), byte_length(text))


def twin_entries(entries: Iterable[IndexEntry]) -> dict[str, list[str]]:
    """Topics MEMORY.md indexes more than once (a hand edit; our own writes never do), each with the ``file`` of
    every one of its entries in index order: ``{topic: [file, …]}``, empty when none."""
    files: dict[str, list[str]] = {}
    for entry in entries:
        files.setdefault(entry.topic, []).append(entry.file)
    return {topic: found for topic, found in files.items() if len(found) > 1}


def index_header(*, memory_id: str, index_lines: int, index_bytes: int) -> str:
    """The fixed head of MEMORY.md (title, caps line, ``> mm-*`` meta), ending in a blank line."""
    return "\n".join([
        "# MEMORY.md",
        "",
        "Memory Standard Index — hand-load priority; managed by dsh-memory-standard.",
        f"Hard caps: {index_lines} lines / {index_bytes} bytes. Over budget => rewrite (never truncate).",
        "",
        f"> mm-id: {memory_id}",
        f"> mm-version: {FORMAT_VERSION}",
        "> mm-kind: index",
        f"> mm-caps: {index_lines} lines / {index_bytes} bytes",
        "",
    ])


def join_index(header: str, blocks: list[str]) -> str:
    """MEMORY.md from :func:`index_header` and :func:`entry_block` strings already sorted by topic."""
    text = header + "\n".join(blocks)
    return text if text.endswith("\n") else text + "\n"


def serialize_index(
    entries: list[IndexEntry] | tuple[IndexEntry, ...], *, memory_id: str, index_lines: int, index_bytes: int
) -> str:
    """The exact MEMORY.md text for ``entries``, sorted by topic (mm v1 §3).

    Raises:
        MMError(E_INVALID): if an entry's topic is not a slug, or its summary,
            tags, file or updated value holds a line break (it would inject lines).
    """
    header = index_header(memory_id=memory_id, index_lines=index_lines, index_bytes=index_bytes)
    return join_index(header, [entry_block(entry) for entry in sorted(entries, key=lambda e: e.topic)])


def entry_problems(entry: IndexEntry) -> list[str]:
    """Messages for each one-line field of ``entry`` holding a line break or a NUL (empty when clean)."""
    tags = ", ".join(entry.tags)
    if not _LINE_BREAK.search(f"{entry.summary}{tags}{entry.file}{entry.updated}"):
        return []
    return [f"{name} of {entry.topic} must be a single line: {_quote(value)}"
            for name, value in (("summary", entry.summary), ("tags", tags), ("file", entry.file),
                                ("updated", entry.updated)) if _LINE_BREAK.search(value)]


@functools.lru_cache(maxsize=1 << 16)
def entry_block(entry: IndexEntry, strict: bool = True) -> str:
    """One entry's section: its lines joined by LF, the last one blank, no final LF (memoized).

    Args:
        strict: refuse a line break in a one-line field; False writes the fields as
            they were read (for sections a write does not touch: the parser already
            read each as one line, so writing them back adds no line for it).

    Raises:
        MMError(E_INVALID): see :func:`serialize_index` (``strict`` only).
    """
    validate_topic(entry.topic)
    tags = ", ".join(entry.tags)
    if strict:
        problems = entry_problems(entry)
        if problems:
            raise MMError(ErrorCode.E_INVALID, problems[0])
    lines = [
        f"## {entry.topic}",
        f"- **summary:** {entry.summary}",
        f"- **tags:** {tags}",
        f"- **file:** {entry.file}",
        f"- **updated:** {entry.updated}",
        f"- **budget:** {entry.body_chars}/{entry.write_budget}",
    ]
    if entry.entry_body:
        lines += ["", *entry.entry_body.split("\n")]
    lines.append("")
    return "\n".join(lines)


def with_review_after(entry_body: str, review_after: str) -> str:
    """``entry_body`` with its ``- **review-after:**`` lines replaced by one holding ``review_after``.

    The line goes first; every other body line is kept in order. An empty
    ``review_after`` only removes the old lines. The value is not validated here
    (``mmd.core.review_date`` resolves and checks dates); it must be one line.

    Raises:
        MMError(E_INVALID): if ``review_after`` holds a line break.
    """
    if _LINE_BREAK.search(review_after):
        raise MMError(ErrorCode.E_INVALID, f"review date must be a single line: {_quote(review_after)}")
    kept = [line for line in entry_body.split("\n") if not REVIEW_AFTER_LINE.match(line)]
    if review_after:
        kept.insert(0, f"- **{REVIEW_AFTER_KEY}:** {review_after}")
    return js_trim("\n".join(kept))


def serialize_note(*, topic: str, memory_id: str, file: str, body: str) -> str:
    """The exact detail-file text (mm v1 §4): title, five meta lines, body without trailing LFs."""
    body = body.rstrip("\n")
    lines = [
        f"# {topic}",
        "",
        f"> mm-id: {memory_id}",
        f"> mm-version: {FORMAT_VERSION}",
        "> mm-kind: note",
        f"> mm-topic: {topic}",
        f"> mm-file: {file}",
        "",
    ]
    if body:
        lines.append(body)
    text = "\n".join(lines)
    return text if text.endswith("\n") else text + "\n"


def parse_note(text: str) -> ParsedNote:
    """Parse a detail file (mm v1 §4).

    The header is a leading ``# <topic>`` title plus the contiguous ``> mm-*:``
    lines after it; the first blank line after a meta line, or the first other
    line, closes it. Everything after is the body, verbatim but for leading and
    trailing newline runs. A file with no title or meta is all body.

    Raises:
        MMError(E_INVALID): if the title or an ``mm-topic`` value is not a topic slug.
    """
    lines = _lines(text)
    topic = ""
    memory_id: str | None = None
    version: int | None = None
    has_version = False
    phase = "pre"
    saw_meta = False
    body_start = -1
    for i, line in enumerate(lines):
        if phase == "body":
            break
        meta = _NOTE_META.match(line)
        if phase == "pre":
            title = _NOTE_TITLE.match(line)
            if title is not None:
                topic = validate_topic(js_trim(title.group(1)))
                phase = "head"
                continue
        if meta is not None:
            key, value = meta.group(1), js_trim(meta.group(2))
            if key == "mm-topic":
                topic = validate_topic(value)
            elif key == "mm-id":
                memory_id = value
            elif key == "mm-version":
                version, has_version = js_parse_int(value), True
            saw_meta = True
            phase = "head"
            continue
        if not js_trim(line):
            if phase == "head" and saw_meta:
                phase, body_start = "body", i + 1
            continue
        phase, body_start = "body", i
    body = "" if body_start < 0 else "\n".join(lines[body_start:]).strip("\n")
    return ParsedNote(topic, body, memory_id, version, has_version)


def _quote(value: str) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
