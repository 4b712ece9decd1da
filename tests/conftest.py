"""Shared test fixtures: paths to ../shared and helpers that skip visibly without it; the leak checks.

``tests/leakcheck.py`` is loaded as a plugin from here: every test is checked for processes it leaves
running, and the run for processes and temp folders left at its end (its ``spawn`` fixture starts a
process that is ended with the test).
"""

from __future__ import annotations

import compileall
import fnmatch
import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.leakcheck", "pytester"]

# Bytecode is kept, whatever the environment says: with PYTHONDONTWRITEBYTECODE=1 (set on this project's machines)
# every mmd and mmctl process the suite starts compiled the package from source (0.65 s of CPU for the daemon's
# imports on a fresh clone, 0.35 s from bytecode) and each worker rewrote every test module's asserts (~11 s).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "sessions"
"""The real DSH session logs (a ``$DSH_HOME/sessions`` layout); read-only."""
needs_samples = pytest.mark.skipif(
    not SAMPLES.is_dir(), reason=f"real DSH samples not present at {SAMPLES} (../shared beside the checkout)")


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a visible skip when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared test material is not beside this checkout")
    return path


@pytest.fixture(scope="session")
def _neutral_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cwd")


@pytest.fixture(autouse=True)
def _outside_any_project(monkeypatch: pytest.MonkeyPatch, _neutral_folder: Path) -> None:
    """Every test (and each process it starts) runs in an empty folder outside any git repository: inside a
    project folder, as this checkout is, ``mmctl`` defaults to that project's root (docs/projects.md). A test
    about projects makes its own folders and passes ``cwd``."""
    monkeypatch.chdir(_neutral_folder)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """An environment with DSH_HOME in tmp_path and no DSH_MEMORY_ROOT."""
    monkeypatch.delenv("DSH_MEMORY_ROOT", raising=False)
    home = tmp_path / "dsh-home"
    home.mkdir()
    monkeypatch.setenv("DSH_HOME", str(home))
    return dict(os.environ)


# --- daemon tests (tests/test_daemon_*.py): the real mmd in a subprocess ---------------------------


@pytest.fixture
def start_daemon(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A factory ``start_daemon(*flags, root=None, env=None, wait=True, bare=False)`` → a started DaemonProcess;
    every daemon it started is stopped (SIGTERM, then SIGKILL) at teardown."""
    from tests.test_daemon_helpers import DaemonProcess

    started: list[DaemonProcess] = []

    def start(*flags: str, root: Path | None = None, env: dict[str, str] | None = None,
              wait: bool = True, bare: bool = False) -> DaemonProcess:
        daemon = DaemonProcess(tmp_path, *flags, root=root, env=env, bare=bare)
        started.append(daemon)
        return daemon.start(wait=wait)

    yield start
    for daemon in reversed(started):
        daemon.stop()


@pytest.fixture
def daemon(start_daemon):  # type: ignore[no-untyped-def]
    """One running daemon on ``tmp_path/root`` with a 200 ms heartbeat."""
    return start_daemon("--heartbeat-ms", "200")


@pytest.fixture
def mmd(daemon):  # type: ignore[no-untyped-def]
    """The running daemon, under the name the mmctl tests use (see ``daemon``)."""
    return daemon


def pytest_configure(config: pytest.Config) -> None:
    """Compile ``mmd``, ``mmctl`` and the tests once, in the process that starts the run (before any worker or
    daemon), so the processes the tests start read bytecode and never race to write it, and each xdist worker reads
    the test modules' rewritten bytecode instead of rewriting them all (~5 s of CPU a worker on a fresh clone)."""
    if hasattr(config, "workerinput"):
        return
    for package in (REPO / "mmd", REPO / "client" / "mmctl"):
        compileall.compile_dir(package, quiet=1, workers=1)
    _compile_tests(config)


def _compile_tests(config: pytest.Config) -> None:
    """Write the assertion-rewritten bytecode pytest keeps beside each test module (``__pycache__/*-pytest-*.pyc``)
    where it is missing or stale, what a worker's collection would write, once; the helper modules get plain
    bytecode. Uses pytest's own rewriter (a private API): if it moved, each worker rewrites for itself as before."""
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
    except ImportError:
        return
    state = config.stash.get(assertstate_key, None)
    if state is None or sys.dont_write_bytecode:  # --assert=plain, or bytecode off
        return
    patterns = [*config.getini("python_files"), "conftest.py", "leakcheck.py"]  # leakcheck: a plugin, rewritten too
    for source in sorted((REPO / "tests").glob("*.py")):
        if not any(fnmatch.fnmatch(source.name, pattern) for pattern in patterns):
            compileall.compile_file(source, quiet=1)
            continue
        pyc = get_cache_dir(source) / (source.name[:-3] + PYC_TAIL)
        if _read_pyc(source, pyc) is None:
            pyc.parent.mkdir(parents=True, exist_ok=True)
            source_hash, code = _rewrite_test(source, config)
            _write_pyc(state, code, source_hash, pyc)
