"""Claude Code hooks that inject memory: merge them into (and out of) a ``settings.json`` (issue 14).

Claude Code runs command hooks from ``hooks`` in its settings files
(https://code.claude.com/docs/en/hooks): ``~/.claude/settings.json`` (scope
``user``; ``$CLAUDE_CONFIG_DIR`` moves it) or ``<project>/.claude/settings.json``
(scope ``project``). Each event maps to a list of matcher groups
``{"matcher"?, "hooks": [{"type": "command", "command", "timeout"?}]}``; the
command gets the event's JSON on stdin and adds context by printing
``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``. Two hooks
are installed, both running ``<absolute mmctl> inject --format claude-hook``:
``SessionStart`` (every source; a ``clear`` or ``compact`` gives a baseline again)
and ``UserPromptSubmit`` (what changed since).

The merge is idempotent (a second install changes nothing), keeps every other
setting and hook as it was (a hook of ours with another ``mmctl`` path is
updated in place), copies the file to ``settings.json.mmctl-backup`` before the
first change ever made to it, writes atomically with the file's permission
bits (through a symlink: its target), and refuses a file that is not a JSON object (or whose ``hooks`` are not
shaped as above) without writing anything.

Owns: where the settings live, what our hook entries look like, the merge. Never: runs hooks.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmd.core.durable import atomic_write
from mmd.core.errors import ErrorCode, MMError

__all__ = ["BACKUP_SUFFIX", "MARK", "SCOPES", "SettingsChange", "apply", "hook_command", "mmctl_command",
           "plan_install", "plan_uninstall", "settings_path"]

SCOPES = ("user", "project")
"""Where the hooks go: the user's settings or the project's."""
MARK = "inject --format claude-hook"
"""The part of a hook command that marks it as ours."""
BACKUP_SUFFIX = ".mmctl-backup"
"""Appended to the settings file's name for the copy made before our first change."""
TIMEOUT_S = 30
"""The hooks' ``timeout``, seconds (Claude Code's unit): above the ~11 s a hook takes to say that the root is
held by a daemon that does not answer (a 1 s probe, then 10 s for the root's lock), so the agent sees why."""
EVENTS: dict[str, str | None] = {"SessionStart": "startup|resume|clear|compact", "UserPromptSubmit": None}
"""Our events and the matcher of their group (UserPromptSubmit takes none)."""


def settings_path(scope: str, env: Mapping[str, str], cwd: Path) -> Path:
    """The settings file of ``scope``: ``$CLAUDE_CONFIG_DIR/settings.json`` or ``~/.claude/settings.json``
    (user), ``<cwd>/.claude/settings.json`` (project).

    Raises:
        MMError(E_INVALID): for another scope.
    """
    if scope == "user":
        folder = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")
        return Path(folder) / "settings.json"
    if scope == "project":
        return cwd / ".claude" / "settings.json"
    raise MMError(ErrorCode.E_INVALID, f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")


def mmctl_command() -> str:
    """How a hook starts this ``mmctl``: the absolute path of the ``mmctl`` script beside this Python
    (a venv's ``bin/``), else the one on ``$PATH``, else ``<python> -m mmctl`` — shell-quoted."""
    beside = Path(sys.executable).with_name("mmctl")
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside.absolute()))
    found = shutil.which("mmctl")
    if found:
        return shlex.quote(os.path.abspath(found))
    return f"{shlex.quote(sys.executable)} -m mmctl"


def hook_command(mmctl: str, root: Path | None = None) -> str:
    """The hook's command line: ``<mmctl> inject --format claude-hook [--root ROOT]``."""
    command = f"{mmctl} {MARK}"
    return command + (f" --root {shlex.quote(str(root))}" if root is not None else "")


@dataclass
class SettingsChange:
    """What an install or uninstall does to one settings file.

    Attributes:
        path: the settings file.
        before: its bytes now (None: it does not exist).
        after: its new bytes, or None when nothing changes.
        actions: one line per change, for people (``added SessionStart hook: …``).
        backup: the backup that is written before the change (None: none needed).
    """

    path: Path
    before: bytes | None
    after: bytes | None
    actions: list[str] = field(default_factory=list)
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        """Whether the file is written."""
        return self.after is not None


