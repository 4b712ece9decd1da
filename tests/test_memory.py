"""The Memory facade and the store: snapshots, budgets, durable writes, anomalies (mm v1 §6, §7)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.guide import guide_text

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def make(root: Path, **kw: object) -> Memory:
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(root.parent / "home")}, **kw)  # type: ignore[arg-type]
    return Memory.ensure(options, now=lambda: NOW, fts5=False)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".mmd" not in p.parts}


def test_reads_serve_the_snapshot_until_reload(tmp_path: Path) -> None:
    memory = make(tmp_path / "root")
    assert memory.write("alpha", "one")["ok"]
    assert memory.read_topic("alpha") is None
    assert memory.search("one")["total"] == 0
    memory.reload()
    note = memory.read_topic("alpha")
    assert note is not None and note.body == "one"
    assert memory.pending_writes == 0


def test_over_budget_write_leaves_files_untouched(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root, default_write_budget=10)
    assert memory.write("alpha", "short")["ok"]
    before = tree(root)
    outcome = memory.write("alpha", "x" * 11)
    assert outcome["ok"] is False and outcome["code"] == "E_WRITE_BUDGET_EXCEEDED"
    assert outcome["usage"]["overflow"] == 1
    assert tree(root) == before


def test_cjk_under_the_character_budget_but_over_the_byte_cap_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root, detail_max_bytes=200)
    body = "部" * 40  # 40 code points, 120 UTF-8 bytes: with the header, over 200 bytes
    outcome = memory.write("cjk", body)
    assert outcome["code"] == "E_FILE_BUDGET_EXCEEDED"
    assert outcome["usage"]["bodyChars"] == 40 and outcome["usage"]["noteBytes"] > 200
    assert not (root / "memories" / "cjk.md").exists()


def test_index_at_its_line_cap_refuses_an_addition_and_allows_a_delete(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root, index_lines=28)
    assert memory.write("a", "1")["ok"] and memory.write("b", "2")["ok"]  # 9 + 6 + 7 = 22 lines
    before = tree(root)
    outcome = memory.write("c", "3")
    assert outcome["code"] == "E_INDEX_BUDGET_EXCEEDED"
    assert (outcome["usage"]["index"]["lines"], outcome["usage"]["index"]["overflowLines"]) == (29, 1)
    assert tree(root) == before
    assert memory.delete("a")["removed"] is True


def test_summary_or_tags_with_a_line_break_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    before = (root / "MEMORY.md").read_bytes()
    for kwargs in ({"summary": "one\n## evil\ntwo"}, {"tags": "x\ny, z"}):
        with pytest.raises(MMError) as info:
            memory.write("alpha", "body", **kwargs)
        assert info.value.code == "E_INVALID"
    assert (root / "MEMORY.md").read_bytes() == before
    assert not (root / "memories" / "alpha.md").exists()


def test_updated_with_a_newline_is_refused(tmp_path: Path) -> None:
    memory = make(tmp_path / "root")
    with pytest.raises(MMError) as info:
        memory.write("alpha", "body", updated="2026\n## evil")
    assert info.value.code == "E_INVALID"


def test_a_malformed_note_is_an_anomaly_and_the_rest_loads(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    for topic in ("good", "titled", "binary", "nul"):
        assert memory.write(topic, f"{topic} body")["ok"]
    (root / "memories" / "titled.md").write_text("# Project Notes\n\nhello\n")
    (root / "memories" / "binary.md").write_bytes(b"# binary\n\n\xff\xfe bad utf-8\n")
    (root / "memories" / "nul.md").write_bytes(b"# nul\n\nnul \x00 here\n")
    memory.reload()
    good = memory.read_topic("good")
    assert good is not None and good.body == "good body"
    malformed = {m["topic"]: m["code"] for m in memory.snapshot.anomalies["malformedNotes"]}
    assert malformed == {"titled": "E_INVALID", "binary": "E_PARSE", "nul": "E_PARSE"}
    assert memory.budget()["anomalies"]["malformedNotes"][0]["topic"] == "binary"


def test_a_note_symlinked_outside_the_root_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "inside")["ok"]
    secret = tmp_path / "secret.md"
    secret.write_text("# alpha\n\nsecret outside\n")
    link = root / "memories" / "alpha.md"
    link.unlink()
    link.symlink_to(secret)
    memory.reload()
    with pytest.raises(MMError) as info:
        memory.read_topic("alpha")
    assert info.value.code == "E_PARSE" and "symlink" in info.value.message
    note = memory.snapshot.note("alpha")
    assert note is not None and note.body == ""
    assert memory.snapshot.anomalies["malformedNotes"][0]["topic"] == "alpha"
    assert memory.write("alpha", "rewritten")["ok"]
    assert secret.read_text() == "# alpha\n\nsecret outside\n"
    assert not link.is_symlink() and "rewritten" in link.read_text()


def test_unparsable_index_is_never_overwritten(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    broken = (root / "MEMORY.md").read_text() + "## Not A Slug\n"
    (root / "MEMORY.md").write_text(broken)
    with pytest.raises(MMError) as info:
        memory.write("alpha", "x")
    assert info.value.code == "E_PARSE" and "MEMORY.md" in info.value.message
    assert (root / "MEMORY.md").read_text() == broken
    with pytest.raises(MMError):
        memory.reload()


def test_search_limit_below_one_is_invalid(tmp_path: Path) -> None:
    memory = make(tmp_path / "root")
    for limit in (0, -1, 1.5, "3"):
        with pytest.raises(MMError) as info:
            memory.search("x", limit=limit)
        assert info.value.code == "E_INVALID"


def test_one_memory_id_per_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root).write("alpha", "alpha body")
    index = root / "MEMORY.md"
    index.write_text(index.read_text().replace("> mm-id: local", "> mm-id: team"))
    memory = make(root, memory_id="local")  # configured: it wins over the header, for every URI
    note = memory.read_topic("alpha")
    assert note is not None
    assert (note.entry.memory_id, note.uri) == ("local", "mm://local/alpha")
    assert memory.search("alpha")["matches"][0]["uri"] == "mm://local/alpha"
    unset = make(root)  # not configured: the header's
    note = unset.read_topic("alpha")
    assert note is not None and (note.entry.memory_id, note.uri) == ("team", "mm://team/alpha")
    assert unset.search("alpha")["matches"][0]["uri"] == "mm://team/alpha"


def test_crlf_index_survives_a_write(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("keep", "k")["ok"]
    index = root / "MEMORY.md"
    index.write_bytes(index.read_bytes().replace(b"\n", b"\r\n"))
    assert memory.write("new", "n")["ok"]
    memory.reload()
    assert [n.topic for n in memory.list_notes()] == ["keep", "new"]


def test_failed_rename_keeps_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "old")["ok"]
    before = tree(root)

    def broken_replace(src: object, dst: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(MMError) as info:
        memory.write("alpha", "new")
    assert info.value.code == "E_IO"
    assert tree(root) == before
    assert not [p for p in root.rglob("*.tmp")]


WRITER = """
import sys
from mmd.core import Memory, MemoryOptions
memory = Memory.ensure(MemoryOptions.create(root=sys.argv[1], index_lines=10000, index_bytes=10**7))
for i in range(int(sys.argv[3])):
    assert memory.write(f"{sys.argv[2]}-{i}", f"body {i}")["ok"]
