"""The writer's MEMORY.md state (issue 17): each write replaces one section and re-encodes only that one.

Whatever path built it — parsed from disk, then patched write after write — the bytes written must be
byte for byte ``format.serialize_index`` of the entries, non-ASCII summaries (where encoding the whole
text would be slow) and deletes included. Real files, a real store.
"""

from __future__ import annotations

import random
from pathlib import Path

from mmd.core import Memory, MemoryOptions
from mmd.core.format import serialize_index
from mmd.core.paths import INDEX_NAME
from mmd.core.store import MemoryStore
from mmd.core.text import count_lines

SUMMARIES = ["plain ascii", "部署到 eu-west-1", "café au lait", "emoji 🚀 in a summary", "한국어 요약", ""]


def test_the_patched_index_is_byte_for_byte_the_serialized_one(tmp_path: Path) -> None:
    options = MemoryOptions.create(root=tmp_path / "root", index_lines=10_000, index_bytes=10**6)
    Memory.ensure(options)
    rng = random.Random(17)
    store = MemoryStore(options, lambda: "2026-12-01T00:00:00.000Z")
    for step in range(120):
        topic = f"t{rng.randrange(25):02d}"
        if step % 40 == 39:  # a fresh writer: its first state is parsed from disk, the slow path
            store = MemoryStore(options, lambda: "2026-12-01T00:00:00.000Z")
        if rng.random() < 0.2:
            store.delete(topic)
        else:
            assert store.write(topic, f"body {step}", summary=rng.choice(SUMMARIES), tags="a, ü")["ok"]
        state = store.live_state()
        on_disk = (options.root / INDEX_NAME).read_bytes()
        assert on_disk == state.data == state.text.encode()
        assert on_disk == serialize_index(state.entries, memory_id=options.memory_id, index_lines=options.index_lines,
                                          index_bytes=options.index_bytes).encode()
        assert state.usage["bytes"] == len(on_disk) and state.usage["lines"] == count_lines(state.text)
