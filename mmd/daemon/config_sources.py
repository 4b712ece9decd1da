"""The agent session-log sources of the daemon's configuration: ``--source``, ``--no-source``, ``[[daemon.sources]]``.

Owns: :class:`SourceSetting` and :func:`source_settings`, which merges, per
source kind (:data:`mmd.sources.FOLDERS`), the flags, the config file and the defaults the sources derive
from the environment handed in (``$CLAUDE_CONFIG_DIR/projects`` else
``~/.claude/projects``; ``$CODEX_HOME/sessions`` else ``~/.codex/sessions``;
the DSH folder is ``--sessions`` / ``daemon.sessions`` as before).

Precedence per kind, highest first — folder: ``--source KIND=PATH``, (the sessions kind)
``--sessions``, the file's ``[[daemon.sources]]`` ``path``, (the sessions kind)
``daemon.sessions``, the source's default; enabled: ``--no-source KIND`` (off),
``--source KIND=…`` (on), the table's ``enabled``, the file's
``daemon.sourcesOff`` list (off), on.

Never: reads ``os.environ`` (the composition root hands ``env`` in), or
creates a folder (a missing one is waited for by the ingestion).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmd.core.paths import expand_path
from mmd.sources import FOLDERS, SESSIONS_KIND, SOURCES

from . import config

__all__ = ["SourceSetting", "source_settings"]

TABLE_KEYS = ("kind", "path", "enabled")
"""The keys of a ``[[daemon.sources]]`` table."""


@dataclass(frozen=True, slots=True)
class SourceSetting:
    """One configured source of agent session logs.

    Attributes:
        kind: a key of :data:`mmd.sources.FOLDERS`.
        folder: its folder (absolute; it may not exist yet: it is read once it does).
        enabled: False when turned off (``--no-source KIND``, ``enabled = false``).
    """

    kind: str
    folder: Path
    enabled: bool


def _kind(key: str, value: Any, kind: Any) -> str:
    if not isinstance(kind, str) or kind not in FOLDERS:
        raise config.ConfigError(key, value, f"unknown source kind {kind!r}: one of {', '.join(FOLDERS)}")
    return kind


def _folder(key: str, raw: Any, env: Mapping[str, str]) -> Path:
    """An absolute folder from a path value; refused when blank, or when it exists and is not a folder."""
    if not isinstance(raw, str) or not raw.strip():
        raise config.ConfigError(key, raw, "must be a non-blank path")
    path = Path(os.path.abspath(expand_path(raw, env)))
    if path.exists() and not path.is_dir():
        raise config.ConfigError(key, raw, f"{path} exists and is not a folder")
    return path


def _from_flags(flags: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Path], set[str]]:
    """``--source`` → {kind: folder} and ``--no-source`` → {kind}; a kind given twice is refused."""
    folders: dict[str, Path] = {}
    for value in flags.get("daemon.sources") or ():
        kind, sep, path = str(value).partition("=")
        if not sep:
            raise config.ConfigError("--source", value, f"must be KIND=PATH (KIND: {', '.join(FOLDERS)})")
        kind = _kind("--source", value, kind.strip())
        if kind in folders:
            raise config.ConfigError("--source", value, f"source {kind} given twice")
        folders[kind] = _folder("--source", path, env)
    off = {_kind("--no-source", kind, kind) for kind in flags.get("daemon.sourcesOff") or ()}
    for kind in off & set(folders):
        raise config.ConfigError("--no-source", kind, f"turns off the source --source {kind}=… names")
    return folders, off


def _from_file(from_file: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Path], dict[str, bool]]:
    """``[[daemon.sources]]`` tables and ``daemon.sourcesOff`` → ({kind: folder}, {kind: enabled})."""
    tables = from_file.get("daemon.sources", [])
    if not isinstance(tables, list):
        raise config.ConfigError("daemon.sources", tables, "must be [[daemon.sources]] tables")
    folders: dict[str, Path] = {}
    enabled: dict[str, bool] = {}
    for n, table in enumerate(tables):
        key = f"daemon.sources[{n}]"
        if not isinstance(table, dict):
            raise config.ConfigError(key, table, "must be a table with kind, path, enabled")
        for extra in sorted(set(table) - set(TABLE_KEYS)):
            raise config.ConfigError(f"{key}.{extra}", table[extra], "unknown key (kind, path, enabled)")
        kind = _kind(f"{key}.kind", table.get("kind"), table.get("kind"))
        if kind in folders or kind in enabled:
            raise config.ConfigError(f"{key}.kind", kind, f"source {kind} given twice")
        if "path" in table:
            folders[kind] = _folder(f"{key}.path", table["path"], env)
        on = table.get("enabled", True)
        if not isinstance(on, bool):
            raise config.ConfigError(f"{key}.enabled", on, "must be true or false")
        enabled[kind] = on
    off = from_file.get("daemon.sourcesOff", [])
    if not isinstance(off, list):
        raise config.ConfigError("daemon.sourcesOff", off, "must be a list of source kinds")
    for kind in off:
        enabled.setdefault(_kind("daemon.sourcesOff", off, kind), False)
    return folders, enabled


def source_settings(flags: Mapping[str, Any], from_file: Mapping[str, Any], env: Mapping[str, str],
                    sessions: Path, sessions_flag: bool) -> tuple[SourceSetting, ...]:
    """Every source kind's setting, in :data:`mmd.sources.FOLDERS` order (precedence: the module docstring).

    Args:
        flags: as :func:`mmd.daemon.config.parse_args` returns them (``daemon.sources``: ``KIND=PATH`` strings,
            ``daemon.sourcesOff``: kinds).
        from_file: the config file's keys, flattened (``daemon.sources``: a list of tables).
        env: the process environment handed in by ``main``.
        sessions: the DSH folder from ``--sessions`` / ``daemon.sessions`` / ``$DSH_HOME``.
        sessions_flag: ``sessions`` came from the ``--sessions`` flag (it then beats the file's tables).

    Raises:
        ConfigError: naming the key (``--source``, ``daemon.sources[N].path``, …), the value and why: an
            unknown kind, a malformed ``KIND=PATH``, a kind given twice, a blank path or one that exists and is
            not a folder, a table key that is not ``kind``/``path``/``enabled``.
    """
    flag_folders, flag_off = _from_flags(flags, env)
    file_folders, file_enabled = _from_file(from_file, env)
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    out: list[SourceSetting] = []
    for kind in FOLDERS:
        if kind in flag_folders:
            folder = flag_folders[kind]
        elif kind == SESSIONS_KIND and sessions_flag:
            folder = sessions
        elif kind in file_folders:
            folder = file_folders[kind]
        elif kind == SESSIONS_KIND:
            folder = sessions
        else:
            folder = Path(os.path.abspath(SOURCES[kind].default_dir(env, home)))
        on = kind not in flag_off and (kind in flag_folders or file_enabled.get(kind, True))
        out.append(SourceSetting(kind, folder, on))
    return tuple(out)
