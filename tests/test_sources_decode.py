"""mmd.sources.logio.decode and .frames: complete lines only, bounded memory, cursors that resume exactly.

Guards dsh-session-format.md §2 (JSONL lines, zstd frames, torn tails) and §8
(cursor per file; shrink, inode change or rewrite means reading again from 0).
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import tracemalloc
from pathlib import Path

import pytest
import zstandard

from mmd.sources.dsh.header import read_header
from mmd.sources.logio.decode import LogCursor, LogReader
from mmd.sources.logio.frames import FrameStatus, scan_frame

MiB = 1024 * 1024


def read_all(path: Path, cursor: LogCursor | None = None, **kw: int) -> tuple[list[tuple[int, bytes]], LogReader]:
    with LogReader(path, cursor, **kw) as reader:
        lines = list(reader)
    return lines, reader


def frame(data: bytes, *, checksum: bool = True) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=checksum).compress(data)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_plain_torn_tail_is_never_returned_and_is_read_once_completed(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"a":0}\n{"a":1}\n{"a":2')
    lines, r = read_all(p)
    assert lines == [(0, b'{"a":0}'), (1, b'{"a":1}')]
    assert (r.cursor.offset, r.cursor.lines, r.cursor.size) == (16, 2, 22)
    again, _ = read_all(p, r.cursor)
    assert again == []
    append(p, b'}\n{"a":3}\n')
    lines, r2 = read_all(p, r.cursor)
    assert lines == [(2, b'{"a":2}'), (3, b'{"a":3}')]
    assert r2.cursor.offset == p.stat().st_size and r2.restarted == ""


def test_resuming_through_json_cursors_returns_every_line_exactly_once(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"")
    payload = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i * 37 % 500)) for i in range(300))
    cursor: LogCursor | None = None
    seen: list[bytes] = []
    rng = random.Random(7)
    pos = 0
    while pos < len(payload):
        step = rng.randint(1, 3000)
        append(p, payload[pos:pos + step])
        pos += step
        lines, r = read_all(p, cursor, chunk_bytes=1024)
        seen += [line for _, line in lines]
        cursor = LogCursor.from_json(json.loads(json.dumps(r.cursor.to_json())))
    assert seen == payload.splitlines()


def test_early_stop_keeps_the_cursor_after_the_last_line_taken(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"a\nb\nc\n")
    with LogReader(p) as r:
        for index, _line in r:
            if index == 1:
                break
    assert (r.cursor.offset, r.cursor.lines, r.cursor.size) == (4, 2, 4)
    lines, _ = read_all(p, r.cursor)
    assert lines == [(2, b"c")]


def test_twenty_megabyte_line_is_skipped_with_a_warning_in_bounded_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = tmp_path / "big.jsonl"
    with open(p, "wb") as f:
        f.write(b'{"first":1}\n')
        f.write(b'{"blob":"' + b"z" * (20 * MiB) + b'"}\n')
        f.write(b'{"after":1}\n')
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING, logger="mmd.sources"):
            lines, r = read_all(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == [(0, b'{"first":1}'), (2, b'{"after":1}')]
    assert peak < 16 * MiB, peak
    assert any("line 1 is longer than" in w for w in r.warnings)
    assert any("line 1 is longer than" in rec.getMessage() for rec in caplog.records)
    assert r.cursor.offset == p.stat().st_size


def test_oversized_torn_line_is_skipped_across_reads_until_its_newline(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    p.write_bytes(b"ok\n" + b"q" * 3000)
    lines, r = read_all(p, max_line_bytes=1000, chunk_bytes=512)
    assert lines == [(0, b"ok")]
    assert r.cursor.skipping and r.cursor.offset == p.stat().st_size
    assert any("not finished" in w for w in r.warnings)
    append(p, b"q" * 500 + b"\nnext\n")
    lines, r2 = read_all(p, r.cursor, max_line_bytes=1000, chunk_bytes=512)
    assert lines == [(2, b"next")]
    assert not r2.cursor.skipping


def test_binary_garbage_is_cut_into_bounded_lines_without_crashing(tmp_path: Path) -> None:
    p = tmp_path / "garbage.jsonl"
    rng = random.Random(1)
    head = bytes(rng.getrandbits(8) for _ in range(300_000)).replace(b"\n", b"")
    tail = bytes(rng.getrandbits(8) for _ in range(5000))
    p.write_bytes(head + b"\n" + tail)
    lines, r = read_all(p, max_line_bytes=100_000)
    complete_tail = tail[: tail.rfind(b"\n")].split(b"\n")
    assert lines == list(enumerate(complete_tail, start=1))  # line 0 (300 kB) dropped, torn end kept back
    assert any("line 0 is longer than 100000 bytes" in w for w in r.warnings)
    assert r.cursor.offset == len(head) + 1 + tail.rfind(b"\n") + 1


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def attempt() -> None:
        try:
            read_all(fifo)
        except OSError as exc:
            result.append(exc)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and len(result) == 1


def test_shrink_replacement_and_rewrite_restart_from_zero(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"a\nb\nc\n")
    _, r = read_all(p)
    with open(p, "r+b") as f:
        f.truncate(4)
    lines, r2 = read_all(p, r.cursor)
    assert r2.restarted == "shrunk" and lines == [(0, b"a"), (1, b"b")]

    new = tmp_path / "new.jsonl"
    new.write_bytes(b"a\nb\nX\nd\n")
    os.replace(new, p)
    lines, r3 = read_all(p, r2.cursor)
    assert r3.restarted == "replaced" and [line for _, line in lines] == [b"a", b"b", b"X", b"d"]

    with open(p, "r+b") as f:  # same inode, same prefix length, different bytes, then growth
        f.write(b"Z\n")
        f.seek(0, os.SEEK_END)
        f.write(b"e\n")
    lines, r4 = read_all(p, r3.cursor)
    assert r4.restarted == "rewritten" and lines[0] == (0, b"Z") and len(lines) == 5


def test_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"a\nb")
    _, r = read_all(p)
    lines, r2 = read_all(p, r.cursor)
    assert lines == [] and r2.complete and r2.cursor == r.cursor


# ---- zstd ---------------------------------------------------------------------------------------------


def zstd_log(tmp_path: Path, batches: list[bytes], **kw: bool) -> Path:
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(b"".join(frame(b, **kw) for b in batches))
    return p


def test_zstd_frames_decode_to_the_same_lines_as_plain(tmp_path: Path) -> None:
    plain = b"".join(b'{"seq":%d}\n' % i for i in range(40))
    rows = plain.splitlines(keepends=True)
    batches = [rows[0]] + [b"".join(rows[i:i + 7]) for i in range(1, 40, 7)]
    p = zstd_log(tmp_path, batches)
    lines, r = read_all(p)
    assert [line for _, line in lines] == plain.splitlines()
    assert (r.cursor.frames, r.cursor.offset, r.cursor.skip_lines) == (len(batches), p.stat().st_size, 0)


@pytest.mark.parametrize("cut", [1, 2, 4, 5, 12])
def test_zstd_incomplete_last_frame_gives_the_prefix_then_the_rest(tmp_path: Path, cut: int) -> None:
    good = [b"h\n", b"a\nb\n"]
    last = frame(b"c\nd\n", checksum=True)
    p = zstd_log(tmp_path, good)
    size_good = p.stat().st_size
    append(p, last[:-cut])  # cut=1..4 leaves only the checksum short: structurally incomplete (§2)
    lines, r = read_all(p)
    assert [line for _, line in lines] == [b"h", b"a", b"b"]
    assert (r.cursor.offset, r.cursor.frames) == (size_good, 2)
    append(p, last[-cut:])
    lines, r2 = read_all(p, r.cursor)
    assert lines == [(3, b"c"), (4, b"d")] and r2.restarted == ""


def test_zstd_frame_ending_mid_line_resumes_without_duplicates(tmp_path: Path) -> None:
    p = zstd_log(tmp_path, [b"l0\nl1\npart"])
    lines, r = read_all(p)
    assert lines == [(0, b"l0"), (1, b"l1")]
    assert (r.cursor.offset, r.cursor.skip_lines, r.cursor.lines) == (0, 2, 2)
    append(p, frame(b"ial\nl3\n"))
    lines, r2 = read_all(p, LogCursor.from_json(r.cursor.to_json()))
    assert lines == [(2, b"partial"), (3, b"l3")]
    assert (r2.cursor.offset, r2.cursor.skip_lines, r2.cursor.frames) == (p.stat().st_size, 0, 2)


def test_zstd_skippable_frames_carry_no_lines(tmp_path: Path) -> None:
    p = zstd_log(tmp_path, [b"a\n"])
    append(p, (0x184D2A53).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"xyz")
    append(p, frame(b"b\n"))
    lines, r = read_all(p)
    assert [line for _, line in lines] == [b"a", b"b"] and r.cursor.frames == 3


def test_zstd_garbage_is_warned_about_and_stops_the_read(tmp_path: Path) -> None:
    p = zstd_log(tmp_path, [b"a\n"])
    append(p, os.urandom(4096))
    lines, r = read_all(p)
    assert lines == [(0, b"a")]
    assert any("no zstd magic" in w for w in r.warnings)
    lines, r2 = read_all(p, r.cursor)
    assert lines == [] and r2.warnings == []  # unchanged file: not re-read, not re-warned
    q = tmp_path / "only-garbage.jsonl.zstd"
    q.write_bytes(os.urandom(100_000))
    lines, r3 = read_all(q)
    assert lines == [] and r3.warnings


def test_zstd_corrupt_but_complete_frame_is_skipped(tmp_path: Path) -> None:
    bad = bytearray(frame(b"secret line\n" * 50, checksum=True))
    bad[-2] ^= 0xFF  # content checksum mismatch
    p = zstd_log(tmp_path, [b"a\n"])
    append(p, bytes(bad) + frame(b"b\n"))
    lines, r = read_all(p)
    assert [line for _, line in lines][0] == b"a" and lines[-1][1] == b"b"
    assert any("does not decode" in w for w in r.warnings)


def test_zstd_twenty_megabyte_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "session.v4.jsonl.zstd"
    cctx = zstandard.ZstdCompressor()
    with open(p, "wb") as f:
        f.write(cctx.compress(b'{"h":1}\n'))
        f.write(cctx.compress(b'{"blob":"' + b"z" * (20 * MiB) + b'"}\n{"after":1}\n'))
    tracemalloc.start()
    try:
        lines, r = read_all(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == [(0, b'{"h":1}'), (2, b'{"after":1}')]
    assert peak < 16 * MiB, peak
    assert any("line 1 is longer than" in w for w in r.warnings)


def test_scan_frame_reports_extent_and_completeness(tmp_path: Path) -> None:
    data = frame(b"x" * 1000, checksum=True) + frame(b"y\n", checksum=False)
    p = tmp_path / "f.zstd"
    p.write_bytes(data)
    first_len = len(frame(b"x" * 1000, checksum=True))
    fd = os.open(p, os.O_RDONLY)
    try:
        first = scan_frame(fd, 0, len(data))
        second = scan_frame(fd, first.end, len(data))
        assert (first.status, first.end) == (FrameStatus.COMPLETE, first_len)
        assert (second.status, second.end) == (FrameStatus.COMPLETE, len(data))
        assert scan_frame(fd, 0, first_len - 1).status is FrameStatus.INCOMPLETE
        assert scan_frame(fd, 0, 3).status is FrameStatus.INCOMPLETE
        assert scan_frame(fd, 5, len(data)).status is FrameStatus.INVALID
    finally:
        os.close(fd)
    huge_block = (0x28B52FFD).to_bytes(4, "big") + b"\x00\x70" + ((200_000 << 3) | 1).to_bytes(3, "little")
    p.write_bytes(huge_block + b"\x00" * 10)
    fd = os.open(p, os.O_RDONLY)
    try:  # garbage that happens to start with the magic must not pass for a torn tail forever
        assert scan_frame(fd, 0, p.stat().st_size).status is FrameStatus.INVALID
    finally:
        os.close(fd)


def test_read_header_decodes_line_one_of_plain_and_zstd(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "x"}
    line = json.dumps(header).encode() + b"\n"
    plain = tmp_path / "session.v3.jsonl"
    plain.write_bytes(line + b'{"type":"turn/start"}\n')
    packed = zstd_log(tmp_path, [line, b'{"type":"turn/start"}\n'])
    assert read_header(plain) == header and read_header(packed) == header
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(line[:-5])
    assert read_header(torn) is None
