"""``mmctl rename OLD NEW`` / ``memory.rename``: one revision, and everything that named OLD follows NEW.

The core on a real root (``MemoryStore.rename``: the note file with its meta lines, the index entry,
the links from other notes and entries, budgets), then a real daemon (``memory.rename`` over RPC and
``mmctl rename``: one revision, one journal row, one git commit, the queue's pending proposals),
and ``mmctl rename`` without a daemon (the queue a daemon left in ``state.db`` follows too). Every
refusal is checked to have changed no byte on disk and no row of the queue.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core.errors import ErrorCode, MMError
from mmd.core.rename import rewrite_links
from mmd.core.store import MemoryStore
from tests.test_ingest_helpers import call, error_code, wait_until
from tests.test_mmctl_status import cli
from tests.web_helpers import append_proposal, by_topic, queue_rows, start_web_daemon

NOW = "2026-12-01T10:00:00.000Z"


def _store(tmp_path: Path, **options: Any) -> MemoryStore:
    opts = MemoryOptions.create(root=tmp_path / "root", **options)
    Memory.ensure(opts)
    return MemoryStore(opts, lambda: NOW)


def _disk(root: Path) -> dict[str, bytes]:
    """Every file of the root but the daemon's own state."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".mmd" not in p.parts and ".git" not in p.parts}


@pytest.mark.parametrize(("text", "expected"), [
    ("see mm:deploy", "see mm:ship"),
    ("see mm:deploy.", "see mm:ship."),
    ("(mm:deploy), [d](mm:deploy) <mm:deploy>", "(mm:ship), [d](mm:ship) <mm:ship>"),
    ("mm://local/deploy and mm://local/deploy.", "mm://local/ship and mm://local/ship."),
    ("mm:deploy-x mm:deploy.v2 mm:deployment xmm:deploy", "mm:deploy-x mm:deploy.v2 mm:deployment xmm:deploy"),
    ("mm://other/deploy mm://local/deploy-x", "mm://other/deploy mm://local/deploy-x"),
    ("no link: deploy, mm:Deploy", "no link: deploy, mm:Deploy"),
])
def test_only_links_to_the_topic_in_this_memory_follow(text: str, expected: str) -> None:
    assert rewrite_links(text, "deploy", "ship", "local") == expected


