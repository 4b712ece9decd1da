"""``mmd`` on a root it cannot use says which, where, why and the fix, in one line (issue 10).

The read-only cases mount a small tmpfs and remount it read-only (``mount -o remount,ro``): the tests run
as root, which ignores permission bits but not a read-only file system. Where mounting is refused (no
privilege, no ``mount``), they skip and say so.
"""

from __future__ import annotations

import io
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmctl.cli.main import main

from mmd.daemon.failures import startup_failure
from tests.test_daemon_helpers import DaemonProcess

EXIT_FAILURE = 1
FIX = "mmd keeps its lock and state there: remount it read-write, or give a root on a writable file system (--root)"


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/ro``: a tmpfs holding an initialized memory root ``root`` and its ``.mmd/``, then remounted
    read-only; unmounted at teardown."""
    mount = tmp_path / "ro"
    mount.mkdir()
    try:
        done = _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount))
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"cannot mount a tmpfs here ({error}): the read-only root is not tested")
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs was refused ({done.stderr.strip()}): the read-only root is not tested")
    try:
        root = mount / "root"
        (root / "memories").mkdir(parents=True)
        (root / ".mmd").mkdir()
        (root / "MEMORY.md").write_text("# MEMORY.md\n\n> mm-spec: v1\n> mm-id: local\n")
        remounted = _mount("-o", "remount,ro", str(mount))
        if remounted.returncode != 0:
            pytest.skip(f"remounting read-only was refused ({remounted.stderr.strip()}): not tested")
        yield mount
    finally:
        _mount("-o", "remount,rw", str(mount))
        subprocess.run(["umount", str(mount)], capture_output=True, timeout=30, check=False)


def _tree(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes() if p.is_file() else b"/" for p in sorted(top.rglob("*"))}


def _run_mmd(tmp_path: Path, root: Path) -> tuple[int, str]:
    daemon = DaemonProcess(tmp_path, root=root)
    try:
        daemon.start(wait=False)
        assert daemon.proc is not None
        code = daemon.proc.wait(timeout=60)
        return code, daemon.stderr()
    finally:
        daemon.stop()  # its runtime folder too


def test_mmd_on_a_read_only_root_names_the_state_database_and_the_fix(read_only: Path, tmp_path: Path) -> None:
    root = read_only / "root"
    before = _tree(read_only)
    code, err = _run_mmd(tmp_path, root)
    assert code == EXIT_FAILURE, err
    line = f"mmd: cannot open the state database under {root}/.mmd: read-only file system; {FIX}"
    assert line in err.splitlines(), err
    assert "Traceback" not in err and "Errno" not in err
    assert _tree(read_only) == before


def test_mmd_cannot_create_a_root_on_a_read_only_file_system(read_only: Path, tmp_path: Path) -> None:
    root = read_only / "new" / "root"
    code, err = _run_mmd(tmp_path, root)
    assert code == EXIT_FAILURE, err
    assert f"mmd: cannot create the memory root {root}: read-only file system; {FIX}" in err.splitlines(), err
    assert not root.exists()


def test_sqlite_saying_only_unable_to_open_is_told_by_the_file_system(read_only: Path) -> None:
    """SQLite's error carries no errno: the file system under the state folder is asked."""
    root = read_only / "root"
    try:
        sqlite3.connect(root / ".mmd" / "state.db").execute("CREATE TABLE t (x)")
    except sqlite3.Error as error:
        refused: sqlite3.Error = error
    else:  # pragma: no cover - a read-only tmpfs refuses the file
        pytest.fail("sqlite wrote on a read-only file system")
    assert startup_failure(refused, root) == \
        f"cannot open the state database under {root}/.mmd: read-only file system; {FIX}"


def test_mmd_on_a_root_that_is_a_file_says_so(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.write_text("not a folder\n")
    code, err = _run_mmd(tmp_path, root)
    assert code == EXIT_FAILURE, err
    assert f"mmd: the memory root {root} is a file, not a folder: give a folder (--root), or move the file away" \
        in err.splitlines(), err
    assert root.read_text() == "not a folder\n"


def test_another_startup_error_keeps_its_own_words(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    assert startup_failure(OSError(98, "Address already in use"), root) == "[Errno 98] Address already in use"


def test_mmctl_writes_on_a_read_only_root_name_the_file_and_the_fix(read_only: Path, tmp_path: Path) -> None:
    root = read_only / "root"
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path / "run"), "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "MMCTL_NO_DAEMON": "1"}
    before = _tree(read_only)
    for argv in (["write", "t", "--content", "x"], ["delete", "t"]):
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, "--root", str(root)], env=env, stdout=out, stderr=err) == 1
        assert err.getvalue().splitlines() == [
            f"mmctl: open {root}/.mmd/lock failed: Read-only file system",
            f"mmctl: the memory root {root} (from --root) is on a read-only file system: remount it read-write or "
            "give another --root"], argv
    assert _tree(read_only) == before
