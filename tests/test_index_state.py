"""The writer's cached MEMORY.md: spliced writes equal a full re-serialization, byte for byte."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

from mmd.core import Memory, MemoryOptions
from mmd.core.format import parse_index, serialize_index

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_random_writes_and_deletes_match_a_full_serialization(tmp_path: Path) -> None:
    root = tmp_path / "root"
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(tmp_path)}, index_lines=10**6, index_bytes=10**8)
    memory = Memory.ensure(options, now=lambda: NOW, fts5=False)
    rng = random.Random(3)
    for step in range(300):
        topic = f"t{rng.randrange(40):02d}"
        if rng.random() < 0.25:
            memory.delete(topic)
        else:
            assert memory.write(topic, f"body {step}", summary=f"s{step}", tags=rng.choice(["", "a", "a,b"]))["ok"]
        text = (root / "MEMORY.md").read_text()
        parsed = parse_index(text)
        assert text == serialize_index(list(parsed.entries), memory_id="local", index_lines=10**6,
                                       index_bytes=10**8), f"step {step}"
        assert memory.store.live_state().usage["entries"] == len(parsed.entries)


def test_a_write_replaces_every_duplicate_section_of_its_topic(tmp_path: Path) -> None:
    root = tmp_path / "root"
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(tmp_path)})
    memory = Memory.ensure(options, now=lambda: NOW, fts5=False)
    assert memory.write("alpha", "a")["ok"] and memory.write("beta", "b")["ok"]
    index = root / "MEMORY.md"
    text = index.read_text()
    index.write_text(text + text[text.index("## alpha"):text.index("## beta")])  # a second alpha section
    assert memory.write("beta", "b2")["ok"]  # keeps both alphas, as the reference does
    assert index.read_text().count("## alpha") == 2
    assert memory.write("alpha", "a2")["ok"]  # now spliced: both alpha sections go
    assert index.read_text().count("## alpha") == 1
    assert [e.topic for e in parse_index(index.read_text()).entries] == ["alpha", "beta"]
