"""The hooks that inject memory into Claude Code and Codex: merged into (and out of) their files (issues 14, 26, 28).

Both agents run command hooks from a JSON file of the same shape: ``{"hooks": {EVENT: [{"matcher"?,
"hooks": [{"type": "command", "command", "timeout"?}]}]}}``; the command gets the event's JSON on
stdin and adds context by printing ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``.

- Claude Code (https://code.claude.com/docs/en/hooks): ``~/.claude/settings.json`` (scope
  ``user``; ``$CLAUDE_CONFIG_DIR`` moves it) or ``<project>/.claude/settings.json`` (``project``).
- Codex (https://developers.openai.com/codex/hooks): ``~/.codex/hooks.json`` (``$CODEX_HOME`` moves
  it) or ``<project>/.codex/hooks.json``; hooks run only with ``[features] codex_hooks = true`` in
  ``~/.codex/config.toml``, which install turns on and uninstall turns back as it was
  (:mod:`.tomltext`).

Two hooks are installed, both running ``<absolute mmctl> inject --format claude-hook|codex-hook``:
``SessionStart`` (every source; a ``clear`` or ``compact`` gives a baseline again) and
``UserPromptSubmit`` (what changed since).

The files are the user's: they are edited as text at the spans of the entries mmctl adds
(:mod:`.jsontext`), so every other byte stays as it was (numbers as written, ``1e400`` included, any
indentation, one-line objects among indented ones), and uninstall takes out exactly what install put
in: the file comes back byte for byte. The merge is idempotent (a second install changes nothing),
updates a hook of ours with another ``mmctl`` path in place, copies the file to
``<name>.mmctl-backup`` before the first change ever made to it, and writes through
:func:`mmd.core.userfile.update_user_file` (only the user's regular file, a symlink followed only
inside the home, a read-only file refused, atomic, the agent's own concurrent writes never lost). A
file that is not a JSON object (or whose ``hooks`` are not shaped as above) is refused, nothing written.

Owns: where the files live, what our hook entries look like, the merge. Never: runs hooks.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmd.core.durable import atomic_write
from mmd.core.errors import ErrorCode, MMError

from . import jsontext

__all__ = ["AGENTS", "BACKUP_SUFFIX", "MARK", "SCOPES", "Agent", "SettingsChange", "apply", "codex_config_path",
           "hook_command", "mmctl_command", "plan_flag", "plan_install", "plan_uninstall", "settings_path"]

SCOPES = ("user", "project")
"""Where the hooks go: the user's settings or the project's."""
BACKUP_SUFFIX = ".mmctl-backup"
"""Appended to the file's name for the copy made before our first change."""
TIMEOUT_S = 10
"""The hooks' ``timeout``, seconds (both agents' unit): a hook answers within about 1 s whatever the daemon
does (it falls back to the files), so this only bounds a hang of the interpreter itself."""


@dataclass(frozen=True)
class Agent:
    """An agent whose hooks mmctl installs.

    Attributes:
        name: the CLI's name (``claude-code`` | ``codex``).
        form: ``mmctl inject --format`` of its hooks.
        events: our events and the matcher of their group (None: the event takes none).
    """

    name: str
    form: str
    events: Mapping[str, str | None]

    @property
    def mark(self) -> str:
        """The part of a hook command that marks it as ours."""
        return f"inject --format {self.form}"


CLAUDE_CODE = Agent("claude-code", "claude-hook", {"SessionStart": "startup|resume|clear|compact",
                                                   "UserPromptSubmit": None})
