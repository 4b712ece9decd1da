"""Text of non-DSH logs under the sessions folder: ``*.jsonl``, ``*.json``, ``*.md`` (DESIGN "Ingestion").

Owns: reading such a file as the text the digest rules get "as it is",
bounded in size and decoded as UTF-8 with replacement. ``*.jsonl`` is followed
like a DSH log (complete new lines after a cursor, never a torn tail);
``*.json`` and ``*.md`` are whole documents, read again when they change.

Never: interprets the content (no JSON decoding), or reads a binary file as text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .decode import MAX_LINE_BYTES, LogCursor, LogReader, log

__all__ = ["MAX_OTHER_BYTES", "OtherRead", "read_other_log"]

MAX_OTHER_BYTES = 4 * 1024 * 1024
"""Most bytes of text one :func:`read_other_log` call returns."""
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class OtherRead:
    """The outcome of one :func:`read_other_log` call.

    Attributes:
        text: new text (``""`` when nothing changed or the file is binary).
        cursor: pass it to the next call.
        truncated: ``*.jsonl``: more complete lines wait for the next call;
            ``*.json``/``*.md``: the document is longer than the cap and was cut.
        binary: the file holds NUL bytes and was not read as text.
        restarted: ``""``, or why the file was read from byte 0 again.
        warnings: what was skipped.
    """

    text: str
    cursor: LogCursor
    truncated: bool = False
    binary: bool = False
    restarted: str = ""
    warnings: list[str] = field(default_factory=list)


def _utf8(data: bytes, *, cut_tail: bool = False) -> str:
    """Decode as UTF-8 with replacement, dropping a BOM and (``cut_tail``) a sequence cut at the end."""
    cut = len(data)
    for back in range(1, min(4, len(data)) + 1 if cut_tail else 0):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead or ASCII byte: is its sequence complete?
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 6 else 3 if byte >> 4 == 14 else 4
            if need > back:
                cut = len(data) - back
            break
    return data[:cut].decode("utf-8", "replace").removeprefix("\ufeff")


def read_other_log(
    path: str | os.PathLike[str],
    cursor: LogCursor | None = None,
    *,
    max_bytes: int = MAX_OTHER_BYTES,
) -> OtherRead:
    """The text to digest from one non-DSH log since ``cursor``.

    ``*.jsonl``: the new complete lines, joined by ``\\n``, at most about
    ``max_bytes`` bytes per call (lines holding NUL bytes or longer than 8 MiB
    are skipped with a warning). Others: the whole file when it changed since
    ``cursor`` (at most ``max_bytes`` bytes), else ``""``.

    Raises:
        OSError: if the file cannot be opened or read.
    """
    if os.fspath(path).lower().endswith(".jsonl"):
        return _read_lines(path, cursor, max_bytes)
    return _read_document(path, cursor, max_bytes)


def _read_lines(path: str | os.PathLike[str], cursor: LogCursor | None, max_bytes: int) -> OtherRead:
    warnings: list[str] = []
    parts: list[str] = []
    size = 0
    more = False
    with LogReader(path, cursor, max_line_bytes=min(MAX_LINE_BYTES, max_bytes), warnings=warnings) as reader:
        for index, line in reader:
            if b"\x00" in line:
                reader.warn(f"line {index} holds NUL bytes; skipped as binary")
                continue
            parts.append(_utf8(line))
            size += len(line) + 1
            if size >= max_bytes:
                more = True
                break
    return OtherRead("\n".join(parts), reader.cursor, truncated=more and not reader.complete,
                     restarted=reader.restarted, warnings=warnings)


def _read_document(path: str | os.PathLike[str], cursor: LogCursor | None, max_bytes: int) -> OtherRead:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        new = LogCursor(path=os.fspath(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns,
                        offset=st.st_size)
        if cursor is not None and (cursor.inode, cursor.size, cursor.mtime_ns) == (new.inode, new.size,
                                                                                  new.mtime_ns):
            return OtherRead("", cursor)
        data = b""
        while len(data) < min(max_bytes, st.st_size):
            chunk = os.pread(fd, min(max_bytes, st.st_size) - len(data), len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    restarted = "replaced" if cursor is not None and cursor.inode not in (0, st.st_ino) else ""
    if b"\x00" in data[:_SNIFF_BYTES]:
        message = f"{os.fspath(path)}: holds NUL bytes; not read as text"
        log.warning("%s", message)
        return OtherRead("", new, binary=True, restarted=restarted, warnings=[message])
    truncated = st.st_size > max_bytes
    return OtherRead(_utf8(data, cut_tail=truncated), new, truncated=truncated, restarted=restarted)
