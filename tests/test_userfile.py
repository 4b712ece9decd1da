"""Files a user names, written safely (issue 26): only the user's regular files, symlinks followed only inside
the home, never a FIFO, read-only refused, mode and group kept, atomic, and a concurrent writer loses nothing.

Real files, a real FIFO, a real concurrent writer process.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from mmd.core.errors import MMError
from mmd.core.userfile import read_user_file, update_user_file
from tests.concurrent_writer import rewriting

pytestmark = pytest.mark.timeout(60)  # a FIFO that blocked would hang here: the limit bounds it


def append(suffix: bytes):  # type: ignore[no-untyped-def]
    return lambda data: (data or b"") + suffix


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_a_regular_file_is_replaced_atomically_keeping_its_mode_and_a_new_one_gets_the_given_mode(home: Path) -> None:
    path = home / "AGENTS.md"
    path.write_bytes(b"# rules\n")
    os.chmod(path, 0o640)
    inode = path.stat().st_ino
    assert update_user_file(path, append(b"more\n"), home=home) is True
    assert path.read_bytes() == b"# rules\nmore\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # a new file renamed over it, never written in place
    assert update_user_file(path, lambda data: data, home=home) is False
    fresh = home / "new.json"
    assert update_user_file(fresh, lambda data: b"{}\n" if data is None else None, home=home, new_mode=0o600)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert sorted(p.name for p in home.iterdir()) == ["AGENTS.md", "new.json"]  # no temp file left


def test_a_symlink_into_the_home_is_written_through_and_stays_a_link(home: Path) -> None:
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "AGENTS.md").write_bytes(b"mine\n")
    link = home / "project" / "CLAUDE.md"
    link.parent.mkdir()
    link.symlink_to(dotfiles / "AGENTS.md")
    assert update_user_file(link, append(b"block\n"), home=home)
    assert link.is_symlink() and (dotfiles / "AGENTS.md").read_bytes() == b"mine\nblock\n"
    linked_folder = home / ".claude"  # a folder kept in the dotfiles repository
    linked_folder.symlink_to(dotfiles)
    assert update_user_file(linked_folder / "settings.json", lambda d: b"{}" if d is None else None, home=home)
    assert (dotfiles / "settings.json").read_bytes() == b"{}"


def test_a_symlink_out_of_the_home_is_refused_naming_its_target(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "etc-hostname"
    outside.write_bytes(b"buildbox\n")
    link = home / "project" / "AGENTS.md"  # a cloned repository's AGENTS.md -> /etc/hostname
    link.parent.mkdir()
    link.symlink_to(outside)
    for action in (lambda: update_user_file(link, append(b"x"), home=home), lambda: read_user_file(link, home=home)):
        with pytest.raises(MMError) as caught:
            action()
        assert caught.value.code == "E_INVALID" and f"is a symlink to {outside}, outside your home" in str(caught.value)
        assert "nothing was written" in caught.value.message
    assert outside.read_bytes() == b"buildbox\n" and link.is_symlink()
    dangling = home / "gone.md"
    dangling.symlink_to(tmp_path / "nowhere" / "x.md")
    with pytest.raises(MMError, match="which does not exist"):
        update_user_file(dangling, append(b"x"), home=home)
    assert not (tmp_path / "nowhere").exists()


def test_a_fifo_a_device_and_a_folder_are_refused_without_blocking(home: Path) -> None:
    fifo = home / "AGENTS.md"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(MMError, match=r"is a FIFO, not a regular file; nothing was written"):
        update_user_file(fifo, append(b"x"), home=home)
    assert time.monotonic() - started < 5  # no reader ever opens it: an open that waited would hang
    device = home / "null-link"
    device.symlink_to("/dev/null")
    with pytest.raises(MMError, match="which is a character device, not a regular file"):
        update_user_file(device, append(b"x"), home=home)
    (home / "folder").mkdir()
    with pytest.raises(MMError, match="is a folder, not a regular file"):
        update_user_file(home / "folder", append(b"x"), home=home)


def test_a_read_only_file_is_refused_and_left_as_it_was(home: Path) -> None:
    path = home / "settings.json"
    path.write_bytes(b'{"model": "opus"}\n')
    os.chmod(path, 0o444)
    with pytest.raises(MMError) as caught:
        update_user_file(path, append(b"x"), home=home)
    assert "is read-only (mode 0444)" in caught.value.message and "nothing was written" in caught.value.message
    assert path.read_bytes() == b'{"model": "opus"}\n' and stat.S_IMODE(path.stat().st_mode) == 0o444


@pytest.mark.skipif(os.getuid() != 0, reason="making a file another user's needs root")
def test_another_users_file_is_refused(home: Path) -> None:
    path = home / "AGENTS.md"
    path.write_bytes(b"theirs\n")
    os.chown(path, 4242, 4242)
    with pytest.raises(MMError, match="belongs to uid 4242, not to you"):
        update_user_file(path, append(b"x"), home=home)
    assert path.read_bytes() == b"theirs\n"


def test_an_edit_is_redone_on_bytes_that_changed_before_the_rename(home: Path) -> None:
    path = home / "settings.json"
    path.write_bytes(b"v1\n")
    calls: list[bytes | None] = []

    def edit(data: bytes | None) -> bytes:
        calls.append(data)
        if len(calls) == 1:  # another program writes while this edit runs
            path.with_name("other").write_bytes(b"v2 by the agent\n")
            os.replace(path.with_name("other"), path)
        return (data or b"") + b"ours\n"

    assert update_user_file(path, edit, home=home)
    assert calls == [b"v1\n", b"v2 by the agent\n"] and path.read_bytes() == b"v2 by the agent\nours\n"
    always = home / "busy.json"
    always.write_bytes(b"0")

    def racing(data: bytes | None) -> bytes:
        always.write_bytes((data or b"") + b"+")  # rewritten on every try
        return b"ours"

    with pytest.raises(MMError, match="kept changing while it was written"):
        update_user_file(always, racing, home=home)
    assert always.read_bytes() != b"ours"


def test_a_writer_rewriting_the_file_every_few_ms_loses_nothing(home: Path, tmp_path: Path) -> None:
    path = home / "settings.json"
    original = b'{\n  "counter": 0,\n  "model": "opus"\n}\n'
    path.write_bytes(original)
    with rewriting(path, tmp_path) as result:
        for i in range(40):
            key = b'  "ours": %d,\n' % i
            update_user_file(path, lambda data, key=key: data.replace(b"{\n", b"{\n" + key, 1) if data else None,
                             home=home)
            update_user_file(path, lambda data, key=key: data.replace(key, b"") if data else None, home=home)
    assert result["writes"] > 5 and result["broken"] == 0
    assert result["lost"] == 0, f"{result['lost']} of the agent's {result['writes']} writes were lost"
    final = path.read_bytes()
    assert b'"counter": %d' % result["last"] in final  # the agent's last write is the file's
