"""Git as the engine of a memory root's history and sync (issue 18).

Owns, one module each: running git (:mod:`.runner`), making the root a
repository and registering the merge driver (:mod:`.repo`), one commit per
revision with log / diff / restore data (:mod:`.history`), the merge of two
versions by topic (:mod:`.merge`), git trees and the atomic checkout
(:mod:`.tree`), sync with a remote (:mod:`.remote`), which paths are memory
(:mod:`.layout`), what a remote commit may write (:mod:`.contain`) and whether
its merge may be applied (:mod:`.admit`), who made each version of a conflict and the
conflicts another machine's merge recorded (:mod:`.versions`), and the ``mmd-index`` merge driver git
runs itself (:mod:`.driver`). Never does: daemon wiring,
events, review-queue rows, retries — the daemon calls these.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .driver import drain_conflicts
    from .history import GitHistory, commit_message
    from .merge import IndexMerge, TopicConflict, merge_index
    from .remote import DEFAULT_REMOTE, SyncResult, repo_status, sync
    from .repo import RepoInfo, default_driver_command, ensure_repo
    from .runner import GitError, GitMissing

# Names load on first use (PEP 562): the merge driver git starts per file imports only what it needs.
_HOME = {
    "drain_conflicts": "driver", "GitHistory": "history", "commit_message": "history", "IndexMerge": "merge",
    "TopicConflict": "merge", "merge_index": "merge", "RepoInfo": "repo", "default_driver_command": "repo",
    "ensure_repo": "repo", "GitError": "runner", "GitMissing": "runner", "DEFAULT_REMOTE": "remote",
    "SyncResult": "remote", "sync": "remote", "repo_status": "remote",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_REMOTE",
    "GitError",
    "GitHistory",
    "GitMissing",
    "IndexMerge",
    "RepoInfo",
    "SyncResult",
    "TopicConflict",
    "commit_message",
    "default_driver_command",
    "drain_conflicts",
    "ensure_repo",
    "merge_index",
    "repo_status",
    "sync",
]