def test_the_note_its_entry_and_the_links_to_it_follow_in_one_write(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.write("deploy", "  Staging first.\n\nSee mm:deploy for the steps.", summary="how we deploy",
                       tags="ops, cloud", review_after="2027-03-01", budget=500)["ok"]
    assert store.write("oncall", "Before paging, read mm:deploy and mm://local/deploy.", summary="rota")["ok"]
    assert store.write("style", "Nothing to do with mm:deploy-x.")["ok"]
    index = store.root / "MEMORY.md"
    style_budget = f"- **budget:** {len('Nothing to do with mm:deploy-x.')}/4000\n"
    assert index.read_text().endswith(style_budget)  # the last entry: a line of its own free text after it
    index.write_text(index.read_text() + "\nrelated: mm:deploy\n")
    style_before = (store.root / "memories" / "style.md").read_bytes()
    outcome = store.rename("deploy", "release")
    assert outcome["ok"] and outcome["topic"] == "release" and outcome["from"] == "deploy"
    assert outcome["uri"] == "mm://local/release" and outcome["linked"] == ["oncall", "style"]  # style: its entry
    files = {p.name: p.read_text() for p in (store.root / "memories").glob("*.md")}
    assert set(files) == {"release.md", "oncall.md", "style.md"}
    assert files["release.md"].startswith("# release\n\n> mm-id: local\n> mm-version: 1\n> mm-kind: note\n"
                                          "> mm-topic: release\n> mm-file: memories/release.md\n\n")
    assert files["release.md"].endswith("  Staging first.\n\nSee mm:release for the steps.\n")
    assert files["oncall.md"].endswith("Before paging, read mm:release and mm://local/release.\n")
    assert (store.root / "memories" / "style.md").read_bytes() == style_before  # mm:deploy-x is another topic
    entries = {e.topic: e for e in store.live_state().entries}
    assert set(entries) == {"release", "oncall", "style"}
    moved = entries["release"]
    assert (moved.summary, moved.tags, moved.file) == ("how we deploy", ("ops", "cloud"), "memories/release.md")
    assert moved.review_after == "2027-03-01" and moved.write_budget == 500  # its own budget kept
    assert "related: mm:release" in entries["style"].entry_body
    snapshot = Memory.open(store.options).read_topic("release")
    assert snapshot is not None and snapshot.body == "  Staging first.\n\nSee mm:release for the steps."


@pytest.mark.parametrize(("old", "new", "code", "said"), [
    ("deploy", "oncall", ErrorCode.E_INVALID, "mm://local/oncall already has a note: rename refused, nothing changed"),
    ("deploy", "not a slug", ErrorCode.E_INVALID, "is not a valid slug"),
    ("deploy", "../etc", ErrorCode.E_INVALID, "is not a valid slug"),
    ("nowhere", "elsewhere", ErrorCode.E_INVALID, "no note nowhere to rename"),
    ("deploy", "deploy", ErrorCode.E_INVALID, "nothing to rename"),
    ("deploy", "Deploy", ErrorCode.E_CONFLICT, "differs only by case"),
    ("deploy", "OnCall", ErrorCode.E_CONFLICT, "differs only by case"),
])
def test_a_refused_rename_changes_nothing(tmp_path: Path, old: str, new: str, code: ErrorCode, said: str) -> None:
    store = _store(tmp_path)
    assert store.write("deploy", "Staging first; see mm:oncall.")["ok"]
    assert store.write("oncall", "Read mm:deploy first.")["ok"]
    before = _disk(store.root)
    with pytest.raises(MMError) as refused:
        store.rename(old, new)
    assert refused.value.code is code and said in refused.value.message, refused.value.message
    assert _disk(store.root) == before


def test_a_rename_over_a_cap_is_refused_with_the_figures_and_one_that_shrinks_the_index_passes(tmp_path: Path) -> None:
    store = _store(tmp_path, detail_max_bytes=300)
    assert store.write("a", "mm:a " * 38)["ok"]  # a note that links to itself, near its byte cap
    before = _disk(store.root)
    outcome = store.rename("a", "a-much-longer-name")
    assert outcome["ok"] is False and outcome["code"] == "E_FILE_BUDGET_EXCEEDED" and "memories/a-much-longer" \
        in outcome["message"]
    assert outcome["usage"]["noteBytes"] > outcome["usage"]["noteMaxBytes"] == 300
    assert _disk(store.root) == before
    roomy = _store(tmp_path / "tight")
    assert roomy.write("long-topic-name", "x")["ok"] and roomy.write("b", "y")["ok"]
    size = roomy.live_state().usage["bytes"]
    tight_options = MemoryOptions.create(root=roomy.root, index_bytes=size + 20)  # room for 20 more bytes
    tight = MemoryStore(tight_options, lambda: NOW)
    before = _disk(tight.root)
    refused = tight.rename("b", "b-" + "z" * 30)
    assert refused["ok"] is False and refused["code"] == "E_INDEX_BUDGET_EXCEEDED"
    assert refused["usage"]["index"]["bytes"] > size + 20 and _disk(tight.root) == before
    (tight.root / "MEMORY.md").write_text((tight.root / "MEMORY.md").read_text() + "\n" + "padding line\n" * 3)
    assert tight.live_state().usage["overBudget"]  # pushed over its caps from outside
    assert tight.rename("long-topic-name", "lt")["ok"]  # shorter: the index shrinks, allowed over its caps


def test_the_daemon_renames_in_one_revision_and_the_queues_proposals_follow(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, _ = start_web_daemon(start_daemon, tmp_path, "--git")
    assert call(daemon, "memory.write", {"topic": "runbook", "content": "Deploys: mm:deploy."})["ok"]
    proposal = append_proposal(daemon, tmp_path / "sessions", "s-rename")
    assert proposal["proposal"]["topic"] == "deploy"
    creating = by_topic(daemon)["deploy-region"]  # a new-topic proposal of another name: left alone
    revision = call(daemon, "memory.index")["revision"]
    code, out, err = cli(daemon, "rename", "deploy", "deploy-staging")
    assert (code, err) == (0, ""), err
    assert out == ("renamed deploy to deploy-staging (mm://local/deploy-staging); links followed in 1 note(s): "
                   "runbook; 1 pending candidate(s) now propose deploy-staging\n")
    index = call(daemon, "memory.index")
    assert index["revision"] == revision + 1 and {e["topic"] for e in index["entries"]} == {"deploy-staging",
                                                                                             "runbook"}
    assert call(daemon, "memory.read", {"topic": "runbook"})["body"] == "Deploys: mm:deploy-staging."
    followed = call(daemon, "queue.get", {"id": proposal["id"]})
    assert followed["topic"] == "deploy-staging" and followed["proposal"] == {"action": "append",
                                                                               "topic": "deploy-staging"}
    assert call(daemon, "queue.get", {"id": creating["id"]})["topic"] == "deploy-region"
    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    try:
        journal = [(a, json.loads(d)) for a, d in db.execute("SELECT action, detail FROM journal ORDER BY id")]
    finally:
        db.close()
    renames = [d for a, d in journal if a == "memory.rename"]
    assert len(renames) == 1 and renames[0]["revision"] == revision + 1
    assert ("queue.rename", {"from": "deploy", "to": "deploy-staging", "candidates": 1, "scope": "user"}) in journal
    log = wait_until(lambda: (c := json.loads(cli(daemon, "log", "--json")[1])["commits"]) and
                     revision + 1 in c[0]["revisions"] and c, what="the rename's commit")
    assert log[0]["revisions"] == [revision + 1] and log[0]["subject"].startswith("rename")
    accepted = call(daemon, "queue.accept", {"id": proposal["id"]})  # the default accept appends to the new name
    assert accepted["ok"] and accepted["write"]["topic"] == "deploy-staging"
    assert call(daemon, "memory.read", {"topic": "deploy"}) is None
    assert "VPN token" in call(daemon, "memory.read", {"topic": "deploy-staging"})["body"]


def test_refusals_through_the_daemon_change_nothing_on_disk_or_in_the_queue(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    for topic in ("deploy-region", "testing"):
        assert call(daemon, "memory.write", {"topic": topic, "content": f"{topic} body"})["ok"]
    before, rows, revision = _disk(daemon.root), queue_rows(daemon), call(daemon, "memory.index")["revision"]
    code, _, err = cli(daemon, "rename", "deploy-region", "testing")
    assert code == 1 and "mm://local/testing already has a note: rename refused, nothing changed" in err
    code, _, err = cli(daemon, "rename", "deploy-region", "bad/slug")
    assert code == 1 and "is not a valid slug" in err
    code, _, err = cli(daemon, "rename", "deploy-regoin", "x")
    assert code == 1 and "no note deploy-regoin to rename (did you mean deploy-region?)" in err
    assert error_code(daemon, "memory.rename", {"topic": "testing", "to": "Testing"}) == "E_CONFLICT"
    assert error_code(daemon, "memory.rename", {"topic": "testing", "to": "t2", "ifRevision": revision - 1}) \
        == "E_CONFLICT"
    assert _disk(daemon.root) == before and queue_rows(daemon) == rows
    assert call(daemon, "memory.index")["revision"] == revision


def test_without_a_daemon_the_files_and_the_queue_it_left_follow(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    cand = by_topic(daemon)["api-auth"]
    assert call(daemon, "memory.write", {"topic": "api-auth", "content": "Bearer tokens; see mm:api-errors."})["ok"]
    daemon.stop()
    code, out, err = cli(daemon, "rename", "api-auth", "api-tokens")
    assert (code, err) == (0, "") and "1 pending candidate(s) now propose api-tokens" in out, out + err
    assert sorted(p.name for p in (daemon.root / "memories").glob("*.md")) == ["api-tokens.md"]
    rows = queue_rows(daemon)
    assert "api-auth" not in rows and rows["api-tokens"][0] == "pending"
    again = start_daemon("--http", "127.0.0.1:0")  # the daemon that comes back sees both as one
    assert call(again, "queue.get", {"id": cand["id"]})["topic"] == "api-tokens"
    assert call(again, "memory.read", {"topic": "api-tokens"})["body"] == "Bearer tokens; see mm:api-errors."
