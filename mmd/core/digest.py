"""Ingestion (mm v1 §9): distill candidate memories from a session log or raw text.

This module owns source location (a file, inline text, or the newest
``$DSH_HOME/sessions/*.{jsonl,json,md}``), source classification (``text`` vs
``session-log``), flattening of JSONL session records, and the line rules that
turn text into candidates. It never writes: the caller reviews the candidates
and writes the ones worth keeping.

A result has the reference's ``DigestResult`` shape::

    {"source": str, "sourceKind": "text" | "session-log" | "none",
     "candidates": [{"topic": str, "kind": "uri" | "explicit" | "summary" | "heading",
                     "summary": str, "body": str, "chars": int, "budget": int,
                     "overBudget": bool}, ...],
     "usage": {"chars": int, "budget": int, "overflow": int},
     "note": str}

Lengths are Unicode code points. The rules follow the TypeScript reference
(``src/core/digest.ts``) exactly, including JavaScript regex semantics
(``\\s`` is :data:`~mmd.core.text.JS_WS`, ``\\p{L}\\p{N}`` boundaries, an ASCII
``\\b`` before ``mm:``). Deviations: a leading UTF-8 BOM of a file is dropped
(the reference keeps it, so its first JSONL record is not flattened), and
directories under ``sessions/`` are never picked as the newest log.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from .errors import ErrorCode, MMError
from .model import DEFAULT_WRITE_BUDGET
from .text import JS_WS, first_line, js_trim, slug_for_topic

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "DIGEST_NOTE",
    "EXPLICIT_MARKERS",
    "MAX_SOURCE_BYTES",
    "NO_SOURCE_NOTE",
    "SUMMARY_MARKERS",
    "digest",
    "distill",
    "resolve_session_log",
]

MAX_SOURCE_BYTES = 8 * 1024 * 1024
"""Most bytes read from one source file (8 MiB); the rest is ignored."""
DEFAULT_MAX_ITEMS = 50
"""Most candidates returned when ``max_items`` is not a positive integer."""
DIGEST_NOTE = "digest never writes; review candidates and call mem_write for the ones worth keeping."
"""The ``note`` of every result that had a source."""
NO_SOURCE_NOTE = (
    "no session log located under $DSH_HOME/sessions and no explicit source given; pass `source` or `file`."
)
"""The ``note`` of the ``sourceKind: "none"`` result."""

# JavaScript's `.` (no s flag) stops at these; `$` (no m flag) is the end of input.
_LINE_REST = "([^\n\r\u2028\u2029]*)\\Z"


def _js_ignore_case(word: str) -> str:
    """``word`` as a pattern matching it case-insensitively the way JavaScript's ``/iu`` does.

    Python's ``re.IGNORECASE`` also equates ``i`` with ``ı``/``İ``; JavaScript's
    simple case folding does not. The only non-ASCII fold onto these letters is ``ſ`` -> ``s``.
    """
    out = []
    for ch in word:
        if "a" <= ch.lower() <= "z":
            extra = "\u017f" if ch.lower() == "s" else ""
            out.append(f"[{ch.upper()}{ch.lower()}{extra}]")
        else:
            out.append(ch)
    return "".join(out)


def _marker_re(*words: str) -> re.Pattern[str]:
    """``(?:^|[^\\p{L}\\p{N}])(?:w1|w2…)[：:]\\s*(.*)$`` with JavaScript's ``/iu`` semantics.

    In Python ``[\\W_]`` is exactly "not a letter/number" (``\\p{L}\\p{N}``).
    """
    alternatives = "|".join(_js_ignore_case(w) for w in words)
    return re.compile(f"(?:^|[\\W_])(?:{alternatives})[：:][{JS_WS}]*{_LINE_REST}")


EXPLICIT_MARKERS = ("MEMO", "记忆", "记住", "REMEMBER")
"""Words that, followed by ``:`` or ``：``, mark an ``explicit`` candidate (any case, mm v1 §9)."""
SUMMARY_MARKERS = ("Summary", "Conclusion", "总结", "结论")
"""Words that, followed by ``:`` or ``：``, mark a ``summary`` candidate (any case, mm v1 §9)."""
_EXPLICIT_RE = _marker_re(*EXPLICIT_MARKERS)
_SUMMARY_RE = _marker_re(*SUMMARY_MARKERS)
_HEADING_RE = re.compile("^(#{2,3})[" + JS_WS + "]+([^\n\r\u2028\u2029]+)\\Z")
# `\bmm:` without the u flag: an ASCII word boundary before the `m`.
_SLUG = "[A-Za-z0-9][A-Za-z0-9._-]*"
_URI_RE = re.compile(f"(?<![A-Za-z0-9_])mm:(?://{_SLUG}/({_SLUG})|({_SLUG}))")
_URI_BODY_LEAD_RE = re.compile("^[" + JS_WS + ",:：-]+")
_TRAIL_WS_RE = re.compile("[" + JS_WS + "]+\\Z")
_SESSION_NAME_RE = re.compile(r"\.(jsonl|json|md)\Z")
_ARRAY_INDEX_RE = re.compile(r"(?:0|[1-9][0-9]*)\Z")

_TEXT_KEYS = ("content", "text", "value", "input", "message", "transcript")
_SKIP_KEYS = frozenset({"type", "id", "time", "timestamp", "callId", "traceId"})
_MAX_DEPTH = 8
_KIND_ORDER = {"uri": 0, "explicit": 1, "summary": 2, "heading": 3}


def _positive_int(value: object, default: int) -> int:
    """``value`` when it is a positive integer (``Number.isInteger`` rules), else ``default``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and not value.is_integer():
        return default
    return int(value) if value > 0 else default


