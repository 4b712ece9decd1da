"""Two machines on one: a bare repository and two roots, EACH WITH ITS OWN REAL DAEMON (``mmd --git``).

Property guarded (issue 18): every revision becomes a commit of the root's own repository (never of
``.mmd/``); ``mmctl sync`` commits, fetches, merges by topic, pushes and reloads — distinct topics
converge, a topic written on both ends keeps one version in the files and queues the other as a
``conflict`` candidate on both machines (issue 30: the one that merged, and the other at its next sync, each
naming the other machine and commit), one accept resolves it and the next sync carries it, a delete against
an edit keeps the edit and queues the delete; an unreachable remote loses no local revision and the daemon's own retries
recover; log, diff, revert and restore work on a root with 50 revisions, reverts and restores
being new writes under every budget; a root inside another repository, or no git, is refused at
start with the reason.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.test_daemon_helpers import DaemonProcess, sync_call
from tests.test_git_helpers import bare_remote, git, hang_fetches, isolate_git
from tests.test_ingest_helpers import wait_until
from tests.test_mmctl_daemon import cli


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> tuple[DaemonProcess, DaemonProcess]:
    """Two daemons (laptop, box) with ``--git``, each root its own repository with the bare ``origin``."""
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    daemons = []
    for name in ("laptop", "box"):
        daemon = start_daemon("--git", "--no-ingest", root=tmp_path / name)
        git(daemon.root, "remote", "add", "origin", str(remote))
        daemons.append(daemon)
    return daemons[0], daemons[1]


def call(daemon: DaemonProcess, method: str, params: dict[str, Any] | None = None) -> Any:
    answer = sync_call(daemon.rpc, method, params, timeout_ms=60_000)
    assert "error" not in answer, answer
    return answer["result"]


def write(daemon: DaemonProcess, topic: str, body: str, **extra: Any) -> int:
    outcome = call(daemon, "memory.write", {"topic": topic, "content": body, "summary": topic, **extra})
    assert outcome["ok"], outcome
    return int(outcome["revision"])


def mmctl_sync(daemon: DaemonProcess, ok: bool = True) -> dict[str, Any]:
    code, out, err = cli(daemon, "sync", "--json")
    result: dict[str, Any] = json.loads(out)
    assert (code == 0) == ok and bool(result["ok"]) == ok, (code, result, err)
    return result


def bodies(daemon: DaemonProcess) -> dict[str, str]:
    return {n["topic"]: n["body"] for n in call(daemon, "memory.list")["notes"]}


def files(root: Path) -> dict[str, bytes]:
    out = {"MEMORY.md": (root / "MEMORY.md").read_bytes()}
    out.update({f"memories/{p.name}": p.read_bytes() for p in sorted((root / "memories").glob("*.md"))})
    return out


def conflicts(daemon: DaemonProcess) -> list[dict[str, Any]]:
    """The ``conflict`` candidates of the daemon's queue, each checked against ``schema/rpc.schema.json``."""
    from tests.test_schema import check, rpc_def

    page = call(daemon, "queue.list", {"status": "all"})
    check(rpc_def("queue.list.result"), page, "queue.list with conflict candidates")
    return [c for c in page["candidates"] if c["kind"] == "conflict"]


def test_distinct_topics_written_on_both_converge_after_a_sync_on_each(pair: Any) -> None:
    laptop, box = pair
    write(laptop, "deploy-region", "We deploy to us-east-1.")
    write(box, "build-cache", "ccache lives under /var/cache.")
    first = mmctl_sync(laptop)
    assert first["pushed"] and first["merged"] == "none"
    merged = mmctl_sync(box)
    assert merged["merged"] == "merge" and merged["topics"] == ["deploy-region"] and merged["conflicts"] == []
    assert bodies(box)["deploy-region"] == "We deploy to us-east-1."  # reloaded before the answer came
    assert mmctl_sync(laptop)["merged"] == "fast-forward"
    assert bodies(laptop) == bodies(box) == {"deploy-region": "We deploy to us-east-1.",
                                             "build-cache": "ccache lives under /var/cache."}
    assert files(laptop.root) == files(box.root)
    for daemon in (laptop, box):
        assert git(daemon.root, "status", "--porcelain") == ""
        assert git(daemon.root, "ls-files", ".mmd") == ""  # mmd's own state is never committed
        write(daemon, "after-sync", "a write after the sync")
        cli(daemon, "log", "--json")  # waits for that write's commit
        status = call(daemon, "daemon.status")
        assert status["watcher"]["externalChanges"] == 0  # the merged files were the sync's, not external
        assert status["git"]["lastSync"]["ok"] and status["git"]["remoteConfigured"]


