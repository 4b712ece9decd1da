"""Where session logs live and which files count (dsh-session-format.md §1, §8).

Owns: classifying a path under the sessions folder (a DSH generation file, the
newest one of its session directory, an "other" log, or ignored and why), the
DSH path escaping (``projectKey`` / ``encodeSegment`` and its inverse), the
session identity of a DSH file, and the read-only liveness probe of a
session's ``session.lock``.

Never: reads ``os.environ`` (the caller passes ``$DSH_HOME``), takes a lock,
writes a file, or decodes log content beyond the header line.
"""

from __future__ import annotations

import enum
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .header import read_header

__all__ = [
    "LogKind",
    "OTHER_SUFFIXES",
    "LogPath",
    "SessionIdentity",
    "classify_path",
    "decode_segment",
    "default_sessions_dir",
    "encode_segment",
    "is_session_live",
    "newest_generation",
    "parse_generation",
    "project_dir_name",
    "project_key",
    "scan_sessions",
    "session_identity",
]

_GENERATION_RE = re.compile(r"^session(?:\.v([1-9][0-9]*))?\.jsonl(\.zstd)?$")
OTHER_SUFFIXES = (".jsonl", ".json", ".md")
"""Name endings (lower-cased) of the other logs read beside DSH logs."""
_TEMP_SUFFIXES = (".tmp",)
_BACKUP_SUFFIXES = ("~", ".bak", ".orig", ".swp", ".swo", ".swx")
_LOCK_SUFFIXES = (".lock",)
_SAFE_CHARS = re.compile(r"[A-Za-z0-9._-]")
_NO_CWD_DIR = "_no-cwd"
_PROJECT_KEY_MAX = 251
"""``projectKey`` is cut to this many characters (§1)."""
_PROC_LOCKS = "/proc/locks"


class LogKind(enum.StrEnum):
    """What a path under the sessions folder is, for ingestion."""

    DSH = "dsh"
    """A DSH generation file ``session[.vN].jsonl[.zstd]`` (§1)."""
    OTHER = "other"
    """Another ``*.jsonl``, ``*.json`` or ``*.md`` file: digested as it is."""
    IGNORED = "ignored"
    """Anything else; ``LogPath.reason`` says why."""


@dataclass(frozen=True)
class LogPath:
    """The classification of one path.

    ``generation`` is N of ``session.vN.jsonl`` (0 for ``session.jsonl``) and
    ``newest`` tells whether it is the highest generation of its directory;
    both only mean something for :attr:`LogKind.DSH`. ``reason`` is a short
    word for ignored paths: ``missing``, ``outside``, ``hidden``, ``own``,
    ``not-a-file``, ``temp``, ``backup``, ``lock``, ``unsupported``.
    """

    path: Path
    kind: LogKind
    reason: str = ""
    generation: int | None = None
    compressed: bool = False
    newest: bool = False

    @property
    def wanted(self) -> bool:
        """Whether ingestion should read this file: the newest DSH generation or an other log."""
        return self.kind is LogKind.OTHER or (self.kind is LogKind.DSH and self.newest)


@dataclass(frozen=True)
class SessionIdentity:
    """Who a DSH log belongs to.

    ``session_id`` and ``cwd`` come from the header when it is readable
    (``source == "header"``), else from the path (``source == "path"``, and
    ``cwd`` is None). ``project_key`` is the project folder name without its
    ``--`` wrappers; None for ``_no-cwd`` sessions.
    """

    session_id: str
    project_key: str | None
    cwd: str | None
    source: str


def default_sessions_dir(dsh_home: str | None, home: Path) -> Path:
    """The sessions folder: ``<home>/sessions``, home being ``$DSH_HOME`` or ``~/.dsh`` (§1).

    Args:
        dsh_home: the value of ``$DSH_HOME`` (None when unset); blank after
            trimming whitespace counts as unset.
        home: the user's home folder, used for ``~/.dsh``.
    """
    value = (dsh_home or "").strip()
    base = Path(value).expanduser() if value else home / ".dsh"
    return base / "sessions"


def _escape_unit(ch: str) -> str:
    data = ch.encode("utf-16-be", "surrogatepass")
    return "".join(f"~{int.from_bytes(data[i:i + 2], 'big'):04X}" for i in range(0, len(data), 2))