# --- sources -----------------------------------------------------------------


def _utf16_key(name: str) -> bytes:
    """Sort key that orders like JavaScript's ``<`` on strings (UTF-16 code units)."""
    return name.encode("utf-16-be", "surrogatepass")


def resolve_session_log(dsh_home: str | os.PathLike[str]) -> str | None:
    """The newest session log ``<dsh_home>/sessions/*.{jsonl,json,md}``, or None (mm v1 §9).

    Only the folder's top level is searched. The newest modification time wins;
    equal times go to the smaller name. Entries that cannot be stat-ed and
    folders are skipped; a missing ``sessions`` folder gives None.

    Returns:
        ``os.path.join(dsh_home, "sessions", name)``, or None.
    """
    sessions = os.path.join(os.fspath(dsh_home), "sessions")
    try:
        names = os.listdir(sessions)
    except OSError:
        return None
    best: tuple[int, str] | None = None
    for name in names:
        if not _SESSION_NAME_RE.search(name):
            continue
        try:
            st = os.stat(os.path.join(sessions, name))
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        mtime = st.st_mtime_ns
        if best is None or mtime > best[0] or (mtime == best[0] and _utf16_key(name) < _utf16_key(best[1])):
            best = (mtime, name)
    return None if best is None else os.path.join(sessions, best[1])