def test_the_same_topic_written_on_both_ends_keeps_the_newer_and_queues_the_other(pair: Any) -> None:
    laptop, box = pair
    long_laptop = "Laptop notes: " + "the laptop deploys to eu-west-1. " * 30  # a whole note, > 500 code points
    write(laptop, "deploy-region", long_laptop)
    write(box, "deploy-region", "We deploy to us-east-1 (box, written later).")
    mmctl_sync(laptop)
    merged = mmctl_sync(box)
    assert merged["merged"] == "merge" and len(merged["queued"]) == 1
    (conflict,) = merged["conflicts"]
    assert (conflict["topic"], conflict["kept"]) == ("deploy-region", "ours")
    (candidate,) = conflicts(box)
    assert candidate["id"] == merged["queued"][0] and candidate["topic"] == "deploy-region"
    assert candidate["body"] == long_laptop and len(long_laptop) > 500 and candidate["status"] == "pending"
    assert candidate["source"]["kind"] == "sync" and candidate["source"]["file"] == "git:origin/main"
    kept, other = candidate["source"]["messageId"].split("..")
    assert other == git(laptop.root, "rev-parse", "HEAD") and kept == conflict["keptCommit"]  # both revisions
    mmctl_sync(laptop)
    for daemon in (laptop, box):
        assert bodies(daemon) == {"deploy-region": "We deploy to us-east-1 (box, written later)."}
        assert "<<<<<<<" not in (daemon.root / "memories" / "deploy-region.md").read_text()
    assert files(laptop.root) == files(box.root)
    code, out, _ = cli(box, "queue", "accept", str(candidate["id"]), "--replace")
    assert code == 0, out
    assert bodies(box)["deploy-region"] == long_laptop  # the other version, back through a normal write


def root_id(daemon: DaemonProcess) -> str:
    return (daemon.root / ".mmd" / "root-id").read_text().strip()


def test_a_conflict_is_seen_on_both_machines_and_one_accept_resolves_it_on_both(pair: Any) -> None:
    """Issue 30: after a merge conflict only the side that synced second saw the losing version, its evidence read
    `? git text in ?`, and a plain accept was refused."""
    laptop, box = pair
    write(laptop, "deploy-region", "Laptop: we deploy to eu-west-1.")
    write(box, "deploy-region", "Box: we deploy to us-east-1 (written later, kept).")
    laptop_commit, box_commit = (json.loads(cli(d, "log", "--json")[1])["commits"][0]["commit"]  # once committed
                                 for d in (laptop, box))
    mmctl_sync(laptop)
    merged = mmctl_sync(box)
    assert merged["merged"] == "merge" and merged["conflicts"][0]["kept"] == "ours"
    assert "Mmd-Conflict: deploy-region " + laptop_commit in git(box.root, "log", "-1", "--format=%B")
    assert mmctl_sync(laptop)["merged"] == "fast-forward"  # the laptop takes the box's merge, and learns of it
    seen = {}
    for daemon, other, commit in ((box, laptop, laptop_commit), (laptop, box, box_commit)):
        (cand,) = conflicts(daemon)
        assert cand["body"] == "Laptop: we deploy to eu-west-1." and cand["status"] == "pending"  # the lost one
        assert cand["proposal"] == {"action": "replace", "topic": "deploy-region"}
        lost, kept = (e["position"] for e in cand["evidence"])
        assert (lost["uuid"], lost["root"], kept["uuid"], kept["root"]) == (
            laptop_commit, root_id(laptop), box_commit, root_id(box))  # each names the other machine and commit
        assert lost["machine"] and all(e["at"] for e in cand["evidence"])
        code, out, _ = cli(daemon, "queue", "show", str(cand["id"]))
        assert code == 0 and f"commit {commit[:12]} by {lost['machine'] if other is laptop else kept['machine']}" \
            f" (root {root_id(other)[:8]})" in out and "? git text in ?" not in out, out
        seen[daemon.root.name] = cand
    for daemon in (laptop, box):
        assert bodies(daemon) == {"deploy-region": "Box: we deploy to us-east-1 (written later, kept)."}
    code, out, err = cli(laptop, "queue", "accept", str(seen["laptop"]["id"]))  # no --replace: it is a resolution
    assert code == 0 and out.startswith(f"accepted {seen['laptop']['id']}: updated "), (out, err)
    assert bodies(laptop) == {"deploy-region": "Laptop: we deploy to eu-west-1."}
    mmctl_sync(laptop)
    assert mmctl_sync(box)["merged"] == "fast-forward"  # the next sync carries the resolution
    assert bodies(box) == {"deploy-region": "Laptop: we deploy to eu-west-1."} and files(box.root) == files(laptop.root)
    resolved = call(box, "queue.get", {"id": seen["box"]["id"]})
    assert resolved["status"] == "accepted" and resolved["written"]["topic"] == "deploy-region"  # on both machines
    assert call(box, "queue.list")["total"] == 0 and call(laptop, "queue.list")["total"] == 0