def project_key(cwd: str) -> str:
    """DSH ``projectKey(cwd)`` (§1): separators to ``-``, unsafe UTF-16 units to ``~XXXX``, 251 chars max."""
    out: list[str] = []
    stripped = cwd.lstrip("/\\:")
    for part in re.split(r"([/\\:]+)", stripped):
        if not part:
            continue
        if part[0] in "/\\:":
            out.append("-")
            continue
        out.extend(ch if _SAFE_CHARS.fullmatch(ch) else _escape_unit(ch) for ch in part)
    return "".join(out)[:_PROJECT_KEY_MAX]


def project_dir_name(cwd: str | None) -> str:
    """The project folder name for a session's cwd: ``--<projectKey(cwd)>--``, or ``_no-cwd`` (§1)."""
    if cwd is None or cwd == "":
        return _NO_CWD_DIR
    return f"--{project_key(cwd)}--"


def encode_segment(segment: str) -> str:
    """DSH ``encodeSegment`` (§1): like :func:`project_key` escaping, with ``.`` also escaped."""
    return "".join(ch if ch != "." and _SAFE_CHARS.fullmatch(ch) else _escape_unit(ch) for ch in segment)


def decode_segment(segment: str) -> str:
    """Undo the ``~XXXX`` escapes of :func:`encode_segment` / :func:`project_key` (surrogate pairs joined)."""
    if "~" not in segment:
        return segment
    units = bytearray()
    out: list[str] = []
    i = 0
    while i < len(segment):
        m = re.match(r"~([0-9A-Fa-f]{4})", segment[i:])
        if m:
            units += int(m.group(1), 16).to_bytes(2, "big")
            i += 5
            continue
        if units:
            out.append(units.decode("utf-16-be", "replace"))
            units.clear()
        out.append(segment[i])
        i += 1
    if units:
        out.append(units.decode("utf-16-be", "replace"))
    return "".join(out)


def parse_generation(name: str) -> tuple[int, bool] | None:
    """``(N, compressed)`` for a generation file name, else None (§1: version 0 is ``session.jsonl``)."""
    m = _GENERATION_RE.match(name)
    if m is None:
        return None
    return (int(m.group(1)) if m.group(1) else 0), m.group(2) is not None


def newest_generation(session_dir: str | os.PathLike[str]) -> Path | None:
    """The generation file to read in one session directory: the highest N (§1).

    When both ``.jsonl`` and ``.jsonl.zstd`` exist for that N (DSH never mixes
    them; a person may have decompressed one), the most recently modified wins,
    and the zstd one on a tie. Only regular files (or symlinks to them) count.
    Returns None when the directory holds no generation file or cannot be listed.
    """
    best: tuple[int, int, int] | None = None
    best_path: Path | None = None
    try:
        entries = list(os.scandir(session_dir))
    except OSError:
        return None
    for entry in entries:
        parsed = parse_generation(entry.name)
        if parsed is None:
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        key = (parsed[0], st.st_mtime_ns, int(parsed[1]))
        if best is None or key > best:
            best, best_path = key, Path(entry.path)
    return best_path


def _relative(p: Path, root: Path, real_root: Path) -> Path | None:
    """``p`` relative to the folder, as given or through symlinked ancestors of either; None if outside."""
    try:
        return p.absolute().relative_to(root.absolute())
    except ValueError:
        pass
    try:
        return (Path(os.path.realpath(p.parent)) / p.name).relative_to(real_root)
    except (OSError, ValueError):
        return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _ignored_name(name: str) -> str:
    lowered = name.lower()
    if lowered.endswith(_TEMP_SUFFIXES):
        return "temp"
    if lowered.endswith(_BACKUP_SUFFIXES):
        return "backup"
    if lowered.endswith(_LOCK_SUFFIXES):
        return "lock"
    return ""


