"""``queue.undo`` on a real daemon: the decision undone, the note reverted through the memory state."""

from __future__ import annotations

from pathlib import Path

from tests.test_ingest_helpers import call, error_code
from tests.web_helpers import by_topic, note_files, queue_rows, start_web_daemon


def test_undo_deletes_a_created_note_restores_a_replaced_one_even_after_later_edits(  # type: ignore[no-untyped-def]
        start_daemon, tmp_path: Path) -> None:
    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    cands = by_topic(daemon)
    created = cands["deploy-region"]["id"]
    assert call(daemon, "queue.accept", {"project": "user", "id": created})["ok"]
    undone = call(daemon, "queue.undo", {"id": created})
    assert undone["reverted"] == "deleted" and undone["candidate"]["status"] == "pending"
    assert "deploy-region.md" not in note_files(daemon)
    assert queue_rows(daemon)["deploy-region"] == ("pending", None, None)

    assert call(daemon, "memory.write", {"topic": "ci", "content": "CI runs on push.", "summary": "ci",
                                         "tags": "build"})["ok"]
    before = note_files(daemon)["ci.md"]
    replaced = cands["test-command"]["id"]
    assert call(daemon, "queue.accept", {"project": "user", "id": replaced, "topic": "ci", "replace": True})["ok"]
    assert "make check" in note_files(daemon)["ci.md"]
    assert call(daemon, "queue.undo", {"id": replaced})["reverted"] == "restored"
    assert note_files(daemon)["ci.md"] == before
    assert call(daemon, "memory.read", {"topic": "ci"})["tags"] == ["build"]

    edited = cands["release-day"]["id"]
    assert call(daemon, "queue.accept", {"project": "user", "id": edited})["ok"]
    assert call(daemon, "memory.write", {"topic": "release-day", "content": "edited by hand"})["ok"]
    undone = call(daemon, "queue.undo", {"id": edited})  # the version before the accept: none (issue 29)
    assert undone["reverted"] == "deleted" and undone["laterEdits"] is True
    assert "release-day.md" not in note_files(daemon)
    assert queue_rows(daemon)["release-day"][0] == "pending"
    kept = call(daemon, "memory.log", {"topic": "release-day"})["commits"]  # the later text is kept
    assert [c["cause"] for c in kept] == ["delete", "write", "accept"] and kept[1]["chars"] == len("edited by hand")

    rejected = cands["code-style"]["id"]
    call(daemon, "queue.reject", {"id": rejected, "reason": "dup"})
    assert call(daemon, "queue.undo", {"id": rejected})["reverted"] is None
    assert queue_rows(daemon)["code-style"] == ("pending", None, None)
    assert error_code(daemon, "queue.undo", {"id": rejected}) == "E_INVALID"


def test_mmctl_queue_undo_puts_decisions_back_and_says_each(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    cands = by_topic(daemon)
    accepted, rejected = cands["deploy-region"]["id"], cands["code-style"]["id"]
    assert call(daemon, "queue.accept", {"project": "user", "id": accepted})["ok"]
    call(daemon, "queue.reject", {"id": rejected})

    def mmctl(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mmctl", *argv, "--root", str(daemon.root)], env=daemon.env,
                              capture_output=True, text=True, timeout=30)

    done = mmctl("queue", "undo", str(accepted), str(rejected))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"undone {accepted}: pending again; its note deleted",
                                        f"undone {rejected}: pending again"]
    assert "deploy-region.md" not in note_files(daemon)
    assert queue_rows(daemon)["deploy-region"][0] == queue_rows(daemon)["code-style"][0] == "pending"
    again = mmctl("queue", "undo", str(accepted))  # nothing to undo: exit 1, said
    assert again.returncode == 1 and f"undo {accepted}: " in again.stderr