"""


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), f"p{n}", "25"]) for n in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    memory = make(root, index_lines=10000, index_bytes=10**7)
    assert len(memory.list_notes()) == 100
    assert not [p for p in root.rglob("*.tmp")]


def test_delete_removes_a_symlink_not_its_target(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "x")["ok"]
    target = tmp_path / "keep.md"
    target.write_text("precious")
    (root / "memories" / "alpha.md").unlink()
    (root / "memories" / "alpha.md").symlink_to(target)
    assert memory.delete("alpha")["removed"] is True
    assert target.read_text() == "precious"


def test_root_resolution_follows_the_spec(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "dh"), "X": "sub"}
    assert MemoryOptions.create(env=env).root == tmp_path / "dh" / "memory"
    assert MemoryOptions.create(env={**env, "DSH_MEMORY_ROOT": "/m"}).root == Path("/m")
    assert MemoryOptions.create(root="~/$X/${X}", env=env).root == tmp_path / "sub" / "sub"
    assert MemoryOptions.create(env={"HOME": str(tmp_path), "DSH_HOME": "  "}).root == tmp_path / ".dsh" / "memory"


def test_guide_exists_in_both_languages_with_the_caps() -> None:
    assert "MEMORY.md" in guide_text("en") and "200 lines / 25600 bytes" in guide_text("en")
    assert "冻结快照" in guide_text("zh") and "300 行" in guide_text("zh", index_lines=300)


STORM = """
import sys
from mmd.core import Memory, MemoryOptions
memory = Memory.ensure(MemoryOptions.create(root=sys.argv[1], index_lines=10000, index_bytes=10**7))
i = 0
while True:
    i += 1
    memory.write(f"t{i % 7}", f"body {i} " + "x" * (i % 300))
    if i == 1:
        print("writing", flush=True)
    if i % 5 == 0:
        memory.delete(f"t{(i + 3) % 7}")
