"""Model-visible text records from DSH session logs (dsh-session-format.md §3–§7).

Owns: :class:`TextRecord` and the rules for what becomes one — human prompts
(``user/message`` whose ``source.kind`` is ``"user"``), the text blocks of
``assistant/message``, and each compaction summary exactly once (from
``compaction/summary`` or from its ``user/message`` checkpoint, whichever comes
first); the header of v0–v4 and the skipping of a seeded session's inherited
prefix; and :class:`ExtractState`, what extraction remembers between reads.

Never: emits reasoning, tool calls or results, injected context (any other
source kind, in every version's shape, §6), system prompts, ``stream`` arrays,
chunk rows or ``agent/inbox/*`` copies; decodes JSON of a line that cannot
produce a record (the raw bytes are checked first); reads files
(``session.read_session`` does); dedupes across restarts (the caller does).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..base import text_blocks
from .header import SessionFormatError, SessionHeader

__all__ = ["ExtractState", "RecordKind", "SessionExtractor", "TextRecord"]

_PACKED_TYPES = {b"text-chunks", b"reasoning-chunks", b"tool-call-chunks"}
_PARSE_TYPES = {
    b"user/message", b"steering/message", b"assistant/message",
    b"compaction/summary", b"compact/summary", b"session/end-seed",
} | _PACKED_TYPES
_TYPE_AT_START = re.compile(rb'\{\s*"type"\s*:\s*"([^"\\]{1,200})"')
_SEQ_AFTER_TYPE = re.compile(rb'\s*,\s*"seq"\s*:\s*(\d{1,18})\b(?:\s*,\s*"time"\s*:\s*(-?\d[\d.eE+-]{0,30}))?')
_SEQ_AT_END = re.compile(rb'"seq"\s*:\s*(\d{1,18})\s*,\s*"time"\s*:\s*(-?[\d.eE+-]+)\s*\}\s*$')
_CANDIDATE = re.compile(rb'"type"\s*:\s*"(?:' + b"|".join(re.escape(t) for t in _PARSE_TYPES) + rb')"')
_SMALL_LINE = 4096
"""Lines up to this many bytes whose type is not their first key are simply decoded."""
_SURROGATES = re.compile("[\ud800-\udfff]")
_DECODER = json.JSONDecoder()
_COMPACTION_KEYS_KEPT = 64
_OPEN_TAG, _CLOSE_TAG = "<compacted-summary>", "</compacted-summary>"


class RecordKind(enum.StrEnum):
    """What a :class:`TextRecord` holds."""

    USER = "user"
    """A human prompt: ``user/message`` with ``source.kind == "user"``."""
    ASSISTANT = "assistant"
    """The text blocks of one ``assistant/message`` (never reasoning or tool calls)."""
    COMPACTION = "compaction"
    """One compaction summary (§7), from the summary event or its checkpoint, once."""


@dataclass(frozen=True)
class TextRecord:
    """One piece of model-visible text of a session.

    ``seq`` is the event's seq (§4). ``message_id`` is the message ``id``
    (``legacy-message:<session>:<seq>`` when a v0 message has none, as DSH
    itself derives); for compaction records it is the ``compactionId``.
    Several text blocks of one message are joined by a blank line.
    """

    session_id: str
    seq: int
    kind: RecordKind
    text: str
    message_id: str | None
    time: float | None = field(default=None, compare=False)
    """The event's ``time`` (epoch milliseconds, §4), None when absent or not a number; not part of a
    record's identity (a record read again compares equal whatever its time)."""

    def to_json(self) -> dict[str, Any]:
        """``{sessionId, seq, kind, text, messageId}``."""
        return {"sessionId": self.session_id, "seq": self.seq, "kind": self.kind.value,
                "text": self.text, "messageId": self.message_id}


