"""The ``other`` source: non-DSH ``*.jsonl``, ``*.json``, ``*.md`` files under the sessions folder (DESIGN "Ingestion").

Owns: :class:`OtherSource` and reading such a file as the text the digest
rules get "as it is", bounded in size and decoded as UTF-8 with replacement:
one utterance per read, ``who="text"``, no session. ``*.jsonl`` is followed
like a DSH log (complete new lines after a cursor, never a torn tail);
``*.json`` and ``*.md`` are whole documents, read again when they change.
Cursor JSON: a ``LogCursor`` object (the shape ``state.db`` has always held).

Never: interprets the content (no JSON decoding), reads a binary file as text,
or claims a DSH generation file name (the ``dsh`` source reads those, and
falls back to :func:`read_text_slice` for one that is not DSH).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Position, Slice, Utterance
from .dsh.layout import OTHER_SUFFIXES, LogKind, classify_path, default_sessions_dir, parse_generation
from .logio.decode import MAX_LINE_BYTES, LogCursor, LogReader, log

__all__ = ["MAX_OTHER_BYTES", "OtherRead", "OtherSource", "read_other_log", "read_text_slice"]

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



def read_text_slice(path: str, cursor: dict[str, Any] | None, agent: str, *, max_bytes: int,
                    warnings: list[str] | None = None) -> Slice:
    """One :func:`read_other_log` call as a :class:`~mmd.sources.base.Slice` (at most :data:`MAX_OTHER_BYTES`).

    Args:
        path: the file.
        cursor: a ``LogCursor`` JSON object, or None (or any other value) to read from the start.
        agent: the utterance's ``agent`` (the source reading the file).
        max_bytes: the caller's cap, bytes; the read takes the smaller of it and :data:`MAX_OTHER_BYTES`.
        warnings: earlier warnings of this read, kept first.

    Returns:
        At most one ``who="text"`` utterance (when the new text is not blank); ``more`` when a
        ``*.jsonl`` file has more complete lines; ``consumed`` in bytes of the file.

    Raises:
        OSError: if the file cannot be read (FileNotFoundError when it vanished).
    """
    old = LogCursor.from_json(cursor) if cursor is not None and "offset" in cursor and "log" not in cursor else None
    r = read_other_log(path, old, max_bytes=min(max_bytes, MAX_OTHER_BYTES))
    lines = path.lower().endswith(".jsonl")
    if lines:
        step = r.cursor.offset - (0 if r.restarted or old is None else old.offset)
    else:
        step = r.cursor.size if (r.text or r.binary) else 0
    said = [Utterance("text", r.text, agent, None, None, None, Position(path))] if r.text.strip() else []
    return Slice(said, r.cursor.to_json(), max(0, step), r.truncated and lines, bool(r.restarted),
                 warnings=[*(warnings or ()), *r.warnings])


class OtherSource:
    """The ``other`` source (see the module docstring); stateless, one instance serves every file and thread."""

    name = "other"

    def default_dir(self, env: Mapping[str, str], home: Path) -> Path:
        """The DSH sessions folder, where such files sit beside the DSH logs."""
        return default_sessions_dir(env.get("DSH_HOME"), home)

    def classify(self, path: Path, root: Path) -> bool:
        """Whether ``path`` is a ``*.jsonl`` / ``*.json`` / ``*.md`` file under ``root`` with no DSH generation name.

        Hidden, temp, backup, lock and non-regular files and paths outside ``root`` are not.
        """
        if not path.name.lower().endswith(OTHER_SUFFIXES) or parse_generation(path.name) is not None:
            return False
        return classify_path(path, root).kind is LogKind.OTHER

    def is_live(self, path: Path) -> bool:
        """Always False: these files give no liveness signal."""
        return False

    def read(self, path: str, cursor: dict[str, Any] | None, *, max_bytes: int, max_chars: int) -> Slice:
        """See :func:`read_text_slice` (``max_chars`` does not apply: the text is one utterance).

        Raises:
            OSError: if the file cannot be read (FileNotFoundError when it vanished).
        """
        return read_text_slice(path, cursor, self.name, max_bytes=max_bytes)
