"""mm v1 grammar: what the parsers read and the serializers write (mm v1 §3, §4)."""

from __future__ import annotations

import pytest

from mmd.core.errors import MMError
from mmd.core.format import parse_index, parse_note, safe_rel_path, serialize_index, serialize_note
from mmd.core.model import IndexEntry

HEADER = (
    "# MEMORY.md\n\nMemory Standard Index — hand-load priority; managed by dsh-memory-standard.\n"
    "Hard caps: 200 lines / 25600 bytes. Over budget => rewrite (never truncate).\n\n"
    "> mm-id: local\n> mm-version: 1\n> mm-kind: index\n> mm-caps: 200 lines / 25600 bytes\n"
)


def entry(topic: str, **kw: object) -> IndexEntry:
    base: dict[str, object] = dict(topic=topic, memory_id="local", summary="", tags=(), file=f"memories/{topic}.md",
                                   updated="2026-01-01T00:00:00.000Z", body_chars=0, write_budget=4000, entry_body="")
    base.update(kw)
    return IndexEntry(**base)  # type: ignore[arg-type]


def serialize(*entries: IndexEntry) -> str:
    return serialize_index(list(entries), memory_id="local", index_lines=200, index_bytes=25600)


def test_empty_index_is_the_reference_header_byte_for_byte() -> None:
    assert serialize() == HEADER


def test_empty_summary_and_tags_keep_the_trailing_space() -> None:
    text = serialize(entry("alpha"))
    assert "- **summary:** \n- **tags:** \n" in text
    assert text.endswith("- **budget:** 0/4000\n")


def test_entry_body_and_unknown_keys_survive_a_round_trip() -> None:
    text = HEADER + "## alpha\n- **summary:** A\n- **owner:** mei\nfree prose\n\n### sub\n"
    parsed = parse_index(text)
    assert parsed.entries[0].entry_body == "- **owner:** mei\nfree prose\n\n### sub"
    again = parse_index(serialize(*parsed.entries))
    assert again.entries == parsed.entries


def test_crlf_index_parses_every_entry() -> None:
    lf = HEADER + "## alpha\n- **summary:** A\n\n## beta\n- **summary:** B\n"
    crlf = lf.replace("\n", "\r\n")
    entries = parse_index(crlf).entries
    assert [(e.topic, e.summary) for e in entries] == [("alpha", "A"), ("beta", "B")]
    assert serialize(*entries) == serialize(*parse_index(lf).entries)
    assert "\r" not in serialize(*entries)


def test_bom_is_ignored() -> None:
    parsed = parse_index("\ufeff" + HEADER + "## alpha\n- **summary:** A\n")
    assert parsed.entries[0].summary == "A"
    assert parse_note("\ufeff# alpha\n\n> mm-topic: alpha\n\nbody\n").body == "body"


def test_non_slug_heading_is_a_parse_error_naming_the_line() -> None:
    with pytest.raises(MMError) as info:
        parse_index(HEADER + "## Project Notes\n")
    assert info.value.code == "E_PARSE"
    assert "index line 10" in info.value.message and '"Project Notes"' in info.value.message


@pytest.mark.parametrize("bad", ["../x.md", "memories/../../etc/passwd", "/etc/passwd", "C:/x.md", "c:x.md",
                                 "memories\\x.md", "", "memories/x\x00.md"])
def test_unsafe_file_paths_are_refused(bad: str) -> None:
    with pytest.raises(MMError) as info:
        safe_rel_path(bad)
    assert info.value.code == "E_PARSE"


@pytest.mark.parametrize("field", ["summary", "updated", "file"])
def test_a_line_break_in_a_single_line_field_never_reaches_the_index(field: str) -> None:
    value = "x\n## injected\n- **summary:** evil" if field != "file" else "memories/a.md\n## injected"
    with pytest.raises(MMError) as info:
        serialize(entry("alpha", **{field: value}))
    assert info.value.code == "E_INVALID"


def test_a_line_break_in_a_tag_never_reaches_the_index() -> None:
    with pytest.raises(MMError):
        serialize(entry("alpha", tags=("a\r## injected",)))


def test_note_serialization_strips_trailing_newlines_only() -> None:
    text = serialize_note(topic="alpha", memory_id="local", file="memories/alpha.md", body="  body\n\n")
    assert text == ("# alpha\n\n> mm-id: local\n> mm-version: 1\n> mm-kind: note\n> mm-topic: alpha\n"
                    "> mm-file: memories/alpha.md\n\n  body\n")
    assert parse_note(text).body == "  body"


def test_note_body_blockquotes_and_headings_after_the_header_are_body() -> None:
    text = "# alpha\n\n> mm-id: local\n\n> mm-id: not-meta\n# Heading\n"
    note = parse_note(text)
    assert note.body == "> mm-id: not-meta\n# Heading"
    assert note.memory_id == "local"


def test_note_titled_with_a_non_slug_is_invalid() -> None:
    with pytest.raises(MMError) as info:
        parse_note("# Project Notes\n\nbody\n")
    assert info.value.code == "E_INVALID"


def test_crlf_note_parses_like_lf() -> None:
    lf = "# alpha\n\n> mm-topic: alpha\n\nline1\nline2\n"
    assert parse_note(lf.replace("\n", "\r\n")).body == parse_note(lf).body == "line1\nline2"
