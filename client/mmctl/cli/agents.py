"""``mmctl inject``, ``due``, ``export agents-md`` and ``hooks``: memory reaching the agents (issue 14).

- ``inject [--client KEY] [--max-bytes N] [--format text|json|claude-hook|codex-hook] [--json]``:
  the injection for a client (the index once, then only what changed, nothing when nothing
  did), printed, then committed once stdout took it; through the daemon when one owns the
  root, else on the files (:mod:`mmctl.injection`). ``claude-hook`` and ``codex-hook`` are the
  agents' hooks (:mod:`.hook`): they read the agent's hook input on stdin and never hold a prompt.
- ``due [--within DAYS] [--json]``: notes whose review date has come.
- ``export agents-md [--file PATH] [--max-bytes N]``: the index into the file's
  ``<!-- mm:begin -->`` block, every other byte kept.
- ``hooks install|uninstall claude-code|codex [--scope user|project] [--dry-run]``: the
  SessionStart and UserPromptSubmit hooks in Claude Code's settings or Codex's ``hooks.json``
  (with its ``codex_hooks`` feature flag), every other byte kept (:mod:`mmctl.hooks`).
"""

from __future__ import annotations

from pathlib import Path

from mmd.core.errors import MMError

from .output import EXIT_OK, Ctx, Failure

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook before every prompt goes through this module (issue 31)
    from typing import Any

__all__ = ["DEFAULT_CLIENT", "cmd_due", "cmd_export", "cmd_hooks", "cmd_inject", "settings_diff"]

DEFAULT_CLIENT = "mmctl"
"""The client key of ``mmctl inject`` without ``--client``."""
_JSON_KEYS = ("mode", "text", "added", "updated", "removed", "unchanged", "reminded", "bytes")


def _call(what: Any) -> Any:
    """Run ``what()``; an mm or daemon error becomes a :class:`Failure` (exit code 1) with its code."""
    from ..errors import MmctlError

    try:
        return what()
    except MMError as error:
        raise Failure(f"{error.code.value}: {error.message}") from None
    except MmctlError as error:
        raise Failure(f"{error.code}: {error.message}") from None


def cmd_inject(ctx: Ctx) -> int:
    """``inject``: print the injection, then commit it (never when stdout could not take it)."""
    from ..injection import HOOK_AGENTS
    from ..scoped import plan_scoped

    given = ctx.args.text("--format")
    if ctx.json and given not in (None, "json"):
        from .parser import UsageError

        raise UsageError(f"inject: --json and --format {given} name two outputs; give one")
    form = "json" if ctx.json else given or "text"
    if form in HOOK_AGENTS:
        from .hook import run_hook

        return run_hook(ctx, form)
    client = ctx.args.text("--client") or DEFAULT_CLIENT
    ctx.need_root()
    daemon = ctx.daemon()
    scope = ctx.scope()
    injection = _call(lambda: plan_scoped(scope, client, daemon=daemon.client if daemon else None,
                                          options=ctx.options_of, now=ctx.now,
                                          max_bytes=ctx.args.integer("--max-bytes")))
    result = injection.result
    if form == "json":
        from .output import js_json

        text = js_json({k: result[k] for k in _JSON_KEYS}) + "\n"
    else:
        text = injection.text + "\n" if injection.text else ""
    try:
        ctx.write(text)
    except (BrokenPipeError, OSError) as error:  # not delivered: the next call gives the same text again
        raise Failure(f"could not print the injection ({error}); nothing was committed") from None
    _call(injection.commit)
    return EXIT_OK


def cmd_due(ctx: Ctx) -> int:
    """``due [--within DAYS]``: the due notes, most overdue first; hand-written dates that are no date too."""
    within = ctx.args.integer("--within")
    ctx.need_root()
    daemon = ctx.daemon()
    if daemon is not None:
        report = _call(lambda: daemon.client.due(within_days=within))
    else:
        report = _call(lambda: _due_direct(ctx, within or 0))
    if ctx.json:
        ctx.print_json(report)
        return EXIT_OK
    lines = [f"{d['topic']}  {d['reviewAfter']}  {_when(d['daysLeft'])}\n" for d in report["due"]]
    if not lines:
        lines.append(f"nothing due{f' within {within} days' if within else ''} (today is {report['today']})\n")
    ctx.write("".join(lines))
    for bad in report["invalid"]:
        ctx.error(f"{bad['topic']}: review-after {bad['value']!r} is no date (YYYY-MM-DD); rewrite it with "
                  f"`mmctl write {bad['topic']} --review-after …`")
    return EXIT_OK


def _due_direct(ctx: Ctx, within: int) -> dict[str, Any]:
    from datetime import date

    from mmd.core.clock import iso_ms
    from mmd.core.snapshot import parse_live_index
    from mmd.inject.due import due_topics

    options = ctx.direct().options()
    today = date.fromisoformat(iso_ms(ctx.now())[:10])
    _, entries = parse_live_index(options.root, options.memory_id)
    return {"today": today.isoformat(), **due_topics(entries, today, within).to_json()}


def _when(days_left: int) -> str:
    if days_left == 0:
        return "due today"
    if days_left < 0:
        return f"overdue by {-days_left} day{'s' if days_left < -1 else ''}"
    return f"due in {days_left} day{'s' if days_left > 1 else ''}"


