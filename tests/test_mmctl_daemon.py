"""mmctl's command line with a real ``mmd`` owning the root: writes go through it, output stays the reference's.

Each test starts the daemon (``python -m mmd.daemon.main``) with its own
runtime folder; when the daemon cannot be imported or started yet, the tests
skip and say why.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mmctl.cli.main import main

from .conformance_rules import explained_by
from .conftest import SHARED
from .test_daemon_helpers import Lines

VECTORS = Path(os.environ.get("MM_CONFORMANCE_DIR") or SHARED / "conformance" / "vectors")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
"""Time-dependent fields (README "Time-dependent fields"): the daemon writes with its own clock."""



def cli(daemon: Any, *argv: str, root: bool = True, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``mmctl *argv`` in-process, in the daemon's environment, on its root."""
    out, err = io.StringIO(), io.StringIO()
    args = [*argv, "--root", str(daemon.root)] if root else list(argv)
    code = main(args, env={**daemon.env, **(env or {})}, stdout=out, stderr=err)
    assert "internal error" not in out.getvalue() + err.getvalue(), (argv, err.getvalue())  # kept for real bugs
    return code, out.getvalue(), err.getvalue()


def revision(daemon: Any) -> int:
    from mmctl import Client

    with Client(daemon.root, env=daemon.env) as client:
        return int(client.status()["revision"])


def test_a_write_goes_through_the_daemon_and_prints_the_reference_shape(mmd) -> None:  # type: ignore[no-untyped-def]
    before = revision(mmd)
    code, out, err = cli(mmd, "write", "alpha", "--content", "hello", "--json")
    assert (code, err) == (0, "")
    outcome = json.loads(out)
    assert list(outcome) == ["ok", "topic", "uri", "action", "usage", "pendingWrites"]
    assert outcome["pendingWrites"] == 1 and revision(mmd) == before + 1
    assert cli(mmd, "read", "alpha")[1].endswith("\n\nhello\n")


def test_deletes_count_a_pending_write_only_when_something_went(mmd) -> None:  # type: ignore[no-untyped-def]
    cli(mmd, "write", "gone", "--content", "x")
    first = json.loads(cli(mmd, "delete", "gone", "--json")[1])
    second = json.loads(cli(mmd, "delete", "gone", "--json")[1])
    assert (first["removed"], first["pendingWrites"]) == (True, 1)
    assert (second["removed"], second["pendingWrites"]) == (False, 0)


def test_an_over_budget_write_through_the_daemon_exits_1_with_the_outcome(mmd) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(mmd, "write", "big", "--content", "x" * 30, "--budget", "10", "--json")
    assert code == 1 and json.loads(out)["code"] == "E_WRITE_BUDGET_EXCEEDED" and "revision" not in json.loads(out)
    code, _, err = cli(mmd, "write", "bad topic", "--content", "x")
    assert code == 1 and err.startswith('mmctl: topic "bad topic" is not a valid slug')


def _masked(value: Any, root: Path, home: Path) -> Any:
    if isinstance(value, str):
        text = ISO.sub("<TIME>", value.replace(str(root), "<ROOT>").replace(str(home), "<DSH_HOME>"))
        return re.sub(r'"snapshotAgeMs":\d+', '"snapshotAgeMs":<AGE>', text)
    if isinstance(value, list):
        return [_masked(v, root, home) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v, root, home) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", ["cli-basic-json", "cli-basic-text"])
def test_the_cli_vectors_read_the_same_with_a_daemon_but_for_times(mmd, name: str) -> None:  # type: ignore[no-untyped-def]
    path = VECTORS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no vector {path}")
    vector = json.loads(path.read_text())
    home = Path(mmd.env["DSH_HOME"])
    for op, want in zip(vector["case"]["ops"], vector["expected"]["results"], strict=True):
        code, out, err = cli(mmd, *op["args"], root=op.get("root", True) is not False, env={"MMCTL_FTS5": "0"})
        got = {"exitCode": code, "stdout": out, "stderr": err}
        expected = {k: want["result"][k] for k in got}
        if _masked(got, mmd.root, home) != _masked(expected, mmd.root, home):  # only a listed deviation may differ
            rule = explained_by(vector["case"], op, {"result": got}, {"result": expected})
            assert rule == "delete-says-nothing-to-delete", (op["args"], got, expected)


def test_status_prints_aligned_rows_and_json(mmd) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(mmd, "status")
    assert code == 0 and re.search(r"^revision +\d+$", out, re.M) and re.search(rf"^root +{mmd.root}$", out, re.M)
    code, out, _ = cli(mmd, "status", "--json")
    assert code == 0 and json.loads(out)["root"] == str(mmd.root)


def test_queue_answers_from_the_daemon(mmd) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(mmd, "queue", "list")
    assert code == 0 or (code == 1 and "review queue" in err), (code, out, err)


def test_nudge_comes_from_the_daemon(mmd) -> None:  # type: ignore[no-untyped-def]
    cli(mmd, "write", "n", "--content", "x")
    code, out, _ = cli(mmd, "nudge", "--json")
    assert code == 0 and json.loads(out)["noteCount"] == 1


