"""The baseline injection: every index entry as one short, id-free line within a byte budget (issue 14).

With the notes' bodies (issue 28) the newest and most used notes carry their text first
(:mod:`.content`); the shape below is the part every baseline shares. Without bodies::

    Memory mm://local/ — 42 topics, newest first (read one: mmctl --user read <topic>, MCP mem_read):
    - deploy-region: Deploy only to eu-west-1; us-east is frozen <mm://local/deploy-region>
    - …
    … 12 older topics not shown; `mmctl read` (MCP mem_read) lists them.

Each entry line holds the topic, its summary and its URI, is at most
:data:`LINE_MAX_CHARS` code points (the summary cut at a word boundary with
``…``), and carries no entry id or hash. Lines run most recently updated
first; when the next one would not fit ``max_bytes`` (UTF-8) the rest are
named by count, with the way to read them. The commands named carry ``--root`` unless the root is the
default one (``~/.dsh/memory``, mm v1 §2): an agent runs them in its own shell (:func:`command_for`).

Owns: line rendering (shared with :mod:`.delta`), word clipping, fitting lines to a byte budget.
Never: reads files or clocks, or changes a topic's text beyond clipping its summary.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from mmd.core.errors import ErrorCode, MMError
from mmd.core.model import IndexEntry
from mmd.core.record import Record
from mmd.core.uri import uri_for

from .scopes import DEFAULT_MAX_BYTES  # defined there: the hook before every prompt needs it without this module

__all__ = [
    "DEFAULT_MAX_BYTES",
    "LINE_MAX_CHARS",
    "Baseline",
    "clip_words",
    "command_for",
    "entry_line",
    "mmctl_path",
    "fit_lines",
    "recency_order",
    "render_baseline",
]

LINE_MAX_CHARS = 120
"""Longest entry line, in code points."""
ELLIPSIS = "…"


def command_for(root: Path | None) -> str:
    """``mmctl --user`` for the default root ``~/.dsh/memory``, else ``mmctl --root <root>`` (shell-quoted): the
    command an agent is told to run, in a shell that may resolve another root (and :func:`mmctl_path`, when the
    ``mmctl`` on PATH is not this installation's). Either names that root alone: a bare ``mmctl read rules`` in a
    project folder reads the project's ``rules`` first, which shadows the user root's note of the same topic."""
    import shlex  # loaded where used: the hook without a daemon plans here (issue 31)

    program = mmctl_path()
    if root is None or Path(root) == Path.home() / ".dsh" / "memory":
        return f"{program} --user"
    return f"{program} --root {shlex.quote(str(root))}"


@functools.cache
def mmctl_path() -> str:
    """``mmctl`` when the one on PATH is this installation's (or none sits beside this Python), else this
    installation's by absolute path, shell-quoted: a hook or a service may run with a PATH that has none.

    A virtual environment's own ``bin`` on PATH does not count: that is a shell's activation, which the agents a
    daemon serves (and their shells) seldom share, so a daemon started from an activated environment names its
    ``mmctl`` by path; a link to it elsewhere on PATH (``pipx``'s ``~/.local/bin``) is every shell's, and counts.
    """
    import shlex

    mine = Path(sys.executable).parent / "mmctl"
    if not mine.is_file():
        return "mmctl"
    found = _which("mmctl")
    activated = found is not None and sys.prefix != sys.base_prefix and \
        os.path.realpath(os.path.dirname(found)) == os.path.realpath(mine.parent)
    if found is not None and not activated and os.path.realpath(found) == os.path.realpath(mine):
        return "mmctl"
    return shlex.quote(str(mine))


def _which(program: str) -> str | None:
    """:func:`shutil.which` of ``program`` on POSIX (the first executable file of that name along ``$PATH``), without
    importing :mod:`shutil`, whose archive modules (bz2, lzma) cost ~3 ms of the hook without a daemon (issue 31)."""
    if os.name == "nt":
        import shutil

        return shutil.which(program)
    path = os.environ.get("PATH")
    if path is None:
        path = os.confstr("CS_PATH") or os.defpath
    seen: set[str] = set()
    for folder in path.split(os.pathsep) if path else ():
        if folder in seen:
            continue
        seen.add(folder)
        candidate = os.path.join(folder, program)
        if os.path.exists(candidate) and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def read_hint(command: str = "mmctl", changed: bool = False) -> str:
    """``read one: <command> read <topic>, MCP mem_read`` (``changed``: ``MCP mem_reload then mem_read``, since an
    MCP session reads the snapshot it took before the change)."""
    return f"read one: {command} read <topic>, MCP {'mem_reload then mem_read' if changed else 'mem_read'}"


def list_hint(command: str = "mmctl") -> str:
    """```<command> read` (MCP mem_read) lists them``."""
    return f"`{command} read` (MCP mem_read) lists them"

_MIN_SUMMARY_ROOM = 8


def clip_words(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` code points, else cut at a word boundary and ended with ``…``.

    The result (ellipsis included) has at most ``limit`` code points. A first
    word longer than the room is cut inside the word. ``limit`` < 1 gives ''.
    """
    if len(text) <= limit:
        return text
    if limit < 1:
        return ""
    head = text[: limit - 1]
    if not text[limit - 1].isspace():  # the cut falls inside a word: back off to its start
        space = max(head.rfind(" "), head.rfind("\t"))
        if space > 0:
            head = head[:space]
    return head.rstrip() + ELLIPSIS


def entry_line(entry: IndexEntry, memory_id: str, prefix: str = "") -> str:
    """One id-free line for ``entry``: ``- <prefix><topic>: <summary> <<uri>>``, at most 120 code points.

    The summary is clipped at a word (:func:`clip_words`). When a long topic
    leaves the summary less than 8 code points, the line drops the bare topic
    and keeps the URI (which holds it): ``- <prefix><<uri>> <summary>``; a line
    still too long is cut with ``…``.

    Args:
        entry: the index entry.
        memory_id: the memory id of the URI.
        prefix: words before the topic (``added `` in a delta).
    """
    uri = uri_for(memory_id, entry.topic)
    summary = entry.summary
    if not summary:
        bare = f"- {prefix}{entry.topic} <{uri}>"
        return bare if len(bare) <= LINE_MAX_CHARS else clip_words(f"- {prefix}<{uri}>", LINE_MAX_CHARS)
    for head, tail in ((f"- {prefix}{entry.topic}: ", f" <{uri}>"), (f"- {prefix}<{uri}> ", "")):
        room = LINE_MAX_CHARS - len(head) - len(tail)
        if room >= min(len(summary), _MIN_SUMMARY_ROOM):
            return head + clip_words(summary, room) + tail
    return clip_words(f"- {prefix}<{uri}> {summary}", LINE_MAX_CHARS)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def fit_lines(header: str, lines: Iterable[str], total: int, footer: Callable[[int], str],
              max_bytes: int) -> tuple[list[str], int]:
    """Take ``lines`` in order while the text still fits ``max_bytes`` with the footer for the rest.

    The text is ``header``, the kept lines and, when some are left out,
    ``footer(omitted)``, joined by LF. ``lines`` is consumed lazily: only the
    lines that fit (plus one) are rendered.

    Args:
        header: first line ('' for none).
        lines: the candidate lines, ``total`` of them.
        footer: the count line for ``omitted`` left-out lines.
        max_bytes: budget in UTF-8 bytes.

    Returns:
        ``(all lines of the text, omitted count)``.

    Raises:
        MMError(E_INVALID): if ``max_bytes`` is not a positive integer, or too
            small for the header (plus the footer naming every line, when there are lines).
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise MMError(ErrorCode.E_INVALID, f"maxBytes must be a positive integer, got {max_bytes!r}")
    out = [header] if header else []
    used = _size(header) if header else -1  # -1: the first line then pays no separator
    if used > max_bytes:
        raise MMError(ErrorCode.E_INVALID, f"maxBytes {max_bytes} is too small: the heading alone takes {used} bytes")
    if total:
        floor = used + 1 + _size(footer(total))
        if floor > max_bytes:
            raise MMError(ErrorCode.E_INVALID,
                          f"maxBytes {max_bytes} is too small: the heading and the count line alone take {floor} bytes")
    kept = 0
    for line in lines:
        rest = total - kept - 1
        need = 1 + _size(line) + (1 + _size(footer(rest)) if rest > 0 else 0)
        if used + need > max_bytes:
            break
        out.append(line)
        used += 1 + _size(line)
        kept += 1
    omitted = total - kept
    if omitted:
        out.append(footer(omitted))
    return out, omitted


def recency_order(entries: Iterable[IndexEntry]) -> list[IndexEntry]:
    """Entries most recently ``updated`` first (ties by topic), one per topic (its first section)."""
    seen: set[str] = set()
    unique = [e for e in entries if not (e.topic in seen or seen.add(e.topic))]  # type: ignore[func-returns-value]
    unique.sort(key=lambda e: e.topic)
    unique.sort(key=lambda e: e.updated, reverse=True)
    return unique


class Baseline(Record):
    """A rendered baseline.

    Attributes:
        text: the injection text (no final LF).
        shown: the topics that have a line, in text order.
        omitted: how many topics are named only by count.
    """

    __slots__ = ("text", "shown", "omitted")

    def __init__(self, text: str, shown: tuple[str, ...], omitted: int) -> None:
        self.text, self.shown, self.omitted = text, shown, omitted

    @property
    def bytes(self) -> int:
        """Size of :attr:`text` in UTF-8 bytes."""
        return _size(self.text)


def render_baseline(entries: Sequence[IndexEntry], *, memory_id: str, max_bytes: int = DEFAULT_MAX_BYTES,
                    ordered: bool = False, command: str = "mmctl", bodies: Mapping[str, str] | None = None,
                    uses: Mapping[str, int] | None = None) -> Baseline:
    """The baseline text of an index (see the module docstring for its shape).

    Args:
        entries: index entries; a topic listed twice counts once.
        memory_id: the memory id of the URIs.
        max_bytes: budget in UTF-8 bytes (default :data:`DEFAULT_MAX_BYTES`).
        ordered: ``entries`` are already in their order (:func:`recency_order`, or :func:`.content.use_order`):
            skips the sort on big roots.
        command: how the text names mmctl (:func:`command_for` the root).
        bodies: topic → note body: the newest and most used notes then carry their text
            (:func:`mmd.inject.content.render_with_text`); None: one line per topic.
        uses: topic → reads, for the order with ``bodies`` (:func:`mmd.inject.content.use_order`).

    Raises:
        MMError(E_INVALID): if ``max_bytes`` is not a positive integer or too small (see :func:`fit_lines`).
    """
    if bodies is not None and entries:
        from .content import render_with_text, use_order

        order = list(entries) if ordered else use_order(entries, uses)
        return render_with_text(order, bodies, memory_id=memory_id, max_bytes=max_bytes, command=command)
    order = list(entries) if ordered else recency_order(entries)

    def omitted_line(count: int) -> str:
        return f"… {count} older {'topic' if count == 1 else 'topics'} not shown; {list_hint(command)}."

    if not order:
        text = f"Memory mm://{memory_id}/ — no topics yet (record one: {command} write <topic>, MCP mem_write)."
        return Baseline("\n".join(fit_lines(text, (), 0, omitted_line, max_bytes)[0]), (), 0)
    noun = "topic" if len(order) == 1 else "topics"
    header = f"Memory mm://{memory_id}/ — {len(order)} {noun}, newest first ({read_hint(command)}):"
    lines, omitted = fit_lines(header, (entry_line(e, memory_id) for e in order), len(order), omitted_line,
                               max_bytes)
    shown = tuple(e.topic for e in order[: len(order) - omitted])
    return Baseline("\n".join(lines), shown, omitted)
