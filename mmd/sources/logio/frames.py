"""zstd frame boundaries and completeness, read from the frame structure (dsh-session-format.md §2).

Owns: walking one frame's header and block headers (RFC 8878 §3.1) to learn
where it ends and whether all of it is on disk yet — the last block (its
``Last_Block`` bit) and, when the frame header flags one, the 4-byte content
checksum. A DSH ``.zstd`` log is a plain concatenation of such frames, one per
append batch, so a frame that is not complete is a torn tail to re-read later.

Never: decompresses (``decode`` does that with ``zstandard``), reads block
contents, or buffers more than a few header bytes.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass

__all__ = ["FrameScan", "FrameStatus", "scan_frame"]

_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50
_DID_BYTES = (0, 1, 2, 4)
_FCS_BYTES = (0, 2, 4, 8)
_BLOCK_RAW, _BLOCK_RLE, _BLOCK_COMPRESSED, _BLOCK_RESERVED = 0, 1, 2, 3
_BLOCK_MAX = 128 * 1024
"""``Block_Maximum_Size`` (RFC 8878 §3.1.1.2.3): a larger size means garbage, not a torn tail."""


class FrameStatus(enum.Enum):
    """How much of a frame starting at some offset is on disk."""

    COMPLETE = "complete"
    """Every block and the checksum (if flagged) are present."""
    INCOMPLETE = "incomplete"
    """The file ends inside the frame: a torn tail (§2, §8)."""
    INVALID = "invalid"
    """The bytes are not a zstd or skippable frame: corruption or not zstd at all."""


@dataclass(frozen=True)
class FrameScan:
    """One frame's extent in the compressed file, in bytes: ``[start, end)``.

    ``end`` is only meaningful for a complete frame. ``skippable`` marks a
    skippable frame (magic ``0x184D2A5?``), which carries no log lines.
    ``reason`` explains an invalid frame.
    """

    status: FrameStatus
    start: int
    end: int
    skippable: bool = False
    reason: str = ""


def _pread(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset`` (short only at end of file)."""
    out = b""
    while len(out) < size:
        chunk = os.pread(fd, size - len(out), offset + len(out))
        if not chunk:
            break
        out += chunk
    return out


def scan_frame(fd: int, start: int, file_size: int) -> FrameScan:
    """Find where the frame at ``start`` ends and whether it is complete (§2).

    Args:
        fd: a file descriptor open for reading (only ``os.pread`` is used).
        start: byte offset of the frame's magic number.
        file_size: bytes of the file to consider; data past it is ignored, so a
            file that grows during a read is judged on one consistent size.

    Returns:
        A :class:`FrameScan`; never raises for bad data (``INVALID`` instead).

    Raises:
        OSError: if reading the file fails.
    """
    avail = file_size - start
    if avail < 4:
        return FrameScan(FrameStatus.INCOMPLETE, start, start)
    magic = int.from_bytes(_pread(fd, 4, start), "little")
    if magic & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
        if avail < 8:
            return FrameScan(FrameStatus.INCOMPLETE, start, start, skippable=True)
        size = int.from_bytes(_pread(fd, 4, start + 4), "little")
        end = start + 8 + size
        status = FrameStatus.COMPLETE if end <= file_size else FrameStatus.INCOMPLETE
        return FrameScan(status, start, end, skippable=True)
    if magic != _ZSTD_MAGIC:
        return FrameScan(FrameStatus.INVALID, start, start, reason=f"no zstd magic at byte {start}")
    if avail < 5:
        return FrameScan(FrameStatus.INCOMPLETE, start, start)
    descriptor = _pread(fd, 1, start + 4)[0]
    fcs_flag = descriptor >> 6
    single_segment = (descriptor >> 5) & 1
    if (descriptor >> 3) & 1:
        return FrameScan(FrameStatus.INVALID, start, start, reason=f"reserved bit set in frame at byte {start}")
    has_checksum = (descriptor >> 2) & 1
    fcs_bytes = _FCS_BYTES[fcs_flag] or (1 if single_segment else 0)
    header_bytes = 1 + (0 if single_segment else 1) + _DID_BYTES[descriptor & 3] + fcs_bytes
    pos = start + 4 + header_bytes
    while True:
        if pos + 3 > file_size:
            return FrameScan(FrameStatus.INCOMPLETE, start, start)
        block = int.from_bytes(_pread(fd, 3, pos), "little")
        last, block_type, block_size = block & 1, (block >> 1) & 3, block >> 3
        if block_type == _BLOCK_RESERVED or block_size > _BLOCK_MAX:
            return FrameScan(FrameStatus.INVALID, start, start, reason=f"impossible block header at byte {pos}")
        pos += 3 + (1 if block_type == _BLOCK_RLE else block_size)
        if last:
            break
    end = pos + (4 if has_checksum else 0)
    if end > file_size:
        return FrameScan(FrameStatus.INCOMPLETE, start, start)
    return FrameScan(FrameStatus.COMPLETE, start, end)