@dataclass
class ExtractState:
    """What extraction must remember between reads of one log (JSON-able).

    Attributes:
        header: the parsed header, once line 0 was read.
        invalid: why the log is not read as DSH (e.g. no header), or ``""``.
        last_seq: highest seq seen (packed chunk rows count N events), -1 before any.
        seed_resolved: v2+ seeded logs: the inherited prefix is settled (§3).
        seed_cut_seq: seq of the last ``session/end-seed {inherited: true}`` seen.
        turn_open: a ``turn/start`` was seen after the last ``turn/end`` (§8).
        compaction_keys: recent compactions already emitted (``id:`` / ``sha1:`` keys).
    """

    header: SessionHeader | None = None
    invalid: str = ""
    last_seq: int = -1
    seed_resolved: bool = False
    seed_cut_seq: int | None = None
    turn_open: bool = False
    compaction_keys: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The state as a JSON object."""
        out = dataclasses.asdict(self)
        out["header"] = self.header.to_json() if self.header else None
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExtractState:
        """Rebuild from :meth:`to_json` output; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        if values.get("header") is not None:
            values["header"] = SessionHeader.from_json(values["header"])
        values["compaction_keys"] = list(values.get("compaction_keys") or [])
        return cls(**values)


def _clean(text: str) -> str:
    """Replace lone surrogates (from ``\\udXXX`` escapes) so the text encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


def _is_checkpoint(source: dict[str, Any]) -> bool:
    """A compaction checkpoint's source in any version's shape (§6)."""
    kind = source.get("kind")
    return kind in ("compact-checkpoint", "plugin:compact") or (
        kind == "plugin" and source.get("plugin") == "compact")


def _checkpoint_summary(blocks: list[str]) -> str:
    """The summary inside ``<compacted-summary>…</compacted-summary>`` (§7), else all the text."""
    text = "\n\n".join(blocks)
    start, end = text.find(_OPEN_TAG), text.rfind(_CLOSE_TAG)
    if start >= 0 and end > start:
        text = text[start + len(_OPEN_TAG):end]
    return text.strip()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(raw: bytes | None) -> float | None:
    """A ``time`` read from the raw line (epoch milliseconds), None when absent or not a finite number."""
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value == value and abs(value) < 1e16 else None


class SessionExtractor:
    """Turn the lines of one DSH log, in order, into :class:`TextRecord` s.

    Feed every complete line with its index (line 0 is the header), then call
    :meth:`finish` when the available data is exhausted: a seeded v2+ log's
    records are held back until then, because its inherited prefix ends at the
    *last* ``session/end-seed {inherited: true}`` (§3), and records before the
    first such marker are dropped. :attr:`state` is the
    state to persist. Bad lines are reported through ``warn`` and skipped.
    """

    def __init__(self, state: ExtractState | None = None, *, warn: Callable[[str], None] | None = None) -> None:
        base = state if state is not None else ExtractState()
        self.state = dataclasses.replace(base, compaction_keys=list(base.compaction_keys))
        self._warn = warn or (lambda message: None)
        self._out: list[TextRecord] = []
        self._pending: list[TextRecord] = []
        self._dropped = 0
        self._escapes = False
        self._time: float | None = None  # the current event's time, epoch ms

    def feed(self, index: int, line: bytes) -> list[TextRecord]:
        """Records produced by one complete line (``index`` counts from 0 = header)."""
        st = self.state
        if index == 0:
            self._read_header(line)
            return []
        if st.header is None:
            if not st.invalid:
                st.invalid = "no header line"
                self._warn("line 0 is not a DSH session header; log not read")
            return []
        if st.invalid:
            return []
        m = _TYPE_AT_START.match(line)
        if m is not None and m.group(1) not in _PARSE_TYPES:
            self._bookkeep(m.group(1), line, m.end())
            return []
        self._escapes = b"\\ud" in line or b"\\uD" in line  # only these escapes make lone surrogates
        if m is not None and m.group(1) == b"assistant/message" and self._assistant_fast(line, m.end()):
            return self._drain()
        if m is None and len(line) > _SMALL_LINE and not _CANDIDATE.search(line):
            if not line.lstrip().startswith(b"{"):
                self._warn(f"line {index} is not JSON; skipped")
            return []
        if not line.strip():
            return []
        try:
            event = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            self._warn(f"line {index} is not valid JSON; skipped")
            return []
        if isinstance(event, dict):
            self._on_event(event)
        return self._drain()

    def finish(self) -> list[TextRecord]:
        """Records held back for a seeded log, once all available lines were fed.

        A seeded v2+ log settles its prefix at the end of the first read that
        saw an inherited ``session/end-seed``; until one is seen every record
        counts as inherited and is dropped (DSH publishes a seeded log with
        its whole prefix at once, so this only matters for a log caught mid-write).
        """
        st = self.state
        h = st.header
        if h is not None and h.version >= 2 and h.seeded and not st.seed_resolved:
            if st.seed_cut_seq is not None:
                st.seed_resolved = True
                self._out.extend(self._pending)
                self._pending = []
            elif self._dropped:
                self._warn(f"seeded log has no inherited end-seed yet; {self._dropped} records taken as inherited")
        self._dropped = 0
        return self._drain()

    def _drain(self) -> list[TextRecord]:
        out, self._out = self._out, []
        return out

    def _read_header(self, line: bytes) -> None:
        try:
            value = json.loads(line.decode("utf-8", "replace"))
            self.state.header = SessionHeader.from_record(value)
        except (ValueError, SessionFormatError) as exc:
            self.state.invalid = f"bad header: {exc}"
            self._warn(f"line 0 is not a DSH session header ({exc}); log not read")
            return
        if self.state.header.version > 4:
            self._warn(f"unknown format version {self.state.header.version}; reading it as v4")

    def _assistant_fast(self, line: bytes, after_type: int) -> bool:
        """Decode only ``data.message`` of an ``assistant/message`` line, never its ``stream`` (§5).

        The stream repeats the content two or three times over, so skipping it
        keeps stream-heavy logs fast. Returns False (decode the whole line) when
        the seq or a message object holding ``content`` cannot be found.
        """
        seq_m = _SEQ_AFTER_TYPE.match(line, after_type) or _SEQ_AT_END.search(line, max(0, len(line) - 96))
        at = line.find(b'"message":{')
        if seq_m is None or at < 0:
            return False
        stream_at = line.find(b',"stream":[', at)  # live writes put the stream after the message
        msg = None
        for end in ((stream_at, len(line)) if stream_at > 0 else (len(line),)):
            try:
                msg, _end = _DECODER.raw_decode(line[at + 10:end].decode("utf-8", "replace"))
                break
            except ValueError:
                continue
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list) or msg.get("role") == "user":
            return False
        seq = int(seq_m.group(1))
        self._see_seq(seq)
        self._time = _number(seq_m.group(2))
        self._assistant_message({"message": msg}, seq)
        return True

    def _clean(self, text: str) -> str:
        return _clean(text) if self._escapes else text

    def _see_seq(self, seq: int) -> None:
        if seq > self.state.last_seq:
            self.state.last_seq = seq

    def _bookkeep(self, etype: bytes, line: bytes, after_type: int) -> None:
        """Turn state and seq of a line that is never decoded (§4, §8)."""
        if etype == b"turn/start":
            self.state.turn_open = True
        elif etype == b"turn/end":
            self.state.turn_open = False
        m = _SEQ_AFTER_TYPE.match(line, after_type) or _SEQ_AT_END.search(line, max(0, len(line) - 96))
        if m is not None:
            self._see_seq(int(m.group(1)))

    def _on_event(self, event: dict[str, Any]) -> None:
        when = event.get("time")
        self._time = float(when) if isinstance(when, int | float) and not isinstance(when, bool) else None
        etype = event.get("type")
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        assert isinstance(data, dict)
        if isinstance(etype, str) and etype.encode() in _PACKED_TYPES:
            seq0 = _int(event.get("seq0"))
            items = data.get("args" if etype == "tool-call-chunks" else "texts")
            if seq0 is not None:
                self._see_seq(seq0 + max(len(items) if isinstance(items, list) else 1, 1) - 1)
            return
        seq = _int(event.get("seq"))
        if seq is None:
            seq = self.state.last_seq + 1
        self._see_seq(seq)
        if etype == "turn/start":
            self.state.turn_open = True
        elif etype == "turn/end":
            self.state.turn_open = False
        elif etype in ("user/message", "steering/message"):
            self._user_message(data, seq)
        elif etype == "assistant/message":
            self._assistant_message(data, seq)
        elif etype in ("compaction/summary", "compact/summary"):
            blocks = text_blocks(data.get("summary"))
            cid = data.get("compactionId")
            self._compaction(seq, "\n\n".join(blocks).strip(), cid if isinstance(cid, str) else None)
        elif etype == "session/end-seed":
            self._end_seed(data, seq)

    def _message_id(self, msg: dict[str, Any], seq: int) -> str:
        mid = msg.get("id")
        assert self.state.header is not None
        return mid if isinstance(mid, str) and mid else f"legacy-message:{self.state.header.session_id}:{seq}"

    def _user_message(self, data: dict[str, Any], seq: int) -> None:
        msg = data
        if "content" not in msg and isinstance(msg.get("message"), dict):
            msg = msg["message"]  # v0 steering/message {turn, message}
        source = msg.get("source")
        if not isinstance(source, dict):
            return
        blocks = text_blocks(msg.get("content"))
        if source.get("kind") == "user":
            text = "\n\n".join(blocks)
            if text.strip():
                mid = self._message_id(msg, seq)
                self._emit(TextRecord(self._sid(), seq, RecordKind.USER, self._clean(text), mid, self._time))
        elif _is_checkpoint(source):
            cid = source.get("compactionId")
            self._compaction(seq, _checkpoint_summary(blocks), cid if isinstance(cid, str) else None,
                             self._message_id(msg, seq))

    def _assistant_message(self, data: dict[str, Any], seq: int) -> None:
        msg = data.get("message")
        if not isinstance(msg, dict):
            msg = data  # v0 legacy {content, provenance}
        text = "\n\n".join(b for b in text_blocks(msg.get("content")) if b)
        if text.strip():
            mid = self._message_id(msg, seq)
            self._emit(TextRecord(self._sid(), seq, RecordKind.ASSISTANT, self._clean(text), mid, self._time))

    def _compaction(self, seq: int, text: str, compaction_id: str | None, message_id: str | None = None) -> None:
        """Emit a compaction summary unless this compaction (by id or by text) was already emitted (§7)."""
        if not text:
            return
        keys = [f"sha1:{hashlib.sha1(text.encode('utf-8', 'replace'), usedforsecurity=False).hexdigest()[:16]}"]
        if compaction_id:
            keys.insert(0, f"id:{compaction_id}")
        known = self.state.compaction_keys
        if any(k in known for k in keys):
            return
        known.extend(keys)
        del known[:-_COMPACTION_KEYS_KEPT]
        self._emit(TextRecord(self._sid(), seq, RecordKind.COMPACTION, self._clean(text), compaction_id or message_id,
                              self._time))

    def _end_seed(self, data: dict[str, Any], seq: int) -> None:
        h = self.state.header
        if data.get("inherited") is not True or h is None or h.version < 2 or not h.seeded:
            return
        if self.state.seed_resolved:
            self._warn(f"inherited end-seed at seq {seq} after the prefix was settled; earlier records stand")
            return
        self._pending = []
        self.state.seed_cut_seq = seq

    def _sid(self) -> str:
        assert self.state.header is not None
        return self.state.header.session_id

    def _emit(self, record: TextRecord) -> None:
        h = self.state.header
        assert h is not None
        if h.version < 2:
            if h.seed_length and record.seq < h.seed_length:
                return  # v0/v1: the first seedLength events are inherited (§3)
            self._out.append(record)
        elif h.seeded and not self.state.seed_resolved:
            # Trigger: a seeded v2+ log whose prefix is not settled yet. Why: the prefix ends at the
            # *last* inherited end-seed (§3), and a later marker would claim what came before it.
            # Outcome: drop records before the first marker, hold the rest until the read ends.
            if self.state.seed_cut_seq is None:
                self._dropped += 1
            else:
                self._pending.append(record)
        else:
            self._out.append(record)
