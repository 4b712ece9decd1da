"""mmd's TOML config file, as far as the memory is concerned: where it is, and the memory options in it.

The daemon reads the whole file (``mmd.daemon.config``); ``mmctl`` reads the
same file for the memory's root and options, so that a one-shot command on
the files sees the memory exactly as the daemon configured it. Location:
an explicit path, else ``$XDG_CONFIG_HOME/mmd/config.toml``, else
``~/.config/mmd/config.toml``. Keys are the reference's config block
(``root``, ``memoryId``, ``indexLines``, …, ``search.mode``, …) plus the
daemon's own under ``[daemon]``.

Owns: the file's location, reading it, and the wording of a refused value
(:class:`ConfigError`: ``config error: KEY = VALUE: WHY``), which ``mmd`` and
``mmctl`` both print. Never: the daemon's own keys (``mmd.daemon.config``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .errors import ErrorCode, MMError
from .options import MemoryOptions, is_js_integer
from .paths import expand_path, resolve_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AGENT_CHOICES", "MEMORY_KEYS", "ConfigError", "agent_setting", "check_choice", "check_kind", "config_path",
           "configured_root", "load_config", "memory_options", "options_refused", "read_config"]

MEMORY_KEYS = {
    "memoryId": "memory_id", "indexLines": "index_lines", "indexBytes": "index_bytes",
    "detailMaxBytes": "detail_max_bytes", "defaultWriteBudget": "default_write_budget",
    "search.mode": "search_mode", "search.limit": "search_limit", "search.maxSnippetChars": "max_snippet_chars",
    "nudge.enabled": "nudge_enabled", "nudge.intervalMs": "nudge_interval_ms",
}
"""Config keys of the memory options → :meth:`MemoryOptions.create` arguments (``root`` apart)."""

MEMORY_KINDS = {
    "root": "path", "memoryId": "str", "indexLines": "int", "indexBytes": "int", "detailMaxBytes": "int",
    "defaultWriteBudget": "int", "search.mode": "str", "search.limit": "int", "search.maxSnippetChars": "int",
    "nudge.enabled": "bool", "nudge.intervalMs": "int",
}
"""The kind of each memory key's value (as ``mmd.daemon.config.OPTIONS`` gives them): checked by :func:`check_kind`."""


AGENT_CHOICES = {"agents.writes": ("propose", "direct"), "nudge.distill": ("once", "off")}
"""The keys of how agents work with memory (issue 28), each with its values, the default first: ``agents.writes``
(an agent's MCP ``mem_write``/``mem_delete`` becomes a proposal, or writes at once) and ``nudge.distill`` (one
distillation line a session, or none). ``mmd`` and ``mmctl`` read them from the same file."""


class ConfigError(MMError):
    """A refused config value, worded once for ``mmd`` and ``mmctl``: ``config error: KEY = VALUE: WHY``.

    Code ``E_INVALID``; ``message`` is that sentence (``= VALUE`` left out when ``value`` is None).

    Attributes:
        key: the dotted config key (``search.limit``), a flag (``--index-lines``), or the file's place
            (``PATH:LINE:COL`` of a TOML syntax error, ``PATH`` when it cannot be read).
        value: the offending value as given, or None.
        why: a short reason.
    """

    def __init__(self, key: str, value: object, why: str) -> None:
        shown = "" if value is None else f" = {value!r}"
        super().__init__(ErrorCode.E_INVALID, f"config error: {key}{shown}: {why}", {"key": key})
        self.key, self.value, self.why = key, value, why

    def __str__(self) -> str:
        return self.message