def _read_source(path: str) -> str:
    """At most :data:`MAX_SOURCE_BYTES` of ``path`` as UTF-8 (U+FFFD for bad bytes, BOM dropped).

    Raises:
        MMError(E_DIGEST_SOURCE): the file is missing, unreadable or not a regular file (a FIFO, a
            device or a folder is refused without blocking).
    """
    try:
        if not os.access(path, os.R_OK):
            raise OSError(path)
        # non-blocking: a FIFO or a device must not hang the reader; only regular files are read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        raise MMError(ErrorCode.E_DIGEST_SOURCE, f"digest source file not found: {path}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MMError(ErrorCode.E_DIGEST_SOURCE, f"digest source is not a regular file: {path}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_SOURCE_BYTES)
    except OSError:
        raise MMError(ErrorCode.E_DIGEST_SOURCE, f"digest source file cannot be read: {path}") from None
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    return text[1:] if text.startswith("\ufeff") else text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def _json_parse(text: str) -> tuple[bool, Any]:
    """``JSON.parse`` semantics: ``(True, value)``, or ``(False, None)`` when it would throw."""
    try:
        # parse_int=float: JavaScript numbers are doubles (and no digit-count limit applies)
        return True, json.loads(text, parse_int=float, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def _sniff(content: str) -> str:
    """``session-log`` when the first non-blank line is a JSON object with a ``type`` key, else ``text``."""
    for line in content.split("\n"):
        trimmed = js_trim(line)
        if not trimmed:
            continue
        ok, parsed = _json_parse(trimmed)
        return "session-log" if ok and isinstance(parsed, dict) and "type" in parsed else "text"
    return "text"


def _js_entries(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """``Object.entries`` order: array-index keys ascending, then the others as inserted."""
    indexed = [k for k in record if _ARRAY_INDEX_RE.match(k) and int(k) < 2**32 - 1]
    if not indexed:
        return list(record.items())
    indexed.sort(key=int)
    taken = set(indexed)
    return [(k, record[k]) for k in indexed] + [(k, v) for k, v in record.items() if k not in taken]


def _collect_strings(node: Any, out: list[str], depth: int = 0) -> None:
    """Trimmed non-empty strings of ``node`` down to depth 8: text keys first, ids and types skipped."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, str):
        trimmed = js_trim(node)
        if trimmed:
            out.append(trimmed)
    elif isinstance(node, list):
        for item in node:
            _collect_strings(item, out, depth + 1)
    elif isinstance(node, dict):
        for key in _TEXT_KEYS:
            if key in node:
                _collect_strings(node[key], out, depth + 1)
        for key, value in _js_entries(node):
            if key not in _TEXT_KEYS and key not in _SKIP_KEYS:
                _collect_strings(value, out, depth + 1)


def _flatten_record(line: str) -> str:
    """One JSONL line as ``"<type> <strings joined by ' | '>"``; non-objects as the trimmed line."""
    ok, record = _json_parse(line)
    if not ok or not isinstance(record, dict | list):
        return js_trim(line)
    parts: list[str] = []
    _collect_strings(record, parts)
    kind = record.get("type") if isinstance(record, dict) else None
    kind = kind if isinstance(kind, str) else ""
    joined = js_trim(" | ".join(parts))
    if not joined:
        return kind
    return f"{kind} {joined}" if kind else joined


# --- extraction --------------------------------------------------------------


class _Extractor:
    """The reference's line-by-line candidate extraction (one pass, then a stable kind sort)."""

    def __init__(self, topic_hint: str, budget: int) -> None:
        self.topic_hint = topic_hint
        self.budget = budget
        self.candidates: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        self.memo_n = 0
        self.summary_n = 0
        self.heading_topic: str | None = None
        self.heading_body: list[str] = []

    def add(self, topic: str, kind: str, body: str) -> None:
        if topic in self.seen:
            return
        over = len(body) > self.budget
        kept = body[: self.budget] if over else body
        self.seen.add(topic)
        self.candidates.append(
            {
                "topic": topic,
                "kind": kind,
                "summary": first_line(body),
                "body": kept,
                "chars": len(kept),
                "budget": self.budget,
                "overBudget": over,
            }
        )

    def flush_heading(self) -> None:
        if self.heading_topic is None:
            return
        body = js_trim("\n".join(self.heading_body))
        if body:
            self.add(self.heading_topic, "heading", body)
        self.heading_topic = None
        self.heading_body = []

    def uri_line(self, line: str, trimmed: str) -> bool:
        """Handle a line holding an ``mm:`` URI; False when there is none."""
        match = _URI_RE.search(line)
        if match is None:
            return False
        topic = match.group(1) or match.group(2) or ""
        rest = js_trim(_URI_BODY_LEAD_RE.sub("", line[match.end() :], count=1))
        body = rest or first_line(trimmed) or match.group(0)
        self.add(topic, "uri", body)
        return True

    def heading_line(self, trimmed: str) -> bool:
        """Open a ``##``/``###`` section; False when the line is no such heading."""
        heading = _HEADING_RE.match(trimmed)
        if heading is None:
            return False
        self.flush_heading()
        self.heading_topic = slug_for_topic(heading.group(2))
        return True

    def marker_line(self, trimmed: str) -> None:
        explicit = _EXPLICIT_RE.search(trimmed)
        if explicit is not None:
            body = js_trim(explicit.group(1))
            if body:
                self.memo_n += 1
                self.add(self.topic_hint or f"memo-{self.memo_n}", "explicit", body)
            return
        summary = _SUMMARY_RE.search(trimmed)
        if summary is not None:
            body = js_trim(summary.group(1))
            if body:
                self.summary_n += 1
                self.add(f"summary-{self.summary_n}", "summary", body)

    def run(self, lines: list[str]) -> list[dict[str, Any]]:
        for line in lines:
            trimmed = js_trim(line)
            if self.uri_line(line, trimmed) or self.heading_line(trimmed):
                continue
            if self.heading_topic is not None:
                self.heading_body.append(trimmed)
                continue
            self.marker_line(trimmed)
        self.flush_heading()
        return sorted(self.candidates, key=lambda c: _KIND_ORDER[c["kind"]])


def distill(
    text: str,
    *,
    max_items: int | None = None,
    topic_hint: str | None = None,
    default_write_budget: int | None = None,
) -> dict[str, Any]:
    """Candidate memories in ``text`` (mm v1 §9), without classifying it as a source.

    Every line is right-trimmed and read in order: the first ``mm:<topic>`` or
    ``mm://<id>/<topic>`` on a line gives a ``uri`` candidate (body = the rest of
    the line); a ``##``/``###`` heading opens a ``heading`` section that collects
    the following trimmed lines; outside a section, ``MEMO:``/``REMEMBER:``/
    ``记忆：``/``记住：`` give ``explicit`` candidates (``memo-N`` or
    ``topic_hint``) and ``Summary:``/``Conclusion:``/``总结：``/``结论：`` give
    ``summary-N``. Later candidates with a topic already seen are dropped; bodies
    over the budget are cut to it (``overBudget: true``). Candidates are ordered
    uri, explicit, summary, heading (stable), then cut to ``max_items``.

    Args:
        text: the text to read.
        max_items: most candidates; not a positive integer -> 50.
        topic_hint: topic for every ``explicit`` candidate (only the first is kept).
        default_write_budget: proposal budget in code points; not a positive
            integer -> 4000.

    Returns:
        The ``DigestResult`` dict with ``source: ""`` and ``sourceKind: "text"``;
        ``usage.chars`` sums the candidates' ``chars`` and ``usage.overflow`` is
        ``max(0, chars - budget)``.
    """
    budget = _positive_int(default_write_budget, DEFAULT_WRITE_BUDGET)
    limit = _positive_int(max_items, DEFAULT_MAX_ITEMS)
    lines = [_TRAIL_WS_RE.sub("", line) for line in text.split("\n")]
    candidates = _Extractor(topic_hint or "", budget).run(lines)[:limit]
    chars = sum(c["chars"] for c in candidates)
    return {
        "source": "",
        "sourceKind": "text",
        "candidates": candidates,
        "usage": {"chars": chars, "budget": budget, "overflow": max(0, chars - budget)},
        "note": DIGEST_NOTE,
    }


def digest(
    *,
    text: str | None = None,
    file: str | os.PathLike[str] | None = None,
    max_items: int | None = None,
    topic_hint: str | None = None,
    default_write_budget: int | None = None,
    dsh_home: str | os.PathLike[str],
) -> dict[str, Any]:
    """Locate a source, classify it and :func:`distill` it (mm v1 §9). Never writes.

    Source precedence: ``file`` (when non-empty), then ``text`` (when not
    blank), then :func:`resolve_session_log` under ``dsh_home``. A source whose
    first non-blank line is a JSON object with a ``type`` key is a
    ``session-log``: each line is flattened to ``"<type> <strings joined by ' | '>"``
    before distilling; anything else is ``text``. Files are read up to 8 MiB as
    UTF-8 (invalid bytes -> U+FFFD, a leading BOM dropped).

    Args:
        text: inline source text.
        file: path of a source file (used as given, and echoed as ``source``).
        max_items, topic_hint, default_write_budget: as for :func:`distill`.
        dsh_home: the ``$DSH_HOME`` folder whose ``sessions/`` holds the logs.

    Returns:
        The ``DigestResult`` dict; ``source`` is the path, ``"<text>"`` or
        ``"<none>"``. With no source at all it is ``sourceKind: "none"`` with no
        candidates and ``usage.budget`` 4000 (the reference ignores the
        configured budget there).

    Raises:
        MMError(E_DIGEST_SOURCE): ``file`` (or the located log) is missing or unreadable.
    """
    path = os.fspath(file) if file is not None else ""
    if path:
        label, content = path, _read_source(path)
    elif text is not None and js_trim(text):
        label, content = "<text>", text
    else:
        located = resolve_session_log(dsh_home)
        if located is None:
            return {
                "source": "<none>",
                "sourceKind": "none",
                "candidates": [],
                "usage": {"chars": 0, "budget": DEFAULT_WRITE_BUDGET, "overflow": 0},
                "note": NO_SOURCE_NOTE,
            }
        label, content = located, _read_source(located)
    kind = _sniff(content)
    if kind == "session-log":
        content = "\n".join(_flatten_record(line) for line in content.split("\n"))
    result = distill(content, max_items=max_items, topic_hint=topic_hint, default_write_budget=default_write_budget)
    result["source"] = label
    result["sourceKind"] = kind
    return result