def test_doctor_fix_indexes_an_orphan_through_the_daemon(mmd) -> None:  # type: ignore[no-untyped-def]
    (mmd.root / "memories" / "stray.md").write_text("stray body\n")
    before = revision(mmd)
    code, out, _ = cli(mmd, "doctor", "--fix", "--json")
    assert code == 0 and json.loads(out)["fixed"][0]["done"] is True
    assert revision(mmd) > before


def _watch(spawn, mmd, tmp_path: Path, *args: str) -> tuple[Any, Lines, Lines]:  # type: ignore[no-untyped-def]
    """``mmctl watch *args`` in its own process group (ended with the test), its stdout and stderr in files."""
    out, err = tmp_path / "watch.out", tmp_path / "watch.err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = spawn([sys.executable, "-m", "mmctl", "watch", *args, "--root", str(mmd.root)],
                     env={**mmd.env, "PYTHONUNBUFFERED": "1"}, stdout=stdout, stderr=stderr)
    return proc, Lines(out), Lines(err)


def test_watch_prints_real_events_one_json_per_line(mmd, spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # stdout goes to a file, read with deadlines: from a pipe, a readline waited forever for a line that did not
    # come, and a watch blocked on a full pipe outlived the test
    proc, out, _ = _watch(spawn, mmd, tmp_path, "--json")
    beat = json.loads(out.until(lambda line: '"daemon/heartbeat"' in line))  # the subscription is live
    assert beat["event"] == "daemon/heartbeat" and isinstance(beat["seq"], int)
    cli(mmd, "write", "watched", "--content", "x", "--review-after", "2020-02-02")
    seen: dict[str, dict[str, Any]] = {}
    while not {"memory/changed", "memory/due"} <= set(seen):
        event = json.loads(out.next(30))
        seen.setdefault(event["event"], event)
    changed, due = seen["memory/changed"], seen["memory/due"]
    assert [i["topic"] for i in changed["added"]] == ["watched"] and changed["cause"] == "write"
    # the due event's own "topic" (the note's) used to overwrite the event's name in the printed line
    assert due["topic"] == "watched" and due["reviewAfter"] == "2020-02-02"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130


def test_watch_filters_by_topic_and_stops_after_count(mmd) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(mmd, "watch", "--topic", "daemon/heartbeat", "--count", "2")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and all("daemon/heartbeat" in line for line in lines)


def test_watch_prints_a_due_event_in_words(mmd) -> None:  # type: ignore[no-untyped-def]
    env = {**mmd.env, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mmctl", "watch", "--topic", "memory/due", "--count", "1",
                             "--root", str(mmd.root)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        for n in range(40):  # a note falling due a write until the subscriber, joining late, has seen one
            cli(mmd, "write", f"db-host-{n}", "--content", "x", "--review-after", "2020-02-02")
            try:
                out, _ = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            pytest.fail("no memory/due event printed")
    finally:
        proc.kill()
    said = r"memory/due\s+db-host-\d+ review-after 2020-02-02 \(overdue by \d+ day\(s\)\): re-check it"
    assert re.search(said, out), out


def test_a_crashed_daemon_leaves_mmctl_working_on_the_files(mmd) -> None:  # type: ignore[no-untyped-def]
    mmd.signal(signal.SIGKILL)
    mmd.wait()
    assert os.path.exists(mmd.rpc[len("ipc://"):])  # the stale socket file stays behind
    started = time.monotonic()
    code, out, err = cli(mmd, "write", "after", "--content", "crash")
    assert (code, out, err) == (0, "created mm://local/after\n", "")
    assert time.monotonic() - started < 5
    code, _, err = cli(mmd, "status")
    assert code == 1 and "start it with `mmd --root" in err


def test_watch_says_when_the_daemon_is_gone_and_when_it_is_back(mmd, spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, out, err = _watch(spawn, mmd, tmp_path, "--topic", "daemon/")
    beat = out.until(lambda line: "daemon/heartbeat" in line)  # it states the interval (200 ms)
    assert "daemon/heartbeat" in beat
    err.skip_to_end()  # a daemon stalled for three intervals by a loaded machine is "gone" too: not this one
    mmd.signal(signal.SIGKILL)
    mmd.wait()
    gone = err.next()
    assert gone.startswith("mmctl: the daemon is gone: no heartbeat for 3 intervals (200 ms each)"), gone
    mmd.start()
    assert err.next() == "mmctl: the daemon is back\n"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130


def test_a_root_keeps_the_memory_id_it_was_made_with_whoever_writes_next(start_daemon) -> None:  # type: ignore[no-untyped-def]
    # made by `mmd --memory-id work`; a later `mmctl write` without a configured id rewrote every header to
    # "local" (the reference's default), so one root named its notes mm://work/… and mm://local/…
    first = start_daemon("--memory-id", "work", "--index-lines", "20000")
    assert cli(first, "write", "k1", "--content", "one")[1].startswith("created mm://work/k1")
    first.stop()
    budget = json.loads(cli(first, "budget", "--json")[1])  # its caps too: 200 said over budget, refused writes
    assert budget["index"]["lineCap"] == 20000 and budget["index"]["overBudget"] is False
    code, out, _ = cli(first, "write", "k2", "--content", "two")  # no daemon: the files, directly
    assert code == 0 and out.startswith("created mm://work/k2"), out
    assert "> mm-id: work" in (first.root / "MEMORY.md").read_text()
    assert "> mm-id: work" in (first.root / "memories" / "k2.md").read_text()
    assert cli(first, "uri", "k2")[1].strip() == "mm://work/k2"
    again = start_daemon(root=first.root)  # no --memory-id either
    assert cli(again, "status", "--json")[0] == 0
    from mmctl import Client

    with Client(again.root, env=again.env) as client:
        assert client.call("memory.index", {})["memoryId"] == "work"
    assert cli(again, "write", "k3", "--content", "three")[1].startswith("created mm://work/k3")
    explicit = cli(again, "search", "three", "--json")[1]
    assert '"mm://work/k3"' in explicit
    assert "config.differs_from_root" not in again.stderr()
    again.stop()
    other = start_daemon("--memory-id", "home", root=first.root)  # given, and not the root's: said at start
    assert cli(other, "status", "--json")[0] == 0
    assert "config.differs_from_root key=memoryId root=work configured=home" in other.stderr()
    assert "key=indexLines" not in other.stderr()  # unset: the root's 20000 is adopted


def test_a_write_that_found_no_daemon_answering_goes_through_it_once_it_answers(mmd, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a daemon paused (or starting) when mmctl looked: the write waited for the root's lock it holds, then failed
    import threading

    from mmctl import backend

    monkeypatch.setattr(backend, "LOCK_WAIT_S", 2.0)
    mmd.signal(signal.SIGSTOP)
    result: list[tuple[int, str, str]] = []
    writer = threading.Thread(target=lambda: result.append(cli(mmd, "write", "late", "--content", "waited")))
    writer.start()
    try:
        time.sleep(1.5)  # past the probe's timeout: the write is on the files, waiting for the lock
    finally:
        mmd.signal(signal.SIGCONT)
    writer.join(30)
    code, out, err = result[0]
    assert code == 0 and out.startswith("created mm://local/late"), err
    assert revision(mmd) > 0 and cli(mmd, "read", "late")[1].rstrip().endswith("waited")


def test_a_project_write_a_paused_daemon_holds_names_the_daemons_own_socket(mmd, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # it named a socket derived from the project root, where no daemon ever listens
    from mmctl import backend

    repo = tmp_path / "api"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    assert cli(mmd, "write", "build", "--content", "make", "--project", str(repo))[0] == 0  # the project root exists
    monkeypatch.setattr(backend, "LOCK_WAIT_S", 0.3)
    mmd.signal(signal.SIGSTOP)
    try:
        code, _, err = cli(mmd, "write", "late", "--content", "waited", "--project", str(repo))
    finally:
        mmd.signal(signal.SIGCONT)
    assert code == 1 and f"does not answer at {mmd.rpc} " in err, (err, mmd.rpc)


def test_a_request_whose_daemon_dies_before_answering_fails_at_once(mmd) -> None:  # type: ignore[no-untyped-def]
    # a `mmctl sync` whose daemon was killed waited out its 1200 s timeout
    import threading

    from mmctl import Client
    from mmctl.errors import DaemonUnavailable, RequestTimeout

    failed: list[BaseException] = []

    def ask() -> None:
        with Client(mmd.root, env=mmd.env, timeout_ms=60_000) as client:
            try:
                client.call("daemon.status")
            except BaseException as error:  # noqa: BLE001 - the failure is the point
                failed.append(error)

    mmd.signal(signal.SIGSTOP)  # it takes the request and never answers
    asker = threading.Thread(target=ask)
    asker.start()
    time.sleep(0.5)
    mmd.signal(signal.SIGKILL)  # its socket file stays behind, nobody listens on it
    mmd.signal(signal.SIGCONT)
    asker.join(20)
    assert not asker.is_alive(), "the request waited for its whole timeout"
    (error,) = failed
    assert isinstance(error, DaemonUnavailable) and not isinstance(error, RequestTimeout)
    assert "no mmd daemon answers" in str(error)  # it never took the request: nothing was sent



def test_a_client_looking_in_another_runtime_folder_is_told_so_not_to_start_a_daemon(mmd, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # it said "start it with mmd --root …", which then refused: a daemon served the root all along
    elsewhere = tmp_path / "other-run"
    elsewhere.mkdir(mode=0o700)
    code, _, err = cli(mmd, "status", env={"XDG_RUNTIME_DIR": str(elsewhere)})
    assert code == 0, err  # found from the root's record of its endpoints (issue 28)
    (mmd.root / ".mmd" / "endpoints.json").unlink()  # a daemon that left no record
    code, _, err = cli(mmd, "status", env={"XDG_RUNTIME_DIR": str(elsewhere)})
    assert code == 1 and f"pid {mmd.proc.pid} holds the root" in err and "another $XDG_RUNTIME_DIR" in err, err
    assert "start it with" not in err
