"""The ``[git]`` table of the daemon's configuration (issue 18): ``--git``, ``--git-remote``, ``--git-branch``,
``--git-sync-interval-ms``.

Owns: :class:`GitSettings` and :func:`git_settings`, which checks the remote and branch NAMES as git
would (``git check-ref-format``, simplified: a doubtful name is refused, never guessed). The options
themselves are rows of :data:`~.config.OPTIONS`. Never runs git, never reads ``os.environ``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GitSettings", "git_settings"]

_REF_BAD = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^[-/.]|[/.]$|\.lock$|^@$")
"""What git refuses in a remote or branch name."""


@dataclass(frozen=True, slots=True)
class GitSettings:
    """The ``[git]`` table.

    Attributes:
        enabled: the root's history is kept in git (``--git``).
        remote: the remote NAME synced with (``origin``); none configured in the repository is not an error.
        branch: the branch synced, or None for the repository's current branch.
        sync_interval_ms: period of the automatic sync, milliseconds.
    """

    enabled: bool = False
    remote: str = "origin"
    branch: str | None = None
    sync_interval_ms: int = 300_000


def git_settings(raw: Mapping[str, Any]) -> GitSettings:
    """The ``[git]`` settings of the merged ``{dotted key: value}`` options.

    Raises:
        ConfigError: naming ``git.remote`` or ``git.branch``, for a name git would refuse.
    """
    from .config import ConfigError

    for key in ("git.remote", "git.branch"):
        value = raw[key]
        if value is not None and _REF_BAD.search(value):
            raise ConfigError(key, value, "is not a valid git name (no spaces, '..', '~^:?*[\\', "
                                          "leading '-' or '.', trailing '/' or '.lock')")
    return GitSettings(raw["git.enabled"], raw["git.remote"], raw["git.branch"], raw["git.syncIntervalMs"])
