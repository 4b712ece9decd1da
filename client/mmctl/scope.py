"""Where one ``mmctl`` call reads and writes: the user root, or a project's root with the user root behind it.

``docs/projects.md`` is the contract; :func:`resolve_scope` applies it to a call's
flags and folder:

- ``--user``: the user root alone.
- ``--project KEY``: that project's root (it must exist); ``--project PATH``: the project of that folder
  (its git repository, else a folder that has a project root); a path in no project is refused.
- ``--root PATH`` (without ``--project``): that root alone. A project root of a home
  (``<home>/projects/<key>``) is served by the home's daemon, so the call names the home and the key.
- nothing: the project of the current folder when it is in one (a repository, or a folder with a project
  root), else the user root.

In a project scope reads see the project's root, then the user root (unless the scope is *alone*); writes
go to the project's root, created by the first. Never reads ``os.environ`` (the caller passes ``env``), never
runs a process: project identity comes from the files (:mod:`mmd.core.projects`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from mmd.core.paths import INDEX_NAME, expand_path
from mmd.core.projects import PROJECTS_DIR, Project, is_key, project_for, project_root

__all__ = ["USER", "Scope", "ScopeError", "home_of", "keys_named", "project_keys", "resolve_scope", "session_scope"]

USER = "user"
"""The user root's scope label."""


class ScopeError(Exception):
    """A scope that names nothing (an unknown key, a folder in no project): a usage error, exit code 2."""


class Scope:
    """One call's scope.

    Attributes:
        home: the user root (the daemon serving the home is found from it).
        root: the root writes go to: the project's root (which may not exist yet) or the user root.
        key: the project key, or None for the user root.
        project: the project found from a folder (None for a key, the user root, or a root named alone).
        alone: reads see :attr:`root` only (``--user``, ``--root``), not the user root behind it.
        param: the wire's ``project`` param (a key or an absolute path), None for the user root.
        origin: how the scope was chosen, in words (for messages).
    """

    __slots__ = ("alone", "home", "key", "origin", "param", "project", "root")

    def __init__(self, home: Path, root: Path, *, key: str | None = None, project: Project | None = None,
                 alone: bool = False, param: str | None = None, origin: str = "") -> None:
        self.home, self.root, self.key, self.project = home, root, key, project
        self.alone, self.param, self.origin = alone, param, origin

    @property
    def label(self) -> str:
        """``user`` or the project key."""
        return self.key or USER

    @property
    def is_project(self) -> bool:
        """Whether writes go to a project root."""
        return self.key is not None

    def read_roots(self) -> list[tuple[str, Path]]:
        """``(label, root)`` of the roots reads see, the scope's own first, only those that exist."""
        roots = [(self.label, self.root)]
        if self.key is not None and not self.alone:
            roots.append((USER, self.home))
        return [(label, root) for label, root in roots if (root / INDEX_NAME).is_file()]

    def __repr__(self) -> str:
        return f"Scope({self.label!r}, root={str(self.root)!r}, alone={self.alone})"


def home_of(root: Path) -> tuple[Path, str] | None:
    """``(home, key)`` when ``root`` is a project root of a home (``<home>/projects/<key>`` beside its MEMORY.md)."""
    if root.parent.name == PROJECTS_DIR and is_key(root.name) and (root.parent.parent / INDEX_NAME).is_file():
        return root.parent.parent, root.name
    return None


