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
is refused: guessing could clobber a hand edit. Markers inside a fenced code
block (a line opening with three or more backticks or tildes, up to the line
closing it) or inside a code span on their line are an example, not ours: they
are left alone, and a file that ends inside an open fence is refused rather
than given a block no later rewrite could find.

The file is the user's, not the root's: :func:`write_block` writes it through
:func:`mmd.core.userfile.update_user_file` (a regular file of the user's, a symlink
followed only inside the home, never a FIFO, read-only refused, atomic, a hand
edit made meanwhile kept).

Owns: finding the markers, rebuilding the bytes. Never: renders the baseline (the
caller passes the text), or writes when the bytes would not change.
"""

from __future__ import annotations

import os
import re

from mmd.core.errors import ErrorCode, MMError
from mmd.core.userfile import update_user_file

__all__ = ["BEGIN_MARKER", "END_MARKER", "read_block", "replace_block", "write_block"]

BEGIN_MARKER = "<!-- mm:begin -->"
END_MARKER = "<!-- mm:end -->"
_BEGIN = BEGIN_MARKER.encode()
_END = END_MARKER.encode()
_FENCE = re.compile(rb"^ {0,3}(`{3,}|~{3,})(.*)$")


def _fences(data: bytes) -> tuple[list[tuple[int, int]], int | None]:
    """The byte ranges of the fenced code blocks (CommonMark: an opening line of 3+ backticks or tildes up to a
    closing line of the same character, at least as long, with nothing after it), and the line number of a
    fence left open at the end (None when every fence closes)."""
    spans: list[tuple[int, int]] = []
    opened: tuple[int, bytes, int] | None = None  # (start, fence, line number)
    at = 0
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        match = _FENCE.match(line.rstrip(b"\r\n"))
        if opened is None:
            if match and not (match[1][:1] == b"`" and b"`" in match[2]):
                opened = (at, match[1], number)
        elif match and match[1][:1] == opened[1][:1] and len(match[1]) >= len(opened[1]) and not match[2].strip():
            spans.append((opened[0], at + len(line)))
            opened = None
        at += len(line)
    if opened is not None:
        spans.append((opened[0], len(data)))
    return spans, None if opened is None else opened[2]


def _markers(data: bytes, marker: bytes, fences: list[tuple[int, int]]) -> list[int]:
    """Where ``marker`` stands as ours: outside every fence and not inside a code span of its line."""
    found, at = [], data.find(marker)
    while at >= 0:
        line_start = data.rfind(b"\n", 0, at) + 1
        in_span = data.count(b"`", line_start, at) % 2 == 1
        if not in_span and not any(start <= at < end for start, end in fences):
            found.append(at)
        at = data.find(marker, at + 1)
    return found


def _span(data: bytes, name: str) -> tuple[int, int] | None:
    """``(start of the begin marker, end of the end marker)``, or None when the file has neither.

    Raises:
        MMError(E_INVALID): when only one marker is present, the end comes first, either appears twice, or
            (without markers) the file ends inside an open fence.
    """
    fences, open_line = _fences(data)
    begins, ends = _markers(data, _BEGIN, fences), _markers(data, _END, fences)
    if not begins and not ends:
        if open_line is not None:
            raise MMError(ErrorCode.E_INVALID, f"{name} ends inside a code fence opened on line {open_line}; close "
                                               "it so the memory block can be added after it (nothing was written)",
                          details=name)
        return None
    begin, end = (begins or [-1])[0], (ends or [-1])[0]
    problem = ""
    if begin < 0 or end < 0:
        problem = f"has {BEGIN_MARKER if begin >= 0 else END_MARKER} without its pair"
    elif end < begin:
        problem = f"has {END_MARKER} before {BEGIN_MARKER}"
    elif len(begins) > 1 or len(ends) > 1:
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


def write_block(path: str | os.PathLike[str], text: str, *, home: str | os.PathLike[str] | None = None) -> bool:
    """Put ``text`` into the memory block of the file at ``path``, atomically; create the file if missing.

    The file is written as :func:`mmd.core.userfile.update_user_file` writes a file a user named: a
    symlink is followed only to the user's own regular file inside ``home`` (CLAUDE.md → AGENTS.md in a
    dotfiles repository stays a link; its target is updated) and refused elsewhere, naming the target; a
    FIFO, a device, another user's file or a read-only one is refused; the replacement keeps the file's
    mode; a hand edit made meanwhile is kept (the block is rebuilt on the new bytes). A new file is 0644.

    Args:
        home: the user's home (``$HOME``); None: the account's.

    Returns:
        True if the file was written, False if it already held this block.

    Raises:
        MMError(E_INVALID): broken markers, or a file the rules above refuse (nothing written).
        MMError(E_IO): the file cannot be read or written (it is then untouched), or it kept changing under us.
    """
    name = str(path)
    return update_user_file(path, lambda data: replace_block(data or b"", text, name=name), home=home,
                            new_mode=0o644)
