"""Making a root a repository (mmd.daemon.git.repo) and its history (mmd.daemon.git.history).

Property guarded: mmd commits only in a repository whose top level is the root, one commit per
revision, never ``.mmd/``; log, diff, note-at-revision and revert plans read back exactly what was
written at each of 50 revisions.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mmd.core import MMError
from mmd.daemon.git import GitHistory, GitMissing, commit_message, ensure_repo
from mmd.daemon.git.repo import ATTRIBUTES_LINES, IGNORE_LINES
from mmd.daemon.git.runner import Git, GitError
from tests.test_git_helpers import GitRoot, git, isolate_git


@pytest.fixture(autouse=True)
def _git_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_ensure_repo_initializes_the_root_and_a_second_call_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    info = ensure_repo(root, driver=["/opt/mmd bin/mmd", "merge-index"])
    assert info.created and info.branch == "main" and set(info.changed) == {".gitignore", ".gitattributes"}
    assert git(root, "rev-parse", "--show-toplevel") == str(root)
    assert set(IGNORE_LINES) <= set((root / ".gitignore").read_text().splitlines())
    assert set(ATTRIBUTES_LINES) <= set((root / ".gitattributes").read_text().splitlines())
    assert git(root, "config", "--get", "merge.mmd-index.driver") == "'/opt/mmd bin/mmd' merge-index %O %A %B %P"
    before = {p: (root / p).read_bytes() for p in (".gitignore", ".gitattributes", ".git/config")}
    again = ensure_repo(root, driver=["/opt/mmd bin/mmd", "merge-index"])
    assert not again.created and again.changed == ()
    assert {p: (root / p).read_bytes() for p in before} == before


def test_ensure_repo_uses_a_repository_whose_top_level_is_the_root_and_keeps_its_files(tmp_path: Path) -> None:
    root = tmp_path / "clone"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("node_modules/")  # no final newline
    info = ensure_repo(root)
    assert not info.created and ".gitignore" in info.changed
    lines = (root / ".gitignore").read_text().splitlines()
    assert lines[0] == "node_modules/" and set(IGNORE_LINES) <= set(lines)
    assert git(root, "config", "--get", "merge.mmd-index.driver").endswith("%O %A %B %P")


def test_a_root_inside_another_repository_is_refused_naming_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    with pytest.raises(MMError) as caught:
        ensure_repo(project / "memory")
    assert caught.value.code == "E_INVALID"
    assert str(project) in str(caught.value) and "never commits" in str(caught.value)
    assert not (project / "memory" / ".git").exists() and not (project / "memory" / ".gitignore").exists()


def test_a_missing_git_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GitMissing, match="git is not installed or not on PATH"):
        ensure_repo(tmp_path / "root", env={"PATH": str(tmp_path / "empty-bin")})


def test_commits_never_hold_mmd_state_and_an_unchanged_root_makes_no_commit(tmp_path: Path) -> None:
    root = GitRoot(tmp_path / "root")
    (root.path / ".mmd" / "state.db").write_bytes(b"queue")
    root.write("deploy", "us-east-1")
    assert root.commit("write", ["deploy"]) is None
    tracked = git(root.path, "ls-files").splitlines()
    assert sorted(tracked) == [".gitattributes", ".gitignore", "MEMORY.md", "memories/deploy.md"]
    assert git(root.path, "status", "--porcelain") == ""


def test_an_external_edit_is_committed_as_such(tmp_path: Path) -> None:
    root = GitRoot(tmp_path / "root")
    root.write("deploy", "us-east-1")
    note = root.path / "memories" / "deploy.md"
    note.write_text(note.read_text().replace("us-east-1", "eu-west-1"))
    commit = root.history.commit(7, "external edit", ["deploy"])
    assert commit is not None
    assert git(root.path, "log", "-1", "--format=%s") == "external edit deploy (r7)"
    assert root.history.log("deploy")[0]["revisions"] == [7]


def test_commit_messages_name_the_topics_and_the_revisions() -> None:
    assert commit_message([42], "write", ["deploy-region"]).splitlines()[0] == "write deploy-region (r42)"
    many = commit_message([40, 41], "write", [f"t{i}" for i in range(6)])
    assert many.splitlines()[0] == "write 6 topics (r40, r41)"
    assert "Mmd-Topics: t0 t1 t2 t3 t4 t5" in many and "Mmd-Revision: 40 41" in many


@pytest.fixture(scope="module")
def fifty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GitRoot, dict[int, tuple[str, str]]]]:
    """One root for the module, with 50 revisions after its first: topic-(i % 5) at write i.

    Built once (50 commits); only the restore test adds to it, and it counts from what it found.
    """
    tmp = tmp_path_factory.mktemp("fifty")
    with pytest.MonkeyPatch.context() as patch:
        isolate_git(patch, tmp)
        root = GitRoot(tmp / "root")
        written: dict[int, tuple[str, str]] = {}
        for i in range(50):
            topic = f"topic-{i % 5}"
            body = f"{topic} as of write {i}"
            revision = root.write(topic, body, summary=f"summary {i}")
            written[revision] = (topic, body)
        yield root, written


def test_log_lists_each_topics_revisions_newest_first(fifty: tuple[GitRoot, dict[int, tuple[str, str]]]) -> None:
    root, written = fifty
    log = root.history.log("topic-3")
    assert [row["revisions"][0] for row in log] == sorted((r for r, (t, _) in written.items() if t == "topic-3"),
                                                          reverse=True)
    assert all(row["topics"] == ["topic-3"] and row["subject"].startswith("write topic-3 (r") for row in log)
    assert len(root.history.log(limit=1000)) >= 51 and len(root.history.log(limit=7)) == 7


def test_diff_of_one_revision_shows_what_it_changed(fifty: tuple[GitRoot, dict[int, tuple[str, str]]]) -> None:
    root, written = fifty
    diff = root.history.diff("r30")
    (row,) = diff["topics"]
    topic, body = written[30]
    assert row["topic"] == topic and row["change"] == "updated"
    assert row["after"]["body"] == body and row["before"]["body"] == written[25][1]
    assert row["after"]["entry"]["summary"] != row["before"]["entry"]["summary"]
    assert f"+{body}" in diff["patch"]


def test_diff_between_two_revisions_lists_every_topic_changed(fifty: tuple[GitRoot,
                                                                         dict[int, tuple[str, str]]]) -> None:
    root, written = fifty
    first = root.history.resolve("r2")
    diff = root.history.diff(first, "r4")
    assert [(r["topic"], r["change"]) for r in diff["topics"]] == [("topic-1", "added"), ("topic-2", "added")]
    assert diff["topics"][1]["after"]["body"] == written[4][1]


def test_note_at_a_revision_is_what_was_written_then(fifty: tuple[GitRoot, dict[int, tuple[str, str]]]) -> None:
    root, written = fifty
    for revision in (2, 17, 51):
        topic, body = written[revision]
        at = root.history.note_at(topic, f"r{revision}")
        assert at is not None and at["body"] == body and at["summary"] == f"summary {revision - 2}"
    assert root.history.note_at("topic-4", "r3") is None  # not written yet


def test_a_revert_plan_brings_back_the_versions_before_the_revision(fifty: tuple[GitRoot,
                                                                               dict[int, tuple[str, str]]]) -> None:
    root, written = fifty
    (step,) = root.history.revert_plan("r51")
    assert step["action"] == "write" and step["content"] == written[46][1] and not step["changedSince"]
    (older,) = root.history.revert_plan("r20")
    assert older["changedSince"]  # that topic was written again later
    (first,) = root.history.revert_plan("r2")
    assert first == {"topic": "topic-0", "action": "delete", "changedSince": True}


def test_unknown_revisions_are_refused(fifty: tuple[GitRoot, dict[int, tuple[str, str]]]) -> None:
    root, _ = fifty
    for rev in ("r999", "no-such-branch", "--all"):
        with pytest.raises(MMError) as caught:
            root.history.diff(rev)
        assert caught.value.code == "E_INVALID"


def test_a_history_over_a_root_without_commits_is_empty(tmp_path: Path) -> None:
    ensure_repo(tmp_path / "root")
    history = GitHistory(tmp_path / "root")
    assert history.head() is None and history.log() == []


def test_a_restore_is_a_new_write_and_history_keeps_every_revision(fifty: tuple[GitRoot,
                                                                               dict[int, tuple[str, str]]]) -> None:
    root, written = fifty
    at = root.history.note_at("topic-0", "r12")
    assert at is not None
    commits = len(root.history.log(limit=1000))
    root.memory.reload()
    revision = root.write("topic-0", at["body"], summary=at["summary"], tags=at["tags"])
    assert root.bodies()["topic-0"] == written[12][1]
    assert len(root.history.log(limit=1000)) == commits + 1
    assert root.history.resolve(f"r{revision}") == root.history.head()


def test_mmd_state_tracked_before_is_untracked_and_kept_on_disk(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".mmd").mkdir(parents=True)
    (root / ".mmd" / "state.db").write_bytes(b"queue")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "someone committed everything")
    assert ".mmd" in ensure_repo(root).changed
    GitHistory(root).commit(1, "write", [])
    assert git(root, "ls-files", "--", ".mmd") == "" and (root / ".mmd" / "state.db").read_bytes() == b"queue"
    assert ensure_repo(root).changed == ()


def test_the_last_revision_is_read_back_from_the_newest_commit_naming_one(tmp_path: Path) -> None:
    root = GitRoot(tmp_path / "root")  # its init commit records r1
    assert root.history.last_revision() == 1
    assert root.history.commit([7, 8], "write", []) is None  # nothing changed: no commit
    assert root.history.last_revision() == 1
    root.memory.write("deploy", "us")
    root.history.commit([7, 8], "write", ["deploy"])
    (root.path / "memories" / "deploy.md").write_text("# deploy\n\nby hand\n")
    root.history.commit([], "external edit", [])  # names no revision
    assert root.history.last_revision() == 8


def _hooked_repo(tmp_path: Path, hook: str, script: str) -> Path:
    """A repository whose ``hook`` (``pre-commit``, ``post-commit``) runs ``script`` (sh)."""
    root = tmp_path / "hooked"
    root.mkdir()
    git(root, "init", "-q")
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / hook).write_text(f"#!/bin/sh\n{script}\n")
    (hooks / hook).chmod(0o755)
    return root


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for its reaper counts as ended)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except (FileNotFoundError, ProcessLookupError):
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)


def test_a_hanging_hook_times_out_and_everything_it_started_is_killed(tmp_path: Path) -> None:
    # a pre-commit hook that never ends used to hold the git worker thread for good (no local time limit)
    # The limit is what is tested, so it stays short; a loaded machine may reach it before git has even started the
    # hook (no pid yet): the call is then made again with a longer limit, until the hook had started in time.
    root = _hooked_repo(tmp_path, "pre-commit", f"sleep 600 & echo $! > {tmp_path}/pid.tmp\n"
                                               f"mv {tmp_path}/pid.tmp {tmp_path}/pid\nwait")
    for limit in (1, 2, 4, 8, 16):
        with pytest.raises(GitError, match=f"timed out after {limit} s") as caught:
            Git(root, timeout_s=limit).run("commit", "--allow-empty", "-qm", "x")
        assert caught.value.returncode == -1
        if (tmp_path / "pid").exists():
            break
    pid = int((tmp_path / "pid").read_text())
    assert _wait_gone(pid, 10), "the hook's sleep outlived the timeout"
    assert git(root, "rev-list", "--all") == ""  # no commit was made


def test_a_process_a_hook_leaves_behind_does_not_hold_the_call_up(tmp_path: Path) -> None:
    # a post-commit hook starting a background job (``ctags &``) that keeps git's output open: the commit
    # returns when git exits, the job goes on (with pipes, the call waited for the job to end)
    root = _hooked_repo(tmp_path, "post-commit", f"sleep 600 & echo $! > {tmp_path}/pid")
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(
        Git(root).run("commit", "--allow-empty", "-qm", "x")), daemon=True)
    worker.start()
    try:
        worker.join(60)
        assert not worker.is_alive(), "the commit waited for the hook's background job"
        assert getattr(result[0], "returncode", None) == 0
        assert git(root, "log", "--format=%s") == "x"
        assert not _gone(int((tmp_path / "pid").read_text()))  # a finished call kills nothing
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)


def test_a_git_call_reads_its_input_and_returns_its_output_and_messages(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    git(root, "init", "-q")
    oid = Git(root).run("hash-object", "-w", "--stdin", input=b"hello\n").stdout.decode().strip()
    assert Git(root).out("cat-file", "-p", oid) == "hello"
    with pytest.raises(GitError, match="failed \\(128\\): fatal: path 'nothing' does not exist"):
        Git(root).run("cat-file", "-p", f"{oid}:nothing")


def test_with_its_git_folder_gone_the_root_never_commits_to_a_repository_around_it(tmp_path: Path) -> None:
    # `rm -rf ~/.dsh/memory/.git` under a dotfiles repository at ~/.dsh: the next commit (and push) went there
    home = tmp_path / "dsh-home"
    home.mkdir()
    git(home, "init", "-q")
    git(home, "commit", "-q", "--allow-empty", "-m", "dotfiles")
    (home / "memory").mkdir()
    git(home / "memory", "init", "-q")  # a repository of its own first: allowed inside another
    root = GitRoot(home / "memory")
    root.write("deploy", "us-east-1")
    import shutil

    shutil.rmtree(root.path / ".git")
    root.memory.write("secret", "db7.corp")
    with pytest.raises(MMError) as caught:
        root.history.commit(99, "write", ["secret"])
    assert "not a git repository" in str(caught.value)
    assert git(home, "log", "--format=%s") == "dotfiles" and git(home, "status", "--porcelain") == "?? memory/"
