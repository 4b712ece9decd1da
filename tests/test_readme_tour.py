"""The README's five-minute tour, run as written in a scratch home, each step's output checked (issue 32).

The tour is every ``sh`` block of the README's section ``## Five minutes``. Each command line (comments and blank
lines aside) is sent, as written, to one ``bash`` that lives for the whole tour, as a person's terminal would (its
``cd``, ``export`` and the background ``mmd`` carry from line to line), and it must be one of :data:`STEPS`, in that
order: a line this test does not know, or a step the README lost, fails the test naming it. Each step's check
reads what the line printed (stdout and stderr apart) and its exit code, and sometimes the files it made.

The scratch home: ``HOME``, ``TMPDIR`` (so the tour's ``mktemp -d`` lands there) and ``XDG_CONFIG_HOME`` /
``XDG_DATA_HOME`` / ``XDG_STATE_HOME`` / ``XDG_CACHE_HOME`` in ``tmp_path``; ``XDG_RUNTIME_DIR`` a short folder of
the run's temp folder (AF_UNIX socket paths must stay under 108 bytes), removed at the end; no ``DSH_HOME``,
``DSH_MEMORY_ROOT``, ``CLAUDE_CONFIG_DIR`` or ``CODEX_HOME`` of the machine's. The tour's first line activates
``.venv`` in the folder it runs in: a scratch folder whose ``.venv`` is the virtual environment running this test.

``bash`` leads a process group of its own (the ``spawn`` fixture); the ``mmd`` it starts in the background is in
that group, so both are ended when the test ends, pass or fail. The daemon reads the session log the tour writes as
it appears: the one step that depends on that (``mmctl queue list``, a read) is run again until it shows the
candidate, within the step's deadline, which only bounds a hang.

The MCP registration lines (``claude mcp add``, ``codex mcp add``) are not run here (no such agent on this machine):
``tests/test_readme.py`` starts what they register as an MCP client starts it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.leakcheck import end_tree

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
TOUR_HEADING = "## Five minutes"
STEP_DEADLINE_S = 60.0
"""How long one step may take before the test fails naming it (a bound on a hang, never a timing assumption)."""
README_MMCTL = "/home/you/.local/bin/mmctl"


def tour_lines(readme: str = README) -> list[str]:
    """The command lines of every ``sh`` block of the README's ``## Five minutes`` section, in order: each as
    written, blank lines and whole-line comments left out.

    Raises:
        AssertionError: when the README has no such section or the section no ``sh`` block.
    """
    assert f"\n{TOUR_HEADING}\n" in readme, f"the README has no {TOUR_HEADING!r} section"
    section = readme.split(f"\n{TOUR_HEADING}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
    assert blocks, f"the README's {TOUR_HEADING!r} section has no sh block"
    lines = [line for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def command_of(line: str) -> str:
    """``line`` without its trailing comment (a ``#`` after two or more spaces), as :data:`STEPS` names it."""
    return re.split(r"\s{2,}#\s", line, maxsplit=1)[0].rstrip()


@dataclass
class Result:
    """What one line printed: ``rc`` its exit code (``$?``), ``out`` its stdout, ``err`` its stderr."""

    rc: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"exit {self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


class Shell:
    """One ``bash`` reading the tour line by line from a FIFO (its stdin is ``/dev/null``, so no command can eat
    the lines that follow), its stdout and stderr in two files read up to a marker each line ends with."""

    def __init__(self, spawn: Callable[..., subprocess.Popen[bytes]], folder: Path, cwd: Path,
                 env: dict[str, str]) -> None:
        self.folder, self.count = folder, 0
        fifo, self.out_path, self.err_path = folder / "steps", folder / "stdout", folder / "stderr"
        os.mkfifo(fifo)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = spawn(["bash", "--noprofile", "--norc", str(fifo)], stdin=subprocess.DEVNULL, stdout=out,
                              stderr=err, cwd=cwd, env=env)
        self.writer = self._open_writer(fifo)
        self.read_out = self.read_err = 0

    def _open_writer(self, fifo: Path) -> int:
        """The FIFO's write end, once bash has opened its read end (ENXIO until then)."""
        deadline = time.monotonic() + STEP_DEADLINE_S
        while True:
            try:
                return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno != errno.ENXIO or time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError(f"bash did not open the tour's FIFO: {error}") from None
            time.sleep(0.01)

    def run(self, line: str) -> Result:
        """Run ``line`` as written; what it printed once its marker lines come (within :data:`STEP_DEADLINE_S`)."""
        self.count += 1
        mark = f"@@tour-{self.count}@@"
        os.write(self.writer, f"{line}\n__rc=$?; printf '\\n{mark} %s\\n' \"$__rc\"; printf '\\n{mark}\\n' >&2\n"
                 .encode())
        deadline = time.monotonic() + STEP_DEADLINE_S
        pattern = re.compile(rf"\n{re.escape(mark)} (\d+)\n")
        while True:
            out = self.out_path.read_bytes()[self.read_out:].decode(errors="replace")
            err = self.err_path.read_bytes()[self.read_err:].decode(errors="replace")
            found, ended = pattern.search(out), f"\n{mark}\n" in err
            if found and ended:
                break
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"the step {line!r} did not end within {STEP_DEADLINE_S:.0f} s (bash "
                                     f"{'exited' if self.proc.poll() is not None else 'runs'})\n--- stdout\n{out}"
                                     f"\n--- stderr\n{err}")
            time.sleep(0.02)
        err_end = err.index(f"\n{mark}\n")
        self.read_out += len(out[:found.end()].encode())
        self.read_err += len(err[:err_end + len(mark) + 2].encode())
        return Result(int(found.group(1)), out[:found.start()].strip("\n"), err[:err_end].strip("\n"))

    def close(self) -> None:
        """End bash, its group (a daemon the tour left running, on a failed step) and what it started, while bash
        still lives to lead them (:func:`tests.leakcheck.end_tree`), then the FIFO."""
        end_tree(self.proc)
        os.close(self.writer)


