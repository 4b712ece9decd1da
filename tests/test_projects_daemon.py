"""Memory per project (issue 27, docs/projects.md): one daemon serving the user root and a root per project.

A fake HOME holds Claude Code sessions in two projects — ``src/api``, a git repository with an ``origin``
remote (and a worktree of it), and ``notes``, a plain folder — and a real daemon reads them. Candidates are
proposed to the root of the project they were said in; accepting writes only there; the SessionStart hook of
a session in one project injects that project's notes and the user's, never the other project's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mmd.core.projects import project_for
from tests.test_ingest_helpers import backfilled, call, candidates, wait_until
from tests.test_mmctl_daemon import cli
from tests.test_sources_daemon import claude_session

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}
API_RULE = "MEMO: the api ships with `make ship` from the release branch."
NOTES_RULE = "MEMO: the notes folder is synced by syncthing every night."
PERSONAL = "MEMO: always answer me in English, whatever language I write in."


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV, "HOME": str(cwd)})


def a_home(base: Path) -> dict[str, Path]:
    """``base/home`` with ``src/api`` (a repository with an origin), its worktree ``src/api-wt``, a plain
    ``notes`` folder, and a Claude Code session in each of api and notes."""
    home = base / "home"
    api, notes = home / "src" / "api", home / "notes"
    api.mkdir(parents=True)
    notes.mkdir()
    git(api, "init", "-q", "-b", "main")
    git(api, "remote", "add", "origin", "git@github.com:me/api.git")
    git(api, "commit", "-q", "--allow-empty", "-m", "start")
    git(api, "worktree", "add", "-q", str(home / "src" / "api-wt"), "-b", "feature")
    projects = home / ".claude" / "projects"
    claude_session(projects, "aaaaaaaa-0000-4000-8000-000000000001", [API_RULE, PERSONAL], cwd=str(api))
    claude_session(projects, "aaaaaaaa-0000-4000-8000-000000000002", [NOTES_RULE], cwd=str(notes))
    return {"home": home, "api": api, "worktree": home / "src" / "api-wt", "notes": notes}


def hook(daemon: Any, cwd: Path, sid: str = "s-1") -> str:
    """The SessionStart hook's additionalContext for a Claude Code session in ``cwd`` ('' when none)."""
    from io import BytesIO, StringIO

    from mmctl.cli.main import main

    out, err = StringIO(), StringIO()
    stdin = BytesIO(json.dumps({"session_id": sid, "hook_event_name": "SessionStart", "source": "startup",
                                "cwd": str(cwd)}).encode())
    code = main(["inject", "--format", "claude-hook", "--root", str(daemon.root)],
                env={**daemon.env, "MMCTL_HOOK_BUDGET_MS": "30000"}, stdout=out, stderr=err, stdin=stdin)
    assert (code, err.getvalue()) == (0, "")
    text = out.getvalue()
    return json.loads(text)["hookSpecificOutput"]["additionalContext"] if text else ""


def body_of(c: dict[str, Any]) -> str:
    return str(c["body"])