def test_a_delete_on_one_side_and_an_edit_on_the_other_keeps_the_edit_and_queues_the_delete(pair: Any) -> None:
    laptop, box = pair
    write(laptop, "oncall", "Rotation on Mondays.")
    mmctl_sync(laptop)
    assert mmctl_sync(box)["merged"] in ("merge", "fast-forward") and "oncall" in bodies(box)
    call(laptop, "memory.delete", {"topic": "oncall"})
    write(box, "oncall", "Rotation on Tuesdays now.")
    mmctl_sync(laptop)
    merged = mmctl_sync(box)
    (candidate,) = conflicts(box)
    assert candidate["topic"] == "oncall" and candidate["id"] in merged["queued"]
    assert merged["conflicts"][0]["candidate"]["action"] == "delete"
    assert mmctl_sync(laptop)["merged"] == "fast-forward"
    assert bodies(laptop) == bodies(box) == {"oncall": "Rotation on Tuesdays now."}
    # both machines hold the delete; accepting it deletes the note, undo writes it back, the sync carries it
    (theirs,) = conflicts(laptop)
    assert theirs["proposal"] == candidate["proposal"] == {"action": "delete", "topic": "oncall"}
    code, out, _ = cli(box, "queue", "accept", str(candidate["id"]))
    assert code == 0 and out.startswith(f"accepted {candidate['id']}: deleted oncall\n") and bodies(box) == {}
    code, out, _ = cli(box, "queue", "undo", str(candidate["id"]))
    assert code == 0 and bodies(box) == {"oncall": "Rotation on Tuesdays now."}, out
    assert cli(box, "queue", "accept", str(candidate["id"]))[0] == 0 and bodies(box) == {}
    mmctl_sync(box)
    mmctl_sync(laptop)
    assert bodies(laptop) == {} and call(laptop, "queue.get", {"id": theirs["id"]})["status"] == "accepted"


def test_an_unreachable_remote_keeps_every_local_revision_and_the_retries_recover(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    missing = tmp_path / "not-yet.git"
    daemon = start_daemon("--git", "--no-ingest", "--git-sync-interval-ms", "300", root=tmp_path / "root")
    git(daemon.root, "remote", "add", "origin", str(missing))
    revisions = [write(daemon, f"topic-{i}", f"offline write {i}") for i in range(3)]
    code, out, err = cli(daemon, "sync")
    while "a sync is already running" in err:  # the schedule's own (every 300 ms) came first: again once it ends
        wait_until(lambda: call(daemon, "daemon.status")["git"]["syncing"] is None, what="the scheduled sync's end")
        code, out, err = cli(daemon, "sync")
    assert code == 1 and "sync failed at fetch" in err, (out, err)
    status = call(daemon, "daemon.status")["git"]
    assert status["lastSync"]["ok"] is False and status["lastError"]["stage"] == "fetch"
    assert status["failures"] >= 1
    code, out, _ = cli(daemon, "status")
    assert "error at fetch" in out
    logged = {r for c in json.loads(cli(daemon, "log", "--json")[1])["commits"] for r in c["revisions"]}
    assert set(revisions) <= logged  # every local revision is a commit, offline too
    bare_remote(missing)  # the remote comes back: the daemon's own back-off retry pushes, no mmctl needed
    wait_until(lambda: (call(daemon, "daemon.status")["git"]["lastSync"] or {}).get("ok"), timeout_s=60,
               what="a scheduled sync to recover")
    pushed = subprocess.run(["git", "--git-dir", str(missing), "log", "main",
                             "--format=%(trailers:key=Mmd-Revision,valueonly,separator=%x20)"], check=True,
                            capture_output=True, text=True).stdout.split()
    assert {str(r) for r in revisions} <= set(pushed)  # every offline revision reached the remote
    assert call(daemon, "daemon.status")["git"]["ahead"] == 0


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the hanging fetch through /proc")
def test_a_stopping_daemon_cuts_a_fetch_that_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 start_daemon: Any) -> None:
    # SIGTERM waited for the fetch's 120 s time limit (systemd's TimeoutStopSec=30 would SIGKILL first)
    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", "--git-sync-interval-ms", "300", root=tmp_path / "root")
    hang = hang_fetches(daemon.root)
    hung = wait_until(hang.sleeps, what="a fetch that hangs")
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(30) == 0, daemon.stderr()
    assert not (hang.sleeps() & hung), "the fetch's ssh command outlived the daemon"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the hanging fetch through /proc")
