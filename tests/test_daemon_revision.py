"""A revision patched after the daemon's own write equals a full reload of the root, anomalies included.

In-process, real files: the patch is the fast path of every write, the full load is the reference.
"""

from __future__ import annotations

import random
from pathlib import Path

from mmd.core.options import MemoryOptions
from mmd.core.snapshot import load_snapshot
from mmd.daemon.state import MemoryState


def _same(patched, full) -> None:  # type: ignore[no-untyped-def]
    assert patched.entries == full.entries
    assert patched.notes == full.notes
    assert patched.anomalies == full.anomalies
    assert (patched.index_line_count, patched.index_byte_count, patched.index_over_budget) == (
        full.index_line_count, full.index_byte_count, full.index_over_budget)


def test_patched_revisions_match_a_full_load_through_random_writes_and_deletes(tmp_path: Path) -> None:
    options = MemoryOptions.create(root=tmp_path / "root", env={})
    state = MemoryState(options, fts5=False)
    (tmp_path / "root").mkdir()
    state.store.ensure_root()
    state._install(state.prepare_load(), None, None)
    # anomalies the patch must carry over: an orphan file, a dangling entry, a malformed note
    (tmp_path / "root" / "memories" / "orphan.md").write_text("# orphan\n\nnobody indexes me\n")
    assert state.external_change(["memories/orphan.md"])  # the watcher's report of it reloads the root:
    state._install(state.prepare_load(), None, None)  # patches carry the orphan over from then on
    rng = random.Random(7)
    topics = [f"t{i}" for i in range(8)] + ["orphan"]  # writing "orphan" indexes the orphan file
    seen: set[str] = set()
    for step in range(60):
        topic = rng.choice(topics)
        if rng.random() < 0.25:
            outcome, revision = state.prepare_delete(topic)
        else:
            outcome, revision = state.prepare_write(topic, f"body {step} " * rng.randint(1, 5),
                                                    summary=f"step {step}", tags="a,b")
        assert outcome["ok"]
        state._install(revision, None, None)
        if step == 20:
            (tmp_path / "root" / "memories" / f"{state.current.notes[0].topic}.md").unlink()  # dangling
            state._install(state.prepare_load(), None, None)
        if step == 40:  # a hand edit puts a line break (form feed) in a summary: a malformed entry
            index = tmp_path / "root" / "MEMORY.md"
            index.write_text(index.read_text().replace("- **summary:** step", "- **summary:** hand\x0cstep", 1))
            state._install(state.prepare_load(), None, None)
        if step == 30:
            victim = state.current.notes[-1].entry.file
            (tmp_path / "root" / victim).write_bytes(b"\xff\xfe not utf-8")  # malformed
            state._install(state.prepare_load(), None, None)
        full = load_snapshot(options, loaded_at="x", engine=state.engine)
        _same(state.current, full)
        seen.update(k for k, v in full.anomalies.items() if v)
    assert seen == {"orphanFiles", "danglingEntries", "malformedNotes", "malformedEntries"}
    assert state.revision > 60
