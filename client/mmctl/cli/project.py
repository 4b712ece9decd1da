"""``mmctl project list|show|adopt``: the roots of the memory home (``docs/projects.md``).

- ``list``: every root of the home, the user root first: scope, notes, MEMORY.md against its caps (lines,
  UTF-8 bytes), pending candidates proposed to it (with a daemon), the remote and the folders sessions came from.
- ``show [KEY|PATH]``: one project (default: the current folder's): the same, and its topics.
- ``adopt TOPIC… --project PATH|KEY``: move notes of the user root into the project's root (each written there
  first, then deleted from the user root, so an interruption leaves a note in both, never in neither);
  ``adopt --suggest`` lists the user root's notes that accepted candidates wrote from one project's sessions.

Reads work on the files (each root's own ``MEMORY.md`` and ``.mmd/project.json``); a running daemon adds the
queue's counts, and ``adopt`` writes through it when one serves the home.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmd.core.errors import MMError

from .output import EXIT_FAILED, EXIT_OK, Ctx, Failure
from .parser import UsageError

__all__ = ["cmd_project", "home_roots"]


def home_roots(home: Path) -> list[dict[str, Any]]:
    """``[{scope, root, memoryId, entries, lines, lineCap, bytes, byteCap, overBudget, project}]`` of every root of
    the home read from its files, the user root first (the shape of ``daemon.status`` ``roots``, without
    ``revision``); a root that cannot be read has ``error`` instead of its figures."""
    from mmd.core.paths import INDEX_NAME
    from mmd.core.projects import project_roots, read_project_file

    found: list[tuple[str, Path]] = [("user", home)] if (home / INDEX_NAME).is_file() else []
    found += list(project_roots(home))
    return [_describe(scope, root, read_project_file(root) if scope != "user" else None) for scope, root in found]


def _describe(scope: str, root: Path, project: dict[str, Any] | None) -> dict[str, Any]:
    from mmd.core.clock import iso_ms, system_clock
    from mmd.core.options import MemoryOptions
    from mmd.core.projects import project_options
    from mmd.core.snapshot import load_snapshot

    out: dict[str, Any] = {"scope": scope, "root": str(root), "project": project or None}
    try:
        base = MemoryOptions.create(root=root, env={})
        options = base if scope == "user" else project_options(base, root, scope)
        snap = load_snapshot(options, loaded_at=iso_ms(system_clock()), engine="scan")
    except MMError as error:
        return {**out, "error": error.message}
    return {**out, "memoryId": snap.memory_id, "entries": len(snap.entries), "lines": snap.index_line_count,
            "lineCap": options.index_lines, "bytes": snap.index_byte_count, "byteCap": options.index_bytes,
            "overBudget": snap.index_over_budget, "topics": [e.topic for e in snap.entries]}


def _pending(ctx: Ctx, roots: list[dict[str, Any]]) -> None:
    """Add ``pending`` (candidates proposed to each root) when a daemon serves the home."""
    daemon = ctx.daemon()
    if daemon is None:
        return
    from ..errors import MmctlError

    for root in roots:
        try:
            root["pending"] = daemon.client.queue_list(project=root["scope"], limit=1)["total"]
        except MmctlError:
            return


def _line(root: dict[str, Any]) -> str:
    if "error" in root:
        return f"{root['scope']}  {root['root']}\n  unreadable: {root['error']}\n"
    project = root.get("project") or {}
    over = " (over its caps)" if root.get("overBudget") else ""
    pending = f" · {root['pending']} pending" if "pending" in root else ""
    head = (f"{root['scope']}  {root['entries']} notes · {root['lines']}/{root['lineCap']} lines · "
            f"{root['bytes']}/{root['byteCap']} bytes{over}{pending}\n  root    {root['root']}\n")
    if project.get("remote"):
        head += f"  remote  {project['remote']}\n"
    for folder in project.get("paths") or []:
        head += f"  folder  {folder}\n"
    return head


def cmd_project(ctx: Ctx) -> int:
    """``project list|show|adopt``."""
    action = ctx.rest[0] if ctx.rest else "list"
    if action == "list":
        roots = home_roots(ctx.home())
        _pending(ctx, roots)
        if ctx.json:
            ctx.print_json({"home": str(ctx.home()), "roots": roots})
        else:
            ctx.write("".join(_line(r) for r in roots) or f"no memory root at {ctx.home()} yet\n")
        return EXIT_OK
    if action == "show":
        return _show(ctx, ctx.rest[1] if len(ctx.rest) > 1 else None)
    if action == "adopt":
        return _adopt(ctx, ctx.rest[1:])
    raise UsageError(f"project: unknown action {action!r} (list, show, adopt)")


def _show(ctx: Ctx, which: str | None) -> int:
    if which is not None:
        if ctx.args.text("--project"):
            raise UsageError("project show takes the project once: as its argument or --project")
        ctx.args.flags["--project"] = which
        ctx._scope = None  # noqa: SLF001 - resolved again with the project named
    scope = ctx.scope()
    if not scope.is_project:
        raise UsageError("project show: the current folder is in no project; name one (mmctl project list)")
    root = next((r for r in home_roots(scope.home) if r["scope"] == scope.key), None)
    if root is None:
        root = {"scope": scope.key, "root": str(scope.root), "project": scope.project.to_json()
                if scope.project else None, "entries": 0, "lines": 0, "lineCap": 200, "bytes": 0, "byteCap": 25600,
                "overBudget": False, "topics": [], "created": False}
    _pending(ctx, [root])
    if ctx.json:
        ctx.print_json(root)
        return EXIT_OK
    text = _line(root)
    if root.get("created") is False:
        text += "  (no root yet: the first write or accepted candidate makes it)\n"
    topics = root.get("topics") or []
    if topics:
        text += "  topics  " + ", ".join(topics) + "\n"
    ctx.write(text)
    return EXIT_OK


def _adopt(ctx: Ctx, topics: list[str]) -> int:
    """Move ``topics`` from the user root into the scope's project root."""
    if ctx.args.flag("--suggest"):
        return _suggest(ctx)
    if not topics:
        raise UsageError("project adopt needs the topics to move (or --suggest) and --project PATH|KEY")
    scope = ctx.scope()
    if not scope.is_project or not ctx.args.text("--project"):
        raise UsageError("project adopt needs --project PATH|KEY: the project the notes move to")
    ctx.need_root()
    daemon = ctx.daemon()
    try:
        if daemon is not None:
            outcome = daemon.client.adopt(topics, project=scope.param or scope.label)
        else:
            from mmd.core.move import move_notes

            outcome = move_notes(ctx.direct_of(None).memory().store, ctx.direct_of(scope).memory().store, topics)
    except MMError as error:
        raise Failure(f"{error.code.value}: {error.message}") from None
    except Exception as error:  # a daemon's error answer
        from ..errors import MmctlError

        if isinstance(error, MmctlError):
            raise Failure(f"{error.code}: {error.message}") from None
        raise
    if ctx.json:
        ctx.print_json(outcome)
        return EXIT_OK if outcome["ok"] else EXIT_FAILED
    if outcome["moved"]:
        ctx.write(f"moved {', '.join(outcome['moved'])} from the user root to project {scope.key}\n")
    for refused in outcome["refused"]:
        ctx.error(f"{refused['topic']} stays in the user root: {refused['message']} ({refused['code']})")
    return EXIT_OK if outcome["ok"] else EXIT_FAILED


def _suggest(ctx: Ctx) -> int:
    """``adopt --suggest``: the user root's notes that accepted candidates of one project wrote."""
    daemon = ctx.need_daemon("project adopt --suggest")
    from .queue import every_candidate

    accepted = every_candidate(daemon.client, status="accepted")
    by_project: dict[str, set[str]] = {}
    for cand in accepted:
        written = cand.get("written") or {}
        folders = {e.get("project") for e in cand.get("evidence") or [] if e.get("project")}
        if written.get("topic") and len(folders) == 1 and (cand.get("scope") in (None, "user")):
            by_project.setdefault(folders.pop(), set()).add(written["topic"])
    if ctx.json:
        ctx.print_json({"suggestions": [{"project": p, "topics": sorted(t)} for p, t in sorted(by_project.items())]})
        return EXIT_OK
    if not by_project:
        ctx.write("nothing to suggest: no note of the user root was accepted from one project's sessions\n")
        return EXIT_OK
    for folder, topics in sorted(by_project.items()):
        ctx.write(f"mmctl project adopt {' '.join(sorted(topics))} --project {folder}\n")
    return EXIT_OK
