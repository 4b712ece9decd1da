"""Every command that reads or writes a note takes the scope (issue 27): ``--project PATH|KEY`` and ``--user``.

On the files (no daemon), in a home with a project (a git repository with an origin) and the user root: each
command run with ``--project`` works on the project's root (reads see the user root behind it), with ``--user``
on the user root alone, and a scope that names nothing exits 2 and changes nothing.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mmctl.cli.main import main

from mmd.core.projects import project_for


def run(env: dict[str, str], *argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), env=env, stdout=out, stderr=err, stdin=io.BytesIO(stdin))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def home(tmp_path: Path) -> dict[str, Any]:
    repo = tmp_path / "src" / "api"
    repo.mkdir(parents=True)
    git_env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=git_env)
    subprocess.run(["git", "remote", "add", "origin", "https://example.org/me/api.git"], cwd=repo, check=True,
                   env=git_env)
    env = {**os.environ, "DSH_HOME": str(tmp_path / "dsh"), "HOME": str(tmp_path), "MMCTL_NO_DAEMON": "1",
           "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env.pop("DSH_MEMORY_ROOT", None)
    key = project_for(repo).key  # type: ignore[union-attr]
    user = tmp_path / "dsh" / "memory"
    assert run(env, "write", "shell", "--content", "I use fish.", "--user")[0] == 0
    assert run(env, "write", "deploy", "--content", "api ships with make ship.", "--project", str(repo))[0] == 0
    return {"env": env, "repo": repo, "key": key, "user": user, "project": user / "projects" / key}


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.md")}


def test_write_lands_in_the_scopes_root(home: dict[str, Any]) -> None:
    assert (home["project"] / "memories" / "deploy.md").is_file()
    assert (home["user"] / "memories" / "shell.md").is_file()
    assert not (home["user"] / "memories" / "deploy.md").exists()
    info = json.loads((home["project"] / ".mmd" / "project.json").read_text())
    assert info["remote"] == "example.org/me/api" and info["paths"] == [str(home["repo"])]


@pytest.mark.parametrize("by", ["path", "key"])
def test_reads_see_the_project_then_the_user_root(home: dict[str, Any], by: str) -> None:
    env, scope = home["env"], str(home["repo"]) if by == "path" else home["key"]
    code, out, _ = run(env, "read", "shell", "--project", scope, "--json")
    assert code == 0 and json.loads(out)["scope"] == "user"
    code, out, _ = run(env, "list", "--project", scope)
    assert (code, out) == (0, "deploy\nshell  [user]\n")
    code, out, _ = run(env, "search", "fish ship", "--project", scope, "--json")
    assert code == 0 and {m["scope"] for m in json.loads(out)["matches"]} == {home["key"], "user"}
    code, out, _ = run(env, "budget", "--project", scope, "--json")
    assert code == 0 and json.loads(out)["root"] == str(home["project"])
    code, out, _ = run(env, "uri", "deploy", "--project", scope)
    assert (code, out) == (0, f"mm://{home['key']}/deploy\n")
    code, out, _ = run(env, "read", "--project", scope, "--json")  # the index: the project root's own
    assert code == 0 and [e["topic"] for e in json.loads(out)["entries"]] == ["deploy"]
    code, out, _ = run(env, "read", "--project", scope)  # and the text says what else its reads see
    assert code == 0 and out.endswith("- deploy\n\n(and 1 entry of the user root behind it, which every read here "
                                      "sees: mmctl read --user)\n")


def test_user_names_the_user_root_alone(home: dict[str, Any]) -> None:
    env = home["env"]
    assert run(env, "list", "--user") == (0, "shell\n", "")
    code, _, err = run(env, "read", "deploy", "--user")
    assert code == 1 and "no note for topic deploy" in err


def test_changes_go_to_the_scopes_root(home: dict[str, Any]) -> None:
    env, repo = home["env"], str(home["repo"])
    user_before = files(home["user"] / "memories")
    assert run(env, "write", "testing", "--content", "run make check.", "--project", repo)[0] == 0
    assert run(env, "merge", "deploy", "testing", "--into", "ops", "--project", repo)[0] == 0
    assert run(env, "rename", "ops", "operations", "--project", repo)[0] == 0
    assert sorted(p.name for p in (home["project"] / "memories").glob("*.md")) == ["operations.md"]
    assert run(env, "write", "node", "--content", "Node 20.", "--review-after", "2000-01-01", "--project", repo)[0] == 0
    code, out, _ = run(env, "due", "--project", repo, "--json")
    assert code == 0 and [d["topic"] for d in json.loads(out)["due"]] == ["node"]
    code, out, _ = run(env, "log", "node", "--project", repo, "--json")
    assert code == 0 and json.loads(out)["commits"]
    assert run(env, "write", "node", "--content", "Node 22.", "--project", repo)[0] == 0
    versions = json.loads(run(env, "log", "node", "--project", repo, "--json")[1])["commits"]
    assert run(env, "restore", "node", "--at", versions[-1]["commit"], "--project", repo)[0] == 0
    assert "Node 20." in (home["project"] / "memories" / "node.md").read_text()
    assert run(env, "delete", "node", "--project", repo)[0] == 0
    assert not (home["project"] / "memories" / "node.md").exists()
    assert files(home["user"] / "memories") == user_before  # nothing of it reached the user root


def test_agent_commands_take_the_scope(home: dict[str, Any], tmp_path: Path) -> None:
    env, repo = home["env"], str(home["repo"])
    code, out, _ = run(env, "inject", "--client", "me", "--project", repo)
    assert code == 0 and f"mm://{home['key']}/deploy" in out and "mm://local/shell" in out
    assert out.index("Project memory") < out.index("User memory")
    code, out, _ = run(env, "inject", "--client", "me", "--user")
    assert code == 0 and "/deploy>" not in out and "make ship" not in out
    agents = tmp_path / "AGENTS.md"
    assert run(env, "export", "agents-md", "--file", str(agents), "--project", repo)[0] == 0
    text = agents.read_text()
    assert f"mm://{home['key']}/deploy" in text and "mm://local/shell" in text  # the project's, then the user's
    inside = home["repo"] / "AGENTS.md"  # no flag: the project of the file's folder
    assert run(env, "export", "agents-md", "--file", str(inside))[0] == 0
    assert f"mm://{home['key']}/deploy" in inside.read_text()
    assert run(env, "export", "agents-md", "--file", str(inside), "--user")[0] == 0
    assert "/deploy>" not in inside.read_text() and "mm://local/shell" in inside.read_text()
    assert run(env, "nudge", "--project", repo, "--json")[0] == 0
    code, out, _ = run(env, "doctor", "--project", repo, "--json")
    assert code == 0
    code, out, _ = run(env, "project", "show", repo, "--json")
    assert code == 0 and json.loads(out)["topics"] == ["deploy"]


@pytest.mark.parametrize("argv", [
    ["write", "x", "--content", "y", "--project", "nothing-0123abcd"],
    ["read", "x", "--project", "/no/such/folder"],
    ["list", "--project", "{plain}"],
    ["delete", "deploy", "--project", "{plain}"],
    ["search", "x", "--project", "{plain}", "--user"],
])
def test_a_scope_that_names_nothing_exits_2_and_changes_nothing(home: dict[str, Any], tmp_path: Path,
                                                                argv: list[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir(exist_ok=True)
    before = files(home["user"])
    code, _, err = run(home["env"], *[a.replace("{plain}", str(plain)) for a in argv])
    assert code == 2 and err.startswith("mmctl: "), err
    assert files(home["user"]) == before


def test_a_missing_user_root_is_named_as_the_user_roots_resolution_not_as_the_project_root(
        home: dict[str, Any], tmp_path: Path) -> None:
    # a trial passed a mistyped --root in a project: the error called that path "the project root of" the folder
    nope = tmp_path / "nope"
    code, out, err = run(home["env"], "read", "deploy", "--root", str(nope), "--project", str(home["repo"]))
    assert (code, out) == (1, ""), err
    assert err.startswith(f"mmctl: E_NOT_INITIALIZED: no memory root at {nope} (from --root): "), err
    assert not nope.exists()


def test_log_of_a_user_topic_in_a_project_names_the_user_root(home: dict[str, Any]) -> None:
    """``read shell`` in a project falls through to the user root; ``log shell`` there has no version in the
    project's root and says where the note's versions are, instead of leaving the person to guess."""
    code, out, err = run(home["env"], "log", "shell", "--project", str(home["repo"]))
    assert code == 0 and out == "no version of shell is kept yet\n"
    assert err == f"mmctl: shell is a note of the user root, not of project {home['key']}: mmctl log shell --user\n"
    code, out, _ = run(home["env"], "log", "shell", "--user")
    assert code == 0 and "write shell" in out
    code, out, err = run(home["env"], "log", "nothing", "--project", str(home["repo"]))  # no note anywhere: no hint
    assert (code, out, err) == (0, "no version of nothing is kept yet\n", "")
    fresh = home["repo"].parent / "web"  # a project whose root its first write has not made yet
    fresh.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=fresh, check=True, capture_output=True)
    code, _, err = run(home["env"], "log", "shell", "--project", str(fresh))
    assert code == 0 and err.endswith(": mmctl log shell --user\n"), err


def test_a_project_is_named_by_its_keys_name_and_a_near_miss_is_suggested(home: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    """``mmctl project list`` shows ``api-1a2b3c4d``; a person types ``--project api`` (the queue's filter takes
    the name too): one project of that name is it; a near name or a key with a wrong hash says the key."""
    env, key = home["env"], home["key"]
    name = key.rsplit("-", 1)[0]
    assert run(env, "list", "--project", name) == (0, "deploy\nshell  [user]\n", "")
    for wrong in (name + "x", key[:-1] + ("0" if key[-1] != "0" else "1")):
        code, _, err = run(env, "list", "--project", wrong)
        assert code == 2 and f"(did you mean {key}?)" in err, err
    code, _, err = run(env, "list", "--project", "zzzz")
    assert code == 2 and "did you mean" not in err and "neither a project key or name nor a folder" in err


def test_doctor_in_a_project_without_its_root_checks_the_user_root_and_creates_nothing(
        home: dict[str, Any], tmp_path: Path) -> None:
    fresh = tmp_path / "src" / "eta"
    fresh.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=fresh, check=True)
    orphan = home["user"] / "memories" / "lost.md"
    orphan.write_text("# lost\n\nA note the index forgot.\n")
    before = sorted(p.name for p in (home["user"] / "projects").iterdir())
    code, out, err = run(home["env"], "doctor", "--project", str(fresh))
    assert code == 1 and "has no root yet" in out and f"memory root: {home['user']}" in out, (out, err)
    assert "lost" in out  # the user root's orphan is found
    assert sorted(p.name for p in (home["user"] / "projects").iterdir()) == before  # no root made
    code, out, err = run(home["env"], "doctor", "--fix", "--project", str(fresh))
    assert "fixed: memories/lost.md" in out, (out, err)
    assert "lost" in (home["user"] / "MEMORY.md").read_text()
    assert sorted(p.name for p in (home["user"] / "projects").iterdir()) == before


def test_queue_list_refuses_a_project_name_two_projects_share(home: dict[str, Any], tmp_path: Path) -> None:
    twin = tmp_path / "other" / "api"
    twin.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=twin, check=True)
    assert run(home["env"], "write", "notes", "--content", "the other api.", "--project", str(twin))[0] == 0
    code, out, err = run(home["env"], "queue", "list", "--project", "api")
    twin_key = project_for(twin).key  # type: ignore[union-attr]
    assert code == 2 and "projects named api" in err and home["key"] in err and twin_key in err, (code, out, err)
