"""Reading an agent's JSONL transcript by cursor, for the ``claude-code`` and ``codex`` adapters.

Owns: :func:`read_jsonl`, the one driver both adapters share — complete lines
after a cursor through the session line reader (never a torn tail, a replaced,
shrunk or rewritten file read again from byte 0), the ``max_bytes`` /
``max_chars`` caps, and the cursor shape ``{"log": …, "state": …}``;
:class:`SeenKeys`, a bounded set of short digests carried in a cursor so that
a record seen twice (a repeated uuid, a file read again) yields one utterance;
and small helpers on raw lines and timestamps (:func:`iso_utc`,
:func:`string_after`).

Never: decides which records are text (the adapters do), parses whole files
into memory, or keeps state outside the cursor it returns. This is the one
place that imports the session line reader (its module moves with the DSH source).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Generator
from datetime import UTC, datetime
from typing import Any, Protocol

from .base import Slice, Utterance
from .logio.decode import LogCursor, LogReader

__all__ = ["LineHandler", "SeenKeys", "digest", "is_compact", "iso_utc", "read_jsonl", "string_after"]

_DECODER = json.JSONDecoder()
SEEN_KEPT = 512
"""Digests a :class:`SeenKeys` keeps (the newest); 8 characters each in the cursor."""


class LineHandler(Protocol):
    """What an adapter gives :func:`read_jsonl`: its state and one call per complete line."""

    session_id: str | None
    project: str | None

    def feed(self, index: int, line: bytes) -> list[Utterance]:
        """Utterances of one complete line (``index`` 0-based, ``line`` without its ``\\n``)."""
        ...

    def restart(self) -> None:
        """Forget what belongs to the old bytes of a file read again from byte 0 (keep the seen keys)."""
        ...

    def state(self) -> dict[str, Any]:
        """The JSON-able state to carry in the cursor."""
        ...


def digest(*parts: str) -> str:
    """A short key (8 base64 characters, 48 bits of sha1) of ``parts`` joined by NUL."""
    raw = hashlib.sha1("\0".join(parts).encode("utf-8", "replace"), usedforsecurity=False).digest()
    return base64.b64encode(raw[:6]).decode("ascii")


class SeenKeys:
    """The last :data:`SEEN_KEPT` keys (from :func:`digest`) a log produced, oldest first.

    Stored in a cursor as one string of 8-character keys, so a cursor stays
    under 5 KB however long the session.
    """

    def __init__(self, packed: str = "") -> None:
        self._keys = [packed[i:i + 8] for i in range(0, len(packed) - 7, 8)]
        self._set = set(self._keys)

    def add(self, key: str) -> bool:
        """Remember ``key``; False when it was already known (the record is a repeat)."""
        if key in self._set:
            return False
        self._keys.append(key)
        self._set.add(key)
        if len(self._keys) > SEEN_KEPT:
            self._set.discard(self._keys.pop(0))
        return True

    def pack(self) -> str:
        """The keys as one string, for the cursor."""
        return "".join(self._keys)


def iso_utc(value: Any) -> str | None:
    """An ISO-8601 UTC timestamp (``…Z``) from a log's ``timestamp`` field, or None when absent or unreadable.

    Strings already ending in ``Z`` are kept as written; others are parsed
    (``+hh:mm`` offsets converted to UTC, a naive time taken as UTC);
    numbers are epoch milliseconds.
    """
    if isinstance(value, str):
        if value.endswith("Z"):
            return value
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            return None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            when = datetime.fromtimestamp(value / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    else:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_compact(line: bytes) -> bool:
    """Whether a line looks written without spaces after ``:`` and ``,`` (as both agents write).

    The adapters' raw-byte needles assume this; a line that fails the test is simply decoded.
    """
    head = line[:96]
    return b'": ' not in head and b'", "' not in head


def string_after(line: bytes, needle: bytes) -> str | None:
    """The JSON string value that follows the first ``needle`` (e.g. ``b'"cwd":"'``) in a raw line, or None.

    ``needle`` must end with the opening quote. A match inside a JSON string is
    impossible because quotes there are escaped; the value is decoded with the
    JSON decoder, so escapes come out right.
    """
    at = line.find(needle)
    if at < 0:
        return None
    start = at + len(needle) - 1
    end = line.find(b'"', start + 1)
    while end > 0 and line[end - 1] == 0x5C:  # a backslash: escaped quote, or an escaped backslash
        slashes = len(line[:end]) - len(line[:end].rstrip(b"\\"))
        if slashes % 2 == 0:
            break
        end = line.find(b'"', end + 1)
    if end < 0:
        return None
    try:
        value = json.loads(line[start:end + 1].decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def read_jsonl(
    path: str,
    cursor: dict[str, Any] | None,
    handler_for: Callable[[dict[str, Any]], LineHandler],
    *,
    max_bytes: int,
    max_chars: int,
) -> Slice:
    """One bounded read of a JSONL transcript (the :meth:`Source.read` of both agent adapters).

    ``cursor`` is None or a previous ``Slice.cursor``: ``{"log": LogCursor JSON, "state": adapter state}``;
    ``handler_for(state)`` builds the adapter's line handler from ``state`` (``{}`` at first).
    Reads complete lines only, stops once ``max_bytes`` bytes of log were consumed or
    ``max_chars`` code points of utterance text were produced (then ``more`` is True).

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError when it vanished).
    """
    log = LogCursor.from_json(cursor["log"]) if cursor and isinstance(cursor.get("log"), dict) else None
    state = cursor.get("state") if cursor else None
    handler = handler_for(dict(state) if isinstance(state, dict) else {})
    warnings: list[str] = []
    out: list[Utterance] = []
    chars = 0
    with LogReader(path, log, warnings=warnings) as reader:
        start = reader.cursor.offset
        if reader.restarted:
            handler.restart()
            start = 0
        capped = False
        lines = iter(reader)
        for index, line in lines:
            got = handler.feed(index, line)
            if got:
                out.extend(got)
                chars += sum(len(u.text) for u in got)
            if chars >= max_chars or reader.cursor.offset - start >= max_bytes:
                capped = True
                break
        if isinstance(lines, Generator):
            lines.close()  # settles the cursor (size, fingerprint) while the file is still open
        more = capped and not reader.complete
    return Slice(
        utterances=out,
        cursor={"log": reader.cursor.to_json(), "state": handler.state()},
        consumed=max(0, reader.cursor.offset - start),
        more=more,
        restarted=bool(reader.restarted),
        session_id=handler.session_id,
        project=handler.project,
        warnings=warnings,
    )
