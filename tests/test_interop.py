"""Interop both ways: what mmd writes reads under the reference's rules; what the reference wrote serves via mmd.

The reference's rules are pinned by the conformance vectors, which our
parsers and serializers pass; so "parses under the reference's rules" means
MEMORY.md and every note round-trip through them byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core.format import parse_index, parse_note, serialize_index, serialize_note

from .test_conformance import vector_files
from .test_daemon_helpers import sync_call

REPO = Path(__file__).resolve().parent.parent
NOTE_SCHEMA = json.loads((REPO / "schema" / "memory.schema.json").read_text())


def round_trips(root: Path, memory_id: str = "local") -> None:
    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    parsed = parse_index(text)
    assert serialize_index(list(parsed.entries), memory_id=memory_id, index_lines=200, index_bytes=25600) == text
    for entry in parsed.entries:
        note_text = (root / entry.file).read_text(encoding="utf-8")
        note = parse_note(note_text)
        assert serialize_note(topic=entry.topic, memory_id=memory_id, file=entry.file, body=note.body) == note_text


def test_a_root_written_through_the_daemon_round_trips_byte_for_byte(start_daemon: Any) -> None:
    # Leading blank lines of a body are written but not read back, by the reference too
    # (vector note-roundtrip-whitespace), so no body here starts with one.
    daemon = start_daemon()
    writes = [("alpha", "plain body", "A", "x, y"), ("cjk", "部署在东部区域。\n第二行", "中文摘要", ""),
              ("blank-lines", "  indented, then trailing newlines\n\n", "", "t"),
              ("quote", "> not meta\n# heading", "q", "")]
    for topic, content, summary, tags in writes:
        reply = sync_call(daemon.rpc, "memory.write", {"topic": topic, "content": content, "summary": summary,
                                                       "tags": tags})
        assert reply["result"]["ok"], reply
    assert sync_call(daemon.rpc, "memory.delete", {"topic": "quote"})["result"]["ok"]
    round_trips(daemon.root)
    notes = sync_call(daemon.rpc, "memory.list")["result"]["notes"]
    assert [n["topic"] for n in notes] == ["alpha", "blank-lines", "cjk"]
    for note in notes:
        jsonschema.validate(note, NOTE_SCHEMA)


def _reference_roots() -> list[tuple[str, dict[str, str]]]:
    roots = []
    for path in vector_files():
        files = json.loads(path.read_text(encoding="utf-8"))["expected"].get("files", {})
        root_files = {k: v for k, v in files.items() if not k.startswith("$HOME/")}
        if "MEMORY.md" in root_files and "\r" not in root_files["MEMORY.md"]:
            roots.append((path.stem, root_files))
    return roots


@pytest.mark.parametrize("name", [name for name, _ in _reference_roots()] or ["absent"])
def test_a_root_the_reference_wrote_loads_and_serves_through_mmd(start_daemon: Any, tmp_path: Path,
                                                                  name: str) -> None:
    # one test per root (was one test for all: 40 daemons in a row, the suite's longest test on one worker)
    roots = dict(_reference_roots())
    if not roots:
        pytest.skip("no conformance vectors with files (set MM_CONFORMANCE_DIR)")
    files, root = roots[name], tmp_path / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    memory_id = parse_index(files["MEMORY.md"]).header.memory_id
    try:
        options = MemoryOptions.create(root=root, env={}, memory_id=memory_id, index_lines=10**6, index_bytes=10**8)
        expected = [n.to_json() for n in Memory.open(options, fts5=False).list_notes()]
    except Exception as error:  # a vector may leave a root no mm reader accepts
        pytest.fail(f"{name}: the core cannot load the reference's root: {error}")
    daemon = start_daemon("--memory-id", memory_id, "--index-lines", "1000000", "--index-bytes", "100000000",
                          root=root)
    notes = sync_call(daemon.rpc, "memory.list")["result"]["notes"]
    assert notes == expected, name
    for note in notes:
        jsonschema.validate(note, NOTE_SCHEMA)


def test_the_vectors_hold_at_least_ten_roots_the_reference_wrote() -> None:
    if not vector_files():
        pytest.skip("no conformance vectors (set MM_CONFORMANCE_DIR)")
    assert len(_reference_roots()) >= 10


def test_schema_requires_the_reference_fields() -> None:
    assert NOTE_SCHEMA["required"] == ["topic", "memoryId", "summary", "tags", "file", "updated", "bodyChars",
                                       "writeBudget", "entryBody", "uri", "body", "missingFile"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"topic": "x"}, NOTE_SCHEMA)