def test_a_sync_whose_daemon_is_killed_before_it_answers_fails_at_once(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      start_daemon: Any) -> None:
    # `mmctl sync` waited out its 1200 s timeout after its daemon was killed
    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", root=tmp_path / "root")
    hang = hang_fetches(daemon.root)
    result: list[tuple[int, str, str]] = []
    syncing = threading.Thread(target=lambda: result.append(cli(daemon, "sync")))
    syncing.start()
    wait_until(hang.sleeps, what="the sync's fetch, hanging")
    daemon.signal(signal.SIGKILL)
    syncing.join(20)
    hang.end()  # a fetch's own process group outlives a SIGKILLed daemon
    assert not syncing.is_alive(), "the sync waited for its whole timeout"
    code, _, err = result[0]
    assert code == 1 and "the daemon stopped before it answered" in err, err


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the hanging fetch through /proc")
async def test_an_async_request_whose_daemon_is_killed_before_it_answers_fails_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    # the MCP server's client: a write during a daemon restart waited its 10 s, then failed as a timeout
    from mmctl import AsyncClient
    from mmctl.errors import DaemonUnavailable, RequestTimeout

    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", root=tmp_path / "root")
    hang = hang_fetches(daemon.root)
    async with AsyncClient(daemon.root, env=daemon.env, timeout_ms=60_000) as client:
        syncing = asyncio.ensure_future(client.call("memory.sync"))
        for _ in range(400):  # at most 20 s
            if hang.sleeps():
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("no hanging fetch")
        daemon.signal(signal.SIGKILL)
        with pytest.raises(DaemonUnavailable) as failed:
            await asyncio.wait_for(syncing, 20)
    hang.end()
    assert not isinstance(failed.value, RequestTimeout) and "stopped before it answered" in str(failed.value)