CODEX = Agent("codex", "codex-hook", {"SessionStart": "startup|resume|clear|compact", "UserPromptSubmit": None})
AGENTS = {agent.name: agent for agent in (CLAUDE_CODE, CODEX)}
"""The agents by CLI name."""
MARK = CLAUDE_CODE.mark
"""The part of a Claude Code hook command that marks it as ours."""


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def settings_path(scope: str, env: Mapping[str, str], cwd: Path, agent: Agent = CLAUDE_CODE) -> Path:
    """The hook file of ``agent`` for ``scope``: Claude Code's ``settings.json`` (``$CLAUDE_CONFIG_DIR``, else
    ``~/.claude``; project: ``<cwd>/.claude``), Codex's ``hooks.json`` (``$CODEX_HOME``, else ``~/.codex``;
    project: ``<cwd>/.codex``).

    Raises:
        MMError(E_INVALID): for another scope.
    """
    folder_name, variable, file_name = ((".claude", "CLAUDE_CONFIG_DIR", "settings.json") if agent is CLAUDE_CODE
                                        else (".codex", "CODEX_HOME", "hooks.json"))
    if scope == "user":
        return Path(env.get(variable) or os.path.join(_home(env), folder_name)) / file_name
    if scope == "project":
        return cwd / folder_name / file_name
    raise MMError(ErrorCode.E_INVALID, f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")


def codex_config_path(env: Mapping[str, str]) -> Path:
    """Codex's ``config.toml``: ``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``."""
    return Path(env.get("CODEX_HOME") or os.path.join(_home(env), ".codex")) / "config.toml"


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


def hook_command(mmctl: str, root: Path | None = None, agent: Agent = CLAUDE_CODE) -> str:
    """The hook's command line: ``<mmctl> inject --format claude-hook|codex-hook [--root ROOT]``."""
    command = f"{mmctl} {agent.mark}"
    return command + (f" --root {shlex.quote(str(root))}" if root is not None else "")


Edit = Callable[[bytes | None], "tuple[bytes | None, list[str]]"]


@dataclass
class SettingsChange:
    """What an install or uninstall does to one file.

    Attributes:
        path: the file.
        before: its bytes now (None: it does not exist).
        after: its new bytes, or None when nothing changes.
        actions: one line per change, for people (``added SessionStart hook: …``).
        backup: the backup that is written before the change (None: none needed).
        edit: the change as a function of the file's bytes (``(new bytes or None, actions)``), applied again
            to the file as it is at write time.
        new_mode: the mode of the file when it is created.
    """

    path: Path
    before: bytes | None
    after: bytes | None
    actions: list[str] = field(default_factory=list)
    backup: Path | None = None
    edit: Edit | None = field(default=None, repr=False)
    new_mode: int = 0o644

    @property
    def changed(self) -> bool:
        """Whether the file is written."""
        return self.after is not None


def _decode(path: Path, data: bytes | None) -> tuple[str, jsontext.Node | None]:
    """The file's text and tree (``("", None)`` for a missing or blank file).

    Raises:
        MMError(E_PARSE | E_INVALID): not UTF-8, not JSON, not an object, or ``hooks`` not shaped as documented.
    """
    if data is None or not data.strip():
        return ("" if data is None else data.decode("utf-8", "replace")), None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MMError(ErrorCode.E_PARSE, f"{path} is not UTF-8; fix it by hand (nothing was changed)") from None
    try:
        tree = jsontext.parse(text)
    except jsontext.JsonSyntaxError as error:
        raise MMError(ErrorCode.E_PARSE, f"{path} is not valid JSON (line {error.line}, column {error.column}: "
                                         f"{error.message}); fix it by hand (nothing was changed)") from None
    if tree.kind != "object":
        raise MMError(ErrorCode.E_INVALID, f"{path} must hold a JSON object; fix it by hand (nothing was changed)")
    hooks = tree.get("hooks")
    where = f"{path}: \"hooks\""
    if hooks is None or hooks.kind == "null":
        return text, tree
    if hooks.kind != "object":
        raise MMError(ErrorCode.E_INVALID, f"{where} must be an object of events; fix it by hand (nothing was changed)")
    for event in ("SessionStart", "UserPromptSubmit"):
        groups = hooks.get(event)
        if groups is None or groups.kind == "null":
            continue
        if groups.kind != "array" or not all(g.kind == "object" and _entries_ok(g) for g in groups.children):
            raise MMError(ErrorCode.E_INVALID, f"{where}.{event} must be a list of {{\"matcher\", \"hooks\": [...]}} "
                                               "groups; fix it by hand (nothing was changed)")
    return text, tree


def _entries_ok(group: jsontext.Node) -> bool:
    entries = group.get("hooks")
    return entries is None or entries.kind == "array"


def _command_of(hook: jsontext.Node) -> str | None:
    command = hook.get("command") if hook.kind == "object" else None
    return command.value if command is not None and command.kind == "string" else None


def _ours(hook: jsontext.Node, agent: Agent) -> bool:
    return agent.mark in (_command_of(hook) or "")


def _entries(group: jsontext.Node) -> list[jsontext.Node]:
    entries = group.get("hooks")
    return entries.children if entries is not None and entries.kind == "array" else []


def _group(agent: Agent, event: str, command: str) -> dict[str, Any]:
    matcher = agent.events[event]
    group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
    group["hooks"] = [{"type": "command", "command": command, "timeout": TIMEOUT_S}]
    return group


def _install_once(path: Path, text: str, agent: Agent, command: str) -> tuple[str, str] | None:
    """One edit toward the installed state, and its action; None when installed."""
    _, tree = _decode(path, text.encode("utf-8"))
    every = {event: [_group(agent, event, command)] for event in agent.events}
    added = f"added {', '.join(agent.events)} hooks: {command}"
    if tree is None:  # a missing or blank file: the whole object
        return text + json.dumps({"hooks": every}, ensure_ascii=False, indent=2) + "\n", added
    hooks = tree.get("hooks")
    if hooks is None:
        return jsontext.append_member(text, tree, "hooks", every).apply(text), added
    if hooks.kind == "null":
        return jsontext.Edit(hooks.start, hooks.end, json.dumps(every, ensure_ascii=False)).apply(text), added
    for event in agent.events:
        groups = hooks.get(event)
        group = _group(agent, event, command)
        if groups is None:
            return jsontext.append_member(text, hooks, event, [group]).apply(text), f"added {event} hook: {command}"
        if groups.kind == "null":
            return (jsontext.Edit(groups.start, groups.end, json.dumps([group], ensure_ascii=False)).apply(text),
                    f"added {event} hook: {command}")
        mine = [h for g in groups.children for h in _entries(g) if _ours(h, agent)]
        if any(_command_of(h) == command for h in mine):
            continue
        if mine:
            old = mine[0].get("command")
            assert old is not None
            return (jsontext.Edit(old.start, old.end, json.dumps(command, ensure_ascii=False)).apply(text),
                    f"updated {event} hook: {command}")
        return jsontext.append_item(text, groups, group).apply(text), f"added {event} hook: {command}"
    return None


def _uninstall_once(path: Path, text: str, agent: Agent) -> tuple[str, list[str]] | None:
    """One edit toward no hooks of ours, and its actions; None when there are none.

    The outermost container our hooks alone fill goes with them (a group, an event, ``hooks`` itself), and
    what is taken out is what install put in, with its separator: the file comes back as it was.
    """
    _, tree = _decode(path, text.encode("utf-8"))
    hooks = tree.get("hooks") if tree is not None else None
    if tree is None or hooks is None or hooks.kind != "object":
        return None
    whole: list[int] = []
    gone: list[str] = []
    for e, (event, groups) in enumerate(zip(hooks.keys, hooks.children, strict=True)):
        if event not in agent.events or groups.kind != "array" or not groups.children:
            continue
        mine = [[i for i, h in enumerate(_entries(g)) if _ours(h, agent)] for g in groups.children]
        every = [bool(m) and len(m) == len(_entries(g)) for m, g in zip(mine, groups.children, strict=True)]
        if all(every):
            whole.append(e)
            gone += [f"removed {event} hook: {_command_of(h)}" for g in groups.children for h in _entries(g)]
            continue
        for g, (group, ours, alone) in enumerate(zip(groups.children, mine, every, strict=True)):
            if alone:
                return (jsontext.remove_at(text, groups, g).apply(text),
                        [f"removed {event} hook: {_command_of(h)}" for h in _entries(group)])
            if ours:
                entries = group.get("hooks")
                assert entries is not None
                return (jsontext.remove_at(text, entries, ours[-1]).apply(text),
                        [f"removed {event} hook: {_command_of(entries.children[ours[-1]])}"])
    if not whole:
        return None
    if len(whole) == len(hooks.children):  # nothing else in "hooks": it goes whole
        return jsontext.remove_at(text, tree, tree.index("hooks")).apply(text), gone
    last = hooks.keys[whole[-1]]
    return jsontext.remove_at(text, hooks, whole[-1]).apply(text), [a for a in gone if a.startswith(f"removed {last} ")]


def _repeat(path: Path, step: Callable[[str], tuple[str, str | list[str]] | None]) -> Edit:
    """The edit that applies ``step`` until it has nothing left to do."""

    def edit(data: bytes | None) -> tuple[bytes | None, list[str]]:
        text, _ = _decode(path, data)
        start, actions = text, []
        for _ in range(16):
            done = step(text)
            if done is None:
                break
            text, action = done
            actions += [action] if isinstance(action, str) else action
        return (None if text == start else text.encode("utf-8")), actions

    return edit


def _plan(path: Path, edit: Edit, home: str | None, new_mode: int = 0o644) -> SettingsChange:
    from mmd.core.userfile import read_user_file

    before = read_user_file(path, home=home).data
    after, actions = edit(before)
    if after is None:
        return SettingsChange(path, before, None, edit=edit, new_mode=new_mode)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    needs_backup = before is not None and not backup.exists()
    return SettingsChange(path, before, after, actions, backup if needs_backup else None, edit, new_mode)


def plan_install(path: Path, command: str, agent: Agent = CLAUDE_CODE, *, home: str | None = None) -> SettingsChange:
    """The change that puts ``agent``'s ``SessionStart`` and ``UserPromptSubmit`` hooks (running ``command``)
    into ``path``.

    Raises:
        MMError(E_PARSE | E_INVALID | E_IO): a malformed file, or one :mod:`mmd.core.userfile` refuses
            (``home``: the user's home, for its symlink rule): nothing is changed.
    """
    return _plan(path, _repeat(path, lambda text: _install_once(path, text, agent, command)), home)


def plan_uninstall(path: Path, agent: Agent = CLAUDE_CODE, *, home: str | None = None) -> SettingsChange:
    """The change that takes ``agent``'s hooks out of ``path`` (a group, event or ``hooks`` they alone fill goes
    with them): after an install, the file exactly as it was.

    Raises:
        MMError(E_PARSE | E_INVALID | E_IO): as :func:`plan_install`: nothing is changed.
    """
    return _plan(path, _repeat(path, lambda text: _uninstall_once(path, text, agent)), home)


def plan_flag(path: Path, on: bool, *, home: str | None = None) -> SettingsChange:
    """The change that turns Codex's ``codex_hooks`` feature on in its ``config.toml`` at ``path`` (``on``), or
    takes out what turning it on added.

    Raises:
        MMError(E_PARSE | E_INVALID | E_IO): the file is not TOML, sets the flag in a way only a person should
            change, or is refused as :func:`plan_install` says: nothing is changed.
    """
    from . import tomltext

    def edit(data: bytes | None) -> tuple[bytes | None, list[str]]:
        try:
            text = (data or b"").decode("utf-8")
        except UnicodeDecodeError:
            raise MMError(ErrorCode.E_PARSE, f"{path} is not UTF-8; fix it by hand (nothing was changed)") from None
        new, action = (tomltext.enable if on else tomltext.disable)(text, str(path))
        return (None, []) if action is None else (new.encode("utf-8"), [f"{path.name}: {action}"])

    return _plan(path, edit, home, new_mode=0o600)


def apply(change: SettingsChange, *, home: str | None = None) -> None:
    """Write ``change``: the backup first (once per file, never overwritten), then the file, atomically, the edit
    applied again to the file as it is then (a change the agent made meanwhile is kept).

    Raises:
        MMError(E_INVALID | E_IO): if the folder, the backup or the file cannot be written, or
            :mod:`mmd.core.userfile` refuses the file (it is then as it was).
    """
    from mmd.core.userfile import update_user_file

    if change.after is None or change.edit is None:
        return
    try:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        if change.backup is not None and change.before is not None and not change.backup.exists():
            atomic_write(change.backup, change.before, 0o600)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"cannot write beside {change.path}: {error.strerror}") from None
    edit = change.edit
    actions: list[str] = []

    def final(data: bytes | None) -> bytes | None:
        new, done = edit(data)
        actions[:] = done
        return new

    update_user_file(change.path, final, home=home, new_mode=change.new_mode)
    if actions:
        change.actions = actions