def test_candidates_land_in_their_projects_root_and_each_session_sees_only_its_own(
        start_daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = a_home(tmp_path)
    daemon = start_daemon("--heartbeat-ms", "200", "--no-source", "codex", bare=True)
    backfilled(daemon)
    wait_until(lambda: len(candidates(daemon)) >= 3, what="three candidates")
    api_key = project_for(paths["api"]).key  # type: ignore[union-attr]
    notes_key = project_for(paths["notes"], session=True).key  # type: ignore[union-attr]
    by_body = {body_of(c): c for c in candidates(daemon)}
    api_c = next(c for b, c in by_body.items() if "make ship" in b)
    notes_c = next(c for b, c in by_body.items() if "syncthing" in b)
    personal = next(c for b, c in by_body.items() if "English" in b)
    assert (api_c["scope"], notes_c["scope"], personal["scope"]) == (api_key, notes_key, "user")

    # queue list shows the proposed root; inside a project its candidates come first
    monkeypatch.chdir(paths["notes"])
    code, out, _ = cli(daemon, "queue", "list", root=False)
    rows = [line for line in out.splitlines()[1:] if line[:1].isdigit()]
    assert code == 0 and str(notes_c["id"]) == rows[0].split()[0] and notes_key in rows[0]
    code, out, _ = cli(daemon, "queue", "list", "--user", "--json")
    assert [c["id"] for c in json.loads(out)["candidates"]] == [personal["id"]]

    for c in (api_c, notes_c, personal):
        assert cli(daemon, "queue", "accept", str(c["id"]))[0] == 0
    home_root = daemon.root
    api_root, notes_root = home_root / "projects" / api_key, home_root / "projects" / notes_key

    def notes_in(root: Path) -> set[str]:
        return {p.stem for p in (root / "memories").glob("*.md")}

    api_topic = api_c["topic"]
    assert notes_in(api_root) == {api_topic} and notes_in(notes_root) == {notes_c["topic"]}
    assert notes_in(home_root) == {personal["topic"]}
    info = json.loads((api_root / ".mmd" / "project.json").read_text())
    assert info["key"] == api_key and info["remote"] == "github.com/me/api"
    assert "projects/" not in (home_root / "MEMORY.md").read_text()  # the user root's index lists its own notes

    # the SessionStart hook: a project's notes and the user's, labelled, never another project's
    in_api = hook(daemon, paths["api"])
    assert f"mm://{api_key}/{api_topic}" in in_api and f"mm://local/{personal['topic']}" in in_api
    assert f"/{notes_c['topic']}>" not in in_api and in_api.index("Project memory") < in_api.index("User memory")
    in_tree = hook(daemon, paths["worktree"], sid="s-2")
    assert f"mm://{api_key}/{api_topic}" in in_tree and f"/{notes_c['topic']}>" not in in_tree
    in_notes = hook(daemon, paths["notes"], sid="s-3")
    assert f"mm://{notes_key}/{notes_c['topic']}" in in_notes and f"mm://{api_key}/" not in in_notes
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, _ = cli(daemon, "list", root=False)  # a folder in no project: the user root alone
    assert (code, out) == (0, f"{personal['topic']}\n")

    # a move of the repository keeps its root (the key comes from the origin URL)
    moved = paths["home"] / "work" / "api"
    moved.parent.mkdir()
    paths["api"].rename(moved)
    after = hook(daemon, moved, sid="s-4")
    assert f"mm://{api_key}/{api_topic}" in after
    monkeypatch.chdir(moved)
    code, out, _ = cli(daemon, "read", api_topic, "--json", root=False)
    assert code == 0 and json.loads(out)["scope"] == api_key
    code, out, _ = cli(daemon, "read", personal["topic"], root=False)  # the user root behind the project
    assert code == 0 and "root: the user root" in out
    st = call(daemon, "daemon.status")
    assert [r["scope"] for r in st["roots"]] == ["user", *sorted((api_key, notes_key))]


def test_a_write_in_a_project_folder_goes_to_its_root_and_wrong_scopes_change_nothing(
        start_daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = a_home(tmp_path)
    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest", bare=True)
    monkeypatch.chdir(paths["worktree"])
    assert cli(daemon, "write", "deploy", "--content", "api deploys on Fridays", root=False)[0] == 0
    assert cli(daemon, "write", "shell", "--content", "I use fish", "--user", root=False)[0] == 0
    key = project_for(paths["api"]).key  # type: ignore[union-attr]
    code, out, _ = cli(daemon, "list", "--json", root=False)
    assert [(n["topic"], n["scope"]) for n in json.loads(out)["notes"]] == [("deploy", key), ("shell", "user")]
    code, out, _ = cli(daemon, "search", "fridays fish", "--json", root=False)
    assert {m["scope"] for m in json.loads(out)["matches"]} == {key, "user"}
    before = {p: p.read_bytes() for p in daemon.root.rglob("*.md")}
    plain = tmp_path / "plain"
    plain.mkdir()
    for argv, says in ((["write", "x", "--content", "y", "--project", "nothing-0123abcd"], "no project root"),
                       (["write", "x", "--content", "y", "--project", str(plain)], "is in no project"),
                       (["read", "deploy", "--project", str(tmp_path / "missing")], "neither a project key"),
                       (["list", "--project", key, "--user"], "give one")):
        code, _, err = cli(daemon, *argv, root=False)
        assert code == 2 and says in err, (argv, err)
    assert {p: p.read_bytes() for p in daemon.root.rglob("*.md")} == before


def test_a_delete_in_a_project_through_the_daemon_says_what_it_removed(
        start_daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial found ``delete testin`` (a typo) in a project answered "removed its index entry": the call compared
    the project root's revision with the user root's. Nothing, a note, a dangling entry: each says what it did."""
    paths = a_home(tmp_path)
    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest", bare=True)
    monkeypatch.chdir(paths["api"])
    for topic in ("testing", "stale"):
        assert cli(daemon, "write", topic, "--content", f"{topic} notes", root=False)[0] == 0
    assert cli(daemon, "delete", "testin", root=False)[1] == \
        "nothing to delete: no note for topic testin (did you mean testing?)\n"
    assert json.loads(cli(daemon, "delete", "testin", "--json", root=False)[1])["pendingWrites"] == 0
    assert cli(daemon, "delete", "testing", root=False)[1] == "deleted testing: removed\n"
    key = project_for(paths["api"]).key  # type: ignore[union-attr]
    note = daemon.root / "projects" / key / "memories" / "stale.md"
    seen = json.loads(cli(daemon, "status", "--json", root=False)[1])["watcher"]["externalChanges"]
    note.unlink()  # by hand: its index entry dangles
    wait_until(lambda: json.loads(cli(daemon, "status", "--json", root=False)[1])["watcher"]["externalChanges"] > seen,
               what="the daemon to see the note gone")
    assert cli(daemon, "delete", "stale", root=False)[1] == \
        "deleted stale: removed its index entry (the note file was already gone)\n"


HOME_V1 = Path(__file__).resolve().parent / "fixtures" / "home-v1"
"""A root made by the release before the memory home (c414839: ``mmd`` and ``mmctl write``, three notes, a
state database of schema 3), and what its SessionStart hook printed then (``inject-session-start.txt``)."""


def test_a_root_made_before_the_home_starts_serves_and_injects_as_the_user_root_byte_for_byte(
        start_daemon, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "old-root"
    shutil.copytree(HOME_V1 / "root", root)
    files = {p.relative_to(root): p.read_bytes() for p in root.rglob("*.md")}
    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest", root=root)
    st = call(daemon, "daemon.status")
    assert [r["scope"] for r in st["roots"]] == ["user"] and st["revision"] > 1000  # the old revisions go on
    code, out, _ = cli(daemon, "list")
    assert (code, out) == (0, "deploy-region\nnode-version\nstyle\n")
    said = hook(daemon, tmp_path)  # a folder in no repository: a session there is a project with no root yet
    from mmd.inject.baseline import mmctl_path  # "mmctl" when the one on PATH is this one (as in CI), else its path

    expected = (HOME_V1 / "inject-session-start.txt").read_text()
    assert said == expected.replace("{root}", str(root)).replace("{mmctl}", mmctl_path()), said
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*.md")} == files
    assert not (root / "projects").exists()
    import sqlite3

    with sqlite3.connect(root / ".mmd" / "state.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 6


def test_a_root_committed_with_the_project_is_read_written_and_watched_like_the_others(
        start_daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mmctl.cli.main import main

    paths = a_home(tmp_path)
    team = paths["api"] / ".mm"
    monkeypatch.chdir(paths["api"])
    assert main(["init", "--root", str(team)], env={**os.environ, "MMCTL_NO_DAEMON": "1"}) == 0
    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest", bare=True)
    assert cli(daemon, "write", "review-rule", "--content", "two approvals before merge", root=False)[0] == 0
    assert (team / "memories" / "review-rule.md").is_file()  # in the repository's .mm, not the home
    assert not (daemon.root / "projects").exists()
    # a teammate's note arriving with a git pull (the files replaced under the daemon): seen without a restart
    import shutil

    theirs = tmp_path / "theirs"
    shutil.copytree(team, theirs, ignore=shutil.ignore_patterns(".mmd"))
    assert main(["write", "oncall", "--content", "pager rotates on Mondays", "--root", str(theirs)],
                env={**os.environ, "MMCTL_NO_DAEMON": "1"}) == 0
    shutil.copy(theirs / "memories" / "oncall.md", team / "memories" / "oncall.md")
    shutil.copy(theirs / "MEMORY.md", team / "MEMORY.md")
    key = project_for(paths["api"]).key  # type: ignore[union-attr]
    wait_until(lambda: call(daemon, "memory.read", {"topic": "oncall", "project": key}), timeout_s=60,
               what="the pulled note")
    daemon.stop()
    again = start_daemon("--heartbeat-ms", "200", "--no-ingest", bare=True)

    def served() -> dict[str, str]:
        return {r["scope"]: r["root"] for r in call(again, "daemon.status")["roots"]}

    # opened once the daemon serves (one root a loop turn), no request naming it: the home remembers it
    wait_until(lambda: key in served(), timeout_s=60, what="the remembered .mm root")
    assert served()[key] == str(team)


def test_more_roots_than_cached_injection_maps_each_inject_and_confirm(start_daemon, tmp_path: Path) -> None:
    """Each root keeps its current map cached: with more roots than ``CACHED_MAPS`` an injection of the first
    root again was an internal error (a KeyError of the evicted map)."""
    from mmd.daemon.injectdb import CACHED_MAPS

    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest")
    folders = []
    for n in range(CACHED_MAPS + 3):
        folder = tmp_path / "work" / f"p{n}"
        folder.mkdir(parents=True)
        folders.append(str(folder))
        assert call(daemon, "memory.write", {"topic": "fact", "content": f"fact {n}", "project": str(folder)})["ok"]
    for _ in range(2):
        for n, folder in enumerate(folders):
            got = call(daemon, "memory.inject", {"client": f"c{n}", "project": folder, "reset": True})
            assert got["mode"] == "baseline" and got["scope"] != "user"
            assert call(daemon, "memory.injected", {"client": f"c{n}", "token": got["token"], "project": folder})["ok"]


def test_a_sessions_statements_are_seen_against_its_own_projects_notes_not_another_projects(
        start_daemon, tmp_path: Path) -> None:
    paths = a_home(tmp_path)
    daemon = start_daemon("--heartbeat-ms", "200", "--no-source", "codex", bare=True)
    backfilled(daemon)
    for folder, topic, text in ((paths["api"], "deploy", "the api deploys through the bastion host every Tuesday."),
                                (paths["notes"], "lunch", "the cafeteria closes at three on Fridays.")):
        assert call(daemon, "memory.write", {"topic": topic, "content": text, "project": str(folder)})["ok"]
    claude_session(tmp_path / "home" / ".claude" / "projects", "aaaaaaaa-0000-4000-8000-000000000003",
                   ["MEMO: the api deploys through the bastion host every Tuesday.",  # already in api's root
                    "MEMO: the cafeteria closes at three on Fridays."],  # in the notes project's root only
                   cwd=str(paths["api"]))
    wait_until(lambda: any("cafeteria" in body_of(c) for c in candidates(daemon)), what="the session read")
    bodies = [body_of(c) for c in candidates(daemon) if c["source"]["sessionId"].endswith("003")]
    assert not any("bastion" in b for b in bodies) and any("cafeteria" in b for b in bodies), bodies


def test_an_export_file_in_a_project_folder_carries_that_projects_notes_then_the_users(
        start_daemon, tmp_path: Path) -> None:
    paths = a_home(tmp_path)
    agents = paths["api"] / "AGENTS.md"
    agents.write_text("# Agents\n\nhand-written text\n")
    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest", "--export-file", str(agents), bare=True)
    assert call(daemon, "memory.write", {"topic": "shell", "content": "I use fish.", "summary": "my shell"})["ok"]
    assert call(daemon, "memory.write", {"topic": "deploy", "content": "make ship", "summary": "how api ships",
                                         "project": str(paths["api"])})["ok"]
    key = project_for(paths["api"]).key  # type: ignore[union-attr]
    wait_until(lambda: f"mm://{key}/deploy" in agents.read_text(), timeout_s=30, what="the export of api's note")
    text = agents.read_text()
    assert "hand-written text" in text and "mm://local/shell" in text
    assert text.index(f"mm://{key}/deploy") < text.index("mm://local/shell")


def test_the_reference_reads_every_root_of_the_home(start_daemon, tmp_path: Path) -> None:
    """Each root of the home is a complete mm v1 root: the TypeScript reference reads it with its own root option
    (skipped, saying so, without ``MM_REF_DIR``)."""
    from tests import test_inject_interop as interop

    if interop.REF_MEMORY is None or not interop.REF_MEMORY.is_file() or interop.NODE is None:
        pytest.skip("the TypeScript reference is not built here: set MM_REF_DIR to a built memory-standard checkout "
                    "(lib/core/memory.js) and put node on PATH")
    paths = a_home(tmp_path)
    daemon = start_daemon("--heartbeat-ms", "200", "--no-ingest", bare=True)
    assert call(daemon, "memory.write", {"topic": "shell", "content": "I use fish."})["ok"]
    assert call(daemon, "memory.write", {"topic": "deploy", "content": "make ship",
                                         "project": str(paths["api"])})["ok"]
    key = project_for(paths["api"]).key  # type: ignore[union-attr]
    for root, topic in ((daemon.root, "shell"), (daemon.root / "projects" / key, "deploy")):
        index = interop.reference(root, {"op": "read"})[0]
        assert [e["topic"] for e in index["entries"]] == [topic]
