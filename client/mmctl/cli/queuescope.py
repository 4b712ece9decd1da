"""Which root a ``queue`` command's ``--user`` / ``--project`` names: the filter of ``queue list``, the target of
``queue accept`` (``docs/projects.md``). Reads the home's project roots; never the daemon.
"""

from __future__ import annotations

import os

from .output import Ctx
from .parser import UsageError

__all__ = ["accept_target", "scope_param"]


def scope_param(ctx: Ctx) -> str | None:
    """``queue list|accept``'s root: ``user`` for ``--user``; for ``--project`` a key as given, a folder in a project
    as its key; anything else (a folder's name as the list shows it) as given, which ``list`` matches against the
    folders the candidates were seen in.

    Raises:
        UsageError: for ``--project`` with ``--user``, or a name two project roots share (naming their keys).
    """
    if ctx.args.flag("--user"):
        if ctx.args.text("--project"):
            raise UsageError("--project and --user name different roots: give one")
        return "user"
    raw = ctx.args.text("--project")
    if raw is None:
        return raw
    if "/" not in raw and "~" not in raw:
        from ..scope import keys_named

        same = keys_named(ctx.home(), raw)  # a name two project roots share names neither: the list would mix them
        if len(same) > 1:
            raise UsageError(f"--project {raw}: projects named {raw}: {', '.join(same)}: give the key")
        return raw
    from mmd.core.paths import expand_path
    from mmd.core.projects import project_for

    folder = os.path.abspath(expand_path(raw, ctx.env))
    project = project_for(folder, ctx.home()) if os.path.isdir(folder) else None
    return project.key if project is not None else raw


def accept_target(ctx: Ctx) -> str | None:
    """Where ``queue accept`` writes instead of the root each candidate is proposed to: ``user`` (``--user``), a
    project key, or a project folder's absolute path (``--project``); None: the proposed root.

    Raises:
        UsageError: for a ``--project`` that names no project.
    """
    raw = ctx.args.text("--project")
    if ctx.args.flag("--user") or raw is None:
        return scope_param(ctx)
    from ..scope import ScopeError, resolve_scope

    try:
        found = resolve_scope(ctx.home(), root_flag=None, project_flag=raw, user=False, env=ctx.env, cwd=None)
    except ScopeError as error:
        raise UsageError(str(error)) from None
    return found.param
