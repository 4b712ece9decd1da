"""The notes' text in an injection: blocks of the newest and most used notes, the rest by title (issue 28)."""

from __future__ import annotations

import random
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.model import IndexEntry
from mmd.inject.baseline import DEFAULT_MAX_BYTES, entry_line, render_baseline
from mmd.inject.content import NOTE_TEXT_MAX_BYTES, TEXT_SHARE, note_block, use_order
from mmd.inject.delta import plan_injection

START = datetime(2026, 1, 1, tzinfo=UTC)


def entry(topic: str, summary: str = "", minutes: int = 0) -> IndexEntry:
    updated = (START + timedelta(minutes=minutes)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return IndexEntry(topic, "local", summary, (), f"memories/{topic}.md", updated, 1, 4000, "")


def test_a_block_is_the_entry_line_then_the_body_indented_and_a_long_body_says_how_to_read_the_rest() -> None:
    e = entry("deploy", "Deploy region")
    assert note_block(e, "Only eu-west-1.\n\n## Why\nLatency.\n\n", "local") == (
        "- deploy: Deploy region <mm://local/deploy>\n  Only eu-west-1.\n\n  ## Why\n  Latency.")
    assert note_block(e, "", "local") == entry_line(e, "local")
    long = "\n".join(f"line {i} " + "wörd " * 12 for i in range(60))
    block = note_block(e, long, "local", "mmctl --root /r")
    body = "\n".join(line[2:] for line in block.split("\n")[1:-1])
    assert len(body.encode()) <= NOTE_TEXT_MAX_BYTES and long.startswith(body)
    assert body.endswith("wörd")  # cut at the end of a line, never inside one
    assert block.split("\n")[-1] == "  … the rest: mmctl --root /r read deploy"
    one_line = "x" * 10 + " word" * 400
    cut = note_block(e, one_line, "local").split("\n")[1]
    assert one_line.startswith(cut[2:]) and cut.endswith("word") and len(cut[2:].encode()) <= NOTE_TEXT_MAX_BYTES


def test_a_rule_written_in_a_note_reaches_the_baseline_as_text(tmp_path: Path) -> None:
    options = MemoryOptions.create(root=tmp_path / "root", env={"DSH_HOME": str(tmp_path)})
    memory = Memory.ensure(options, fts5=False)
    assert memory.write("ui-tests", "Don't use playwright: the CI has no browsers; use the selenium grid.",
                        summary="UI tests")["ok"]
    plan = plan_injection(None, memory.reload().snapshot, today=date(2026, 1, 1))
    assert "  Don't use playwright: the CI has no browsers; use the selenium grid." in plan.text.split("\n")
    assert plan.text.split("\n")[0].endswith("1 topic, newest and most used first, 1 with their text (read one: "
                                             f"{plan.text.split('read one: ')[1].split(' read <topic>')[0]} read "
                                             "<topic>, MCP mem_read):")


def parsed(text: str) -> tuple[int, list[tuple[str, bool]]]:
    """The heading's count of notes with text, and each listed topic with whether its body follows it."""
    lines = text.split("\n")
    with_text = int(re.search(r", (\d+) with their text", lines[0])[1])  # type: ignore[index]
    listed: list[tuple[str, bool]] = []
    for i, line in enumerate(lines[1:], 1):
        if line.startswith("- "):
            following = lines[i + 1] if i + 1 < len(lines) else ""
            listed.append((line[2:].split(":")[0], following.startswith("  ")))
    return with_text, listed


@pytest.mark.parametrize("seed", range(4))
def test_blocks_fill_their_share_the_rest_are_titles_and_the_text_keeps_its_budget(seed: int) -> None:
    rng = random.Random(seed)
    entries = [entry(f"t-{i:03d}", f"summary {i}", rng.randint(0, 9999)) for i in range(200)]
    bodies = {e.topic: " ".join(rng.choices("alpha 部署 beta gamma ünï delta".split(), k=rng.randint(0, 300)))
              for e in entries}
    by_topic = {e.topic: e for e in entries}
    for budget in (400, 2000, DEFAULT_MAX_BYTES, 50_000):
        base = render_baseline(entries, memory_id="local", max_bytes=budget, bodies=bodies)
        assert base.bytes <= budget and len(base.shown) + base.omitted == 200
        with_text, listed = parsed(base.text)
        assert [t for t, _ in listed] == list(base.shown)
        blocks = [t for t, has_text in listed if has_text]
        assert len(blocks) == with_text and all(bodies[t].strip() for t in blocks)
        assert listed[:len(blocks)] == [(t, True) for t in blocks]  # the blocks first, then the titles
        heading = base.text.split("\n")[0]
        text_bytes = sum(len(note_block(by_topic[t], bodies[t], "local").encode()) + 1 for t in blocks)
        if base.omitted:  # the text kept to its share, and what is left out is named by count
            assert len(heading.encode()) + text_bytes <= budget * TEXT_SHARE
            assert base.text.split("\n")[-1].startswith(f"… {base.omitted} older topic")
        if budget >= DEFAULT_MAX_BYTES:
            assert with_text >= 3
    assert render_baseline(entries, memory_id="local", max_bytes=10**7, bodies=bodies).omitted == 0


def test_a_small_root_is_listed_whole_its_text_taking_more_than_its_share() -> None:
    entries = [entry(f"t-{i:02d}", f"summary {i}", i) for i in range(20)]
    bodies = {e.topic: "a rule the person wrote, " * 12 for e in entries}
    base = render_baseline(entries, memory_id="local", max_bytes=DEFAULT_MAX_BYTES, bodies=bodies)
    with_text, listed = parsed(base.text)
    assert base.omitted == 0 and len(listed) == 20 and base.bytes <= DEFAULT_MAX_BYTES
    shared = render_baseline(entries, memory_id="local", max_bytes=10**6, bodies=bodies)
    assert parsed(shared.text)[0] == 20 and with_text < 20  # not all text fits: the titles of the rest do
    text = sum(len(b.encode()) + 1 for b in base.text.split("\n- ")[1:with_text + 1])
    assert text > DEFAULT_MAX_BYTES * TEXT_SHARE  # more than its share, since every other title still fits


def test_a_note_too_big_for_the_room_left_gives_way_to_the_next_and_is_named_by_title() -> None:
    entries = [entry("newest", "big", 30), entry("middle", "small", 20), entry("oldest", "small too", 10)]
    bodies = {"newest": "w " * 500, "middle": "short text", "oldest": "also short"}
    base = render_baseline(entries, memory_id="local", max_bytes=900, bodies=bodies)
    lines = base.text.split("\n")
    assert ", 2 with their text" in lines[0]
    assert lines[1:] == ["- middle: small <mm://local/middle>", "  short text", "- oldest: small too <mm://local/oldest>",
                         "  also short", "- newest: big <mm://local/newest>"]


def test_use_moves_a_note_ahead_one_day_per_read_up_to_thirty() -> None:
    old, new = entry("old", minutes=0), entry("new", minutes=60 * 24 * 2)  # two days newer
    assert [e.topic for e in use_order([old, new])] == ["new", "old"]
    assert [e.topic for e in use_order([old, new], {"old": 2})] == ["new", "old"]  # a tie: newest first by topic
    assert [e.topic for e in use_order([old, new], {"old": 3})] == ["old", "new"]
    far = entry("far", minutes=60 * 24 * 40)
    assert [e.topic for e in use_order([old, far], {"old": 10_000})] == ["far", "old"]  # at most 30 days
    assert [e.topic for e in use_order([old, new], {"gone": 5})] == ["new", "old"]


def test_a_budget_too_small_for_the_heading_is_refused_with_text_too() -> None:
    with pytest.raises(MMError) as caught:
        render_baseline([entry("a", "b")], memory_id="local", max_bytes=40, bodies={"a": "text"})
    assert caught.value.code.value == "E_INVALID"