def check_kind(key: str, kind: str, value: Any) -> Any:
    """``value`` if it has the kind (``int``: a positive integer; ``bool``; ``str``: non-blank; ``paths``: a list
    of non-blank strings, returned as a tuple; ``argv``: a non-empty list of non-empty strings (a command);
    else a string).

    Raises:
        ConfigError: ``must be a positive integer`` / ``must be true or false`` / ``must be a list of file
            paths`` / ``must be a non-empty list of non-empty strings …`` / ``must be a string`` / ``must not
            be blank``.
    """
    if kind == "int":
        if not is_js_integer(value) or value < 1:
            raise ConfigError(key, value, "must be a positive integer")
        return int(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(key, value, "must be true or false")
        return value
    if kind == "argv":
        if not isinstance(value, list) or not value or not all(isinstance(w, str) and w for w in value):
            raise ConfigError(key, value, "must be a non-empty list of non-empty strings (program, args…)")
        return list(value)
    if kind == "paths":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(key, value, "must be a list of file paths")
        return tuple(value)
    if not isinstance(value, str):
        raise ConfigError(key, value, "must be a string")
    if kind == "str" and not value.strip():
        raise ConfigError(key, value, "must not be blank")
    return value


def check_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``.

    Raises:
        ConfigError: ``must be one of …``.
    """
    if value not in choices:
        raise ConfigError(key, value, f"must be one of {', '.join(choices)}")
    return str(value)


def agent_setting(key: str, env: Mapping[str, str], path: Path | None = None) -> str:
    """The value of ``key`` (one of :data:`AGENT_CHOICES`) in the config file at ``path`` (None: the default file,
    when there is one), else its default.

    Raises:
        ConfigError: if the file cannot be read, is not TOML, or holds another value.
    """
    file = path if path is not None else config_path(None, env)
    flat = load_config(file, explicit=False) if file is not None else {}
    choices = AGENT_CHOICES[key]
    return check_choice(key, flat[key], choices) if key in flat else choices[0]


def options_refused(error: MMError, given: Mapping[str, Any]) -> ConfigError:
    """The core's refusal of an option value (``MemoryOptions.create``) mapped back to its config key."""
    key = next((k for k in ("memoryId", "search.mode") if error.message.startswith(k)), "memory")
    return ConfigError(key, given.get(key), error.message)


def config_path(explicit: str | None, env: Mapping[str, str]) -> Path | None:
    """The config file to read: ``explicit`` (``~``/``$VAR`` expanded) if given, else the default one if it exists."""
    if explicit is not None:
        return Path(os.path.abspath(expand_path(explicit, env)))
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    path = Path(base) / "mmd" / "config.toml"
    return path if path.is_file() else None


def read_config(path: Path) -> dict[str, Any]:
    """The file's keys flattened to dotted names (``search.mode``); a table value stays whole only if not a table.

    Raises:
        FileNotFoundError, OSError: if it cannot be read.
        ValueError (tomllib.TOMLDecodeError): if it is not TOML.
    """
    import tomllib  # only when there is a file: most runs have none

    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    flat: dict[str, Any] = {}

    def walk(table: Mapping[str, Any], prefix: str) -> None:
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = value

    walk(data, "")
    return flat


def load_config(path: Path, explicit: bool) -> dict[str, Any]:
    """:func:`read_config`, its failures as :class:`ConfigError` naming the file (and the flag only when given).

    Args:
        explicit: the path came from ``--config`` (the key of a missing or unreadable file is then ``--config``).

    Raises:
        ConfigError: ``file not found``, ``cannot be read: …``, or ``PATH:LINE:COL: not valid TOML: …``.
    """
    import tomllib

    try:
        return read_config(path)
    except FileNotFoundError:
        raise ConfigError("--config" if explicit else str(path), str(path), "file not found") from None
    except OSError as error:
        raise ConfigError("--config" if explicit else str(path), str(path),
                          f"cannot be read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        why = str(error).split(" (at line ")[0]
        raise ConfigError(_toml_place(path, str(error)), None, f"not valid TOML: {why}") from None


def _toml_place(path: Path, message: str) -> str:
    """``PATH:LINE:COL`` of a TOML syntax error (tomllib says ``(at line L, column C)``), else ``PATH``."""
    import re

    found = re.search(r"at line (\d+), column (\d+)", message)
    return f"{path}:{found[1]}:{found[2]}" if found else str(path)


def memory_options(root: str | None, env: Mapping[str, str], path: Path | None) -> MemoryOptions:
    """The memory options of the config file at ``path`` (None: defaults); an explicit ``root`` wins.

    Raises:
        ConfigError (an ``MMError(E_INVALID)``): worded as ``mmd`` words it, if the file cannot be read, is not
            TOML, or holds a memory key of the wrong kind or a bad value.
    """
    flat = load_config(path, explicit=False) if path is not None else {}
    given = {key: check_kind(key, MEMORY_KINDS[key], flat[key]) for key in MEMORY_KINDS if key in flat}
    kwargs = {arg: given[key] for key, arg in MEMORY_KEYS.items() if key in given}
    file_root = given.get("root")
    try:
        return MemoryOptions.create(root=root or (file_root if isinstance(file_root, str) and file_root else None),
                                    env=env, **kwargs)
    except MMError as error:
        raise options_refused(error, given) from None


def configured_root(explicit: str | None, env: Mapping[str, str]) -> Path:
    """The memory root as mmd resolves it: ``explicit``, else the config file's ``root``, else mm v1 §2.

    A config file that cannot be read is ignored here (the command that needs
    its options reports it).
    """
    if not explicit:
        path = config_path(None, env)
        if path is not None:
            try:
                root = read_config(path).get("root")
            except (OSError, ValueError):
                root = None
            if isinstance(root, str) and root.strip():
                explicit = root
    return resolve_root(explicit, env)
