"""The git merge driver ``mmd-index``: what a plain ``git merge`` / ``git pull`` of a memory root runs.

git runs ``<command> %O %A %B %P`` from the repository's top level
(registered by :func:`~.repo.ensure_repo`) and expects the merged result in
``%A``. For a MEMORY.md (the user root's, or a project root's
``projects/<key>/MEMORY.md``) the result is :func:`~.merge.merge_index`: entries
merged by topic, serialized exactly as a write would. For a note
(``memories/<topic>.md``, or a project root's) changed on both sides, the driver
reads the topic's entries in the MEMORY.md of the note's own root at ``HEAD``, at
the commit being merged (git names it in ``GITHEAD_<id>`` during ``git merge`` /
``git pull``) and at their merge base, and keeps the version the same rule keeps (the newer ``updated``);
where git names no such commit (rebase, cherry-pick) ours stays. The other
version is kept as a conflict record, naming its root (``scope``). Every conflict is spooled as
JSON under ``<root>/.mmd/git-conflicts/`` of the user root (git never tracks ``.mmd/``), where the daemon
picks them up as ``conflict`` review candidates (:func:`drain_conflicts`). The driver always leaves
``%A`` without conflict markers; it exits 0, or 1 (git then marks the path
conflicted with ours in the file) when a side is not mm v1.

mmd's own :func:`~.remote.sync` does not go through this driver: it merges
whole topics (entry and note together, the newer ``updated`` winning).
Owns: the driver's command line and the spool. Never does: commits.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmd.core.durable import atomic_write
from mmd.core.errors import ErrorCode, MMError
from mmd.core.format import parse_index, parse_note
from mmd.core.model import IndexEntry
from mmd.core.paths import INDEX_NAME, STATE_DIR
from mmd.core.projects import KEY_PATTERN, PROJECTS_DIR
from mmd.core.rootfs import make_folders

from .merge import Side, TopicVersion, decide, merge_index
from .runner import Git, GitError

__all__ = ["SPOOL_DIR", "drain_conflicts", "main", "merge_file", "spool_conflict"]

SPOOL_DIR = f"{STATE_DIR}/git-conflicts"
"""Where the driver leaves conflict records, relative to the root."""


def spool_conflict(root: Path, record: dict[str, Any]) -> Path:
    """Write one conflict record as ``<root>/.mmd/git-conflicts/<ns>-<pid>-<topic>.json``; returns its path.

    Raises:
        MMError(E_IO): if it cannot be written.
    """
    folder = root / SPOOL_DIR
    try:
        make_folders(folder)  # 0700 whatever git's umask, as every folder of .mmd/
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"create {folder} failed: {error.strerror}") from error
    path = folder / f"{time.time_ns()}-{os.getpid()}-{record.get('topic', 'file')}.json"
    atomic_write(path, json.dumps(record, ensure_ascii=False, sort_keys=True).encode())
    return path


def drain_conflicts(root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read and remove the spooled conflict records, oldest first, one per topic and kind.

    Returns:
        ``[{topic, kind, kept, other, keptEntry?, otherEntry?, keptBody?, otherBody?, paths, source}]``;
        unreadable files are left in place.
    """
    folder = Path(root) / SPOOL_DIR
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    by_topic: dict[tuple[str, str], dict[str, Any]] = {}
    for name in names:
        try:
            record = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        # The index and the note of one topic are merged by two driver runs: one record for both.
        key = (str(record.get("topic")), str(record.get("kind")))
        by_topic.setdefault(key, {}).update({k: v for k, v in record.items() if k != "path"})
        by_topic[key].setdefault("paths", []).append(record.get("path"))
        (folder / name).unlink(missing_ok=True)
    return list(by_topic.values())


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return handle.read()


