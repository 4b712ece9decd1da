"""Incremental, bounded reading of complete log lines, plain or zstd (dsh-session-format.md §2, §8).

Owns: the per-file :class:`LogCursor` (JSON-able), :class:`LogReader` that
yields every complete ``\\n``-terminated line after a cursor — never a torn
tail, never an incomplete last zstd frame — and the detection of a replaced,
shrunk or rewritten file (the read then restarts from byte 0 and says so).
Memory stays bounded: a line longer than ``max_line_bytes`` is skipped with a
warning while it is read in chunks.

Never: parses JSON (the adapters do), decides which files to read
(each adapter's ``classify`` does), or writes anything. Warnings go to the returned list and to
the ``mmd.sources`` logger.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any, cast

from .frames import FrameStatus, scan_frame

__all__ = [
    "CHUNK_BYTES",
    "MAX_LINE_BYTES",
    "LogCursor",
    "LogReader",
    "is_compressed_name",
]

log = logging.getLogger("mmd.sources")

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest line (bytes, without its ``\\n``) handed to a parser; longer ones are skipped with a warning."""
CHUNK_BYTES = 1024 * 1024
"""Bytes read (plain) or decompressed (zstd) per step."""
_FINGERPRINT_BYTES = 64
_MAX_WARNINGS = 50


def is_compressed_name(path: str | os.PathLike[str]) -> bool:
    """Whether a log is zstd by its name (``*.zstd``, as DSH names them; ``*.zst`` too)."""
    return os.fspath(path).lower().endswith((".zstd", ".zst"))


@dataclass
class LogCursor:
    """How far one log file has been read; JSON-able via :meth:`to_json` / :meth:`from_json`.

    Offsets and sizes are bytes of the file on disk (compressed bytes for zstd).

    Attributes:
        path: the file, for the caller's bookkeeping (a moved file is matched by inode).
        compressed: zstd (frame by frame) rather than plain JSONL.
        inode: inode of the file read; another inode means the file was replaced.
        size: file size after the last full read; a smaller size means a
            truncate-repair (§8). Equals ``offset`` after an interrupted read.
        mtime_ns: modification time after the last read (ns), for the no-change fast path.
        offset: plain: end of the last complete line consumed. zstd: end of the
            last consumed complete frame after which no line was left open.
        frames: zstd frames (including skippable ones) before ``offset``.
        lines: complete lines consumed, skipped oversized ones included; the
            header is line 0.
        skip_lines: zstd only: lines already returned that lie after ``offset``
            (only when a frame ends mid-line, which DSH never writes).
        skipping: plain only: ``offset`` is inside an oversized line; drop bytes
            up to its ``\\n``.
        fingerprint: sha1 (hex) of up to 64 bytes before ``offset``; a mismatch
            means the consumed prefix was rewritten in place.
    """

    path: str
    compressed: bool = False
    inode: int = 0
    size: int = 0
    mtime_ns: int = 0
    offset: int = 0
    frames: int = 0
    lines: int = 0
    skip_lines: int = 0
    skipping: bool = False
    fingerprint: str = ""

    @classmethod
    def start(cls, path: str | os.PathLike[str]) -> LogCursor:
        """A cursor at the beginning of ``path``; zstd when the name ends in ``.zstd``."""
        return cls(path=os.fspath(path), compressed=is_compressed_name(path))

    def to_json(self) -> dict[str, Any]:
        """The cursor as a JSON object (all fields, snake_case)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LogCursor:
        """Rebuild a cursor from :meth:`to_json` output; unknown keys are ignored.

        Raises:
            TypeError: if ``path`` is missing.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class _Warnings:
    """Warnings of one read: logged, and kept (up to a cap) for the caller."""

    def __init__(self, path: str, sink: list[str]) -> None:
        self.path = path
        self.items = sink
        self.dropped = 0

    def __call__(self, message: str) -> None:
        text = f"{self.path}: {message}"
        log.warning("%s", text)
        if len(self.items) < _MAX_WARNINGS:
            self.items.append(text)
        else:
            self.dropped += 1


