"""The memory block of an instructions file (AGENTS.md, CLAUDE.md, …) for agents that only read files (issue 14).

The block is the text between the two marker lines::

    <!-- mm:begin -->
    Memory mm://local/ — 3 topics, …
    - …
    <!-- mm:end -->

:func:`replace_block` swaps what lies between the markers and keeps every
other byte of the file exactly as it was (CRLF files get CRLF inside the
block). A file without a marker pair gets one appended at its end. A file
whose markers are broken (a begin without an end, an end first, two begins)
is refused: guessing could clobber a hand edit.

Owns: finding the markers, rebuilding the bytes, the atomic write that keeps the file's mode.
Never: renders the baseline (the caller passes the text), or writes when the bytes would not change.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mmd.core.durable import atomic_write
from mmd.core.errors import ErrorCode, MMError

__all__ = ["BEGIN_MARKER", "END_MARKER", "read_block", "replace_block", "write_block"]

BEGIN_MARKER = "<!-- mm:begin -->"
END_MARKER = "<!-- mm:end -->"
_BEGIN = BEGIN_MARKER.encode()
_END = END_MARKER.encode()
_RETRIES = 3


def _span(data: bytes, name: str) -> tuple[int, int] | None:
    """``(start of the begin marker, end of the end marker)``, or None when the file has neither.

    Raises:
        MMError(E_INVALID): when only one marker is present, the end comes first, or either appears twice.
    """
    begin, end = data.find(_BEGIN), data.find(_END)
    if begin < 0 and end < 0:
        return None
    problem = ""
    if begin < 0 or end < 0:
        problem = f"has {BEGIN_MARKER if begin >= 0 else END_MARKER} without its pair"
    elif end < begin:
        problem = f"has {END_MARKER} before {BEGIN_MARKER}"
    elif data.find(_BEGIN, begin + 1) >= 0 or data.find(_END, end + 1) >= 0:
        problem = "has more than one memory block"
    if problem:
        raise MMError(ErrorCode.E_INVALID, f"{name} {problem}; fix the markers by hand (nothing was written)",
                      details=name)
    return begin, end + len(_END)


def replace_block(data: bytes, text: str, *, name: str = "the file") -> bytes:
    """``data`` with its memory block holding ``text``; every byte outside the markers unchanged.

    The new block is ``BEGIN``, newline, ``text`` (trailing newlines dropped),
    newline, ``END``, where newline is CRLF if ``data`` holds one, else LF.
    Without markers the block is appended after a blank line (one or two
    newlines are added unless ``data`` is empty or already ends in a blank
    line), followed by a final newline.

    Args:
        data: the file's bytes (any encoding that keeps ASCII as ASCII; UTF-8 assumed for ``text``).
        text: the block's content, e.g. :attr:`.baseline.Baseline.text`.
        name: the file's name for error messages.

    Raises:
        MMError(E_INVALID): for broken markers (see the module docstring), or a
            ``text`` holding a marker (the next rewrite could not find its end).
    """
    if BEGIN_MARKER in text or END_MARKER in text:
        raise MMError(ErrorCode.E_INVALID, "the block text must not contain the mm:begin/mm:end markers")
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    body = text.rstrip("\r\n").replace("\r\n", "\n").encode("utf-8")
    if newline != b"\n":
        body = body.replace(b"\n", newline)
    block = _BEGIN + newline + (body + newline if body else b"") + _END
    span = _span(data, name)
    if span is not None:
        return data[: span[0]] + block + data[span[1]:]
    lead = b""
    if data and not data.endswith(newline + newline):
        lead = (b"" if data.endswith(b"\n") else newline) + newline
    return data + lead + block + newline


def read_block(data: bytes, *, name: str = "the file") -> str | None:
    """The text inside the memory block (without its marker lines), or None when there is no block.

    Raises:
        MMError(E_INVALID): for broken markers.
    """
    span = _span(data, name)
    if span is None:
        return None
    inner = data[span[0] + len(_BEGIN): span[1] - len(_END)].decode("utf-8", "replace")
    return inner.replace("\r\n", "\n").strip("\n")


def write_block(path: str | os.PathLike[str], text: str) -> bool:
    """Put ``text`` into the memory block of the file at ``path``, atomically; create the file if missing.

    A symlink is followed (CLAUDE.md → AGENTS.md stays a link; its target is
    updated). The replacement is written to a temp file in the same folder,
    given the file's permission bits, fsynced and renamed over it; nothing is
    written when the bytes would not change. Just before the rename the file
    is read again: if it changed meanwhile (a hand edit), the block is rebuilt
    on the new bytes (up to 3 tries) so the edit is kept.

    Returns:
        True if the file was written, False if it already held this block.

    Raises:
        MMError(E_INVALID): broken markers (nothing written).
        MMError(E_IO): the file cannot be read or written (it is then untouched),
            or it kept changing under us.
    """
    target = Path(os.path.realpath(path))
    for _ in range(_RETRIES):
        data, mode = _read(target)
        new = replace_block(data, text, name=str(path))
        if new == data:
            return False
        if _read(target)[0] != data:
            continue
        atomic_write(target, new, 0o644 if mode is None else mode)
        if mode is not None and stat.S_IMODE(target.stat().st_mode) != mode:
            try:  # the temp file was created through the umask; restore the file's exact bits
                os.chmod(target, mode)
            except OSError as error:
                raise MMError(ErrorCode.E_IO, f"chmod {target} failed: {error.strerror}") from error
        return True
    raise MMError(ErrorCode.E_IO, f"{path} kept changing while its memory block was written; try again")


def _read(target: Path) -> tuple[bytes, int | None]:
    """The file's bytes and permission bits; ``(b"", None)`` for a missing file."""
    try:
        with open(target, "rb") as handle:
            return handle.read(), stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
    except FileNotFoundError:
        return b"", None
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"read {target} failed: {error.strerror}") from error
