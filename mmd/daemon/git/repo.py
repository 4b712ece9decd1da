"""Making a memory home a git repository mmd can commit in (issue 18, "Opt-in"; issue 27, "Sync").

Owns: :func:`ensure_repo` — the user root becomes a repository if it is not one
(``git init``), or the repository whose top level IS the root is used; a root
inside some other repository is refused (mmd never commits on a user's
project branch). The home's project roots (``projects/<key>/``) are folders of
that one repository. It keeps ``.gitignore`` ignoring ``.mmd/`` (mmd's own state),
each project root's ``.mmd/`` and the atomic-write temp files, keeps
``.gitattributes`` naming the merge drivers for every root's MEMORY.md and notes,
and registers those drivers in ``.git/config`` by the absolute path of the
installed command — at every start, since a clone has none. A repository made
by an earlier version upgrades in place: the missing lines are appended (the
result is byte for byte what a new repository gets) and a project root's
``.mmd/`` committed before is untracked. Everything is idempotent: a second
call changes nothing. Never does: commits, history, merges.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mmd.core.durable import atomic_write
from mmd.core.errors import ErrorCode, MMError
from mmd.core.paths import DETAIL_DIR, INDEX_NAME, STATE_DIR
from mmd.core.projects import PROJECTS_DIR

from .runner import Git, GitError

__all__ = ["ACCEPTED_FILES", "ATTRIBUTES_LINES", "DRIVER_NAME", "IGNORE_LINES", "RepoInfo", "default_driver_command",
           "ensure_repo"]

DRIVER_NAME = "mmd-index"
"""The merge driver's name in ``.gitattributes`` and ``.git/config`` (``merge.mmd-index.driver``)."""

_ROOT_IGNORE = (f"/{STATE_DIR}/", ".*.tmp")
_ROOT_ATTRIBUTES = (f"/{INDEX_NAME} merge={DRIVER_NAME}", f"/{DETAIL_DIR}/*.md merge={DRIVER_NAME}")
IGNORE_LINES = (*_ROOT_IGNORE, f"/{PROJECTS_DIR}/*/{STATE_DIR}/")
"""What ``.gitignore`` must hold: mmd's state folder, each project root's, and ``atomic_write``'s temp files."""

ATTRIBUTES_LINES = (*_ROOT_ATTRIBUTES, f"/{PROJECTS_DIR}/*/{INDEX_NAME} merge={DRIVER_NAME}",
                    f"/{PROJECTS_DIR}/*/{DETAIL_DIR}/*.md merge={DRIVER_NAME}")
"""What ``.gitattributes`` must hold: every root's MEMORY.md and notes go through the driver."""

_IGNORE_HEADER = "# mmd: its own state and temp files"
_ATTRIBUTES_HEADER = "# mmd: merge the memory by topic"


def _file(header: str, lines: Sequence[str]) -> bytes:
    return ("\n".join((header, *lines)) + "\n").encode()


ACCEPTED_FILES: dict[str, tuple[bytes, ...]] = {
    ".gitignore": (_file(_IGNORE_HEADER, IGNORE_LINES), _file(_IGNORE_HEADER, _ROOT_IGNORE)),
    ".gitattributes": (_file(_ATTRIBUTES_HEADER, ATTRIBUTES_LINES), _file(_ATTRIBUTES_HEADER, _ROOT_ATTRIBUTES)),
}
"""The versions of ``.gitignore`` and ``.gitattributes`` a remote may bring (byte for byte): those mmd writes
in a new root, this version's (every root of the home) and earlier ones' (the user root's alone, before project
roots were synced: a machine not upgraded yet). Any other version (a rule that stops ignoring ``.mmd/``, an
attribute naming another driver or filter) is refused with the commit holding it."""


@dataclass(frozen=True, slots=True)
class RepoInfo:
    """The repository of a memory root, as :func:`ensure_repo` left it.

    Attributes:
        root: the root (= the repository's top level).
        created: ``git init`` ran in this call.
        branch: the current branch (None when HEAD is detached).
        changed: files of the root this call created or amended (``.gitignore``, ``.gitattributes``), and
            ``.mmd`` (or ``projects/*/.mmd``) when it was tracked and this call untracked it (its files stay).
        driver: the driver command line registered in ``.git/config``.
    """

    root: Path
    created: bool
    branch: str | None
    changed: tuple[str, ...]
    driver: str