def _load(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """The file's bytes and its settings (``{}`` for a missing file).

    Raises:
        MMError(E_PARSE | E_INVALID | E_IO): malformed JSON, a wrong shape, an unreadable file.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot read {path}: {error.strerror}") from None
    try:
        settings = json.loads(data.decode("utf-8")) if data.strip() else {}
    except UnicodeDecodeError:
        raise MMError(ErrorCode.E_PARSE, f"{path} is not UTF-8; fix it by hand (nothing was changed)") from None
    except json.JSONDecodeError as error:
        raise MMError(ErrorCode.E_PARSE, f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: "
                                         f"{error.msg}); fix it by hand (nothing was changed)") from None
    if not isinstance(settings, dict):
        raise MMError(ErrorCode.E_INVALID, f"{path} must hold a JSON object; fix it by hand (nothing was changed)")
    _check_hooks(path, settings.get("hooks"))
    return data, settings


def _check_hooks(path: Path, hooks: Any) -> None:
    """Refuse a ``hooks`` value we could not merge into without guessing."""
    if hooks is None:
        return
    where = f"{path}: \"hooks\""
    if not isinstance(hooks, dict):
        raise MMError(ErrorCode.E_INVALID, f"{where} must be an object of events; fix it by hand (nothing was changed)")
    for event in EVENTS:
        groups = hooks.get(event)
        if groups is None:
            continue
        if not isinstance(groups, list) or not all(isinstance(g, dict) and isinstance(g.get("hooks", []), list)
                                                   for g in groups):
            raise MMError(ErrorCode.E_INVALID, f"{where}.{event} must be a list of {{\"matcher\", \"hooks\": [...]}} "
                                               "groups; fix it by hand (nothing was changed)")


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and MARK in hook["command"]


def _dump(settings: dict[str, Any]) -> bytes:
    return (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def plan_install(path: Path, command: str) -> SettingsChange:
    """The change that puts our ``SessionStart`` and ``UserPromptSubmit`` hooks (running ``command``) into ``path``.

    Raises:
        MMError(E_PARSE | E_INVALID | E_IO): as :func:`_load`: nothing is changed.
    """
    before, settings = _load(path)
    if settings.get("hooks") is None:  # absent, or null
        settings["hooks"] = {}
    hooks = settings["hooks"]
    actions: list[str] = []
    for event, matcher in EVENTS.items():
        if hooks.get(event) is None:
            hooks[event] = []
        groups = hooks[event]
        mine = [h for g in groups for h in g.get("hooks", []) if _ours(h)]
        if any(h["command"] == command for h in mine):
            continue
        if mine:
            mine[0]["command"] = command
            actions.append(f"updated {event} hook: {command}")
            continue
        group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
        group["hooks"] = [{"type": "command", "command": command, "timeout": TIMEOUT_S}]
        groups.append(group)
        actions.append(f"added {event} hook: {command}")
    return _change(path, before, settings, actions)


def plan_uninstall(path: Path) -> SettingsChange:
    """The change that takes our hooks out of ``path`` (groups and events left empty by it go too).

    Raises:
        MMError(E_PARSE | E_INVALID | E_IO): as :func:`_load`: nothing is changed.
    """
    before, settings = _load(path)
    hooks = settings.get("hooks")
    actions: list[str] = []
    if isinstance(hooks, dict):
        for event in EVENTS:
            groups = hooks.get(event)
            if not groups:
                continue
            kept = []
            for group in groups:
                mine = [h for h in group.get("hooks", []) if _ours(h)]
                actions += [f"removed {event} hook: {h['command']}" for h in mine]
                rest = [h for h in group.get("hooks", []) if not _ours(h)]
                if rest or not mine:
                    kept.append({**group, "hooks": rest} if mine else group)
            if kept:
                hooks[event] = kept
            elif actions:
                del hooks[event]
        if not hooks and actions:
            del settings["hooks"]
    return _change(path, before, settings, actions)


def _change(path: Path, before: bytes | None, settings: dict[str, Any], actions: list[str]) -> SettingsChange:
    if not actions:
        return SettingsChange(path, before, None)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    needs_backup = before is not None and not backup.exists()
    return SettingsChange(path, before, _dump(settings), actions, backup if needs_backup else None)


def apply(change: SettingsChange) -> None:
    """Write ``change``: the backup first (once per file, never overwritten), then the settings, atomically.

    Raises:
        MMError(E_IO): if the folder, the backup or the file cannot be written (the file is then as it was),
            or the file changed since it was planned (plan again).
    """
    if change.after is None:
        return
    now = change.path.read_bytes() if change.path.exists() else None
    if now != change.before:
        raise MMError(ErrorCode.E_IO, f"{change.path} changed while mmctl read it; run the command again")
    mode = stat.S_IMODE(change.path.stat().st_mode) if change.before is not None else 0o644
    try:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        if change.backup is not None and change.before is not None:
            atomic_write(change.backup, change.before, mode)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot write beside {change.path}: {error.strerror}") from None
    # through a symlink (settings kept in a dotfiles repository): the link stays, its target is written
    atomic_write(Path(os.path.realpath(change.path)), change.after, mode)