def _scope_of(rel: str) -> tuple[str, str]:
    """``(scope, path in its root)`` of the repository path ``rel`` (``user``, or a project root's key), as
    :func:`~.layout.split` says it, without importing the sync's modules (git starts the driver per file)."""
    head, sep, rest = rel.partition("/")
    if sep and head == PROJECTS_DIR:
        key, sep, inner = rest.partition("/")
        if sep and inner and KEY_PATTERN.fullmatch(key):
            return key, inner
    return "user", rel


def merge_file(base_path: str, ours_path: str, theirs_path: str, rel: str, root: Path) -> int:
    """Merge one file as the driver does; writes ``ours_path``; returns the exit status (0 or 1)."""
    base, ours, theirs = _read(base_path), _read(ours_path), _read(theirs_path)
    scope, inner = _scope_of(rel)
    if inner == INDEX_NAME:
        try:
            merged = merge_index(base, ours, theirs)
        except MMError as error:
            print(f"mmd merge-index: {rel}: {error}", file=sys.stderr)
            return 1
        for c in merged.conflicts:
            spool_conflict(root, {**c.to_json(), "path": rel, "scope": scope, "source": "git merge driver"})
        atomic_write(Path(ours_path), merged.text.encode())
        return 0
    if ours == theirs or theirs == base:
        return 0
    if ours == base:
        atomic_write(Path(ours_path), theirs.encode())
        return 0
    topic = parse_note(ours).topic or parse_note(theirs).topic or Path(rel).stem
    index = rel[:len(rel) - len(inner)] + INDEX_NAME  # the MEMORY.md of the note's own root
    kept = _note_side(root, topic, (base, ours, theirs), os.environ, index)
    kept_text, other_text = (theirs, ours) if kept == "theirs" else (ours, theirs)
    if kept == "theirs":
        atomic_write(Path(ours_path), theirs.encode())
    spool_conflict(root, {"topic": topic, "kind": "both-changed", "kept": kept, "scope": scope,
                          "other": "ours" if kept == "theirs" else "theirs", "path": rel,
                          "keptBody": parse_note(kept_text).body, "otherBody": parse_note(other_text).body,
                          "source": "git merge driver"})
    return 0


def _note_side(root: Path, topic: str, texts: tuple[str, str, str], env: Mapping[str, str],
               index: str = INDEX_NAME) -> Side:
    """Which version of a note changed on both sides stays: the one :func:`~.merge.decide` keeps.

    The entries come from the note's root's MEMORY.md (``index``, a repository path) at HEAD, at the one
    ``GITHEAD_<id>`` commit and at their merge base; without exactly one such commit, or when git cannot
    tell, ours stays.
    """
    heads = [name[len("GITHEAD_"):] for name in env if name.startswith("GITHEAD_")]
    if len(heads) != 1:
        return "ours"
    try:
        git = Git(root, env)
        base_commit = git.out("merge-base", "HEAD", heads[0])
        entries = [_entry_at(git, commit, topic, index) for commit in (base_commit, "HEAD", heads[0])]
    except (GitError, MMError):
        return "ours"
    versions = [TopicVersion(entry, text) for entry, text in zip(entries, texts, strict=True)]
    return decide(topic, *versions)[1]


def _entry_at(git: Git, commit: str, topic: str, index: str = INDEX_NAME) -> IndexEntry | None:
    """``topic``'s entry in the MEMORY.md at the repository path ``index`` of ``commit``, or None."""
    done = git.run("show", f"{commit}:{index}", check=False)
    if done.returncode != 0:
        return None
    entries = parse_index(done.stdout.decode("utf-8", "replace"), strict_files=False).entries
    return next((e for e in entries if e.topic == topic), None)


def main(argv: Sequence[str] | None = None) -> int:
    """``<command> %O %A %B %P``: merge ``%P`` into ``%A``; exit status as :func:`merge_file`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 4:
        print("usage: mmd merge-index BASE OURS THEIRS PATH   (git's %O %A %B %P)", file=sys.stderr)
        return 2
    return merge_file(args[0], args[1], args[2], args[3], Path.cwd())


if __name__ == "__main__":
    sys.exit(main())