def test_log_diff_revert_and_restore_on_a_root_with_50_revisions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", root=tmp_path / "root")
    revs: dict[int, int] = {}
    for i in range(50):
        revs[i] = write(daemon, f"topic-{i % 5}", f"version {i}")
        call(daemon, "memory.log", {"limit": 1})  # one commit per revision: wait for this one's
    code, out, _ = cli(daemon, "log", "--json", "--limit", "100")
    commits = json.loads(out)["commits"]
    assert [c["revisions"] for c in commits[:50]] == [[revs[i]] for i in reversed(range(50))]
    assert commits[0]["subject"] == f"write topic-4 (r{revs[49]})"
    code, out, _ = cli(daemon, "log", "topic-3", "--json")
    assert [c["revisions"][0] for c in json.loads(out)["commits"]] == [revs[i] for i in (48, 43, 38, 33, 28, 23,
                                                                                          18, 13, 8, 3)]
    code, out, _ = cli(daemon, "log", "topic-3")
    assert code == 0 and out.splitlines()[0].endswith(f"write topic-3 (r{revs[48]})")
    # diff: one revision, and a range
    code, out, _ = cli(daemon, "diff", f"r{revs[12]}", "--json")
    (row,) = json.loads(out)["topics"]
    assert (row["topic"], row["change"]) == ("topic-2", "updated")
    assert (row["before"]["body"], row["after"]["body"]) == ("version 7", "version 12")
    code, out, _ = cli(daemon, "diff", f"r{revs[40]}", f"r{revs[42]}")
    assert code == 0 and "~ topic-1" in out and "~ topic-2" in out and "topic-0" not in out.split("\n\n")[0]
    assert all(f"{sign}version {n}" in out for sign, n in (("-", 36), ("+", 41), ("-", 37), ("+", 42)))
    # revert: the topic goes back to its version before that revision, as a new revision and commit
    code, out, _ = cli(daemon, "revert", f"r{revs[49]}")
    assert code == 0 and "wrote topic-4 back" in out
    assert bodies(daemon)["topic-4"] == "version 44"
    newest = json.loads(cli(daemon, "log", "--json", "--limit", "1")[1])["commits"][0]
    assert newest["subject"].startswith("revert topic-4 (r") and len(commits) + 1 == len(
        json.loads(cli(daemon, "log", "--json", "--limit", "200")[1])["commits"])
    # restore: a topic as it was at a revision; a topic absent then is refused, never deleted
    code, out, _ = cli(daemon, "restore", "topic-2", "--at", f"r{revs[7]}")
    assert code == 0 and bodies(daemon)["topic-2"] == "version 7"
    assert json.loads(cli(daemon, "log", "topic-2", "--json", "--limit", "1")[1])["commits"][0]["subject"] \
        .startswith("restore topic-2")
    code, out, err = cli(daemon, "restore", "topic-1", "--at", f"r{revs[0]}", "--json")
    assert code == 1 and "topic-1 did not exist at" in err and bodies(daemon)["topic-1"] == "version 46"
    # every budget holds: the restore is the store's own write (its usage against the budgets comes back)
    code, out, _ = cli(daemon, "restore", "topic-2", "--at", f"r{revs[12]}", "--json")
    usage = json.loads(out)["outcome"]["usage"]
    assert code == 0 and usage["bodyChars"] == len("version 12") and usage["index"]["overBudget"] is False
    assert cli(daemon, "diff", "r99999")[0] == 1  # no such revision: a clear failure
    from mmctl import Client

    with Client(daemon.root, env=daemon.env) as client:  # the Python client calls them by name
        (newest,) = client.call("memory.log", {"topic": "topic-2", "limit": 1})["commits"]
        assert client.call("memory.diff", {"rev": newest["commit"]})["topics"][0]["topic"] == "topic-2"
        assert client.call("memory.restore", {"topic": "topic-2", "at": f"r{revs[2]}"})["ok"]
        assert client.call("memory.sync", timeout_ms=60_000)["note"].startswith("no remote 'origin'")


def test_revision_numbers_continue_above_the_history_in_a_root_without_mmd_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    root = tmp_path / "root"
    first = start_daemon("--git", "--no-ingest", root=root)
    last = write(first, "alpha", "one")
    first.stop()
    shutil.rmtree(root / ".mmd")  # as in a fresh clone: only the history knows the revision numbers
    (root / "memories" / "alpha.md").write_text((root / "memories" / "alpha.md").read_text().replace("one", "two"))
    second = start_daemon("--git", "--no-ingest", root=root)
    assert call(second, "daemon.status")["revision"] > last
    subjects = git(root, "log", "--format=%s").splitlines()
    assert subjects[0] == f"external edit alpha (r{last + 1})"  # the edit made while no daemon ran
    assert write(second, "beta", "three") > last + 1


def test_a_root_inside_another_repository_or_without_git_is_refused_at_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "--quiet")
    inside = start_daemon("--git", "--no-ingest", root=project / "memory", wait=False)
    assert inside.wait() == 1
    assert f"is inside the git repository {project}" in inside.stderr()
    assert not (project / "memory").exists()  # refused before anything was created in the project
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    nogit = start_daemon("--git", "--no-ingest", root=tmp_path / "plain", env={"PATH": str(empty)}, wait=False)
    assert nogit.wait() == 1
    assert "--git needs the git command, which is not on PATH" in nogit.stderr()
    assert not (tmp_path / "plain").exists()