@dataclass
class Tour:
    """The tour's state as the steps find it: the shell, the scratch paths, what earlier steps printed."""

    shell: Shell
    home: Path
    runtime: Path
    dsh_home: Path = Path()
    key: str = ""
    said: dict[str, Any] = field(default_factory=dict)

    def probe(self, line: str) -> str:
        """A line of the test's own, run in the tour's shell (its cwd and variables): its stdout; it must exit 0."""
        done = self.shell.run(line)
        assert done.rc == 0, f"probe {line!r}: {done}"
        return done.out

    @property
    def log(self) -> str:
        """The daemon's log (the tour sends its stderr to ``$DSH_HOME/mmd.log``)."""
        path = self.dsh_home / "mmd.log"
        return path.read_text(errors="replace") if path.is_file() else "(no mmd.log)"


def _words(text: str) -> list[list[str]]:
    """``text``'s lines, each split into words (the table columns' spacing is the CLI's business)."""
    return [line.split() for line in text.splitlines()]


def _ok(result: Result, tour: Tour) -> None:
    assert result.rc == 0, str(result)


def activate(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    for name in ("mmctl", "mmd"):  # this test's own virtual environment (as its activate script names it)
        found = tour.probe(f"command -v {name}")
        assert Path(found).resolve() == (Path(sys.prefix) / "bin" / name).resolve(), found
        tour.said[name] = found


def scratch_home(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    home, cwd = tour.probe('printf "%s\\n" "$DSH_HOME" "$PWD"').splitlines()
    tour.dsh_home = Path(home)
    assert home == cwd and tour.dsh_home.parent == tour.home.parent / "tmp", (home, cwd)
    assert not any(tour.dsh_home.iterdir())


def start_daemon(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert result.out == result.err == ""  # the daemon's log goes to mmd.log, not to the terminal
    tour.said["pid"] = int(tour.probe("echo $!"))  # the background job: waited for by its pid once it is killed


def wait_for_daemon(result: Result, tour: Tour) -> None:
    assert result.rc == 0, f"{result}\n--- mmd.log\n{tour.log}"
    assert "daemon.ready" in tour.log and f"root={tour.dsh_home / 'memory'}" in tour.log, tour.log
    assert (tour.dsh_home / "memory" / "MEMORY.md").is_file()


def write_note(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert result.out == "created mm://local/deploy-region", str(result)
    assert "cause=write added=1" in tour.log  # written by the daemon, not on the files beside it


def read_note(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    lines = result.out.splitlines()
    assert lines[0] == "# deploy-region" and "summary: Deploy region" in lines and "tags: ops" in lines, str(result)
    assert lines[-1] == "We deploy to us-east-1.", str(result)


def search(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert result.out.splitlines()[0].startswith("1 match(es)"), str(result)
    assert "- deploy-region (mm://local/deploy-region): We deploy to us-east-1." in result.out, str(result)


def refused_write(result: Result, tour: Tour) -> None:
    assert result.rc == 1 and result.out == "", str(result)
    assert "exceeds its write budget" in result.err and "body 33/10 chars (23 over)" in result.err, str(result)
    assert "`body 33/10 chars (23 over)`" in " ".join(README.split())  # the figures the README shows
    note = (tour.dsh_home / "memory" / "memories" / "deploy-region.md").read_text(encoding="utf-8")
    assert "us-east-1" in note and "eu-west-1" not in note  # nothing written


def status(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    rows = {words[0]: words[1:] for words in _words(result.out) if words}
    assert rows["revision"] == ["2"], str(result)  # 1 at start, 2 after the one write; the refused one made none
    assert rows["root"] == [str(tour.dsh_home / "memory")], str(result)
    assert rows["queue"][:2] == ["pending", "0"] and rows["ingest"][:2] == ["running", "yes"], str(result)
    assert rows["claude-code"][:1] == ["waiting"] and rows["codex"][:1] == ["off"], str(result)


def new_project(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert tour.probe("pwd") == str(tour.dsh_home / "api") and (tour.dsh_home / "api" / ".git").is_dir()


def project_write(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    found = re.fullmatch(r"created mm://(api-[0-9a-f]{8})/build", result.out)
    assert found, str(result)
    tour.key = found.group(1)
    assert (tour.dsh_home / "memory" / "projects" / tour.key / "memories" / "build.md").is_file()


def user_write(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert result.out == "created mm://local/shell", str(result)
    assert (tour.dsh_home / "memory" / "memories" / "shell.md").is_file()


def scoped_list(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert _words(result.out) == [["build"], ["deploy-region", "[user]"], ["shell", "[user]"]], str(result)


def project_list(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    words = _words(result.out)
    assert ["user", "2", "notes"] == words[0][:3], str(result)
    assert [tour.key, "1", "notes"] in [w[:3] for w in words], str(result)
    assert ["folder", str(tour.dsh_home / "api")] in words, str(result)


def log_folder(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    log = Path(tour.probe('printf "%s" "$log"'))
    assert log.parent.is_dir() and log.parent.parent == tour.dsh_home / "claude", log
    tour.said["log"] = log


def session_log(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    record = json.loads(tour.said["log"].read_text(encoding="utf-8"))
    assert record["cwd"] == str(tour.dsh_home / "api") and record["type"] == "user", record
    tour.said["rule"] = record["message"]["content"]


def queue_list(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    words = _words(result.out)
    assert words[0] == ["1", "of", "1", "pending", "candidate(s):"], str(result)
    row = next(w for w in words[1:] if w and w[0] == "1")
    assert row[2:] == ["1", "rule", "person", tour.key, "+build"] and float(row[1]) >= 0.4, str(result)
    assert tour.said["rule"] in result.out, str(result)


def queue_shows(result: Result) -> bool:
    """The daemon has read the session log: the queue lists its candidate (else the step is run again)."""
    return result.rc == 0 and "pending candidate(s):" in result.out


def accept(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert result.out.splitlines()[0] == f"accepted 1: updated mm://{tour.key}/build", str(result)


def read_accepted(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert f"root: project {tour.key}" in result.out.splitlines(), str(result)
    assert result.out.endswith(f"Build with make.\n\n{tour.said['rule']}"), str(result)


def stop_daemon(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    # SIGTERM: a clean exit (by pid: bash forgets the job %1 once it has ended, its status it keeps)
    assert tour.probe(f"wait {tour.said['pid']}; echo $?") == "0", tour.log
    assert "daemon.stopped" in tour.log and tour.probe("pwd") == str(tour.dsh_home)
    assert not list(tour.runtime.rglob("*.rpc")) and not list(tour.runtime.rglob("*.pub"))  # sockets removed


def init_own_root(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    assert result.out == f"initialized memory root at {tour.home / '.dsh' / 'memory'} (MEMORY.md + memories/)"


def _hook_runs(command: str, tour: Tour, event: str) -> None:
    """The installed hook, run as the agent runs it at a session's start: it prints the guide as context."""
    given = json.dumps({"session_id": "tour", "hook_event_name": event, "source": "startup",
                        "cwd": str(tour.dsh_home)})
    env = {**os.environ, "HOME": str(tour.home), "XDG_RUNTIME_DIR": str(tour.runtime)}
    done = subprocess.run(shlex.split(command), input=given, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Memory here outlasts this session"), context


def claude_hooks(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    command = f"{tour.said['mmctl']} inject --format claude-hook --root {tour.home / '.dsh' / 'memory'}"
    assert result.out.splitlines()[0] == f"added SessionStart, UserPromptSubmit hooks: {command}", str(result)
    hooks = json.loads((tour.home / ".claude" / "settings.json").read_text(encoding="utf-8"))["hooks"]
    assert {h["command"] for event in ("SessionStart", "UserPromptSubmit") for entry in hooks[event]
            for h in entry["hooks"]} == {command}
    _hook_runs(command, tour, "SessionStart")


def codex_hooks(result: Result, tour: Tour) -> None:
    _ok(result, tour)
    command = f"{tour.said['mmctl']} inject --format codex-hook --root {tour.home / '.dsh' / 'memory'}"
    assert result.out.splitlines()[0] == f"added SessionStart, UserPromptSubmit hooks: {command}", str(result)
    assert command in (tour.home / ".codex" / "hooks.json").read_text(encoding="utf-8")
    assert "codex_hooks = true" in (tour.home / ".codex" / "config.toml").read_text(encoding="utf-8")
    _hook_runs(command, tour, "SessionStart")


MCP_ARGV = [README_MMCTL, "mcp", "--root", "/home/you/.dsh/memory"]
"""What both registration lines start (``tests/test_readme.py`` runs it as an MCP client would)."""


def not_run(line: str) -> None:
    """An MCP registration: not run here; it must register ``mmctl mcp`` by its absolute path with a root."""
    assert shlex.split(line.split(" -- ", 1)[1]) == MCP_ARGV, line


@dataclass(frozen=True)
class Step:
    """A tour line this test knows: ``command`` exactly as the README writes it (its comment aside), and what it
    must print (``check``); ``again_until``: a read run again until it holds (the daemon reading a log)."""

    command: str
    check: Callable[[Result, Tour], None] | None
    again_until: Callable[[Result], bool] | None = None


LOG_LINE = ("echo '{\"type\":\"user\",\"sessionId\":\"s1\",\"uuid\":\"u1\",\"cwd\":\"'$PWD'\",\"message\":{\"content\":"
            "\"From now on, always run make lint before you commit.\"}}' >$log")
STEPS = (
    Step(". .venv/bin/activate", activate),
    Step("export DSH_HOME=$(mktemp -d) && cd $DSH_HOME", scratch_home),
    Step("mmd --source claude-code=$DSH_HOME/claude --no-source codex 2>mmd.log &", start_daemon),
    Step("until mmctl status >/dev/null 2>&1; do sleep 0.1; done", wait_for_daemon),
    Step('mmctl write deploy-region --content "We deploy to us-east-1." --summary "Deploy region" --tags ops',
         write_note),
    Step("mmctl read deploy-region", read_note),
    Step("mmctl search deploy", search),
    Step('mmctl write deploy-region --content "We deploy to eu-west-1 since May." --budget 10', refused_write),
    Step("mmctl status", status),
    Step("git init -q api && cd api", new_project),
    Step('mmctl write build --content "Build with make." --summary "How to build"', project_write),
    Step('mmctl write shell --content "I use fish." --user', user_write),
    Step("mmctl list", scoped_list),
    Step("mmctl project list", project_list),
    Step("log=$DSH_HOME/claude/api/11111111-2222-4333-8444-555555555555.jsonl && mkdir -p ${log%/*}", log_folder),
    Step(LOG_LINE, session_log),
    Step("mmctl queue list", queue_list, again_until=queue_shows),
    Step("mmctl queue accept 1", accept),
    Step("mmctl read build", read_accepted),
    Step("cd .. && kill %1", stop_daemon),
    Step("mkdir -p ~/.dsh && mmctl init --root ~/.dsh/memory", init_own_root),
    Step("mmctl hooks install claude-code --root ~/.dsh/memory", claude_hooks),
    Step("mmctl hooks install codex --root ~/.dsh/memory", codex_hooks),
    Step("claude mcp add --scope user memory -- /home/you/.local/bin/mmctl mcp --root /home/you/.dsh/memory", None),
    Step("codex mcp add memory -- /home/you/.local/bin/mmctl mcp --root /home/you/.dsh/memory", None),
)
"""Every line of the tour, in the README's order, with what it must print."""


def _scratch_env(tmp_path: Path, runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (
        "DSH_HOME", "DSH_MEMORY_ROOT", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "VIRTUAL_ENV", "NOTIFY_SOCKET",
        "MMCTL_NO_DAEMON", "MMCTL_NOW")}
    env.update(HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path / "tmp"), XDG_RUNTIME_DIR=str(runtime),
               **{f"XDG_{name}_HOME": str(tmp_path / "xdg" / name.lower()) for name in ("CONFIG", "DATA", "STATE",
                                                                                        "CACHE")})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "client")])  # this checkout's code, installed or not
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    return env


def test_the_tour_knows_every_line_of_the_readme_and_the_readme_every_step() -> None:
    commands = [command_of(line) for line in tour_lines()]
    known = [step.command for step in STEPS]
    unknown = [c for c in commands if c not in known]
    assert not unknown, f"the README's tour has lines this test does not know (add each to STEPS): {unknown}"
    assert commands == known, "the README's tour and STEPS differ in order or a step is gone:\n" + "\n".join(
        f"{'=' if a == b else '!'} {a!r} / {b!r}" for a, b in zip(commands + [""] * len(known), known, strict=False))


def test_a_line_the_tour_does_not_know_fails_by_name() -> None:
    changed = README.replace("mmctl search deploy\n", "mmctl search deploy --limit 3\n", 1)
    commands = [command_of(line) for line in tour_lines(changed)]
    assert "mmctl search deploy --limit 3" in commands and commands != [s.command for s in STEPS]


def test_the_five_minute_tour_runs_as_written(tmp_path: Path, spawn: Callable[..., Any]) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tour activates .venv: run the tests from a virtual environment, as the set-up line makes")
    steps = {step.command: step for step in STEPS}
    lines = tour_lines()
    assert [command_of(line) for line in lines] == list(steps), "see test_the_tour_knows_every_line_of_the_readme…"
    runtime = Path(tempfile.mkdtemp(prefix="mmdrt"))
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    shell = Shell(spawn, tmp_path, checkout, _scratch_env(tmp_path, runtime))
    tour = Tour(shell, tmp_path / "home", runtime)
    try:
        for line in lines:
            step = steps[command_of(line)]
            if step.check is None:
                not_run(line)
                continue
            result = shell.run(line)
            deadline = time.monotonic() + STEP_DEADLINE_S
            while step.again_until is not None and not step.again_until(result) and time.monotonic() < deadline:
                time.sleep(0.1)
                result = shell.run(line)
            try:
                step.check(result, tour)
            except AssertionError as error:
                raise AssertionError(f"the tour's step {line!r}: {error}\n{result}") from None
    finally:
        shell.close()
        shutil.rmtree(runtime, ignore_errors=True)
