"""The baseline injection: one id-free line per topic, 120 code points a line, within the byte budget (issue 14)."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.model import IndexEntry
from mmd.inject.baseline import LINE_MAX_CHARS, clip_words, entry_line, recency_order, render_baseline

START = datetime(2026, 1, 1, tzinfo=UTC)


def entry(topic: str, summary: str = "", updated: str = "2026-01-01T00:00:00.000Z") -> IndexEntry:
    return IndexEntry(topic, "local", summary, (), f"memories/{topic}.md", updated, 1, 4000, "")


def many(count: int, seed: int = 1) -> list[IndexEntry]:
    rng = random.Random(seed)
    words = "deploy 部署 region cache — queue retry schema ünïcode budget token snapshot agent review".split()
    return [entry(f"topic-{i:03d}", " ".join(rng.choices(words, k=rng.randint(0, 40))),
                  (START + timedelta(minutes=rng.randint(0, 10_000))).isoformat(timespec="milliseconds")
                  .replace("+00:00", "Z"))
            for i in range(count)]


def test_clip_words_cuts_at_a_word_and_marks_the_cut() -> None:
    assert clip_words("short", 10) == "short"
    assert clip_words("alpha beta gamma", 12) == "alpha beta…"
    assert clip_words("alpha beta gamma", 11) == "alpha beta…"  # the cut falls on the space
    assert clip_words("alpha beta gamma", 10) == "alpha…"
    assert clip_words("unbreakableword", 6) == "unbre…"
    assert clip_words("部署区域 欧洲西部", 7) == "部署区域…"
    assert clip_words("x", 0) == ""


@pytest.mark.parametrize("seed", range(5))
def test_every_line_fits_its_cap_and_the_text_its_budget(seed: int) -> None:
    entries = many(200, seed)
    for budget in (300, 1000, 3072, 10_000):
        base = render_baseline(entries, memory_id="local", max_bytes=budget)
        assert base.bytes == len(base.text.encode()) <= budget
        lines = base.text.split("\n")
        body = lines[1:-1] if base.omitted else lines[1:]
        assert len(body) == len(base.shown)
        for line, topic in zip(body, base.shown, strict=True):
            assert len(line) <= LINE_MAX_CHARS
            assert line.startswith(f"- {topic}") and line.endswith(f"<mm://local/{topic}>")
        if base.omitted:
            assert lines[-1] == f"… {base.omitted} older topics not shown; `mmctl read` (MCP mem_read) lists them."
        assert len(base.shown) + base.omitted == 200


def test_the_budget_is_used_well_one_more_line_would_not_fit() -> None:
    entries = many(200)
    base = render_baseline(entries, memory_id="local", max_bytes=3072)
    assert base.omitted
    order = recency_order(entries)
    assert base.shown == tuple(e.topic for e in order[: len(base.shown)])
    next_line = entry_line(order[len(base.shown)], "local")
    footer = base.text.split("\n")[-1]
    without_footer = base.bytes - len(footer.encode()) - 1
    # the next line would not have fitted beside the (at most one digit shorter) count line
    assert without_footer + 1 + len(next_line.encode()) + 1 + len(footer.encode()) - 1 > 3072


def test_lines_run_most_recently_updated_first_and_the_oldest_are_left_out() -> None:
    text = "a summary long enough that its line outweighs the count line"
    entries = [entry("old", text, "2026-01-01T00:00:00.000Z"), entry("new", text, "2026-03-01T00:00:00.000Z"),
               entry("mid", text, "2026-02-01T00:00:00.000Z"), entry("mid2", text, "2026-02-01T00:00:00.000Z")]
    base = render_baseline(entries, memory_id="local")
    assert base.shown == ("new", "mid", "mid2", "old")
    footer = "… 1 older topic not shown; `mmctl read` (MCP mem_read) lists them."
    kept = "\n".join([*base.text.split("\n")[:-1], footer])
    small = render_baseline(entries, memory_id="local", max_bytes=len(kept.encode()))
    assert small.shown == ("new", "mid", "mid2") and small.omitted == 1 and small.text == kept
    smaller = render_baseline(entries, memory_id="local", max_bytes=len(kept.encode()) - 1)
    assert smaller.shown == ("new", "mid") and smaller.text.endswith("… 2 older topics not shown; `mmctl read` "
                                                                     "(MCP mem_read) lists them.")


def test_a_line_is_id_free_topic_summary_uri() -> None:
    line = entry_line(entry("deploy-region", "Deploy only to eu-west-1"), "local")
    assert line == "- deploy-region: Deploy only to eu-west-1 <mm://local/deploy-region>"
    assert entry_line(entry("bare"), "local") == "- bare <mm://local/bare>"
    assert not re.search(r"\b[0-9a-f]{12}\b", render_baseline(many(50), memory_id="local").text)


def test_a_long_summary_is_cut_at_a_word_with_an_ellipsis() -> None:
    summary = "word " * 40 + "end"
    line = entry_line(entry("t", summary.strip()), "local")
    assert LINE_MAX_CHARS - 5 <= len(line) <= LINE_MAX_CHARS
    assert "word… <mm://local/t>" in line and line.startswith("- t: word word")
    cjk = entry_line(entry("t", "部署" * 100), "local")
    assert len(cjk) <= LINE_MAX_CHARS and cjk.endswith("… <mm://local/t>")


def test_a_64_character_topic_keeps_its_uri_and_some_summary() -> None:
    topic = "a" * 64
    line = entry_line(entry(topic, "the summary of a very long topic name that keeps going on"), "local")
    assert len(line) <= LINE_MAX_CHARS
    assert f"<mm://local/{topic}>" in line and "the summary" in line
    assert len(entry_line(entry(topic), "local")) <= LINE_MAX_CHARS


def test_a_topic_listed_twice_counts_once() -> None:
    base = render_baseline([entry("a", "first"), entry("a", "second"), entry("b")], memory_id="local")
    assert base.shown == ("a", "b") and "first" in base.text and "second" not in base.text
    assert base.text.startswith("Memory mm://local/ — 2 topics")


def test_empty_memory_and_too_small_budgets() -> None:
    empty = render_baseline([], memory_id="local")
    assert empty.text.startswith("Memory mm://local/ — no topics yet") and empty.shown == ()
    with pytest.raises(MMError) as caught:
        render_baseline(many(10), memory_id="local", max_bytes=50)
    assert caught.value.code == "E_INVALID" and "too small" in caught.value.message
    for bad in (0, -1, True, 3.5, "3072"):
        with pytest.raises(MMError, match="maxBytes must be a positive integer"):
            render_baseline(many(3), memory_id="local", max_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(MMError):
        render_baseline([], memory_id="local", max_bytes=10)


def test_a_real_root_renders_from_its_snapshot(tmp_path: Path) -> None:
    options = MemoryOptions.create(root=tmp_path / "root", env={"DSH_HOME": str(tmp_path / "home")})
    clock = iter(START + timedelta(minutes=i) for i in range(100))
    memory = Memory.ensure(options, now=lambda: next(clock), fts5=False)
    memory.write("first", "body", summary="written first")
    memory.write("second", "body", summary="written second")
    memory.reload()
    base = render_baseline(memory.snapshot.entries, memory_id="local")
    assert base.text.split("\n")[1:] == ["- second: written second <mm://local/second>",
                                         "- first: written first <mm://local/first>"]


def test_the_commands_named_carry_the_root_unless_it_is_the_default_one(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    # an agent follows "read one: mmctl read <topic>" in its own shell, which resolves ~/.dsh/memory: for any
    # other root the hint read (and would have written) the wrong memory
    from mmd.inject.baseline import command_for, mmctl_path

    monkeypatch.setenv("HOME", str(tmp_path))
    program = mmctl_path()
    assert command_for(tmp_path / ".dsh" / "memory") == f"{program} --user"  # never a project's note of that topic
    assert command_for(Path("/srv/team memory")) == f"{program} --root '/srv/team memory'"
    entries = [IndexEntry("alpha", "local", "A", (), "memories/alpha.md", "2026-01-01T00:00:00.000Z", 1, 4000, "")]
    text = render_baseline(entries, memory_id="local", command=command_for(Path("/srv/m"))).text
    assert text.startswith(f"Memory mm://local/ — 1 topic, newest first (read one: {program} --root /srv/m read")
    assert "(record one: mmctl --root /srv/m write <topic>" in render_baseline([], memory_id="local",
                                                                               command="mmctl --root /srv/m").text


def test_the_mmctl_named_is_this_installation_s_unless_path_finds_the_same(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    # a hook's or a service's PATH often has no mmctl: "mmctl read <topic>" was then "command not found"
    import sys

    from mmd.inject import baseline

    installed = Path(sys.executable).parent / "mmctl"
    if not installed.is_file():
        pytest.skip("no mmctl beside this Python (not an installed environment)")
    monkeypatch.setenv("PATH", str(tmp_path))  # no mmctl on it
    baseline.mmctl_path.cache_clear()
    try:
        assert baseline.mmctl_path() == str(installed) and baseline.command_for(None) == f"{installed} --user"
        links = tmp_path / "bin"  # pipx's ~/.local/bin: a link on every shell's PATH
        links.mkdir()
        (links / "mmctl").symlink_to(installed)
        monkeypatch.setenv("PATH", str(links))
        baseline.mmctl_path.cache_clear()
        assert baseline.mmctl_path() == "mmctl"
        monkeypatch.setenv("PATH", str(installed.parent))  # an activated environment: the shell's, not an agent's
        baseline.mmctl_path.cache_clear()
        assert baseline.mmctl_path() == ("mmctl" if sys.prefix == sys.base_prefix else str(installed))
    finally:
        baseline.mmctl_path.cache_clear()


def test_the_mmctl_on_path_is_found_as_shutil_which_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook names ``mmctl`` bare only when the one on PATH is this one; it looks without importing shutil."""
    import os
    import shutil

    from mmd.inject.baseline import _which

    plain, folder, runs = tmp_path / "plain", tmp_path / "folder", tmp_path / "runs"
    for where in (plain, folder, runs):
        where.mkdir()
    (plain / "tool").write_text("not executable")
    (folder / "tool").mkdir()  # a folder of that name is no program
    (runs / "tool").write_text("#!/bin/sh\n")
    (runs / "tool").chmod(0o755)
    for path in (f"{plain}{os.pathsep}{folder}{os.pathsep}{runs}", f"{plain}{os.pathsep}{folder}", str(runs), ""):
        monkeypatch.setenv("PATH", path)
        assert _which("tool") == shutil.which("tool")
    monkeypatch.setenv("PATH", f"{plain}{os.pathsep}{runs}")
    assert _which("tool") == str(runs / "tool")
