"""Running the ``git`` command for a memory root.

Owns: finding ``git`` on ``PATH``, running it in the root with an environment
cleaned of the variables that would point it at another repository
(``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE``, … — set when mmd itself runs
inside a git hook), and turning its failures into :class:`GitError` values.
The user's configuration, hooks and credentials apply: nothing here overrides
them, except that git never prompts on a terminal (``GIT_TERMINAL_PROMPT=0``),
since a daemon has none, and speaks untranslated (``LC_ALL=C``), since some of
its messages are read. Git runs in a session of its own with its output in temporary
files, not pipes: a process a hook leaves behind cannot hold a call up, and a call that
outlives its time limit (:data:`LOCAL_TIMEOUT_S`, or :data:`NETWORK_TIMEOUT_S` for fetch and push)
is killed with everything it started. Never does: merges, history, or any decision.

Errors::

    GitError            git ran and failed (``returncode``, ``stderr``)
    └── GitMissing      no ``git`` executable on PATH
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..children import kill_group

__all__ = ["LOCAL_TIMEOUT_S", "NETWORK_TIMEOUT_S", "Git", "GitError", "GitMissing"]

NETWORK_TIMEOUT_S = 120.0
"""Longest a fetch or push may take, in seconds, before it is reported as failed."""
LOCAL_TIMEOUT_S = 300.0
"""Longest any other git call may take, in seconds (a commit's hooks included), before it is killed and
reported as failed: a hook that hangs costs one failed commit, never the worker thread."""

_SCRUBBED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY",
             "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES")


class GitError(Exception):
    """Raised by :meth:`Git.run` when git exits non-zero (or times out: ``returncode`` -1).

    Attributes:
        args_: the git arguments (after ``git``).
        returncode: the exit status.
        stderr: git's message, stripped.
    """

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(self.args_[:3])} failed ({returncode}): {self.stderr or 'no message'}")


class GitMissing(GitError):
    """Raised by :class:`Git` when no ``git`` executable is on ``PATH``."""

    def __init__(self) -> None:
        super().__init__([], 127, "git is not installed or not on PATH: mmd's git history and sync need it")

    def __str__(self) -> str:
        return self.stderr


class Git:
    """Runs ``git`` with the memory root as its working directory.

    Args:
        root: the folder git runs in (``-C``).
        env: the environment to start from (default ``os.environ``); the repository-locating
            variables listed in the module docstring are removed from it.
        timeout_s: the time limit of a call that names none, in seconds (:data:`LOCAL_TIMEOUT_S`).
        alone: git looks for the repository in ``root`` only, never above it (``GIT_CEILING_DIRECTORIES`` is its
            parent): with the root's ``.git`` gone, a call fails ("not a git repository") instead of committing
            to, or pushing, a repository that holds the root (a dotfiles repository around ``~/.dsh``).

    Raises:
        GitMissing: if ``git`` is not on ``PATH``.
    """

    def __init__(self, root: Path, env: Mapping[str, str] | None = None, timeout_s: float = LOCAL_TIMEOUT_S,
                 *, alone: bool = False) -> None:
        self.timeout_s = timeout_s
        self._abortable: set[subprocess.Popen[bytes]] = set()
        self._guard = threading.Lock()
        exe = shutil.which("git", path=(env or os.environ).get("PATH"))
        if exe is None:
            raise GitMissing()
        self.exe = exe
        self.root = Path(root)
        base = dict(os.environ if env is None else env)
        for name in _SCRUBBED:
            base.pop(name, None)
        base["GIT_TERMINAL_PROMPT"] = "0"
        # git's messages are matched ("nothing to commit", "couldn't find remote ref"): untranslated.
        base["LC_ALL"] = "C"
        if alone:
            base["GIT_CEILING_DIRECTORIES"] = os.path.dirname(os.path.realpath(self.root))
        self.env = base

    def run(self, *args: str, check: bool = True, input: bytes | None = None, env: Mapping[str, str] | None = None,
            timeout_s: float | None = None, abortable: bool = False) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>`` in the root and return the finished process (stdout/stderr as bytes).

        Args:
            check: raise :class:`GitError` on a non-zero exit.
            input: bytes for stdin.
            env: extra variables for this call.
            timeout_s: kill git, and whatever it started, after this many seconds (default:
                the instance's :attr:`timeout_s`).
            abortable: :meth:`abort` may kill it (a fetch or push: safe to cut, retried later).

        Raises:
            GitError: if git times out (``returncode`` -1, whatever ``check`` says), cannot be
                started, or (with ``check``) fails.
        """
        full_env = self.env if env is None else {**self.env, **env}
        limit = self.timeout_s if timeout_s is None else timeout_s
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            if input:
                stdin.write(input)
                stdin.seek(0)
            try:
                proc = subprocess.Popen([self.exe, *args], cwd=self.root, env=full_env, stdin=stdin, stdout=out,
                                        stderr=err, start_new_session=True)
            except OSError as error:
                raise GitError(args, -1, str(error)) from error
            if abortable:
                with self._guard:
                    self._abortable.add(proc)
            try:
                code = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                # not reaped yet, so its process group's id cannot have been given to another group
                kill_group(proc)
                proc.wait()
                err.seek(0)
                raise GitError(args, -1, f"timed out after {limit:g} s: {_text(err.read())}") from None
            finally:
                with self._guard:
                    self._abortable.discard(proc)
            out.seek(0)
            err.seek(0)
            done = subprocess.CompletedProcess([self.exe, *args], code, out.read(), err.read())
        if check and done.returncode != 0:
            raise GitError(args, done.returncode, _text(done.stderr) or _text(done.stdout))
        return done

    def abort(self) -> int:
        """Kill the running calls started with ``abortable`` (and whatever they started), from any thread: a
        stopping daemon does not wait for a fetch that hangs. Returns how many were killed; each fails as
        git killed by a signal (``returncode`` -9)."""
        with self._guard:
            running = [p for p in self._abortable if p.returncode is None]
            for proc in running:
                kill_group(proc)
        return len(running)

    def out(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """stdout of ``git <args>`` decoded as UTF-8, trailing newline removed; raises as :meth:`run`."""
        return self.run(*args, env=env).stdout.decode("utf-8", "replace").rstrip("\n")

    def ok(self, *args: str) -> bool:
        """Whether ``git <args>`` exits 0."""
        return self.run(*args, check=False).returncode == 0

    def config_get(self, key: str) -> str | None:
        """``git config --get key`` or None when unset."""
        done = self.run("config", "--get", key, check=False)
        return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data
