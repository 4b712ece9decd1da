"""``mmctl inject``, ``due``, ``export agents-md``, ``hooks`` and ``write --review-after`` (issue 14), on the
files and through a real daemon; the installed Claude Code hook run as Claude Code runs it (a shell command
fed the hook's JSON on stdin)."""

from __future__ import annotations

import difflib
import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mmctl.cli.main import main

from tests.test_mmctl_cli import Run

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "claude-settings.json"
START = {"session_id": "9f0c2d4e-claude", "transcript_path": "/home/ada/.claude/projects/p/9f0c2d4e.jsonl",
         "cwd": "/home/ada/project", "permission_mode": "default", "hook_event_name": "SessionStart",
         "source": "startup"}


class Broken(io.StringIO):
    """A stdout that cannot be written (the reader went away)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def runner(root: Path, env: dict[str, str]) -> Any:
    def run(*argv: str, stdin: bytes = b"", stdout: io.StringIO | None = None) -> Run:
        out, err = stdout or io.StringIO(), io.StringIO()
        code = main([*argv, "--root", str(root)], env=env, stdout=out, stderr=err, stdin=io.BytesIO(stdin))
        return Run(code, "" if isinstance(out, Broken) else out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def mm(tmp_path: Path) -> Any:
    """mmctl on ``tmp_path/root`` with no daemon."""
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "home"), "MMCTL_NO_DAEMON": "1",
           "XDG_RUNTIME_DIR": str(tmp_path / "run"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    run = runner(tmp_path / "root", env)
    assert run("init").code == 0
    return run


def test_write_review_after_and_due_on_the_files(mm: Any) -> None:
    assert mm("write", "node", "--content", "Node 20.", "--review-after", "2000-01-01").code == 0
    assert mm("write", "later", "--content", "Later.", "--review-after", "2w").code == 0
    refused = mm("write", "vague", "--content", "x", "--review-after", "when we switch machines")
    assert refused.code == 2 and "review date must be" in refused.err and "'when we switch machines'" in refused.err
    assert mm("read", "vague").code == 1  # nothing written
    due = mm("due")
    assert due.code == 0 and due.out.startswith("node  2000-01-01  overdue by ") and "later" not in due.out
    ahead = mm("due", "--within", "14", "--json").json
    assert [d["topic"] for d in ahead["due"]] == ["node", "later"] and ahead["due"][1]["daysLeft"] == 14


def test_inject_prints_then_commits_and_a_text_that_could_not_be_printed_comes_again(mm: Any) -> None:
    mm("write", "alpha", "--content", "First.", "--summary", "The first")
    base = mm("inject", "--json")
    assert base.code == 0 and set(base.json) == {"mode", "text", "added", "updated", "removed", "unchanged",
                                                 "reminded", "bytes"}
    assert base.json["mode"] == "baseline" and "- alpha: The first <mm://local/alpha>" in base.json["text"]
    assert mm("inject").out == ""  # nothing changed: nothing printed
    mm("write", "beta", "--content", "Second.", "--summary", "The second")
    lost = mm("inject", stdout=Broken())
    assert lost.code == 1 and "nothing was committed" in lost.err
    delta = mm("inject")
    assert delta.out.startswith("Memory mm://local/ changed since you last saw it: 1 added; 1 unchanged")
    assert "- added beta: The second <mm://local/beta>" in delta.out
    assert mm("inject", "--client", "other").out.startswith("Memory mm://local/ — 2 topics")  # its own view
    assert mm("inject", "--max-bytes", "10", "--client", "tiny").code == 1
    both = mm("inject", "--format", "claude-hook", "--json")  # printed JSON, silently not the hook's shape
    assert both.code == 2 and "--json and --format claude-hook name two outputs" in both.err


def test_export_agents_md_keeps_every_byte_outside_the_block(mm: Any, tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"# Rules\r\n\r\nTabs.\r\n<!-- mm:begin -->\r\nold\r\n<!-- mm:end -->\r\ntail\r\n")
    mm("write", "alpha", "--content", "First.", "--summary", "The first")
    out = mm("export", "agents-md", "--file", str(agents), "--json")
    assert out.code == 0 and out.json["changed"] is True
    from mmd.inject.baseline import command_for
    from mmd.inject.guide import agent_guide

    command = command_for(tmp_path / "root").encode()  # "mmctl --root …": the root is not ~/.dsh/memory
    assert agents.read_bytes() == (b"# Rules\r\n\r\nTabs.\r\n<!-- mm:begin -->\r\n" + agent_guide().encode() +
                                   b"\r\n\r\nMemory mm://local/ \xe2\x80\x94 1 topic, newest and most used first, 1 "
                                   b"with their text (read one: " + command + b" read <topic>, MCP mem_read):"
                                   b"\r\n- alpha: The first <mm://local/alpha>\r\n  First.\r\n<!-- mm:end -->"
                                   b"\r\ntail\r\n")
    assert mm("export", "agents-md", "--file", str(agents)).out.startswith("unchanged:")
    agents.write_bytes(b"<!-- mm:end -->\n<!-- mm:begin -->\n")
    broken = mm("export", "agents-md", "--file", str(agents))
    assert broken.code == 1 and "fix the markers by hand" in broken.err
    assert agents.read_bytes() == b"<!-- mm:end -->\n<!-- mm:begin -->\n"


def test_hooks_install_on_a_real_shaped_settings_file_and_the_hook_prints_the_documented_shape(
        mm: Any, tmp_path: Path) -> None:
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    shutil.copy(FIXTURE, settings)
    mm("write", "alpha", "--content", "First.", "--summary", "The first")
    dry = mm("hooks", "install", "claude-code", "--dry-run")
    assert dry.code == 0 and "(dry run) added SessionStart hook" in dry.out
    assert settings.read_bytes() == FIXTURE.read_bytes()
    done = mm("hooks", "install", "claude-code", "--json").json
    assert done["changed"] and done["backup"] == str(settings) + ".mmctl-backup"
    shown = difflib.unified_diff(FIXTURE.read_text().splitlines(keepends=True),  # the dry run showed what it wrote
                                 settings.read_text().splitlines(keepends=True), str(settings), str(settings))
    assert "".join(shown) in dry.out and f"\n+++ {settings}\n" in dry.out and "\n+" in dry.out
    value = json.loads(settings.read_text())
    assert value["permissions"] == json.loads(FIXTURE.read_text())["permissions"]
    assert [g["hooks"][0]["command"] for g in value["hooks"]["PreToolUse"]] == [
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check-bash.sh']
    command = value["hooks"]["SessionStart"][-1]["hooks"][0]["command"]
    assert value["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == command
    assert os.path.isabs(command.split(" ")[0].strip("'")) and "--root" in command
    assert "nothing to do" in mm("hooks", "install", "claude-code").out

    # Claude Code runs the command in a shell, the hook's JSON on stdin
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MMCTL_NO_DAEMON": "1"}
    first = subprocess.run(command, shell=True, input=json.dumps(START).encode(), capture_output=True, env=env,
                           timeout=60)
    assert first.returncode == 0, first.stderr
    output = json.loads(first.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "- alpha: The first <mm://local/alpha>" in output["hookSpecificOutput"]["additionalContext"]
    prompt = {**START, "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    prompt.pop("source")
    quiet = subprocess.run(command, shell=True, input=json.dumps(prompt).encode(), capture_output=True, env=env,
                           timeout=60)
    assert (quiet.returncode, quiet.stdout) == (0, b"")  # nothing changed: nothing added to the prompt
    compacted = subprocess.run(command, shell=True, input=json.dumps({**START, "source": "compact"}).encode(),
                               capture_output=True, env=env, timeout=60)
    assert "alpha" in json.loads(compacted.stdout)["hookSpecificOutput"]["additionalContext"]

    assert mm("hooks", "uninstall", "claude-code").code == 0
    assert json.loads(settings.read_text()) == json.loads(FIXTURE.read_text())


def test_a_malformed_settings_file_is_refused_with_a_clear_message(mm: Any, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"permissions": {"allow": [}')
    cwd = os.getcwd()
    os.chdir(project)
    try:
        refused = mm("hooks", "install", "claude-code", "--scope", "project")
    finally:
        os.chdir(cwd)
    assert refused.code == 1 and "is not valid JSON (line 1" in refused.err and "nothing was changed" in refused.err
    assert (project / ".claude" / "settings.json").read_text() == '{"permissions": {"allow": [}'


def test_inject_and_due_go_through_the_daemon(mmd: Any) -> None:
    run = runner(mmd.root, dict(mmd.env))
    assert run("write", "alpha", "--content", "First.", "--review-after", "0d").code == 0
    first = run("inject", "--client", "agent-7", "--json").json
    assert first["mode"] == "baseline"
    assert run("inject", "--client", "agent-7").out.startswith("- may be stale: re-check alpha")
    assert run("due", "--json").json["due"][0] == {"topic": "alpha", "reviewAfter": run("due", "--json").json[
        "today"], "daysLeft": 0}
    run("write", "beta", "--content", "Second.")
    assert run("inject", "--client", "agent-7", stdout=Broken()).code == 1
    again = run("inject", "--client", "agent-7", "--json").json  # the daemon never got the confirmation
    assert again["mode"] == "delta" and again["added"] == ["beta"]
    assert run("inject", "--client", "agent-7").out == ""
    hook = run("inject", "--format", "claude-hook", stdin=json.dumps(START).encode())
    assert json.loads(hook.out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert not (mmd.root / ".mmd" / "inject").exists()  # the daemon kept the views, not files


def test_export_refuses_a_symlink_out_of_the_home_a_fifo_and_a_read_only_file(mm: Any, tmp_path: Path) -> None:
    mm("write", "alpha", "--content", "First.", "--summary", "The first")
    outside = tmp_path.parent / f"{tmp_path.name}-hostname"  # HOME is tmp_path: this is outside it
    outside.write_bytes(b"buildbox\n")
    try:
        link = tmp_path / "AGENTS.md"
        link.symlink_to(outside)
        refused = mm("export", "agents-md", "--file", str(link))
        assert refused.code == 1 and f"is a symlink to {outside}, outside your home" in refused.err
        assert outside.read_bytes() == b"buildbox\n"
    finally:
        outside.unlink()
    fifo = tmp_path / "FIFO.md"
    os.mkfifo(fifo)
    assert "is a FIFO, not a regular file" in mm("export", "agents-md", "--file", str(fifo)).err
    locked = tmp_path / "CLAUDE.md"
    locked.write_bytes(b"# mine\n")
    os.chmod(locked, 0o444)
    assert "is read-only (mode 0444)" in mm("export", "agents-md", "--file", str(locked)).err
    assert locked.read_bytes() == b"# mine\n"
    dotfiles = tmp_path / "dotfiles" / "AGENTS.md"
    dotfiles.parent.mkdir()
    dotfiles.write_bytes(b"# shared\n")
    (tmp_path / "GEMINI.md").symlink_to(dotfiles)  # inside the home: written through
    assert mm("export", "agents-md", "--file", str(tmp_path / "GEMINI.md")).code == 0
    assert b"- alpha: The first" in dotfiles.read_bytes() and (tmp_path / "GEMINI.md").is_symlink()
