"""One index entry that breaks a rule blocks nothing (issue 26): its topic is reported, every other one works.

Property guarded: an entry whose ``file`` is not a safe path (``../x``, an absolute path,
``memories/../../x``) — hand-written, or merged in by a plain ``git pull`` — never makes the root
unreadable or unwritable: the root loads, every other topic reads and writes, the entry is reported
by ``doctor`` (``unsafe-file``) and by ``daemon.status`` / ``mmctl status``, the file it names is never
opened, its topic is written back under ``memories/`` by the next write of it, and a delete drops the
entry without touching that file. The reference refuses the whole root instead (a recorded deviation:
``unsafe-file-entry`` in ``tests/conformance_rules.py``); its pure ``parse_index`` refusal is kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.format import parse_index
from mmd.core.rootfs import note_problem
from tests.test_core_hardening import cli as direct_cli
from tests.test_git_daemon import call
from tests.test_ingest_helpers import wait_until
from tests.test_mmctl_daemon import cli

UNSAFE = ("../../outside/secret.md", "/etc/passwd", "memories/../../outside/secret.md", "..", "")


def broken_root(tmp_path: Path, file: str) -> tuple[Path, Path]:
    """A root with the notes ``good`` and ``bad``, ``bad``'s entry pointing at ``file``; and a secret beside it."""
    root = tmp_path / "root"
    memory = Memory.ensure(MemoryOptions.create(root=root))
    assert memory.write("good", "a good note")["ok"] and memory.write("bad", "the bad one")["ok"]
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# bad\n\nTHE SECRET\n")
    index = root / "MEMORY.md"
    index.write_text(index.read_text().replace("- **file:** memories/bad.md", f"- **file:** {file}".rstrip()))
    return root, secret


@pytest.mark.parametrize("file", UNSAFE)
def test_an_unsafe_file_entry_is_reported_and_every_other_topic_reads_and_writes(tmp_path: Path, file: str) -> None:
    root, secret = broken_root(tmp_path, file)
    memory = Memory.open(MemoryOptions.create(root=root))
    assert {n.topic: n.body for n in memory.list_notes()} == {"good": "a good note", "bad": ""}
    with pytest.raises(MMError) as broken:
        memory.read_topic("bad")
    assert broken.value.code.value == "E_PARSE"
    assert memory.write("other", "still writable")["ok"] and memory.read_topic("good").body == "a good note"
    (problem,) = memory.budget()["anomalies"]["malformedNotes"]
    assert (problem["topic"], problem["file"], problem["code"]) == ("bad", file, "E_PARSE")
    code, out, _ = direct_cli(root, "doctor", "--json")
    kinds = {p["kind"]: p for p in json.loads(out)["problems"]}
    assert code == 1 and kinds["unsafe-file"]["topic"] == "bad" and "malformed" not in kinds
    assert "THE SECRET" not in out and secret.read_text() == "# bad\n\nTHE SECRET\n"
    assert memory.delete("bad")["removed"] is False  # the entry goes, the file it named stays
    assert secret.exists() and [e.topic for e in memory.store.live_index()[1]] == ["good", "other"]


def test_the_next_write_of_the_topic_puts_it_back_under_memories(tmp_path: Path) -> None:
    root, secret = broken_root(tmp_path, "../../outside/secret.md")
    memory = Memory.open(MemoryOptions.create(root=root))
    assert memory.write("bad", "written again")["ok"]
    memory.load()
    assert memory.read_topic("bad").body == "written again" and "malformedNotes" not in memory.budget()["anomalies"]
    assert "- **file:** memories/bad.md" in (root / "MEMORY.md").read_text()
    assert secret.read_text() == "# bad\n\nTHE SECRET\n"


def test_the_pure_parser_keeps_the_references_refusal_and_a_root_reads_it_leniently() -> None:
    text = "## a\n- **file:** ../x.md\n## b\n- **summary:** fine\n"
    with pytest.raises(MMError) as refused:
        parse_index(text)
    assert refused.value.message == 'file path must not traverse directories: "../x.md"'
    entries = parse_index(text, strict_files=False).entries
    assert [(e.topic, e.file) for e in entries] == [("a", "../x.md"), ("b", "memories/b.md")]
    assert note_problem("../x.md") and note_problem("memories/../../x.md") and note_problem("/etc/passwd")
    assert note_problem("memories/b.md") is None and note_problem("./memories/b.md") is None


def test_through_the_daemon_a_hand_edit_naming_a_file_outside_blocks_no_write_and_status_says_so(
        tmp_path: Path, start_daemon: Any) -> None:
    daemon = start_daemon("--no-ingest", root=tmp_path / "root")
    for topic in ("good", "bad"):
        assert call(daemon, "memory.write", {"topic": topic, "content": f"the {topic} note"})["ok"]
    secret = tmp_path / "secret.md"
    secret.write_text("# bad\n\nTHE SECRET\n")
    index = daemon.root / "MEMORY.md"
    index.write_text(index.read_text().replace("- **file:** memories/bad.md", "- **file:** ../secret.md"))
    broken = wait_until(lambda: call(daemon, "daemon.status")["index"]["broken"], what="the edit to be loaded")
    assert [(b["topic"], b["file"], b["code"]) for b in broken] == [("bad", "../secret.md", "E_PARSE")]
    assert call(daemon, "memory.write", {"topic": "other", "content": "a write goes on"})["ok"]
    assert call(daemon, "memory.read", {"topic": "good"})["body"] == "the good note"
    code, out, _ = cli(daemon, "status")
    assert code == 0 and "1 topic(s) cannot be read: bad (../secret.md" in out and "1 unreadable" in out
    assert "THE SECRET" not in json.dumps(call(daemon, "memory.list"))
    assert call(daemon, "memory.write", {"topic": "bad", "content": "mended"})["ok"]
    assert call(daemon, "daemon.status")["index"]["broken"] == []
    assert secret.read_text() == "# bad\n\nTHE SECRET\n"
