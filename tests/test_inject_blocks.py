"""The memory block of AGENTS.md / CLAUDE.md: every byte outside the markers kept (issue 14); markers in a fenced
example are not ours, and the file is written only as a file a user names may be (issue 26)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mmd.core import MMError
from mmd.inject.blocks import BEGIN_MARKER, END_MARKER, read_block, replace_block, write_block

HEAD = b"# AGENTS.md\n\nBuild with `make`.  Trailing spaces stay.   \n\n"
TAIL = "\n\n## Style\n- tabs\tstay\n- ünïcode stays\nno final newline".encode()
BEGIN, END = BEGIN_MARKER.encode(), END_MARKER.encode()


def outside(data: bytes) -> tuple[bytes, bytes]:
    start, end = data.index(BEGIN), data.index(END) + len(END)
    return data[:start], data[end:]


def test_a_hundred_rewrites_and_a_hand_edit_leave_every_outside_byte_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(HEAD + BEGIN + b"\nold\n" + END + TAIL)
    for revision in range(100):
        assert write_block(path, f"Memory revision {revision}\n- topic-{revision}: ünïcode summary") is True
        assert outside(path.read_bytes()) == (HEAD, TAIL)
    assert read_block(path.read_bytes()) == "Memory revision 99\n- topic-99: ünïcode summary"
    edited_head = HEAD + b"A line the user added by hand.\n"
    edited_tail = TAIL + b"\nand one at the end"
    data = path.read_bytes()
    start, end = data.index(BEGIN), data.index(END) + len(END)
    path.write_bytes(edited_head + data[start:end] + edited_tail)
    for revision in range(100, 103):
        write_block(path, f"Memory revision {revision}")
        assert outside(path.read_bytes()) == (edited_head, edited_tail)
    assert path.read_bytes() == edited_head + BEGIN + b"\nMemory revision 102\n" + END + edited_tail


def test_the_same_block_is_not_written_again(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    assert write_block(path, "Memory text") is True
    inode = path.stat().st_ino
    assert write_block(path, "Memory text\n") is False
    assert path.stat().st_ino == inode


@pytest.mark.parametrize(("before", "after"), [
    (b"", BEGIN + b"\nM\n" + END + b"\n"),
    (b"# Title\n", b"# Title\n\n" + BEGIN + b"\nM\n" + END + b"\n"),
    (b"# Title", b"# Title\n\n" + BEGIN + b"\nM\n" + END + b"\n"),
    (b"# T\r\nline\r\n", b"# T\r\nline\r\n\r\n" + BEGIN + b"\r\nM\r\n" + END + b"\r\n"),
])
def test_a_missing_marker_pair_is_appended_at_the_end(before: bytes, after: bytes) -> None:
    assert replace_block(before, "M") == after
    assert replace_block(after, "M") == after


def test_a_missing_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    assert write_block(path, "M")
    assert path.read_bytes() == BEGIN + b"\nM\n" + END + b"\n"


def test_crlf_files_get_crlf_inside_the_block() -> None:
    data = b"a\r\n" + BEGIN + b"\r\nold\r\n" + END + b"\r\nb\r\n"
    assert replace_block(data, "one\ntwo") == b"a\r\n" + BEGIN + b"\r\none\r\ntwo\r\n" + END + b"\r\nb\r\n"


def test_markers_without_line_breaks_around_them_still_keep_the_outside() -> None:
    data = b"before" + BEGIN + b"x" + END + b"after"
    assert replace_block(data, "M") == b"before" + BEGIN + b"\nM\n" + END + b"after"


@pytest.mark.parametrize("data", [
    b"x\n" + BEGIN + b"\nno end\n",
    b"x\n" + END + b"\nno begin\n",
    END + b"\n" + BEGIN + b"\n",
    BEGIN + b"\n" + END + b"\n" + BEGIN + b"\n" + END + b"\n",
])
def test_broken_markers_are_refused_and_the_file_is_untouched(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(data)
    with pytest.raises(MMError) as caught:
        write_block(path, "M")
    assert caught.value.code == "E_INVALID" and "nothing was written" in caught.value.message
    assert str(path) in caught.value.message
    assert path.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["AGENTS.md"]  # no temp file left behind


def test_a_text_holding_a_marker_is_refused() -> None:
    with pytest.raises(MMError, match="must not contain"):
        replace_block(b"", f"evil {END_MARKER}")


@pytest.mark.parametrize("mode", [0o600, 0o755, 0o664])
def test_the_file_mode_is_kept(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(b"# x\n")
    os.chmod(path, mode)
    old_umask = os.umask(0o077)
    try:
        write_block(path, "M")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.read_bytes().startswith(b"# x\n\n" + BEGIN)


def test_a_symlinked_file_stays_a_link_and_its_target_is_updated(tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_bytes(HEAD)
    link = tmp_path / "CLAUDE.md"
    link.symlink_to("AGENTS.md")
    write_block(link, "M", home=tmp_path)  # inside the home: followed
    assert link.is_symlink() and os.readlink(link) == "AGENTS.md"
    assert target.read_bytes() == HEAD + BEGIN + b"\nM\n" + END + b"\n"  # HEAD already ends in a blank line


def test_read_block() -> None:
    assert read_block(b"nothing here") is None
    assert read_block(b"a\r\n" + BEGIN + b"\r\none\r\ntwo\r\n" + END) == "one\ntwo"
    assert read_block(BEGIN + b"\n" + END) == ""


FENCED = (b"# Memory in this repo\n\nThe block looks like this:\n\n```markdown\n" + BEGIN + b"\nexample\n" + END
          + b"\n```\n\n~~~~\n" + BEGIN + b"\n~~~\nstill the example\n" + END + b"\n~~~~\n"
          + b"Inline: `" + BEGIN + b"` starts it.\n")


def test_markers_in_a_fenced_example_or_a_code_span_are_not_ours() -> None:
    once = replace_block(FENCED, "M")
    assert once == FENCED + b"\n" + BEGIN + b"\nM\n" + END + b"\n"  # appended; the examples untouched
    twice = replace_block(once, "N")
    assert twice == FENCED + b"\n" + BEGIN + b"\nN\n" + END + b"\n"
    assert read_block(twice) == "N"
    ours_first = BEGIN + b"\nold\n" + END + b"\n\n" + FENCED
    assert replace_block(ours_first, "M") == BEGIN + b"\nM\n" + END + b"\n\n" + FENCED


def test_a_file_ending_inside_an_open_fence_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(b"# x\n\n```sh\nmake\n")
    with pytest.raises(MMError, match="ends inside a code fence opened on line 3"):
        write_block(path, "M")
    assert path.read_bytes() == b"# x\n\n```sh\nmake\n"


@pytest.mark.timeout(30)
def test_a_fifo_a_read_only_file_and_a_symlink_out_of_the_home_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    fifo = home / "AGENTS.md"
    os.mkfifo(fifo)
    with pytest.raises(MMError, match="is a FIFO, not a regular file; nothing was written"):
        write_block(fifo, "M", home=home)
    locked = home / "CLAUDE.md"
    locked.write_bytes(b"# mine\n")
    os.chmod(locked, 0o444)
    with pytest.raises(MMError, match=r"is read-only \(mode 0444\)"):
        write_block(locked, "M", home=home)
    assert locked.read_bytes() == b"# mine\n"
    hostname = tmp_path / "hostname"
    hostname.write_bytes(b"box\n")
    link = home / "GEMINI.md"
    link.symlink_to(hostname)
    with pytest.raises(MMError, match=f"is a symlink to {hostname}, outside your home"):
        write_block(link, "M", home=home)
    assert hostname.read_bytes() == b"box\n"