class _LineSplitter:
    """Split a byte stream into lines, dropping lines longer than ``cap`` without buffering them."""

    def __init__(self, cap: int, *, skipping: bool = False) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.skipping = skipping

    @property
    def at_line_start(self) -> bool:
        return not self.buf and not self.skipping

    def feed(self, chunk: bytes) -> list[tuple[int, bytes | None]]:
        """Lines completed by ``chunk`` as ``(end index in chunk after the \\n, line or None if too long)``."""
        out: list[tuple[int, bytes | None]] = []
        start = 0
        if self.skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                return out
            self.skipping = False
            out.append((nl + 1, None))
            start = nl + 1
        while (nl := chunk.find(b"\n", start)) >= 0:
            line: bytes | None
            if self.buf:
                if len(self.buf) + nl - start > self.cap:
                    line = None
                else:
                    self.buf += memoryview(chunk)[start:nl]
                    line = bytes(self.buf)
                self.buf = bytearray()
            else:
                line = chunk[start:nl] if nl - start <= self.cap else None
            out.append((nl + 1, line))
            start = nl + 1
        rest = len(chunk) - start
        if rest:
            if len(self.buf) + rest > self.cap:
                self.buf = bytearray()
                self.skipping = True
            else:
                self.buf += memoryview(chunk)[start:]
        return out


class _FrameSource:
    """A read-only file-like view of ``[start, end)`` of a file descriptor, for ``zstandard``."""

    def __init__(self, fd: int, start: int, end: int) -> None:
        self.fd, self.pos, self.end = fd, start, end

    def read(self, size: int = -1) -> bytes:
        n = self.end - self.pos if size < 0 else min(size, self.end - self.pos)
        if n <= 0:
            return b""
        data = os.pread(self.fd, n, self.pos)
        self.pos += len(data)
        return data