def classify_path(
    path: str | os.PathLike[str],
    sessions_dir: str | os.PathLike[str],
    *,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> LogPath:
    """Classify one path under the sessions folder (§1).

    Ignored: paths outside the folder (also symlinks resolving outside it),
    hidden files and anything under a hidden folder (``.*.swp``, ``.mmd/``),
    paths at or under ``exclude`` (our own files), non-regular files, temp
    ``*.tmp`` (DSH staging ``session*.jsonl*.<12hex>.tmp``), backups ``*~``
    ``*.bak`` ``*.orig``, swap files, ``*.lock`` (``session.lock``), and any
    other suffix. Costs one ``stat`` plus, for a generation file, one listing
    of its directory. Never raises for a missing or unreadable path.
    """
    p = Path(path)
    root = Path(sessions_dir)
    try:
        real_root = root.resolve()
    except (OSError, RuntimeError):
        return LogPath(p, LogKind.IGNORED, "missing")
    rel = _relative(p, root, real_root)
    if rel is None:
        return LogPath(p, LogKind.IGNORED, "outside")
    if any(part.startswith(".") for part in rel.parts):
        return LogPath(p, LogKind.IGNORED, "hidden")
    try:
        real = p.resolve(strict=True)
        st = p.stat()
    except (OSError, RuntimeError):
        return LogPath(p, LogKind.IGNORED, "missing")
    if not _inside(real, real_root):
        return LogPath(p, LogKind.IGNORED, "outside")
    for own in exclude:
        own_real = Path(own).resolve()
        if _inside(real, own_real) or _inside(p.absolute(), Path(own).absolute()):
            return LogPath(p, LogKind.IGNORED, "own")
    if not stat.S_ISREG(st.st_mode):
        return LogPath(p, LogKind.IGNORED, "not-a-file")
    reason = _ignored_name(p.name)
    if reason:
        return LogPath(p, LogKind.IGNORED, reason)
    parsed = parse_generation(p.name)
    if parsed is not None:
        newest = newest_generation(p.parent)
        return LogPath(p, LogKind.DSH, generation=parsed[0], compressed=parsed[1],
                       newest=newest is not None and newest.name == p.name)
    if p.name.lower().endswith(OTHER_SUFFIXES):
        return LogPath(p, LogKind.OTHER)
    return LogPath(p, LogKind.IGNORED, "unsupported")


def scan_sessions(
    sessions_dir: str | os.PathLike[str],
    *,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> list[LogPath]:
    """Every log ingestion should read: newest DSH generations and other logs, sorted by path.

    Walks the folder without following directory symlinks and skips hidden
    folders. A missing folder gives an empty list.
    """
    excluded = list(exclude)
    out: list[LogPath] = []
    for path in _walk_files(Path(sessions_dir)):
        info = classify_path(path, sessions_dir, exclude=excluded)
        if info.wanted:
            out.append(info)
    return sorted(out, key=lambda info: str(info.path))


def _walk_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                yield Path(dirpath) / name


def session_identity(path: str | os.PathLike[str]) -> SessionIdentity:
    """The session id, project key and cwd of a DSH generation file (§1, §3).

    Prefers the header line (``id``, ``cwd``); falls back to the path
    (``<root>/--<projectKey>--/<encodeSegment(id)>/<file>``) when the header
    is missing, torn or unreadable. Never raises.
    """
    p = Path(path)
    dir_name = p.parent.parent.name
    if dir_name.startswith("--") and dir_name.endswith("--") and len(dir_name) >= 4:
        key: str | None = dir_name[2:-2]
    else:
        key = None
    try:
        header = read_header(p)
    except OSError:
        header = None
    if header is not None and isinstance(header.get("id"), str):
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        if cwd:
            key = project_key(cwd)
        return SessionIdentity(header["id"], key, cwd, "header")
    return SessionIdentity(decode_segment(p.parent.name), key, None, "path")


def is_session_live(session_dir: str | os.PathLike[str]) -> bool | None:
    """Whether a DSH writer holds the session's ``session.lock`` (§8), probed read-only.

    Reads ``/proc/locks`` and looks for a lock on the lock file's device and
    inode; the lock itself is never taken (taking it, even briefly, can make
    DSH's write-open fail with ``SessionAlreadyOwnedError``). Returns False
    when there is no ``session.lock``, and None when liveness cannot be told
    (no ``/proc/locks``, e.g. macOS): the caller then falls back to the
    idle-time rule of §8.
    """
    try:
        st = os.stat(Path(session_dir) / "session.lock")
    except OSError:
        return False
    try:
        with open(_PROC_LOCKS, encoding="ascii", errors="replace") as f:
            table = f.read()
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    return any(_lock_target(line) == want for line in table.splitlines())


def _lock_target(line: str) -> tuple[int, int, int] | None:
    """``(major, minor, inode)`` of a ``/proc/locks`` line: ``1: FLOCK ADVISORY WRITE 42 fe:00:2146430 0 EOF``."""
    for field in line.split()[2:]:
        parts = field.split(":")
        if len(parts) == 3 and all(parts):
            try:
                return int(parts[0], 16), int(parts[1], 16), int(parts[2])
            except ValueError:
                return None
    return None