def test_the_merge_driver_is_registered_by_the_installed_mmd_and_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", root=tmp_path / "root")
    driver = git(daemon.root, "config", "--get", "merge.mmd-index.driver")
    assert "merge-index %O %A %B %P" in driver and driver.split()[0].startswith("/")
    assert "/MEMORY.md merge=mmd-index" in (daemon.root / ".gitattributes").read_text()
    base = tmp_path / "base.md"
    base.write_text("# Memory Index\n")
    usage = subprocess.run([*driver.split()[:-4], "only-one"], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: mmd merge-index" in usage.stderr


def test_a_merge_into_an_index_already_over_its_caps_is_taken_reported_and_nudges_a_consolidation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    # an index within its caps that a merge would push over them is held back (tests/test_git_containment.py)
    import zmq

    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    laptop, box = (start_daemon("--git", "--no-ingest", "--index-lines", "24", "--heartbeat-ms", "100",
                                root=tmp_path / name) for name in ("laptop", "box"))
    for daemon in (laptop, box):
        git(daemon.root, "remote", "add", "origin", str(remote))
    write(laptop, "alpha", "first")
    write(laptop, "beta", "second")
    write(box, "gamma", "third")
    index = box.root / "MEMORY.md"
    index.write_text(index.read_text() + "".join(f"a line written by hand {i}\n" for i in range(12)))
    wait_until(lambda: call(box, "daemon.status")["index"]["overBudget"], what="the hand edit over the caps")
    mmctl_sync(laptop)
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(box.pub)
    try:
        assert sub.poll(10_000) and sub.recv_multipart()  # the subscription is live (a heartbeat came)
        merged = mmctl_sync(box)
        assert merged["indexOverBudget"] is True and set(bodies(box)) == {"alpha", "beta", "gamma"}
        events = []
        while sub.poll(10_000):
            topic, payload = sub.recv_multipart()
            events.append((topic.decode(), json.loads(payload)))
            if topic == b"memory/nudge":
                break
        assert [t for t, _ in events if t == "memory/changed"] and events[-1][0] == "memory/nudge", events
        assert any(t == "memory/changed" and p["cause"] == "sync" for t, p in events)
        nudge = events[-1][1]
        assert (nudge["reason"], nudge["indexOverBudget"]) == ("sync", True)
    finally:
        sub.close()
    refused = call(box, "memory.write", {"topic": "delta", "content": "one more"})
    assert refused["ok"] is False  # writes stay refused until the index fits (mm v1 section 6)
    call(box, "memory.delete", {"topic": "gamma"})  # a consolidation
    assert write(box, "beta", "fits again") > 0


def test_a_git_merge_run_by_hand_goes_through_the_driver_and_its_conflicts_reach_the_queue(pair: Any) -> None:
    laptop, box = pair
    write(laptop, "shared", "the start")
    mmctl_sync(laptop)
    mmctl_sync(box)  # one history from here on
    mmctl_sync(laptop)
    write(laptop, "deploy-region", "We deploy to eu-west-1 (laptop).")
    write(box, "deploy-region", "We deploy to us-east-1 (box, newer).")
    mmctl_sync(laptop)
    cli(box, "log", "--json")  # box's write is committed
    git(box.root, "fetch", "--quiet", "origin")
    git(box.root, "merge", "--no-edit", "origin/main")  # a person's own merge: git runs `mmd merge-index`
    assert "<<<<<<<" not in (box.root / "memories" / "deploy-region.md").read_text()
    assert bodies(box)["deploy-region"] == "We deploy to us-east-1 (box, newer)."  # the newer stayed
    spool = box.root / ".mmd" / "git-conflicts"
    assert list(spool.glob("*.json"))  # the driver left its records for the daemon
    synced = mmctl_sync(box)  # the next reload or sync (or the next commit) queues them
    (candidate,) = conflicts(box)
    assert candidate["id"] in synced["queued"] and candidate["topic"] == "deploy-region"
    assert candidate["body"] == "We deploy to eu-west-1 (laptop)." and candidate["source"]["file"] == "git merge driver"
    assert not list(spool.glob("*.json"))  # drained: one candidate for the index's and the note's record


def test_the_configured_branch_names_a_new_repository_and_a_checked_out_other_branch_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", "--git-branch", "memory", root=tmp_path / "root")
    write(daemon, "alpha", "one")
    assert git(daemon.root, "symbolic-ref", "--short", "HEAD") == "memory"
    assert call(daemon, "daemon.status")["git"]["branch"] == "memory"
    daemon.stop()
    other = start_daemon("--git", "--no-ingest", "--git-branch", "team", root=tmp_path / "root", wait=False)
    assert other.wait() == 1
    assert "git.branch = 'team' but the repository" in other.stderr() and "is on memory" in other.stderr()
    assert git(tmp_path / "root", "symbolic-ref", "--short", "HEAD") == "memory"  # never switched
