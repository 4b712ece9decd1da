"""mmd.sources.dsh.layout: which files under the sessions folder are read, and whose session they are.

Guards dsh-session-format.md §1 (paths, generations, escaping) and §8 (the
read-only liveness probe): only the newest generation of a session directory
counts, junk next to the logs is never read, and the lock is never taken.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mmd.sources
from mmd.sources.dsh.header import read_header
from mmd.sources.dsh.layout import (
    LogKind,
    classify_path,
    decode_segment,
    default_sessions_dir,
    encode_segment,
    is_session_live,
    newest_generation,
    parse_generation,
    project_dir_name,
    project_key,
    scan_sessions,
    session_identity,
)

from .conftest import SAMPLES, needs_samples

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"

HEADER = b'{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'


def touch(path: Path, data: bytes = HEADER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_public_names_are_exported_and_the_package_never_imports_the_daemon() -> None:
    for name in mmd.sources.__all__:
        assert hasattr(mmd.sources, name), name
    code = "import sys, mmd.sources; print(any(m.startswith('mmd.daemon') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[1])
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("session.jsonl", (0, False)),
        ("session.jsonl.zstd", (0, True)),
        ("session.v1.jsonl", (1, False)),
        ("session.v4.jsonl.zstd", (4, True)),
        ("session.v12.jsonl", (12, False)),
        ("session.v0.jsonl", None),
        ("session.v01.jsonl", None),
        ("session.v4.jsonl.zstd.0123456789ab.tmp", None),
        ("session.v4.json", None),
        ("xsession.jsonl", None),
    ],
)
def test_generation_names_follow_the_dsh_pattern(name: str, expected: tuple[int, bool] | None) -> None:
    assert parse_generation(name) == expected


def test_only_the_highest_generation_of_a_directory_is_newest(tmp_path: Path) -> None:
    d = tmp_path / "--p--" / "session-1"
    names = ["session.jsonl", "session.v2.jsonl", "session.v3.jsonl", "session.v10.jsonl.zstd"]
    for name in names:
        touch(d / name)
    assert newest_generation(d) == d / "session.v10.jsonl.zstd"
    infos = {name: classify_path(d / name, tmp_path) for name in names}
    assert all(info.kind is LogKind.DSH for info in infos.values())
    assert [name for name, info in infos.items() if info.newest] == ["session.v10.jsonl.zstd"]
    assert infos["session.v10.jsonl.zstd"].generation == 10
    assert infos["session.v10.jsonl.zstd"].compressed
    assert not infos["session.v3.jsonl"].wanted


def test_same_generation_plain_and_zstd_prefers_the_most_recent_then_zstd(tmp_path: Path) -> None:
    d = tmp_path / "--p--" / "s"
    plain, packed = touch(d / "session.v4.jsonl"), touch(d / "session.v4.jsonl.zstd")
    os.utime(plain, ns=(10**18, 10**18))
    os.utime(packed, ns=(10**18, 10**18))
    assert newest_generation(d) == packed
    os.utime(plain, ns=(2 * 10**18, 2 * 10**18))
    assert newest_generation(d) == plain


def test_junk_next_to_logs_is_ignored_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    d = root / "--home-x--" / "session-1"
    touch(d / "session.v4.jsonl")
    outside = touch(tmp_path / "elsewhere" / "leak.md", b"secret")
    os.symlink(outside, d / "link-out.md")
    os.symlink(d / "session.v4.jsonl", d / "notes-link.jsonl")
    os.mkfifo(d / "pipe.jsonl")
    (d / "folder.md").mkdir()
    own = root / "--home-x--" / "mmd-state"
    cases = {
        d / "session.lock": "lock",
        d / "session.v4.jsonl.zstd.0123456789ab.tmp": "temp",
        d / "notes.md~": "backup",
        d / "notes.md.bak": "backup",
        d / "notes.md.orig": "backup",
        d / ".session.v4.jsonl.swp": "hidden",
        d / ".hidden.md": "hidden",
        root / ".mmd" / "cursor.json": "hidden",
        own / "state.json": "own",
        d / "link-out.md": "outside",
        d / "pipe.jsonl": "not-a-file",
        d / "folder.md": "not-a-file",
        d / "readme.txt": "unsupported",
        d / "gone.md": "missing",
        tmp_path / "elsewhere" / "leak.md": "outside",
    }
    for path in cases:
        if not path.exists() and path.name != "gone.md":
            touch(path, b"x")
    for path, reason in cases.items():
        info = classify_path(path, root, exclude=[own])
        assert (info.kind, info.reason) == (LogKind.IGNORED, reason), path
    for name in ("notes.md", "data.json", "history.jsonl"):
        assert classify_path(touch(d / name, b"{}"), root).kind is LogKind.OTHER
    assert classify_path(d / "notes-link.jsonl", root).kind is LogKind.OTHER


def test_scan_lists_newest_generations_and_other_logs_only(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES, root)
    extra = root / "--home-test-fork--" / "fork-of-fork"
    touch(extra / "session.v2.jsonl.0123456789ab.tmp")
    touch(root / "notes.md", b"# notes\n")
    touch(root / ".cache" / "session.jsonl")
    found = [(p.path.relative_to(root).as_posix(), p.kind.value) for p in scan_sessions(root)]
    assert found == [
        ("--home-test-decoys--/session-decoys/session.v4.jsonl", "dsh"),
        ("--home-test-fork--/fork-of-fork/session.v2.jsonl", "dsh"),
        ("--home-test-legacy--/session-v0-legacy/session.jsonl", "dsh"),
        ("notes.md", "other"),
    ]
    assert scan_sessions(tmp_path / "absent") == []


@needs_samples
def test_scan_of_the_real_samples_finds_their_four_logs() -> None:
    found = [p.path.relative_to(SAMPLES).as_posix() for p in scan_sessions(SAMPLES)]
    assert found == [
        "--Users-mei-src-infra--/session-5a1e8c3d-7b20-4c9e-a6f1-0d8b3e2c9f57/session.jsonl",
        "--dsh-workspace--/preview-architecture-review/session.v3.jsonl",
        "--home-dev-work-payments-api--/session-3f9c2a71-5b8e-4d0a-9c61-2e7f4b8d1a05/session.v4.jsonl",
        "_no-cwd/legacy-sdk-history/session.v4.jsonl",
    ]


@needs_samples
def test_real_sample_folders_match_their_headers_through_the_escaping() -> None:
    for info in scan_sessions(SAMPLES):
        header = read_header(info.path)
        assert header is not None
        assert project_dir_name(header.get("cwd")) == info.path.parent.parent.name
        assert decode_segment(info.path.parent.name) == header["id"]
        assert encode_segment(header["id"]) == info.path.parent.name


def test_project_key_and_segment_escaping_round_trip() -> None:
    assert project_dir_name("/home/dev/work/payments-api") == "--home-dev-work-payments-api--"
    assert project_dir_name(None) == "_no-cwd"
    assert project_key("C:\\Users\\mei//src") == "C-Users-mei-src"
    assert project_key("/home/é~x") == "home-~00E9~007Ex"
    assert len(project_key("/" + "a" * 400)) == 251
    for raw in ("session-1.2", "id with space/é", "emoji-\U0001f600", "~tilde"):
        encoded = encode_segment(raw)
        assert "." not in encoded and " " not in encoded
        assert decode_segment(encoded) == raw
    assert encode_segment("\U0001f600") == "~D83D~DE00"


def test_default_sessions_dir_treats_blank_dsh_home_as_unset(tmp_path: Path) -> None:
    assert default_sessions_dir(None, tmp_path) == tmp_path / ".dsh" / "sessions"
    assert default_sessions_dir("   ", tmp_path) == tmp_path / ".dsh" / "sessions"
    assert default_sessions_dir(" /opt/dsh ", tmp_path) == Path("/opt/dsh/sessions")


def test_identity_comes_from_the_header_or_else_the_path(tmp_path: Path) -> None:
    d = tmp_path / "--home-a--" / "session~002Ev1"
    good = touch(d / "session.v4.jsonl",
                 b'{"type":"session","version":4,"id":"real-id","cwd":"/srv/b","isSeeded":false}\n')
    ident = session_identity(good)
    assert (ident.session_id, ident.project_key, ident.cwd, ident.source) == ("real-id", "srv-b", "/srv/b", "header")
    torn = touch(d / "session.v5.jsonl", b'{"type":"session","version":4,"id":"torn')
    ident = session_identity(torn)
    assert (ident.session_id, ident.project_key, ident.cwd, ident.source) == ("session.v1", "home-a", None, "path")
    no_cwd = touch(tmp_path / "_no-cwd" / "x" / "session.jsonl", b"garbage\n")
    assert session_identity(no_cwd).project_key is None


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks on this platform")
def test_liveness_follows_a_flock_held_by_another_process_and_never_takes_it(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    assert is_session_live(d) is False  # no lock file at all
    lock = d / "session.lock"
    lock.touch()
    assert is_session_live(d) is False
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os, sys
            fd = os.open({str(lock)!r}, os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("locked", flush=True)
            sys.stdin.readline()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert is_session_live(d) is True
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    assert is_session_live(d) is False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the probe left no lock behind
    finally:
        os.close(fd)


def test_a_sessions_folder_reached_through_a_symlink_still_classifies(tmp_path: Path) -> None:
    real_root = tmp_path / "real" / "sessions"
    log = touch(real_root / "--p--" / "s" / "session.v4.jsonl")
    (tmp_path / "home").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "home" / ".dsh")
    via_link = tmp_path / "home" / ".dsh" / "sessions"
    assert classify_path(log, via_link).kind is LogKind.DSH  # resolved path, folder given through the link
    assert classify_path(via_link / "--p--" / "s" / "session.v4.jsonl", real_root).newest
