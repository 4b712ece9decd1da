"""Project identity from the files alone (mmd.core.projects): repositories, worktrees, remotes, keys."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mmd.core.projects import (
    PROJECTS_DIR,
    Project,
    find_repository,
    is_key,
    key_for,
    normalize_remote,
    origin_url,
    project_for,
    project_root,
    project_roots,
    read_project_file,
    record_project,
)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd), "PATH": "/usr/bin:/bin",
                               "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@x"}).stdout


def repo(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    if origin:
        git(path, "remote", "add", "origin", origin)
    (path / "f").write_text("x")
    git(path, "add", "f")
    git(path, "commit", "-q", "-m", "one")
    return path


@pytest.mark.parametrize(("url", "normal"), [
    ("git@github.com:Me/API.git", "github.com/me/api"),
    ("https://github.com/me/api", "github.com/me/api"),
    ("https://user:secret@GitHub.com/me/api/", "github.com/me/api"),
    ("ssh://git@github.com:22/me/api.git", "github.com/me/api"),
    ("git+ssh://git@gitlab.example.org/group/sub/api.git", "gitlab.example.org/group/sub/api"),
    ("git://example.org/api", "example.org/api"),
    ("/srv/git/API.git", "/srv/git/API"),
    ("file:///srv/git/api.git/", "/srv/git/api"),
    ("  ", None),
])
def test_remote_urls_normalize_to_one_form_and_drop_credentials(url: str, normal: str | None) -> None:
    assert normalize_remote(url) == normal


def test_keys_are_a_readable_name_and_a_hash_of_the_identity() -> None:
    key = key_for("git:github.com/me/api", "api")
    assert key.startswith("api-") and len(key) == len("api-") + 8 and is_key(key)
    assert key == key_for("git:github.com/me/api", "api")
    assert key != key_for("git:github.com/you/api", "api")
    assert key_for("path:/x/My Project!", "My Project!").startswith("my-project-")
    assert key_for("path:/", "").startswith("project-")
    long = key_for("path:/x", "a" * 100)
    assert is_key(long) and len(long.rsplit("-", 1)[0]) == 40
    for bad in ("api", "API-0123abcd", "-0123abcd", "api-0123abc", "api-0123abcg", "../x-0123abcd", "user"):
        assert not is_key(bad)


def test_a_repository_with_an_origin_is_the_same_project_wherever_it_is_cloned(tmp_path: Path) -> None:
    first = repo(tmp_path / "a" / "api", "git@github.com:Me/API.git")
    (first / "src" / "deep").mkdir(parents=True)
    second = repo(tmp_path / "elsewhere" / "api-clone", "https://github.com/me/api")
    one, two = project_for(first / "src" / "deep"), project_for(second)
    assert one is not None and two is not None
    assert one.key == two.key and one.identity == "git:github.com/me/api" and one.remote == "github.com/me/api"
    assert one.top == first.resolve() and one.repository


def test_worktrees_belong_to_their_repository_and_a_move_keeps_the_key(tmp_path: Path) -> None:
    main = repo(tmp_path / "api", "git@github.com:me/api.git")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature")
    assert find_repository(tmp_path / "wt") == (main.resolve(), (main / ".git").resolve())
    in_main, in_tree = project_for(main), project_for(tmp_path / "wt")
    assert in_main is not None and in_tree is not None and in_main.key == in_tree.key
    moved = tmp_path / "moved"
    main.rename(moved)
    after = project_for(moved)
    assert after is not None and after.key == in_main.key


def test_a_repository_without_an_origin_is_keyed_by_its_main_folder(tmp_path: Path) -> None:
    main = repo(tmp_path / "local")
    found = project_for(main)
    assert found is not None and found.identity == f"path:{main.resolve()}" and found.remote is None
    git(main, "remote", "add", "upstream", "https://example.org/x")  # only origin counts
    again = project_for(main)
    assert again is not None and again.key == found.key


def test_the_config_parser_reads_quotes_comments_and_the_last_url(tmp_path: Path) -> None:
    (tmp_path / "config").write_text(
        '[core]\n\turl = not-this\n[remote "upstream"]\n\turl = nor-this\n'
        '[remote "origin"] ; a comment\n\turl = "git@github.com:me/first.git" # old\n'
        '[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\tURL = git@github.com:me/"api".git ; x\n')
    assert origin_url(tmp_path) == "git@github.com:me/api.git"
    (tmp_path / "config").write_text("[remote.origin]\nurl = https://h/x\n")
    assert origin_url(tmp_path) == "https://h/x"


def test_a_plain_folder_is_a_project_only_where_a_session_ran_or_a_root_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    assert project_for(notes, home) is None
    made = project_for(notes, home, session=True)
    assert made is not None and not made.repository and made.identity == f"path:{notes.resolve()}"
    root = project_root(home, made)
    assert root == home / PROJECTS_DIR / made.key
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_text("# MEMORY.md\n")
    below = project_for(notes / "sub", home)
    assert below is not None and below.key == made.key  # a subfolder belongs to the folder's project
    assert list(project_roots(home)) == [(made.key, root)]


def test_a_root_committed_with_the_code_wins_once_it_exists(tmp_path: Path) -> None:
    main = repo(tmp_path / "api", "git@github.com:me/api.git")
    project = project_for(main)
    assert project is not None
    assert project_root(tmp_path / "home", project) == tmp_path / "home" / PROJECTS_DIR / project.key
    (main / ".mm").mkdir()
    (main / ".mm" / "MEMORY.md").write_text("# MEMORY.md\n")
    assert project_root(tmp_path / "home", project) == main.resolve() / ".mm"


def test_project_json_records_the_paths_seen(tmp_path: Path) -> None:
    project = Project("git:github.com/me/api", "api", tmp_path / "api", remote="github.com/me/api", repository=True)
    root = tmp_path / "root"
    assert read_project_file(root) == {}
    record_project(root, project, tmp_path / "api", "2026-12-01T10:00:00.000Z")
    data = record_project(root, project, tmp_path / "wt", "2026-12-01T11:00:00.000Z")
    assert data["paths"] == [str(tmp_path / "api"), str(tmp_path / "wt")] and data["key"] == project.key
    on_disk = json.loads((root / ".mmd" / "project.json").read_text())
    assert on_disk == data and on_disk["firstSeen"] == "2026-12-01T10:00:00.000Z"
    assert (root / ".mmd" / "project.json").stat().st_mode & 0o777 == 0o600
