"""The source folders one ingestion worker follows, and which folder and source a path belongs to.

Owns: :class:`Folder` (one configured source folder: its kind, root, the
sources that read it, its health and whether it is watched now),
:class:`Folders` (every folder; a path goes to the deepest folder that holds
it, then to the first of that folder's sources whose ``classify`` says yes;
the daemon's own paths and hidden paths are never offered) and the scan of a
folder's logs. :class:`EndedSession` is what a session-end report carries.

Never: reads a log, touches the database, watches files, or names a log
format (the sources registry :data:`mmd.sources.FOLDERS` says which sources
read a kind's folder).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mmd.sources import FOLDERS, SOURCES, Source

from .health import SourceHealth

__all__ = ["EndedSession", "Folder", "FolderSetting", "Folders"]


class FolderSetting(Protocol):
    """A configured source (:class:`mmd.daemon.config.SourceSetting`): kind, folder, enabled."""

    @property
    def kind(self) -> str: ...
    @property
    def folder(self) -> Path: ...
    @property
    def enabled(self) -> bool: ...


@dataclass(frozen=True)
class EndedSession:
    """A followed agent session whose log went quiet: the payload of a ``session-end`` nudge.

    Attributes:
        agent: the source's name (a :data:`mmd.sources.SOURCES` name).
        session_id: the agent's session id.
        project: the session's working directory, or None when the log does not say.
        file: the log (absolute path).
    """

    agent: str
    session_id: str
    project: str | None
    file: str


@dataclass
class Folder:
    """One configured source folder.

    Attributes:
        kind: a key of :data:`mmd.sources.FOLDERS`.
        root: the folder (absolute, not resolved).
        sources: the sources that read it, in the order a path is offered to them.
        health: its ``ingest.sources[]`` entry.
        inode: the root's inode while it is watched; None while it is missing (or turned off).
        backfilled: its logs were read since it (re)appeared.
    """

    kind: str
    root: Path
    sources: list[Source]
    health: SourceHealth
    inode: int | None = None
    backfilled: bool = False

    @property
    def enabled(self) -> bool:
        """Not turned off in the config."""
        return self.health.enabled

    def holds(self, path: str) -> bool:
        """Whether ``path`` (absolute) is under this folder's root."""
        return path.startswith(str(self.root) + os.sep)

    def present_inode(self) -> int | None:
        """The root's inode when it is a folder now, else None."""
        try:
            st = os.stat(self.root)
        except OSError:
            return None
        return st.st_ino if os.path.isdir(self.root) else None


class Folders:
    """Every configured source folder of one worker.

    Args:
        settings: the configured sources (kind, folder, enabled), one per kind.
        exclude: the daemon's own paths (the memory root): never offered to a source.
    """

    def __init__(self, settings: Sequence[FolderSetting], exclude: Sequence[Path] = ()) -> None:
        self.all: list[Folder] = []
        for s in settings:
            root = Path(os.path.abspath(s.folder))
            self.all.append(Folder(s.kind, root, [SOURCES[name] for name in FOLDERS[s.kind]],
                                   SourceHealth(s.kind, str(root), enabled=s.enabled,
                                                phase="stopped" if s.enabled else "off")))
        self.exclude = [Path(p) for p in exclude]
        self.by_source: dict[str, Folder] = {src.name: f for f in self.all for src in f.sources}
        """The folder each source reads (a source reads one folder)."""

    def enabled(self) -> list[Folder]:
        """The folders not turned off."""
        return [f for f in self.all if f.enabled]

    def watched(self) -> list[Folder]:
        """The enabled folders that exist and are watched now."""
        return [f for f in self.all if f.enabled and f.inode is not None]

    def folder_of(self, path: str) -> Folder | None:
        """The deepest watched folder that holds ``path``, or None."""
        best: Folder | None = None
        for f in self.watched():
            if f.holds(path) and (best is None or len(str(f.root)) > len(str(best.root))):
                best = f
        return best

    def own(self, path: str) -> bool:
        """Whether ``path`` is at or under one of the daemon's own paths (as given, or resolved)."""
        p = Path(path)
        try:
            real = p.resolve()
        except (OSError, RuntimeError):
            real = p
        return any(_inside(real, own.resolve()) or _inside(p.absolute(), own.absolute()) for own in self.exclude)

    def source_of(self, path: str, folder: Folder | None = None) -> Source | None:
        """The source that reads ``path`` now, or None (not a log, not wanted now, another folder's, or our own)."""
        folder = folder if folder is not None else self.folder_of(path)
        if folder is None or self.folder_of(path) is not folder or self.own(path):
            return None
        p = Path(path)
        for source in folder.sources:
            if source.classify(p, folder.root):
                return source
        return None

    def scan(self, folder: Folder, unread: list[str] | None = None) -> list[tuple[str, Source]]:
        """Every log of ``folder`` a source reads now (hidden folders and files, and deeper folders, skipped).

        ``unread``, when given, receives the ``*.jsonl`` / ``*.jsonl.zst`` files no source reads (subagent logs,
        or logs not where or as their agent writes them), so a layout that hides them can be said.
        """
        found: list[tuple[str, Source]] = []
        deeper = {str(f.root) for f in self.watched() if f is not folder and folder.holds(str(f.root))}
        for dirpath, dirnames, filenames in os.walk(folder.root, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and os.path.join(dirpath, d) not in deeper]
            for name in filenames:
                if name.startswith("."):
                    continue
                path = os.path.join(dirpath, name)
                source = self.source_of(path, folder)
                if source is not None:
                    found.append((path, source))
                elif unread is not None and name.endswith((".jsonl", ".jsonl.zst")):
                    unread.append(path)
        return found

    def visible(self, folder: Folder, path: str) -> bool:
        """Whether ``path`` is a regular file of ``folder`` with no hidden part below the root."""
        rel = os.path.relpath(path, folder.root)
        return os.path.isfile(path) and not rel.startswith("..") and not any(
            part.startswith(".") for part in Path(rel).parts)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
