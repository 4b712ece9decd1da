"""Memory reaches the agent through a real daemon (issue 14): baseline → none → delta, confirmation, clients,
restarts, expiry, review dates and their events, and the exported AGENTS.md block.

Every test runs the real ``mmd`` in a subprocess over its real sockets and state.db.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mmd.inject.baseline import command_for
from mmd.inject.blocks import BEGIN_MARKER, END_MARKER, read_block
from mmd.inject.guide import with_guide
from tests.test_daemon_helpers import DaemonProcess, Subscriber, sync_call
from tests.test_ingest_helpers import wait_until


def call(daemon: DaemonProcess, method: str, params: dict[str, Any] | None = None) -> Any:
    answer = sync_call(daemon.rpc, method, params)
    assert "error" not in answer, f"{method} {params}: {answer['error']}"
    return answer["result"]


def error_code(daemon: DaemonProcess, method: str, params: dict[str, Any]) -> str:
    answer = sync_call(daemon.rpc, method, params)
    assert "error" in answer, f"{method} {params}: expected an error, got {answer}"
    return str(answer["error"]["data"]["code"])


def write(daemon: DaemonProcess, topic: str, content: str, **extra: Any) -> dict[str, Any]:
    out = call(daemon, "memory.write", {"topic": topic, "content": content, **extra})
    assert out["ok"], out
    return dict(out)


def inject(daemon: DaemonProcess, client: str, **extra: Any) -> dict[str, Any]:
    return dict(call(daemon, "memory.inject", {"client": client, **extra}))


def test_baseline_none_delta_then_a_dropped_delta_is_given_again_and_a_delete_is_removed(daemon) -> None:
    write(daemon, "deploy-region", "Deploy to eu-west-1 only.", summary="Deploy only to eu-west-1")
    write(daemon, "ci-cache", "The CI cache key includes the lock file.", summary="CI cache key")
    first = inject(daemon, "agent-1", commit=True)
    assert first["mode"] == "baseline" and first["committed"] is True
    assert "- ci-cache: CI cache key <mm://local/ci-cache>" in first["text"]
    assert "- deploy-region: Deploy only to eu-west-1 <mm://local/deploy-region>" in first["text"]
    assert first["bytes"] == len(first["text"].encode())
    assert inject(daemon, "agent-1", commit=True)["mode"] == "none"

    write(daemon, "db-migrations", "Run migrations before the deploy.", summary="Migrations first")
    dropped = inject(daemon, "agent-1")  # not committed: the text never reached the agent
    assert (dropped["mode"], dropped["added"], dropped["updated"], dropped["removed"]) == (
        "delta", ["db-migrations"], [], [])
    assert dropped["unchanged"] == 2 and "added db-migrations: Migrations first" in dropped["text"]
    again = inject(daemon, "agent-1")
    assert again["mode"] == "delta" and again["added"] == ["db-migrations"] and again["token"] != dropped["token"]

    # confirming the second token advances the view; confirming it again is a no-op; the first is gone
    assert call(daemon, "memory.injected", {"client": "agent-1", "token": again["token"]})["ok"] is True
    assert call(daemon, "memory.injected", {"client": "agent-1", "token": again["token"]})["ok"] is True
    assert error_code(daemon, "memory.injected", {"client": "agent-1", "token": dropped["token"]}) == "E_NOT_FOUND"
    assert error_code(daemon, "memory.injected", {"client": "agent-2", "token": again["token"]}) == "E_NOT_FOUND"
    assert inject(daemon, "agent-1")["mode"] == "none"

    write(daemon, "ci-cache", "The CI cache key includes the lock file and the OS.", summary="CI cache key")
    updated = inject(daemon, "agent-1", commit=True)
    assert (updated["mode"], updated["updated"], updated["added"]) == ("delta", ["ci-cache"], [])
    call(daemon, "memory.delete", {"topic": "deploy-region"})
    removed = inject(daemon, "agent-1", commit=True)
    assert (removed["mode"], removed["removed"], removed["unchanged"]) == ("delta", ["deploy-region"], 2)
    assert "- removed deploy-region" in removed["text"]
    assert inject(daemon, "agent-1")["mode"] == "none"


def test_two_clients_keep_separate_views_and_bad_params_are_refused(daemon) -> None:
    write(daemon, "alpha", "First note.")
    assert inject(daemon, "session-a", commit=True)["mode"] == "baseline"
    write(daemon, "beta", "Second note.")
    assert inject(daemon, "session-b", commit=True)["mode"] == "baseline"
    a = inject(daemon, "session-a", commit=True)
    assert a["mode"] == "delta" and a["added"] == ["beta"]
    assert inject(daemon, "session-b", commit=True)["mode"] == "none"
    assert inject(daemon, "session-b", reset=True)["mode"] == "baseline"  # its context was cleared
    assert inject(daemon, "session-b")["mode"] == "none"  # an unconfirmed reset changed nothing
    assert error_code(daemon, "memory.inject", {"client": "  "}) == "E_INVALID"
    assert error_code(daemon, "memory.inject", {"client": "a\nb"}) == "E_INVALID"
    assert error_code(daemon, "memory.inject", {"client": "x" * 201}) == "E_INVALID"
    assert error_code(daemon, "memory.inject", {"client": "fresh", "maxBytes": 10}) == "E_INVALID"
    assert error_code(daemon, "memory.inject", {"client": "fresh", "maxBytes": 0}) == "E_INVALID"
    # a refused call created no view: the client still gets its baseline
    # the heading and the count line name the root (not ~/.dsh/memory), and mmctl by path when PATH lacks it
    room = 210 + 2 * (len(command_for(daemon.root)) - len("mmctl"))
    small = inject(daemon, "fresh", maxBytes=room)
    assert small["mode"] == "baseline" and small["bytes"] <= room and "2 older topics not shown" in small["text"]


def test_a_restart_keeps_views_and_an_expired_client_gets_a_baseline(start_daemon, tmp_path: Path) -> None:
    first = start_daemon("--inject-ttl-days", "3")
    write(first, "alpha", "First note.")
    assert inject(first, "kept", commit=True)["mode"] == "baseline"
    assert inject(first, "old", commit=True)["mode"] == "baseline"
    pending = inject(first, "pending")  # given, confirmed only after the restart
    assert pending["mode"] == "baseline"
    first.stop()

    second = start_daemon("--inject-ttl-days", "3")
    assert inject(second, "kept")["mode"] == "none"
    assert call(second, "memory.injected", {"client": "pending", "token": pending["token"]})["ok"] is True
    assert inject(second, "pending")["mode"] == "none"
    write(second, "beta", "Second note.")
    assert inject(second, "kept")["added"] == ["beta"]
    # "old" last confirmed 4 days ago (as state.db records it): past injectTtlDays, so a baseline again
    db = sqlite3.connect(tmp_path / "root" / ".mmd" / "state.db")
    with db:
        db.execute("UPDATE inject_clients SET committed_at = '2000-01-01T00:00:00.000Z' WHERE client = 'old'")
    db.close()
    again = inject(second, "old", commit=True)
    assert again["mode"] == "baseline" and "alpha" in again["text"] and "beta" in again["text"]
    assert inject(second, "old")["mode"] == "none"


def test_review_dates_are_written_listed_and_refused_as_prose(daemon) -> None:
    out = write(daemon, "node-version", "Node 20 until the upgrade.", reviewAfter="2000-01-01")
    assert out["ok"]
    write(daemon, "later", "Check again later.", reviewAfter="2w")
    index = call(daemon, "memory.read", {"topic": "node-version"})
    assert "- **review-after:** 2000-01-01" in index["entryBody"]
    due = call(daemon, "memory.due")
    assert [d["topic"] for d in due["due"]] == ["node-version"] and due["due"][0]["daysLeft"] < 0
    ahead = call(daemon, "memory.due", {"withinDays": 15})
    assert [d["topic"] for d in ahead["due"]] == ["node-version", "later"] and ahead["due"][1]["daysLeft"] == 14
    assert error_code(daemon, "memory.write", {"topic": "vague", "content": "x",
                                                "reviewAfter": "when we switch machines"}) == "E_INVALID"
    assert call(daemon, "memory.read", {"topic": "vague"}) is None  # nothing written
    assert error_code(daemon, "memory.due", {"withinDays": -1}) == "E_INVALID"
    # the reminder: once per client and date, on a call that has nothing else to say
    assert inject(daemon, "agent", commit=True)["mode"] == "baseline"
    reminder = inject(daemon, "agent", commit=True)
    assert reminder["mode"] == "reminder" and reminder["reminded"] == ["node-version"]
    assert "may be stale: re-check node-version" in reminder["text"]
    assert inject(daemon, "agent", commit=True)["mode"] == "none"


async def test_memory_due_is_sent_once_per_topic_and_date_across_a_restart(start_daemon) -> None:
    def started() -> DaemonProcess:
        return start_daemon("--heartbeat-ms", "100")

    async def events_until(d: DaemonProcess, action: Any, last: str) -> list[dict[str, Any]]:
        """memory/due payloads seen from before ``action`` until the one for topic ``last``."""
        sub = Subscriber(d.pub)
        try:
            await sub.ready()
            await asyncio.to_thread(action)
            seen: list[dict[str, Any]] = []

            def record(topic: str, payload: dict[str, Any]) -> bool:
                if topic == "memory/due":
                    seen.append(payload)
                    return payload["topic"] == last
                return False

            await sub.wait_for(record, timeout_s=10.0)
            return seen
        finally:
            sub.close()

    first = started()
    seen = await events_until(first, lambda: write(first, "x-topic", "Due today.", reviewAfter="0d"), "x-topic")
    assert [p["topic"] for p in seen] == ["x-topic"] and seen[0]["daysLeft"] == 0
    assert seen[0]["uri"] == "mm://local/x-topic"
    seen = await events_until(first, lambda: write(first, "y-topic", "Overdue.", reviewAfter="2001-02-03"),
                              "y-topic")
    assert [(p["topic"], p["reviewAfter"]) for p in seen] == [("y-topic", "2001-02-03")]  # x-topic not again
    sid = call(first, "memory.open")["sessionId"]
    sub = Subscriber(first.pub)
    await sub.ready()
    await asyncio.to_thread(call, first, "memory.close", {"sessionId": sid})
    _, nudge = await sub.wait_for(lambda t, p: t == "memory/nudge" and p.get("sessionId") == sid)
    sub.close()
    assert [d["topic"] for d in nudge["due"]] == ["y-topic", "x-topic"]
    first.stop()

    second = started()
    seen = await events_until(second, lambda: write(second, "z-topic", "Also due.", reviewAfter="0d"), "z-topic")
    assert [p["topic"] for p in seen] == ["z-topic"]  # x and y were announced before the restart
    seen = await events_until(second, lambda: write(second, "x-topic", "Due again.", reviewAfter="2000-01-01"),
                              "x-topic")
    assert [(p["topic"], p["reviewAfter"]) for p in seen] == [("x-topic", "2000-01-01")]  # a new date: once more


def test_the_export_block_follows_100_revisions_and_keeps_a_hand_edit(start_daemon, tmp_path: Path) -> None:
    agents = tmp_path / "project" / "AGENTS.md"
    agents.parent.mkdir()
    head = b"# Project rules\r\n\r\nUse tabs.\r\n"
    agents.write_bytes(head)
    config = tmp_path / "mmd.toml"
    config.write_text(f'[export]\nfiles = ["{agents}"]\n', encoding="utf-8")
    d = start_daemon("--config", str(config))

    def caught_up() -> bool:
        # the guide and the baseline of the current revision, as a new client sees it
        expected = with_guide(inject(d, "probe")["text"])
        block = read_block(agents.read_bytes())
        return block == expected

    wait_until(caught_up, what="the first export")
    data = agents.read_bytes()
    assert data.startswith(head + b"\r\n" + BEGIN_MARKER.encode() + b"\r\n") and data.endswith(
        END_MARKER.encode() + b"\r\n")
    for i in range(50):
        write(d, f"topic-{i % 10}", f"Body {i}.", summary=f"Note written at step {i}")
    # a hand edit outside the block, between revisions
    data = agents.read_bytes()
    begin, end = data.index(BEGIN_MARKER.encode()), data.index(END_MARKER.encode()) + len(END_MARKER)
    before, after = b"# Project rules (edited)\r\n\r\n" + data[:begin], data[end:] + b"More rules below.\r\n"
    agents.write_bytes(before + data[begin:end] + after)
    for i in range(50, 100):
        write(d, f"topic-{i % 10}", f"Body {i}.", summary=f"Note written at step {i}")
    wait_until(caught_up, what="the export after 100 revisions")
    data = agents.read_bytes()
    begin, end = data.index(BEGIN_MARKER.encode()), data.index(END_MARKER.encode()) + len(END_MARKER)
    assert data[:begin] == before and data[end:] == after
    assert b"- topic-9: Note written at step 99 <mm://local/topic-9>" in data[begin:end]


def test_an_export_that_cannot_be_written_shows_in_status_until_one_is(start_daemon, tmp_path: Path) -> None:
    # a failed export was only in the daemon's log: the AGENTS.md block went stale with nobody told
    from mmctl.cli.status import status_warnings

    agents = tmp_path / "project" / "AGENTS.md"
    agents.parent.mkdir()
    agents.write_bytes(f"{END_MARKER}\n{BEGIN_MARKER}\n".encode())  # markers out of order: never guessed at
    config = tmp_path / "mmd.toml"
    config.write_text(f'[export]\nfiles = ["{agents}"]\n', encoding="utf-8")
    d = start_daemon("--config", str(config))
    write(d, "deploy", "Deploy to eu-west-1.", summary="Deploys")
    failed = wait_until(lambda: (x := call(d, "daemon.status")["export"])["lastError"] and x, what="a failed export")
    assert failed["files"] == [str(agents)] and failed["failures"] >= 1 and str(agents) in failed["lastError"]
    assert any(w.startswith("an [export] block is stale") for w in status_warnings(call(d, "daemon.status")))
    agents.write_bytes(b"# rules\n")  # mended by hand
    write(d, "deploy", "Deploy to eu-west-2.", summary="Deploys")
    wait_until(lambda: call(d, "daemon.status")["export"]["lastError"] is None, what="an export after the mend")
    assert b"deploy" in agents.read_bytes()


def test_a_relative_export_path_is_refused_at_startup(tmp_path: Path) -> None:
    config = tmp_path / "mmd.toml"
    config.write_text('[export]\nfiles = ["AGENTS.md"]\n', encoding="utf-8")
    d = DaemonProcess(tmp_path, "--config", str(config)).start(wait=False)
    try:
        assert d.wait() == 2
        assert "export.files" in d.stderr() and "absolute" in d.stderr()
    finally:
        d.stop()


@pytest.mark.parametrize("value", ["3m", "2027-03-01", ""])
def test_review_after_spellings_are_accepted(daemon, value: str) -> None:
    assert write(daemon, "spelled", "x", reviewAfter=value)["ok"]
