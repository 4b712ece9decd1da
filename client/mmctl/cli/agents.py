"""``mmctl inject``, ``due``, ``export agents-md`` and ``hooks``: memory reaching the agents (issue 14).

- ``inject [--client KEY] [--max-bytes N] [--format text|json|claude-hook|codex-hook] [--json]``:
  the injection for a client (the index once, then only what changed, nothing when nothing
  did), printed, then committed once stdout took it; through the daemon when one owns the
  root, else on the files (:mod:`mmctl.injection`). ``claude-hook`` and ``codex-hook`` read
  the agent's hook input on stdin (``session_id``: the client is ``claude-code:<id>`` or
  ``codex:<id>``; a ``SessionStart`` after ``clear`` or ``compact`` gives the index again) and
  print ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``, or nothing; a hook
  never holds a prompt: it answers within about 1 s, from the files when the daemon does not
  (saying that memory may be stale), and always exits 0.
- ``due [--within DAYS] [--json]``: notes whose review date has come.
- ``export agents-md [--file PATH] [--max-bytes N]``: the index into the file's
  ``<!-- mm:begin -->`` block, every other byte kept.
- ``hooks install|uninstall claude-code|codex [--scope user|project] [--dry-run]``: the
  SessionStart and UserPromptSubmit hooks in Claude Code's settings or Codex's ``hooks.json``
  (with its ``codex_hooks`` feature flag), every other byte kept (:mod:`mmctl.hooks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmd.core.errors import MMError

from .output import EXIT_OK, Ctx, Failure

__all__ = ["DEFAULT_CLIENT", "cmd_due", "cmd_export", "cmd_hooks", "cmd_inject"]

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
        return _hook(ctx, form)
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


HOOK_BUDGET_S = 0.7
"""How long a hook may take once ``mmctl`` has started, seconds (the interpreter's own start comes before, ~0.1 s):
it never holds a prompt (the agent waits for it). A daemon that has not answered by then is left behind and
the files answer."""
PROBE_S = 0.25
"""Of :data:`HOOK_BUDGET_S`, how long the hook asks the daemon's ``daemon.status`` before it counts as absent."""


def _budget_s(env: Any) -> float:
    """:data:`HOOK_BUDGET_S`, or ``MMCTL_HOOK_BUDGET_MS`` milliseconds when that is a positive integer (a testing
    aid: a loaded test machine must not turn an answering daemon into a stale answer)."""
    raw = str(env.get("MMCTL_HOOK_BUDGET_MS", ""))
    return int(raw) / 1000 if raw.isdigit() and int(raw) > 0 else HOOK_BUDGET_S


def _hook(ctx: Ctx, form: str) -> int:
    """``inject --format claude-hook|codex-hook``: always exit 0 with a shape the agent accepts, within about 1 s.

    Through the daemon when one answers in time, else on the files when their lock is free in time, else
    from the files without the lock (:func:`mmctl.injection.stale_text`: memory may be stale). What cannot
    be given at all (bad input, no root) is a ``systemMessage`` for the person, never context for the model.
    """
    import time

    from ..errors import MmctlError
    from ..injection import hook_input, hook_output, session_context, stale_text

    budget_s = _budget_s(ctx.env)
    deadline = time.monotonic() + budget_s

    def left_ms() -> int:
        return max(50, int((deadline - time.monotonic()) * 1000))

    try:
        hook = hook_input(ctx.stdin_bytes(), form)
        if hook.cwd:  # the agent's folder names the project, whatever --root says (docs/projects.md)
            ctx.scope_for_session(hook.cwd)
        root = ctx.need_root()
        daemon, injection = _hook_plan(ctx, hook, left_ms)
        if injection is None:
            max_bytes = ctx.args.integer("--max-bytes")
            own = ctx.root() / "MEMORY.md"
            text = stale_text(hook.event, ctx.options_of(ctx.scope() if own.is_file() else None), now=ctx.now,
                              max_bytes=max_bytes)
            ctx.error(f"{root}: no answer from its daemon (or its lock) within {budget_s:g} s; "
                      "answered from the files")
            return _hook_print(ctx, hook_output(hook.event, session_context(hook.event, text)))
    except MMError as error:
        return _hook_fail(ctx, f"{error.code.value}: {error.message}")
    except Failure as failure:
        return _hook_fail(ctx, str(failure))
    said = session_context(hook.event, injection.text, injection.result.get("distill"))
    if not _hook_printed(ctx, hook_output(hook.event, said)):
        return EXIT_OK  # the agent went away: nothing committed, the next call gives the same text
    try:
        if daemon is not None:
            daemon.client.timeout_ms = left_ms()
        injection.commit()
    except (MMError, MmctlError) as error:  # printed but not recorded: the next prompt repeats it, no harm
        ctx.error(f"the injection was printed but not recorded ({error}); the next prompt gives it again")
    return EXIT_OK


def _hook_plan(ctx: Ctx, hook: Any, left_ms: Any) -> tuple[Any, Any]:
    """``(daemon or None, injection)`` of a hook over its scope's roots (the daemon found from the home), or
    ``(None, None)`` when neither the daemon nor the roots' locks answered in time (the files answer then,
    without the lock).

    Raises:
        MMError: what the files cannot give either (a bad option, a broken index); never ``E_IO`` (a lock held).
    """
    from ..backend import daemon_listening, find_daemon
    from ..errors import MmctlError
    from ..pins import wants_daemon
    from ..scoped import plan_scoped

    client = ctx.args.text("--client") or hook.client_key
    scope, home = ctx.scope(), ctx.home()
    daemon = None
    try:
        if wants_daemon(ctx.env):
            daemon = find_daemon(home, ctx.env, timeout_ms=min(int(PROBE_S * 1000), left_ms()))
            if daemon is None and daemon_listening(home, ctx.env):
                return None, None  # its daemon accepts but does not answer: it holds the lock
        if daemon is not None:
            daemon.client.timeout_ms = left_ms()
            daemon.client.project = scope.param
        return daemon, plan_scoped(scope, client, daemon=daemon.client if daemon else None, options=ctx.options_of,
                                   now=ctx.now, max_bytes=ctx.args.integer("--max-bytes"), reset=hook.reset,
                                   lock_wait_s=left_ms() / 1000, prompt=hook.event == "UserPromptSubmit")
    except MMError as error:
        if error.code.value != "E_IO":
            raise
    except MmctlError:
        pass  # the daemon took too long: the files answer
    return None, None


def _hook_fail(ctx: Ctx, message: str) -> int:
    """A hook that cannot inject: a warning for the person (``systemMessage``, and stderr), exit 0."""
    from ..injection import hook_error

    ctx.error(message)
    return _hook_print(ctx, hook_error(message))


def _hook_printed(ctx: Ctx, text: str) -> bool:
    """Print a hook's output; whether stdout took it."""
    try:
        ctx.write(text)
    except (BrokenPipeError, OSError):
        return False
    return True


def _hook_print(ctx: Ctx, text: str) -> int:
    """Print a hook's output and end it: exit 0 whatever happened (a hook's failure never reaches the model)."""
    _hook_printed(ctx, text)
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
                                   "backup": str(c.backup) if c.backup else None} for c in changes]})
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
        lines.append(f"{change.path}: {'dry run, nothing written' if dry else 'written'}\n")
    ctx.write("".join(lines + [f"{n}\n" for n in notes]))
    return EXIT_OK
