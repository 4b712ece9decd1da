"""Scopes of the memory home (issue 27, ``docs/projects.md``): what a request's resolved to, and the root a new
review candidate is proposed to.

Owns: :class:`Scoped`, the value of :meth:`~.home.Home.resolve`; :class:`ProposedScope`, the review queue's
``scope_of``: a candidate's first evidence's folder's project, found once per folder from the files alone
(:func:`mmd.core.projects.project_for`; called in the ingestion thread). Never: opens a root or touches a socket.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mmd.core.projects import project_for

if TYPE_CHECKING:
    from mmd.candidates import NewCandidate
    from mmd.core.projects import Project

    from .home import Root

__all__ = ["FOLDERS_CACHED", "ProposedScope", "Scoped"]

FOLDERS_CACHED = 1024
"""Most folders whose project :class:`ProposedScope` remembers."""


class ProposedScope:
    """The root a new candidate is proposed to (:func:`mmd.candidates.scope.proposed_scope`): its first evidence's
    folder's project (found once per folder, :data:`FOLDERS_CACHED` remembered), or the user root for a personal
    rule and for a candidate said outside any project. Called by the review queue, in the ingestion thread.

    Args:
        home: the user root (a plain folder below a project root's folder is that project).
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self._keys: dict[str, str | None] = {}

    def key_of(self, folder: str | None) -> str | None:
        """The project key of ``folder`` (an agent session's cwd), or None when it is unknown or relative."""
        if not folder or not os.path.isabs(folder):
            return None
        if folder not in self._keys:
            if len(self._keys) >= FOLDERS_CACHED:
                self._keys.clear()
            project = project_for(folder, self.home, session=True)
            self._keys[folder] = project.key if project is not None else None
        return self._keys[folder]

    def __call__(self, candidate: NewCandidate) -> str:
        from mmd.candidates.scope import proposed_scope

        if candidate.scope is not None:  # its maker named the root (an agent's proposal, a sync conflict)
            return candidate.scope

        folder = next((e.project for e in candidate.evidence if e.project), None)
        return proposed_scope(candidate, self.key_of(folder))


@dataclass(frozen=True, slots=True)
class Scoped:
    """What one request's scope resolved to.

    Attributes:
        scope: ``user`` or a project key.
        root: the root it writes to, or None for a project whose root does not exist yet.
        project: the project (None for the user scope).
        user: the user root (reads of a project scope see it after the project's root).
    """

    scope: str
    root: Root | None
    project: Project | None
    user: Root

    @property
    def roots(self) -> tuple[Root, ...]:
        """The roots reads see, the scope's own first."""
        if self.root is None:
            return (self.user,)
        return (self.root,) if self.root is self.user else (self.root, self.user)
