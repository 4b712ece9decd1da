"""Bad invocations of real ``mmctl`` and ``mmd`` processes: the exit code, the first line of stderr, nothing touched.

Each row runs one process in a sandbox (``HOME``, ``DSH_HOME``, ``XDG_*`` under
one temporary folder holding an initialized root, a folder that is not a root,
a plain file, a Latin-1 file and a broken TOML file) and checks that every
file in the sandbox is byte for byte and mtime for mtime what it was, and that
no message says "internal error" (that is kept for real bugs: issue 10).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mmd import __version__

MMCTL = Path(sys.executable).with_name("mmctl")
MMCTL_ARGV = [str(MMCTL)] if MMCTL.exists() else [sys.executable, "-m", "mmctl"]
MMD_ARGV = [sys.executable, "-m", "mmd.daemon.main"]

_E = "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/typo (from --root): it does not exist"

# (program, argv, extra env, exit code, first line of stderr (prefix; "" = stderr empty), stdout prefix)
ROWS: list[tuple[str, list[Any], dict[str, str], int, str, str]] = [
    ("mmctl", ["--bogus"], {}, 2, "mmctl: unknown option --bogus", ""),
    ("mmctl", ["frob"], {}, 2, "mmctl: unknown command: frob", ""),
    ("mmctl", ["ui", "x"], {}, 2, "mmctl: ui: unexpected argument 'x'", ""),
    ("mmctl", ["review", "--min-score", "x"], {}, 2, 'mmctl: --min-score expects a number (got "x")', ""),
    ("mmctl", ["queue", "reject", "--below", "nan"], {}, 2, 'mmctl: --below expects a number (got "nan")', ""),
    ("mmctl", ["init", "--bogus"], {}, 2, "mmctl: init: unknown option --bogus", ""),
    ("mmctl", ["init", "extra"], {}, 2, "mmctl: init: unexpected argument 'extra'", ""),
    ("mmctl", ["write", "t", "--content", "x", "--bogus"], {}, 2, "mmctl: write: unknown option --bogus", ""),
    ("mmctl", ["write", "t", "u", "--content", "x"], {}, 2, "mmctl: write: unexpected argument 'u'", ""),
    ("mmctl", ["write"], {}, 2, "mmctl: write requires a <topic>", ""),
    ("mmctl", ["write", "t"], {}, 2, "mmctl: write requires --content TEXT", ""),
    ("mmctl", ["write", "t", "--content"], {}, 2, "mmctl: write requires --content TEXT", ""),
    ("mmctl", ["write", "t", "--content", "x", "--budget", "abc"], {}, 2,
     'mmctl: --budget expects a non-negative integer (got "abc")', ""),
    ("mmctl", ["write", "t", "--content", "x", "--budget"], {}, 2,
     "mmctl: write: argument --budget: expected one argument", ""),
    ("mmctl", ["write", "t", "--content", "x", "--file", "{tmp}/latin1.txt"], {}, 2, "mmctl: give the body once", ""),
    ("mmctl", ["write", "t", "--file", "{tmp}/missing.txt"], {}, 1, "mmctl: cannot read the body from", ""),
    ("mmctl", ["write", "t", "--file", "{tmp}/latin1.txt"], {}, 1,
     "mmctl: the body from {tmp}/latin1.txt is not UTF-8 (byte 3)", ""),
    ("mmctl", ["write", b"t\xff", "--content", "x"], {}, 1, "mmctl: E_INVALID: argument 2 is not valid UTF-8", ""),
    ("mmctl", ["read", "a", "b"], {}, 2, "mmctl: read: unexpected argument 'b'", ""),
    ("mmctl", ["read", "--bogus"], {}, 2, "mmctl: read: unknown option --bogus", ""),
    ("mmctl", ["list", "x"], {}, 2, "mmctl: list: unexpected argument 'x'", ""),
    ("mmctl", ["list", "--all"], {}, 2, "mmctl: list: unknown option --all", ""),
    ("mmctl", ["search"], {}, 2, "mmctl: search requires a <query>", ""),
    ("mmctl", ["search", ""], {}, 2, "mmctl: search requires a <query>: an empty query matches nothing", ""),
    ("mmctl", ["search", "q", "--mode", "bogus"], {}, 2, "mmctl: search: argument --mode: invalid choice: 'bogus'",
     ""),
    ("mmctl", ["search", "q", "--limit", "x"], {}, 2, 'mmctl: --limit expects a non-negative integer (got "x")', ""),
    ("mmctl", ["search", "q", "--limit", "-1"], {}, 2, 'mmctl: --limit expects a non-negative integer (got "-1")',
     ""),
    ("mmctl", ["budget", "x"], {}, 2, "mmctl: budget: unexpected argument 'x'", ""),
    ("mmctl", ["digest", "--max-items", "x"], {}, 2, 'mmctl: --max-items expects a non-negative integer', ""),
    ("mmctl", ["digest", "--bogus"], {}, 2, "mmctl: digest: unknown option --bogus", ""),
    ("mmctl", ["delete"], {}, 2, "mmctl: delete requires a <topic>", ""),
    ("mmctl", ["delete", "a", "b"], {}, 2, "mmctl: delete: unexpected argument 'b'", ""),
    ("mmctl", ["uri"], {}, 2, "mmctl: uri requires a <topic>", ""),
    ("mmctl", ["uri", "a", "--bogus"], {}, 2, "mmctl: uri: unknown option --bogus", ""),
    ("mmctl", ["status", "x"], {}, 2, "mmctl: status: unexpected argument 'x'", ""),
    ("mmctl", ["queue", "frob"], {}, 2, "mmctl: queue: argument ACTION: invalid choice: 'frob'", ""),
    ("mmctl", ["project", "frob"], {}, 2, "mmctl: project: argument ACTION: invalid choice: 'frob'", ""),
    ("mmctl", ["project", "adopt"], {}, 2, "mmctl: project adopt needs the topics to move", ""),
    ("mmctl", ["read", "t", "--project", "nothing-0123abcd"], {}, 2,
     "mmctl: --project nothing-0123abcd: no project root", ""),
    ("mmctl", ["list", "--project", "{tmp}", "--user"], {}, 2, "mmctl: --project and --user name different roots", ""),
    ("mmctl", ["queue", "accept"], {}, 2, "mmctl: queue accept requires a candidate <id>", ""),
    ("mmctl", ["queue", "show", "1", "2"], {}, 2, "mmctl: queue show takes one id (got 1 2)", ""),
    ("mmctl", ["queue", "list", "--status", "bogus"], {}, 2, "mmctl: queue: argument --status: invalid choice", ""),
    ("mmctl", ["queue", "list", "--limit", "x"], {}, 2, 'mmctl: --limit expects a non-negative integer', ""),
    ("mmctl", ["queue", "list", "--min-score", "x"], {}, 2, 'mmctl: --min-score expects a number (got "x")', ""),
    ("mmctl", ["queue", "reject", "--below", "low"], {}, 2, 'mmctl: --below expects a number (got "low")', ""),
    ("mmctl", ["queue", "reject", "3", "--below", "0.5"], {}, 2, "mmctl: queue reject takes ids or --below, not both",
     ""),
    ("mmctl", ["merge"], {}, 2, "mmctl: merge requires the notes to merge and --into TOPIC", ""),
    ("mmctl", ["merge", "a", "b"], {}, 2, "mmctl: merge requires the notes to merge and --into TOPIC", ""),
    ("mmctl", ["rename", "a"], {}, 2, "mmctl: rename requires the topic and its new name", ""),
    ("mmctl", ["rename", "a", "b", "c"], {}, 2, "mmctl: rename: unexpected argument 'c'", ""),
    ("mmctl", ["rename", "a", "b", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["log", "a", "b"], {}, 2, "mmctl: log: unexpected argument 'b'", ""),
    ("mmctl", ["log", "--limit", "x"], {}, 2, 'mmctl: --limit expects a non-negative integer', ""),
    ("mmctl", ["diff"], {}, 2, "mmctl: diff requires a revision", ""),
    ("mmctl", ["revert"], {}, 2, "mmctl: revert takes one revision", ""),
    ("mmctl", ["revert", "r1", "r2"], {}, 2, "mmctl: revert: unexpected argument 'r2'", ""),
    ("mmctl", ["restore", "t"], {}, 2, "mmctl: restore takes a topic and --at REV", ""),
    ("mmctl", ["sync", "now"], {}, 2, "mmctl: sync: unexpected argument 'now'", ""),
    ("mmctl", ["sync", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["watch", "--count", "x"], {}, 2, 'mmctl: --count expects a non-negative integer (got "x")', ""),
    ("mmctl", ["watch", "--topic", "bogus/x"], {}, 2, "mmctl: watch: --topic 'bogus/x' matches no event topic", ""),
    ("mmctl", ["propose", "--reason", "r"], {}, 2, "mmctl: propose needs the text: --content TEXT", ""),
    ("mmctl", ["propose", "t", "--action", "drop"], {}, 2, "mmctl: propose: argument --action: invalid choice", ""),
    ("mmctl", ["guide", "--lang", "fr"], {}, 2, "mmctl: guide: argument --lang: invalid choice: 'fr'", ""),
    ("mmctl", ["guide", "--json"], {}, 2, "mmctl: guide: unknown option --json", ""),
    ("mmctl", ["doctor", "--fix", "x"], {}, 2, "mmctl: doctor: unexpected argument 'x'", ""),
    ("mmctl", ["mcp", "--lang", "fr"], {}, 2, "mmctl: mcp: argument --lang: invalid choice: 'fr'", ""),
    ("mmctl", ["completion"], {}, 2, "mmctl: completion requires a <shell>: bash, zsh or fish", ""),
    ("mmctl", ["completion", "tcsh"], {}, 2, "mmctl: completion: argument SHELL: invalid choice: 'tcsh'", ""),
    ("mmctl", ["help", "frob"], {}, 2, "mmctl: help: unknown command 'frob'", ""),
    ("mmctl", ["nudge", "--json", "x"], {}, 2, "mmctl: nudge: unexpected argument 'x'", ""),
    ("mmctl", ["inject", "--format", "xml"], {}, 2, "mmctl: inject: argument --format: invalid choice: 'xml'", ""),
    ("mmctl", ["inject", "--max-bytes", "x"], {}, 2, 'mmctl: --max-bytes expects a non-negative integer (got "x")', ""),
    ("mmctl", ["inject", "--format", "claude-hook"], {}, 0,  # a hook exits 0: a warning for the person, not the model
     "mmctl: E_INVALID: --format claude-hook reads Claude Code's hook input: a JSON object on stdin",
     '{"systemMessage": "mmctl: E_INVALID: --format claude-hook reads'),
    ("mmctl", ["inject", "--client", "a\nb"], {}, 2,
     "mmctl: --client expects 1 to 200 characters without control characters", ""),
    ("mmctl", ["due", "--within", "x"], {}, 2, 'mmctl: --within expects a non-negative integer (got "x")', ""),
    ("mmctl", ["export"], {}, 2, "mmctl: export requires what to export: agents-md", ""),
    ("mmctl", ["export", "claude-md"], {}, 2, "mmctl: export: argument WHAT: invalid choice: 'claude-md'", ""),
    ("mmctl", ["export", "agents-md", "--file", "{tmp}/afile/AGENTS.md"], {}, 1,
     "mmctl: E_IO: cannot open the folder of {tmp}/afile/AGENTS.md: Not a directory", ""),
    ("mmctl", ["hooks", "install"], {}, 2, "mmctl: hooks needs an action and an agent", ""),
    ("mmctl", ["hooks", "install", "cursor"], {}, 2, "mmctl: hooks: argument AGENT: invalid choice: 'cursor'", ""),
    ("mmctl", ["hooks", "install", "claude-code", "--scope", "global"], {}, 2,
     "mmctl: hooks: argument --scope: invalid choice: 'global'", ""),
    ("mmctl", ["hooks", "install", "claude-code", "--dry-run", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["inject", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["due", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["read", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["read", "t", "--json", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["list", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["search", "q", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["budget", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["uri", "a", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["doctor", "--fix", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["status", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["nudge", "--root", "{tmp}/typo"], {}, 1, _E, ""),
    ("mmctl", ["read", "--root", "{tmp}/checkout"], {}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/checkout (from --root): it has no MEMORY.md", ""),
    ("mmctl", ["list", "--root", "{tmp}/afile"], {}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/afile (from --root): it is a file, not a folder", ""),
    ("mmctl", ["read"], {"DSH_MEMORY_ROOT": "{tmp}/typo"}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/typo (from $DSH_MEMORY_ROOT)", ""),
    ("mmctl", ["read"], {"DSH_HOME": "{tmp}/nohome"}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/nohome/memory (from $DSH_HOME/memory)", ""),
    ("mmctl", ["write", "t", "--content", "x", "--root", "{tmp}/afile"], {}, 1,
     "mmctl: the memory root {tmp}/afile (from --root) is a file, not a folder", ""),
    ("mmctl", ["init", "--root", "{tmp}/typo/deeper"], {}, 1,
     "mmctl: cannot create the memory root {tmp}/typo/deeper (from --root): its parent folder {tmp}/typo does not "
     "exist", ""),
    ("mmctl", ["init", "--root", "{tmp}/afile/x"], {}, 1,
     "mmctl: cannot create the memory root {tmp}/afile/x (from --root): {tmp}/afile is a file, not a folder", ""),
    ("mmctl", ["read", "--root", "{tmp}/root/MEMORY.md"], {}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/root/MEMORY.md (from --root): it is a file, not a folder; "
     "the memory root is the folder holding MEMORY.md: --root {tmp}/root", ""),
    ("mmctl", ["read", "--root", "{tmp}/afile"], {}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/afile (from --root): it is a file, not a folder; give --root "
     "the folder that holds MEMORY.md (or a new folder to `mmctl init`)", ""),
    ("mmctl", ["read", "--root", "{tmp}/typo/deeper"], {}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/typo/deeper (from --root): it does not exist; create one "
     "with `mkdir -p {tmp}/typo` and `mmctl init --root {tmp}/typo/deeper`", ""),
    ("mmctl", ["read", "--root", "{tmp}/afile/x"], {}, 1,
     "mmctl: E_NOT_INITIALIZED: no memory root at {tmp}/afile/x (from --root): it does not exist, and {tmp}/afile "
     "is a file, not a folder; give the right --root", ""),
    ("mmctl", ["read", "--root="], {}, 2, "mmctl: --root expects a path, not an empty value", ""),
    ("mmctl", ["list", "--root", ""], {}, 2, "mmctl: --root expects a path, not an empty value", ""),
    ("mmctl", ["write", "t", "--file", ""], {}, 2, "mmctl: --file expects a path, not an empty value", ""),
    ("mmctl", ["digest", "--file="], {}, 2, "mmctl: --file expects a path, not an empty value", ""),
    ("mmctl", ["export", "agents-md", "--file="], {}, 2, "mmctl: --file expects a path, not an empty value", ""),
    ("mmctl", ["queue", "accept", "1", "--file="], {}, 2, "mmctl: --file expects a path, not an empty value", ""),
    ("mmctl", ["queue", "list", "--project="], {}, 2, "mmctl: --project expects a path, not an empty value", ""),
    ("mmctl", ["write", "t1", "--content", "x", "--review-after", "3x"], {}, 2,
     "mmctl: --review-after: review date must be a date YYYY-MM-DD", ""),
    ("mmctl", ["write", "t1", "--content", "x", "--review-after", "2026-02-30"], {}, 2,
     "mmctl: --review-after: review date '2026-02-30' is not a calendar day", ""),
    ("mmctl", ["queue", "show", "abc"], {}, 2,
     "mmctl: queue show: a candidate id is a positive integer (got 'abc')", ""),
    ("mmctl", ["queue", "reject", "1", "0"], {}, 2, "mmctl: queue reject: a candidate id is a positive integer "
     "(got '0')", ""),
    ("mmctl", ["inject", "--max-bytes", "0", "--client", "z"], {}, 2,
     'mmctl: --max-bytes expects a positive integer (got "0")', ""),
    ("mmctl", ["export", "agents-md", "--max-bytes", "0"], {}, 2,
     'mmctl: --max-bytes expects a positive integer (got "0")', ""),
    ("mmctl", ["inject", "--client", ""], {}, 2,
     "mmctl: --client expects 1 to 200 characters without control characters (got '')", ""),
    ("mmctl", ["--version"], {}, 0, "", f"mmctl {__version__}\n"),
    ("mmctl", ["help", "write"], {}, 0, "", "usage: mmctl write [-h]"),
    ("mmctl", ["write", "--help"], {}, 0, "", "usage: mmctl write [-h]"),
    ("mmctl", ["queue", "-h"], {}, 0, "", "usage: mmctl queue [-h]"),
    ("mmd", ["--bogus"], {}, 2, "mmd: unrecognized arguments: --bogus", ""),
    ("mmd", ["stray"], {}, 2, "mmd: unrecognized arguments: stray", ""),
    ("mmd", ["--sessons", "x"], {}, 2, "mmd: unrecognized arguments: --sessons x (did you mean --sessions?)", ""),
    ("mmd", ["--index-lines"], {}, 2, "mmd: argument --index-lines: expected one argument", ""),
    ("mmd", ["--index-lines", "abc"], {}, 2, "mmd: config error: --index-lines = 'abc': must be a positive integer",
     ""),
    ("mmd", ["--config", "{tmp}/bad.toml"], {}, 2,
     "mmd: config error: {tmp}/bad.toml:1:9: not valid TOML: Invalid value", ""),
    ("mmd", [], {"XDG_CONFIG_HOME": "{tmp}/badconf"}, 2,
     "mmd: config error: {tmp}/badconf/mmd/config.toml:1:9: not valid TOML: Invalid value", ""),
    ("mmd", ["--root="], {}, 2, "mmd: argument --root: expects a path, not an empty value", ""),
    ("mmd", ["--root", " "], {}, 2, "mmd: argument --root: expects a path, not an empty value", ""),
    ("mmd", ["--config="], {}, 2, "mmd: argument --config: expects a path, not an empty value", ""),
    ("mmd", ["--sessions="], {}, 2, "mmd: argument --sessions: expects a path, not an empty value", ""),
    ("mmd", ["--export-file="], {}, 2, "mmd: argument --export-file: expects a path, not an empty value", ""),
    ("mmd", ["--curve-client-keys-dir="], {}, 2, "mmd: argument --curve-client-keys-dir: expects a path", ""),
    ("mmd", ["service", "install", "--dry-run", "--", "--root="], {}, 2,
     "mmd: argument --root: expects a path, not an empty value", ""),
    ("mmd", ["--git-remote", "a b"], {}, 2, "mmd: config error: git.remote = 'a b': is not a valid git name", ""),
    ("mmd", ["--git-branch", "-x"], {}, 2, "mmd: argument --git-branch: expected one argument", ""),
    ("mmd", ["--git-branch", "a..b"], {}, 2, "mmd: config error: git.branch = 'a..b': is not a valid git name", ""),
    ("mmd", ["--git-sync-interval-ms", "0"], {}, 2,
     "mmd: config error: git.syncIntervalMs = 0: must be a positive integer", ""),
    ("mmd", ["merge-index", "a"], {}, 2, "usage: mmd merge-index BASE OURS THEIRS PATH", ""),
    ("mmd", ["--version"], {}, 0, "", f"mmd {__version__}\n"),
    ("mmd", ["--help"], {}, 0, "", "usage: mmd [OPTIONS]\n       mmd service {install,uninstall,status}"),
    ("mmd", ["service", "bogus"], {}, 2, "usage: mmd service", ""),
    ("mmd", ["service", "install"], {}, 1, "mmd service: no systemd user bus here", ""),
    ("mmd", ["service", "status"], {}, 0, "", "{tmp}/.config/systemd/user/mmd.service: installed: no, enabled: no, "
     "running: unknown (no systemd user bus here to ask; `mmctl status` says whether a daemon answers)\n"
     "not installed as a user service: `mmd service install` installs and starts it\n"),
]


def _tree(base: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and folder under ``base``: relative path → (mtime in ns, bytes; b"" for folders)."""
    found: dict[str, tuple[int, bytes]] = {}
    for path in sorted(base.rglob("*")):
        stat = path.lstat()
        found[str(path.relative_to(base))] = (stat.st_mtime_ns, path.read_bytes() if path.is_file() else b"")
    return found


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialized root, a folder that is not a root, a file, a Latin-1 file, two broken TOML files."""
    from mmctl.cli.main import main

    tmp = tmp_path_factory.mktemp("usage")
    out = io.StringIO()
    assert main(["init", "--root", str(tmp / "root")], env={"HOME": str(tmp)}, stdout=out, stderr=out) == 0
    (tmp / "checkout" / ".git").mkdir(parents=True)
    (tmp / "afile").write_text("not a folder\n")
    (tmp / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (tmp / "bad.toml").write_text("root = [unclosed\n")
    (tmp / "badconf" / "mmd").mkdir(parents=True)
    (tmp / "badconf" / "mmd" / "config.toml").write_text("root = [unclosed\n")
    (tmp / "run").mkdir()
    return tmp


def _expand(value: Any, tmp: Path) -> Any:
    return value.replace("{tmp}", str(tmp)) if isinstance(value, str) else value


@pytest.mark.parametrize(("program", "argv", "env", "code", "first", "stdout"), ROWS,
                         ids=[f"{r[0]} {' '.join(map(str, r[1]))}"[:60] for r in ROWS])
def test_a_bad_invocation_is_refused_clearly_and_changes_nothing(
        sandbox: Path, program: str, argv: list[Any], env: dict[str, str], code: int, first: str,
        stdout: str) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "MMCTL_", "XDG_", "DBUS_"))}
    environ.update({"HOME": str(sandbox), "DSH_HOME": str(sandbox / "home"), "XDG_RUNTIME_DIR": str(sandbox / "run"),
                    "XDG_CONFIG_HOME": str(sandbox / ".config"), "DSH_MEMORY_ROOT": str(sandbox / "root"),
                    "MMCTL_NO_DAEMON": "1"})
    environ.update({k: _expand(v, sandbox) for k, v in env.items()})
    if "DSH_HOME" in env:
        environ.pop("DSH_MEMORY_ROOT")
    before = _tree(sandbox)
    base = MMCTL_ARGV if program == "mmctl" else MMD_ARGV
    args = [a if isinstance(a, bytes) else _expand(a, sandbox) for a in argv]
    proc = subprocess.run([*base, *args], env=environ, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    err = proc.stderr.decode("utf-8", "replace")
    out = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert (err.splitlines() or [""])[0].startswith(_expand(first, sandbox)) if first else err == "", err
    assert out.startswith(_expand(stdout, sandbox)), out
    if code == 2 and "config error" not in first:  # a usage error is followed by a usage line (config: cli2)
        assert any(line.startswith(("usage: ", "Usage: ")) for line in err.splitlines()), err
    assert "internal error" not in err and "Traceback" not in err
    assert _tree(sandbox) == before


def test_the_table_has_a_row_for_every_command() -> None:
    from mmctl.cli.parser import COMMANDS

    named = {str(r[1][0]) for r in ROWS if r[0] == "mmctl" and r[1]}
    assert set(COMMANDS) <= named and len(ROWS) >= 40


def test_the_summary_form_shown_in_help_and_docs_works_as_typed_in_a_shell(tmp_path: Path) -> None:
    """``--summary='--- draft'`` as ``mmctl write --help`` and ``docs/cli.md`` show it, typed into ``sh``."""
    import re
    import shlex

    help_text = subprocess.run([*MMCTL_ARGV, "write", "--help"], capture_output=True, text=True, check=True).stdout
    page = (Path(__file__).parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = [m.group(0) for text in (" ".join(help_text.split()), page)
             for m in re.finditer(r"--summary=\S+ \S+?'", text)]
    assert len(shown) == 2, shown
    environ = {**os.environ, "HOME": str(tmp_path), "DSH_MEMORY_ROOT": str(tmp_path / "root"),
               "MMCTL_NO_DAEMON": "1"}
    for number, form in enumerate(shown):
        line = f"{' '.join(map(shlex.quote, MMCTL_ARGV))} write t{number} --content body {form} --json"
        proc = subprocess.run(["sh", "-c", line], env=environ, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        read = subprocess.run([*MMCTL_ARGV, "read", "--json"], env=environ, capture_output=True, text=True)
        entries = {e["topic"]: e["summary"] for e in json.loads(read.stdout)["entries"]}
        assert entries[f"t{number}"] == "--- draft", entries


def test_queue_help_lists_every_action_with_one_line() -> None:
    from mmctl.cli.parser import COMMANDS

    help_text = subprocess.run([*MMCTL_ARGV, "queue", "--help"], capture_output=True, text=True, check=True).stdout
    actions = COMMANDS["queue"].positionals[0].choices or ()
    lines = {line.split()[0]: line for line in help_text.split("actions:\n", 1)[1].splitlines()
             if line.startswith("  ") and line.split()}
    assert {"list", "show", "accept", "reject"} <= set(actions) and set(lines) == set(actions), help_text


@pytest.mark.parametrize(("action", "own", "others"), [
    ("accept", ["--into", "--topic", "--replace", "--content"], ["--below", "--status", "--reason"]),
    ("reject", ["--below", "--dry-run", "--reason"], ["--into", "--status"]),
    ("list", ["--status", "--all", "--min-score", "--agent"], ["--into", "--below"]),
    ("show", [], ["--into", "--below", "--status"]),
])
def test_the_help_of_one_queue_action_names_its_options_only(action: str, own: list[str], others: list[str]) -> None:
    proc = subprocess.run([*MMCTL_ARGV, "queue", action, "--help"], capture_output=True, text=True, check=True)
    usage, _, rest = proc.stdout.partition("\n\n")
    assert " ".join(usage.split()).startswith(f"usage: mmctl queue {action} [-h]"), proc.stdout
    assert all(flag in usage for flag in [*own, "--root", "--json"]), proc.stdout
    assert not any(flag in proc.stdout for flag in others), proc.stdout
    assert rest.split("\n", 1)[0] and not rest.startswith((f"{action} ID", f"{action}  ")), proc.stdout


def test_the_action_is_the_first_word_that_is_no_option_value() -> None:
    """``--reason list`` is a reason, not the list action; ``--topic show`` a topic."""
    shown = subprocess.run([*MMCTL_ARGV, "queue", "--reason", "list", "reject", "-h"], capture_output=True, text=True,
                           timeout=60, check=True).stdout
    assert shown.startswith("usage: mmctl queue reject"), shown
    refused = subprocess.run([*MMCTL_ARGV, "queue", "--topic", "show", "accept", "5", "--bogus"], capture_output=True,
                             text=True, timeout=60, env={**os.environ, "MMCTL_NO_DAEMON": "1"})
    assert refused.returncode == 2 and "usage: mmctl queue accept [-h]" in refused.stderr, refused.stderr


def test_a_refused_queue_action_shows_that_actions_usage() -> None:
    proc = subprocess.run([*MMCTL_ARGV, "queue", "list", "--status", "bogus"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "MMCTL_NO_DAEMON": "1"})
    first, usage = proc.stderr.splitlines()[:2]
    assert proc.returncode == 2 and "invalid choice: 'bogus'" in first
    assert usage.startswith("usage: mmctl queue list [-h] [--status S]") and "--into" not in usage, usage


def test_the_revision_jump_at_a_restart_is_explained_in_the_wire_page_and_status_help() -> None:
    from mmd.daemon.state import RESERVE

    said = f"blocks of {RESERVE}"
    help_text = subprocess.run([*MMCTL_ARGV, "status", "--help"], capture_output=True, text=True, check=True).stdout
    page = (Path(__file__).parents[1] / "docs" / "wire.md").read_text(encoding="utf-8")
    rpc_section = page.split("\n## RPC\n", 1)[1].split("\n## ", 1)[0]
    assert said in " ".join(help_text.split()) and f"then {RESERVE + 1}" in help_text
    assert said in " ".join(rpc_section.split()) and f"then {RESERVE + 1}" in rpc_section