def resolve_scope(home: Path, *, root_flag: str | None, project_flag: str | None, user: bool,
                  env: Mapping[str, str], cwd: str | None) -> Scope:
    """The scope of one call (see the module docstring).

    Args:
        home: the configured user root (``--root`` when given, else the config file's, else mm v1 §2).
        root_flag, project_flag, user: the ``--root``, ``--project`` and ``--user`` flags.
        env: the environment (``~`` in ``--project``).
        cwd: the current folder, or None when it is unknown (gone).

    Raises:
        ScopeError: for ``--project`` and ``--user`` together, an unknown or malformed key, or a path in no
            project.
    """
    if user and project_flag:
        raise ScopeError("--project and --user name different roots: give one")
    if user:
        return Scope(home, home, alone=True, origin="--user")
    if project_flag:
        if is_key(project_flag):
            root = home / PROJECTS_DIR / project_flag
            if not (root / INDEX_NAME).is_file():
                keys = _named(home, project_flag.rsplit("-", 1)[0])
                near = keys if isinstance(keys, str) else f" (did you mean {keys.key}?)"
                raise ScopeError(f"--project {project_flag}: no project root {root}{near} (mmctl project list shows "
                                 "the projects; a project folder's path works too)")
            return Scope(home, root, key=project_flag, param=project_flag, origin=f"--project {project_flag}")
        folder = Path(os.path.abspath(expand_path(project_flag, env)))
        if not folder.is_dir():
            named = _named(home, project_flag)
            if isinstance(named, Scope):
                return named
            raise ScopeError(f"--project {project_flag}: {folder} is neither a project key or name nor a folder"
                             f"{named}")
        project = project_for(folder, home)
        if project is None:
            raise ScopeError(f"--project {project_flag}: {folder} is in no project (not in a git repository, and "
                             "no agent session ran there); give a project key (mmctl project list) or --user")
        return _of_project(home, project, folder, f"--project {project_flag}")
    if root_flag:
        found = home_of(home)
        if found is not None:
            return Scope(found[0], home, key=found[1], alone=True, param=found[1], origin="--root")
        return Scope(home, home, alone=True, origin="--root")
    if cwd:
        project = project_for(cwd, home)
        if project is not None and not _inside(project.top, home):
            return _of_project(home, project, Path(cwd), f"the project of {cwd}")
    return Scope(home, home, origin="the user root")


def project_keys(home: Path) -> list[str]:
    """The keys of ``home``'s project roots (those holding MEMORY.md), sorted; none when it cannot be listed."""
    try:
        return sorted(p.name for p in (home / PROJECTS_DIR).iterdir() if is_key(p.name) and (p / INDEX_NAME).is_file())
    except OSError:
        return []


def keys_named(home: Path, name: str) -> list[str]:
    """The keys of ``home``'s project roots whose name (the key without its hash) is ``name``, sorted."""
    return [k for k in project_keys(home) if k.rsplit("-", 1)[0] == name]


def _named(home: Path, name: str) -> Scope | str:
    """The scope of the one project root of ``home`` whose key's name is ``name`` (``api`` for ``api-d216d2f9``),
    else the words that help: `` (did you mean KEY?)`` for keys whose name is near ``name`` or starts with it, or
    ''."""
    from .cli.suggest import near

    keys = project_keys(home)
    names = {k: k.rsplit("-", 1)[0] for k in keys}
    same = keys_named(home, name)
    if len(same) == 1:
        return Scope(home, home / PROJECTS_DIR / same[0], key=same[0], param=same[0], origin=f"--project {name}")
    if len(same) > 1:
        return f" (projects named {name}: {', '.join(same)}: give the key)"
    close = set(near(name, names.values())) | set(near(name, keys))
    found = [k for k in keys if names[k] in close or k in close or names[k].startswith(name)][:3]
    return f" (did you mean {' or '.join(found)}?)" if found else ""


def session_scope(home: Path, folder: str, *, session: bool = True) -> Scope:
    """The scope of an agent working in ``folder`` (a hook's ``cwd``): its repository's project, else (with
    ``session``: an agent session ran there, so it is a project) the folder itself; the user root for a folder
    in the home, one in no project, or one that is not absolute."""
    if os.path.isabs(folder):
        project = project_for(folder, home, session=session)
        if project is not None and not _inside(project.top, home):
            return _of_project(home, project, Path(folder), f"the agent's folder {folder}")
    return Scope(home, home, origin="the user root")


def _of_project(home: Path, project: Project, folder: Path, origin: str) -> Scope:
    return Scope(home, project_root(home, project), key=project.key, project=project, param=str(folder),
                 origin=origin)


def _inside(path: Path, home: Path) -> bool:
    """Whether ``path`` is the home or below it (the home's own repository is no project of its)."""
    real, base = os.path.realpath(path), os.path.realpath(home)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)