def cmd_export(ctx: Ctx) -> int:
    """``export agents-md [--file PATH]``: the baseline into the file's memory block."""
    from mmd.inject.blocks import write_block
    from mmd.inject.guide import with_guide


    if not ctx.rest:
        from .parser import UsageError

        raise UsageError("export requires what to export: agents-md")
    path = Path(ctx.args.text("--file") or "AGENTS.md").absolute()
    if not (ctx.args.text("--project") or ctx.args.flag("--user") or ctx.root_flag()):
        ctx.scope_for_session(str(path.parent), session=False)  # the file's folder's project
    ctx.need_root()
    text = with_guide(_call(lambda: _export_text(ctx)))
    changed = _call(lambda: write_block(path, text, home=ctx.env.get("HOME")))
    if ctx.json:
        ctx.print_json({"file": str(path), "changed": changed, "bytes": len(text.encode("utf-8"))})
    else:
        ctx.write(f"{'wrote' if changed else 'unchanged:'} the memory block of {path}\n")
    return EXIT_OK


def _export_text(ctx: Ctx) -> str:
    """The export block's text: the baseline of each root the scope reads (the project's root, then the user
    root, labelled, the byte budget split as an injection's: docs/projects.md)."""
    from mmd.inject.baseline import DEFAULT_MAX_BYTES
    from mmd.inject.scopes import budget_split, join_texts

    from ..injection import baseline_text

    scope = ctx.scope()
    labels = [label for label, _ in scope.read_roots()] or [scope.label]
    budget = ctx.args.integer("--max-bytes") or DEFAULT_MAX_BYTES
    parts = [(label, baseline_text(ctx.options_of(scope if label != "user" else None), now=ctx.now,
                                   max_bytes=share))
             for label, share in zip(labels, budget_split(budget, len(labels)), strict=True)]
    return join_texts(parts, str(scope.project.top) if scope.project is not None else None)


def cmd_hooks(ctx: Ctx) -> int:
    """``hooks install|uninstall claude-code|codex [--scope user|project] [--dry-run]``."""
    from .. import hooks

    action = ctx.rest[0] if ctx.rest else None
    if action not in ("install", "uninstall") or len(ctx.rest) != 2 or ctx.rest[1] not in hooks.AGENTS:
        from .parser import UsageError

        raise UsageError("hooks needs an action and an agent: hooks install|uninstall claude-code|codex")
    agent = hooks.AGENTS[ctx.rest[1]]
    scope = ctx.args.text("--scope") or "user"
    home = ctx.env.get("HOME")
    path = _call(lambda: hooks.settings_path(scope, ctx.env, Path.cwd(), agent))
    if action == "install":
        root = ctx.need_root()
        command = hooks.hook_command(hooks.mmctl_command(), root, agent)
        changes = [_call(lambda: hooks.plan_install(path, command, agent, home=home))]
    else:
        changes = [_call(lambda: hooks.plan_uninstall(path, agent, home=home))]
    notes: list[str] = []
    if agent is hooks.CODEX:  # the flag line install added goes with uninstall (it says it is mmctl's)
        config = hooks.codex_config_path(ctx.env)
        changes.append(_call(lambda: hooks.plan_flag(config, action == "install", home=home)))
    dry = ctx.args.flag("--dry-run")
    if not dry:
        for change in changes:
            _call(lambda change=change: hooks.apply(change, home=home))
    if ctx.json:
        ctx.print_json({"file": str(path), "scope": scope, "agent": agent.name,
                        "changed": any(c.changed for c in changes) and not dry, "dryRun": dry,
                        "actions": [a for c in changes for a in c.actions] + notes,
                        "backup": str(changes[0].backup) if changes[0].backup else None,
                        "files": [{"file": str(c.path), "changed": c.changed and not dry, "actions": c.actions,
                                   "backup": str(c.backup) if c.backup else None,
                                   **({"diff": settings_diff(c)} if dry and c.changed else {})} for c in changes]})
        return EXIT_OK
    if not any(c.changed for c in changes):
        ctx.write(f"{path}: already {'has' if action == 'install' else 'has none of'} the mmctl hooks; "
                  "nothing to do\n" + "".join(f"{n}\n" for n in notes))
        return EXIT_OK
    lines: list[str] = []
    for change in (c for c in changes if c.changed):
        lines += [f"{'(dry run) ' if dry else ''}{a}\n" for a in change.actions]
        if change.backup is not None:
            lines.append(f"{'would back' if dry else 'backed'} up the previous file to {change.backup}\n")
        if dry:
            lines.append(settings_diff(change))
        lines.append(f"{change.path}: {'dry run, nothing written' if dry else 'written'}\n")
    ctx.write("".join(lines + [f"{n}\n" for n in notes]))
    return EXIT_OK


def settings_diff(change: Any) -> str:
    """What ``hooks install|uninstall`` would write to ``change.path``, as a unified diff of its text (``--- PATH``,
    ``+++ PATH``; a file that does not exist yet diffs from ``/dev/null``); a file that is not UTF-8 is shown with
    its bad bytes replaced (the diff is for reading, the write is the bytes)."""
    import difflib

    before = (change.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    after = (change.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    diff = difflib.unified_diff(before, after, "/dev/null" if change.before is None else str(change.path),
                                str(change.path))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
