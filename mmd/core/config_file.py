"""mmd's TOML config file, as far as the memory is concerned: where it is, and the memory options in it.

The daemon reads the whole file (``mmd.daemon.config``); ``mmctl`` reads the
same file for the memory's root and options, so that a one-shot command on
the files sees the memory exactly as the daemon configured it. Location:
an explicit path, else ``$XDG_CONFIG_HOME/mmd/config.toml``, else
``~/.config/mmd/config.toml``. Keys are the reference's config block
(``root``, ``memoryId``, ``indexLines``, …, ``search.mode``, …) plus the
daemon's own under ``[daemon]``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .errors import ErrorCode, MMError
from .options import MemoryOptions
from .paths import expand_path, resolve_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MEMORY_KEYS", "config_path", "configured_root", "memory_options", "read_config"]

MEMORY_KEYS = {
    "memoryId": "memory_id", "indexLines": "index_lines", "indexBytes": "index_bytes",
    "detailMaxBytes": "detail_max_bytes", "defaultWriteBudget": "default_write_budget",
    "search.mode": "search_mode", "search.limit": "search_limit", "search.maxSnippetChars": "max_snippet_chars",
    "nudge.enabled": "nudge_enabled", "nudge.intervalMs": "nudge_interval_ms",
}
"""Config keys of the memory options → :meth:`MemoryOptions.create` arguments (``root`` apart)."""


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


def memory_options(root: str | None, env: Mapping[str, str], path: Path | None) -> MemoryOptions:
    """The memory options of the config file at ``path`` (None: defaults); an explicit ``root`` wins.

    Raises:
        MMError(E_INVALID): naming the file, if it cannot be read, is not TOML, or holds a bad value.
    """
    flat: dict[str, Any] = {}
    if path is not None:
        try:
            flat = read_config(path)
        except (OSError, ValueError) as error:
            raise MMError(ErrorCode.E_INVALID, f"config file {path}: {error}") from None
    kwargs = {arg: flat[key] for key, arg in MEMORY_KEYS.items() if key in flat}
    file_root = flat.get("root")
    try:
        return MemoryOptions.create(root=root or (file_root if isinstance(file_root, str) and file_root else None),
                                    env=env, **kwargs)
    except MMError as error:
        raise MMError(error.code, f"config file {path}: {error.message}" if path else error.message) from None


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