"""


def test_sigkill_during_writes_leaves_every_file_whole(tmp_path: Path) -> None:
    import random
    import signal
    import time

    root = tmp_path / "root"
    rng = random.Random(11)
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", STORM, str(root)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"  # its first write is in
        time.sleep(rng.uniform(0.05, 0.5))  # the kill lands mid-storm, wherever a loaded machine has it
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        memory = make(root, index_lines=10000, index_bytes=10**7)  # parses MEMORY.md and every note
        assert "malformedNotes" not in memory.snapshot.anomalies
        for note in memory.list_notes():
            assert not note.missing_file and note.body.startswith("body ")  # note first, index second
        leftovers = [p.name for p in root.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
        assert all(name.startswith(".") for name in leftovers)
    assert memory.list_notes(), "the writer never got a write in"


def test_a_write_waits_for_another_writer_then_gives_up_naming_it(tmp_path: Path) -> None:
    from mmd.core.durable import LockHeld, WriteLock
    from mmd.core.store import MemoryStore

    root = tmp_path / "root"
    memory = make(root)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        store = MemoryStore(memory.options, lambda: "t", lock=lambda: WriteLock(root, timeout_s=0.3))
        with pytest.raises(LockHeld) as info:
            store.write("alpha", "x")
        assert info.value.holder_pid == holder.pid and f"pid {holder.pid}" in info.value.message
    finally:
        holder.kill()
        holder.wait()
    assert memory.write("alpha", "x")["ok"]  # the lock died with its holder


HOLD = """
import sys, time
from pathlib import Path
from mmd.core.durable import WriteLock
lock = WriteLock(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_fifo_in_place_of_a_note_is_missing_and_does_not_hang_the_load(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "x")["ok"] and memory.write("beta", "y")["ok"]
    (root / "memories" / "alpha.md").unlink()
    os.mkfifo(root / "memories" / "alpha.md")
    memory.reload()
    alpha, beta = memory.read_topic("alpha"), memory.read_topic("beta")
    assert alpha is not None and alpha.missing_file and beta is not None and beta.body == "y"


def test_an_unset_memory_id_is_the_one_the_root_records(tmp_path: Path) -> None:
    from mmd.core.options import recorded_header

    root = tmp_path / "root"
    assert MemoryOptions.create(root=root).memory_id == "local"  # no index yet
    Memory.ensure(MemoryOptions.create(root=root, memory_id="work")).write("a", "x")
    assert recorded_header(root)["memory_id"] == "work"
    assert MemoryOptions.create(root=root).memory_id == "work"
    assert MemoryOptions.create(root=root, memory_id="local").memory_id == "local"  # a configured id wins
    index = root / "MEMORY.md"
    index.write_text(index.read_text().replace("> mm-id: work", "> mm-id: Not A Slug"))
    assert MemoryOptions.create(root=root).memory_id == "local"
    index.write_text("# MEMORY.md\n\n## a\n> mm-id: inbody\n")  # a quote in an entry is not the header
    assert "memory_id" not in recorded_header(root)


def test_unset_caps_are_the_ones_the_root_records(tmp_path: Path) -> None:
    # a root kept with 5000-line caps (a flag of its daemon) refused every write of a client without the flag
    root = tmp_path / "root"
    Memory.ensure(MemoryOptions.create(root=root, index_lines=5000, index_bytes=500000)).write("a", "x")
    assert "> mm-caps: 5000 lines / 500000 bytes" in (root / "MEMORY.md").read_text()
    unset = MemoryOptions.create(root=root)
    assert (unset.index_lines, unset.index_bytes) == (5000, 500000)
    given = MemoryOptions.create(root=root, index_lines=300)  # one given: the other is the default
    assert (given.index_lines, given.index_bytes) == (300, 25600)
    assert MemoryOptions.create(root=tmp_path / "new").index_lines == 200