class LogReader:
    """Every complete line of one log after a cursor, as ``(line index, bytes without \\n)``.

    Use as a context manager, iterate once, then read :attr:`cursor`::

        with LogReader(path, cursor) as reader:
            for index, line in reader:
                ...
        cursor = reader.cursor

    Opening checks the file against the cursor (§8): another inode
    (``restarted == "replaced"``), a smaller size (``"shrunk"``) or different
    bytes before the offset (``"rewritten"``) restart the read at byte 0, and
    the caller must dedupe what it sees again (by session id + seq or message
    id). An unchanged file (same inode, size and mtime) yields nothing without
    reading. Iteration stops at the file size seen on opening, so a growing
    log cannot keep one read going. The cursor passed in is never mutated;
    :attr:`cursor` is updated before each line is yielded, so stopping early
    is safe.

    Raises:
        OSError: if the file cannot be opened or read (e.g. it vanished).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        cursor: LogCursor | None = None,
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
        chunk_bytes: int = CHUNK_BYTES,
        warnings: list[str] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        base = cursor if cursor is not None else LogCursor.start(path)
        self.cursor = dataclasses.replace(base, path=self.path)
        self.max_line_bytes = max_line_bytes
        self.chunk_bytes = chunk_bytes
        self.warnings: list[str] = warnings if warnings is not None else []
        self.warn = _Warnings(self.path, self.warnings)
        """Report a warning about this log: logged to ``mmd.sources`` and kept in :attr:`warnings`."""
        self.restarted = ""
        """Why the read restarted at byte 0 (``replaced``, ``shrunk``, ``rewritten``), or ``""``."""
        self.complete = False
        """True once iteration consumed every complete line up to the size seen on opening."""
        self._fd = -1
        self._st: os.stat_result | None = None
        self._unchanged = False

    def __enter__(self) -> LogReader:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self.path, flags)
        try:
            st = os.fstat(self._fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{self.path}: not a regular file")
            self._st = st
            self._check(st)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _check(self, st: os.stat_result) -> None:
        c = self.cursor
        if c.inode == 0:
            return
        if st.st_ino == c.inode and st.st_size == c.size and st.st_mtime_ns == c.mtime_ns:
            self._unchanged = True
            return
        reason = ""
        if st.st_ino != c.inode:
            reason = "replaced"
        elif st.st_size < c.size or st.st_size < c.offset:
            reason = "shrunk"
        elif self._fingerprint(c.offset) != c.fingerprint:
            reason = "rewritten"
        if reason:
            self.restarted = reason
            self.warn(f"{reason} since the last read; reading again from byte 0")
            self.cursor = LogCursor.start(self.path)

    def _fingerprint(self, offset: int) -> str:
        n = min(_FINGERPRINT_BYTES, offset)
        return hashlib.sha1(os.pread(self._fd, n, offset - n), usedforsecurity=False).hexdigest()

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        if self._fd < 0 or self._st is None:
            raise ValueError("LogReader must be opened with 'with' before iterating")
        st = self._st
        if self._unchanged:
            self.complete = True
            return
        lines = self._iter_zstd(st.st_size) if self.cursor.compressed else self._iter_plain(st.st_size)
        try:
            yield from lines
            self.complete = True
        finally:
            c = self.cursor
            c.inode, c.mtime_ns = st.st_ino, st.st_mtime_ns
            c.size = st.st_size if self.complete else c.offset
            c.fingerprint = self._fingerprint(c.offset)
            if self.warn.dropped:
                self.warnings.append(f"{self.path}: {self.warn.dropped} more warnings not shown")
                self.warn.dropped = 0

    def _too_long(self, index: int) -> None:
        self.warn(f"line {index} is longer than {self.max_line_bytes} bytes; skipped")

    def _iter_plain(self, end: int) -> Iterator[tuple[int, bytes]]:
        c = self.cursor
        was_skipping = c.skipping
        splitter = _LineSplitter(self.max_line_bytes, skipping=c.skipping)
        pos = c.offset
        while pos < end:
            chunk = os.pread(self._fd, min(self.chunk_bytes, end - pos), pos)
            if not chunk:
                break
            base, pos = pos, pos + len(chunk)
            for stop, line in splitter.feed(chunk):
                index = c.lines
                c.lines += 1
                c.offset = base + stop
                c.skipping = False
                if line is None:
                    self._too_long(index)
                else:
                    yield index, line
            if splitter.skipping:
                c.skipping = True
                c.offset = pos
        if c.skipping and not was_skipping:
            self.warn(f"line {c.lines} is longer than {self.max_line_bytes} bytes and not finished; skipping it")

    def _iter_zstd(self, end: int) -> Iterator[tuple[int, bytes]]:
        import zstandard  # lazily: only zstd logs need it, and `mmctl` imports this package

        c = self.cursor
        dctx = zstandard.ZstdDecompressor()
        splitter = _LineSplitter(self.max_line_bytes)
        to_skip = c.skip_lines
        aligned_lines = c.lines - c.skip_lines
        lines = aligned_lines
        pos, frames = c.offset, c.frames
        while pos < end:
            frame = scan_frame(self._fd, pos, end)
            if frame.status is FrameStatus.INCOMPLETE:
                break
            if frame.status is FrameStatus.INVALID:
                self.warn(f"{frame.reason}; stopped reading (corrupt or not zstd)")
                break
            if not frame.skippable:
                source = cast(IO[bytes], _FrameSource(self._fd, frame.start, frame.end))  # duck-typed read()
                reader = dctx.stream_reader(
                    source,
                    read_size=64 * 1024, read_across_frames=False, closefd=False,
                )
                try:
                    while out := reader.read(self.chunk_bytes):
                        for _stop, line in splitter.feed(out):
                            index = lines
                            lines += 1
                            if to_skip:
                                to_skip -= 1
                                continue
                            c.lines, c.skip_lines = lines, lines - aligned_lines
                            if line is None:
                                self._too_long(index)
                            else:
                                yield index, line
                except zstandard.ZstdError as exc:
                    self.warn(f"frame at byte {frame.start} does not decode ({exc}); skipped")
                    splitter = _LineSplitter(self.max_line_bytes)
            pos, frames = frame.end, frames + 1
            if splitter.at_line_start and not to_skip:
                c.offset, c.frames, c.lines, c.skip_lines = pos, frames, lines, 0
                aligned_lines = lines
        if splitter.skipping:
            self.warn(f"line {lines} is longer than {self.max_line_bytes} bytes and not finished; skipping it")
