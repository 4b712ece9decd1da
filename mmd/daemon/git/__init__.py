"""Git as the engine of a memory root's history and sync (issue 18).

Owns, one module each: running git (:mod:`.runner`), making the root a
repository and registering the merge driver (:mod:`.repo`), one commit per
revision with log / diff / restore data (:mod:`.history`), the merge of two
versions by topic (:mod:`.merge`), git trees and the atomic checkout
(:mod:`.tree`), sync with a remote (:mod:`.sync`), and the ``mmd-index``
merge driver git runs itself (:mod:`.driver`). Never does: daemon wiring,
events, review-queue rows, retries — the daemon calls these.
"""

from __future__ import annotations

from .driver import drain_conflicts
from .history import GitHistory, commit_message
from .merge import IndexMerge, TopicConflict, merge_index
from .repo import RepoInfo, default_driver_command, ensure_repo
from .runner import GitError, GitMissing
from .sync import DEFAULT_REMOTE, SyncResult, sync

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
    "sync",
]