def default_driver_command() -> list[str]:
    """The merge driver's command: this Python running :mod:`mmd.daemon.git.driver`, by absolute path.

    git runs it as ``<command> %O %A %B %P`` from the repository's top level.
    """
    return [os.path.abspath(sys.executable), "-m", "mmd.daemon.git.driver"]


def _ensure_lines(path: Path, lines: Sequence[str], header: str) -> bool:
    """Append the missing ``lines`` to the text file ``path`` (created if absent); True if it changed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in lines if line not in present]
    if not missing:
        return False
    prefix = text if not text or text.endswith("\n") else text + "\n"
    block = ([header] if header not in present else []) + missing
    atomic_write(path, (prefix + "\n".join(block) + "\n").encode())
    return True


def _top_level(git: Git) -> Path | None:
    done = git.run("rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace")
        if "not a git repository" in err:
            return None
        raise MMError(ErrorCode.E_IO, f"git cannot read the repository at {git.root}: {err.strip()}")
    out = done.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(out) if out else None


def ensure_repo(root: str | os.PathLike[str], *, driver: Sequence[str] | None = None,
                env: Mapping[str, str] | None = None) -> RepoInfo:
    """Make ``root`` a git repository mmd can commit in; idempotent (issue 18).

    Args:
        root: the memory root (created if missing).
        driver: the merge driver command (default :func:`default_driver_command`); registered as
            ``merge.mmd-index.driver = <command> %O %A %B %P``.
        env: the environment git runs with (default ``os.environ``).

    Returns:
        A :class:`RepoInfo`.

    Raises:
        GitMissing: if ``git`` is not on PATH.
        MMError(E_INVALID): if ``root`` lies inside another repository (the message names it), or
            is inside a repository's ``.git`` folder.
        MMError(E_IO): if git fails (the message is git's) or the files cannot be written.
    """
    path = Path(os.path.abspath(root))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"create {path} failed: {error.strerror}") from error
    git = Git(path, env)
    try:
        if _in_git_dir(git):
            raise MMError(ErrorCode.E_INVALID, f"{path} is inside a .git folder; choose another memory root")
        top = _top_level(git)
        created = top is None
        if top is None:
            git.run("init", "--quiet")
        elif os.path.realpath(top) != os.path.realpath(path):
            raise MMError(
                ErrorCode.E_INVALID,
                f"the memory root {path} is inside the git repository {top}: mmd never commits on another "
                f"repository's branch; move the root out of it, or make the root a repository of its own",
                details=str(top))
        changed = []
        for state in (STATE_DIR, f":(glob){PROJECTS_DIR}/*/{STATE_DIR}/**"):
            tracked = git.run("ls-files", "-z", "--", state).stdout
            if tracked.strip():
                # Tracked before mmd managed the repository (or, for a project root's, before the home's
                # .gitignore named it): untrack it (the files stay), never commit it again.
                git.run("rm", "-r", "--cached", "--quiet", "--", state)
                changed.append(STATE_DIR if state == STATE_DIR else f"{PROJECTS_DIR}/*/{STATE_DIR}")
        if _ensure_lines(path / ".gitignore", IGNORE_LINES, _IGNORE_HEADER):
            changed.append(".gitignore")
        if _ensure_lines(path / ".gitattributes", ATTRIBUTES_LINES, _ATTRIBUTES_HEADER):
            changed.append(".gitattributes")
        command = " ".join(shlex.quote(part) for part in (driver or default_driver_command()))
        line = f"{command} %O %A %B %P"
        if git.config_get(f"merge.{DRIVER_NAME}.driver") != line:
            git.run("config", f"merge.{DRIVER_NAME}.name", "mmd: merge memory entries and notes by topic")
            git.run("config", f"merge.{DRIVER_NAME}.driver", line)
        branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.decode().strip()
    except GitError as error:
        raise MMError(ErrorCode.E_IO, f"git failed in {path}: {error.stderr or error}") from error
    return RepoInfo(path, created, branch or None, tuple(changed), line)


def _in_git_dir(git: Git) -> bool:
    done = git.run("rev-parse", "--is-inside-git-dir", check=False)
    return done.returncode == 0 and done.stdout.strip() == b"true"
