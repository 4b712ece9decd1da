"""What an mmd commit says: its subject and trailers, the root and machine that made it (issues 18, 27, 30).

Owns: :func:`commit_message` — ``write deploy-region, api-3f2a1b9c/deploy (r42; api-3f2a1b9c r7)`` with the
``Mmd-Revision`` (the user root's revisions), ``Mmd-Project-Revision`` (one line per project root: its key, then
its revisions), ``Mmd-Topics`` (every topic, a project root's prefixed with its key), ``Mmd-Root`` and
``Mmd-Machine`` trailers — the home's root id (``.mmd/root-id`` of the user root: which home made a commit,
:func:`root_id`) and the machine's name (:func:`machine_name`); and how a remote's trailer values are read back
(:func:`project_revisions`, :func:`clean_name`). Never does: git.
"""

from __future__ import annotations

import re
import secrets
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

from mmd.core.durable import atomic_write
from mmd.core.paths import STATE_DIR

from .layout import PROJECT_KEY

__all__ = ["MACHINE_TRAILER", "NAME_MAX", "PROJECT_REVISION_TRAILER", "ROOT_ID_NAME", "clean_name", "commit_message",
           "is_root_id", "machine_name", "project_revisions", "root_id"]

ROOT_ID_NAME = "root-id"
"""The root id's file name inside ``.mmd/`` (never committed: a fresh clone makes a new id)."""
_ROOT_ID = re.compile(r"^[0-9a-f]{8,64}$")
_SUBJECT_TOPICS = 4
"""Most topics named in a commit subject; the trailer lists them all."""
MACHINE_TRAILER = "Mmd-Machine"
"""Every mmd commit's trailer naming the machine (its host name) that made it, beside ``Mmd-Root``."""
PROJECT_REVISION_TRAILER = "Mmd-Project-Revision"
"""A commit's trailer naming a project root's revisions it holds: ``<key> <n> [<n> …]``, one line per root."""
NAME_MAX = 64
"""Most characters of a machine name (a longer one, from a commit, is cut)."""
_PROJECT_REVISIONS = re.compile(rf"^({PROJECT_KEY})((?: \d{{1,18}})+)$", re.ASCII)


def clean_name(raw: str) -> str:
    """A machine name as commits record it: letters, digits, ``.``, ``_`` and ``-`` only, at most :data:`NAME_MAX`
    (anything else dropped: a remote commit's trailer is read as an attacker's)."""
    return re.sub(r"[^A-Za-z0-9._-]", "", raw.strip())[:NAME_MAX]


def machine_name() -> str:
    """This machine's name for commits: its host name, cleaned (:func:`clean_name`; ``unknown`` when empty)."""
    return clean_name(socket.gethostname()) or "unknown"


def root_id(root: Path) -> str:
    """This root's id (16 hex digits), from ``<root>/.mmd/root-id``; made and written there on first use.

    Raises:
        OSError: if a new id cannot be written (the root is gone or read-only).
    """
    path = root / STATE_DIR / ROOT_ID_NAME
    try:
        text = path.read_text(encoding="ascii").strip()
        if _ROOT_ID.match(text):
            return text
    except (OSError, UnicodeDecodeError):
        pass
    made = secrets.token_hex(8)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    atomic_write(path, f"{made}\n".encode("ascii"), mode=0o600)
    return made


def is_root_id(value: str) -> bool:
    """Whether ``value`` is a root id as :func:`root_id` makes them (8 to 64 lowercase hex digits)."""
    return _ROOT_ID.match(value) is not None


def commit_message(revisions: Sequence[int], cause: str, topics: Sequence[str], root: str | None = None,
                   machine: str | None = None, extra: Sequence[str] = (),
                   projects: Mapping[str, Sequence[int]] | None = None) -> str:
    """``write deploy-region (r42)`` plus the ``Mmd-Revision``, ``Mmd-Project-Revision``, ``Mmd-Topics``,
    ``Mmd-Root`` and ``Mmd-Machine`` trailers, then the ``extra`` trailer lines (a merge's ``Mmd-Conflict``,
    :mod:`.versions`).

    Args:
        revisions: the user root's revisions the commit holds.
        topics: every topic it touched, a project root's as ``<key>/<topic>`` (:func:`~.layout.scoped_topic`).
        root: the id of the home making the commit (see :func:`root_id`); ``machine``: the machine's
            (:func:`machine_name`).
        projects: ``{key: revisions}`` of the project roots the commit holds.

    More than four topics are counted in the subject (``write 12 topics (r40, r41)``).
    """
    named = ", ".join(topics) if len(topics) <= _SUBJECT_TOPICS else f"{len(topics)} topics"
    projects = {k: list(v) for k, v in sorted((projects or {}).items()) if v}
    revs = "; ".join(part for part in (", ".join(f"r{r}" for r in revisions),
                                       *(f"{k} " + ", ".join(f"r{r}" for r in v) for k, v in projects.items())) if part)
    subject = " ".join(part for part in (cause, named, f"({revs})" if revs else "") if part)
    trailers = []
    if revisions:
        trailers.append("Mmd-Revision: " + " ".join(str(r) for r in revisions))
    trailers += [f"{PROJECT_REVISION_TRAILER}: {k} " + " ".join(str(r) for r in v) for k, v in projects.items()]
    if topics:
        trailers.append("Mmd-Topics: " + " ".join(topics))
    if root:
        trailers.append(f"Mmd-Root: {root}")
    if machine:
        trailers.append(f"{MACHINE_TRAILER}: {machine}")
    trailers += extra
    return subject + ("\n\n" + "\n".join(trailers) if trailers else "") + "\n"


def project_revisions(values: str, separator: str) -> dict[str, list[int]]:
    """``{key: revisions}`` from the ``Mmd-Project-Revision`` values of one commit joined by ``separator``; a
    value that is not ``<key> <n> …`` is skipped (a remote's commit is read as an attacker's)."""
    out: dict[str, list[int]] = {}
    for value in values.split(separator):
        match = _PROJECT_REVISIONS.match(value.strip())
        if match:
            out.setdefault(match.group(1), []).extend(int(n) for n in match.group(2).split())
    return out
