"""mmctl answers a mistake with the way out: the topic, option, command or choice meant, and what to do before the
index is full (issue 30, "CLI mistakes").

In-process ``mmctl`` on a real root (no daemon, the ``mm`` fixture of ``tests/test_mmctl_cli.py``), and against a
real daemon for ``status`` and ``nudge``; every refused call is checked to have written nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance_rules import _cli_as_reference
from tests.test_mmctl_cli import mm  # noqa: F401 - the fixture
from tests.test_mmctl_status import cli


def _files(root: Any) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def test_reading_a_mistyped_topic_names_the_near_ones(mm) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    mm("init")
    for topic in ("deploy-region", "deploy-regions", "testing"):
        assert mm("write", topic, "--content", f"{topic} body").code == 0
    r = mm("read", "deploy-regoin")
    assert r.code == 1 and r.out == ""
    assert r.err == "mmctl: no note for topic deploy-regoin (did you mean deploy-region or deploy-regions?)\n"
    assert mm("read", "nothing-like-it").err == "mmctl: no note for topic nothing-like-it\n"  # none near: as before
    assert mm("read", "deploy-regoin", "--json").json == {"found": False, "topic": "deploy-regoin",
                                                          "uri": "mm://local/deploy-regoin"}  # the reference's
    before = _files(mm.root)
    r = mm("delete", "testnig")
    assert (r.code, r.out) == (0, "nothing to delete: no note for topic testnig (did you mean testing?)\n")
    assert _files(mm.root) == before
    # the conformance runner reads our line as the reference's
    assert _cli_as_reference({"stderr": "mmctl: no note for topic deploy-regoin (did you mean deploy-region?)\n"}) \
        == {"stderr": "dsh-memory: no note for topic deploy-regoin\n"}


SUMARY = "mmctl: write: unknown option --sumary (did you mean --summary?)"


@pytest.mark.parametrize(("argv", "said"), [
    (["write", "t", "--sumary", "s", "--content", "x"], SUMARY),
    (["write", "t", "--sumary=s", "--content", "x"], SUMARY),
    (["write", "t", "--content", "x", "--tgas", "a,b"], "mmctl: write: unknown option --tgas (did you mean --tags?)"),
    (["queue", "list", "--stauts", "pending"], "mmctl: queue: unknown option --stauts (did you mean --status?)"),
    (["read", "--al"], "mmctl: read: unknown option --al (did you mean --all?)"),
    (["raed", "t"], "mmctl: unknown command: raed (did you mean read?)"),
    (["help", "serach"], "mmctl: help: unknown command 'serach' (did you mean search?)"),
    (["--versoin"], "mmctl: unknown option --versoin (did you mean --version?)"),
    (["queue", "lst"], "mmctl: queue: argument ACTION: invalid choice: 'lst' (choose from 'list', 'show', 'accept', "
                       "'reject', 'undo') — did you mean 'list'?"),
    (["write", "t", "--content", "x", "--frobnicate"], "mmctl: write: unknown option --frobnicate"),
])
def test_a_mistyped_option_command_or_choice_names_the_one_meant(mm, argv: list[str], said: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811,E501
    mm("init")
    before = _files(mm.root)
    r = mm(*argv)
    assert r.code == 2 and r.err.splitlines()[0] == said, r.err
    assert "unexpected argument" not in r.err  # the value after a mistyped option is its value
    assert _files(mm.root) == before


def _fill(write: Any, lines: int, cap: int) -> None:
    """Write notes until the index has at least ``lines`` of its ``cap`` lines."""
    n = 0
    while True:
        index = write(n)
        if index["lineCount"] >= lines:
            assert index["lineCount"] <= cap
            return
        n += 1


def test_a_write_refused_by_a_full_index_says_the_way_out(mm) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    mm("init")

    def write(n: int) -> dict[str, Any]:
        assert mm("write", f"deploy-{n}", "--content", f"step {n}").code == 0
        return dict(mm("read", "--json").json)

    _fill(write, 194, 200)
    before = _files(mm.root)
    r = mm("write", "deploy-new", "--content", "one more")
    assert r.code == 1 and _files(mm.root) == before
    lines = r.err.splitlines()
    assert lines[0] == ("mmctl: the MEMORY.md index exceeds its hard limit; consolidate/rewrite the index "
                        "(never truncate)")
    assert "see usage.index" not in r.err and lines[1].startswith("  body 8/4000 chars")
    assert lines[2].startswith("  the way out: append it to a note (the index keeps its size): `mmctl read TOPIC`")
    assert "near it: deploy-" in lines[2] and "`mmctl merge A B --into C`" in lines[2]
    assert _cli_as_reference({"stderr": r.err})["stderr"] == (
        "dsh-memory: the MEMORY.md index exceeds its hard limit; consolidate/rewrite the index (never truncate) "
        "(see usage.index)\n")  # the reference's message, for the conformance runner
    assert mm("write", "deploy-new", "--content", "x", "--json").json["code"] == "E_INDEX_BUDGET_EXCEEDED"


def test_a_write_to_an_index_over_its_caps_by_hand_says_no_write_fits_until_entries_go(mm) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    mm("init")
    assert mm("write", "topic-1", "--content", "one").code == 0
    with open(mm.root / "MEMORY.md", "a") as index:  # pushed over its 200 lines outside mmd
        index.write("".join(f"- stray line {n}\n" for n in range(210)))
    before = _files(mm.root)
    r = mm("write", "topic-1", "--content", "updated one")  # an update: the index keeps its size, and is over
    assert r.code == 1 and _files(mm.root) == before
    assert "the way out: MEMORY.md is over its caps already (" in r.err and "/200 lines" in r.err, r.err
    assert "`mmctl delete TOPIC`" in r.err and "append it to a note" not in r.err


def test_nudge_and_status_warn_near_the_caps_and_say_the_threshold(start_daemon) -> None:  # type: ignore[no-untyped-def]
    daemon = start_daemon("--index-lines", "30", "--no-ingest")
    for topic in ("alpha", "beta"):
        assert cli(daemon, "write", topic, "--content", f"{topic} body")[0] == 0
    for command in ("nudge", "status"):  # 22 of 30 lines: 73 %
        assert "near its caps" not in cli(daemon, command)[1]
    assert cli(daemon, "write", "gamma", "--content", "gamma body")[0] == 0  # 29 of 30 lines
    for command in ("nudge", "status"):
        code, out, _ = cli(daemon, command)
        warning = [line for line in out.splitlines() if line.startswith("warning: MEMORY.md is near its caps")]
        assert code == 0 and len(warning) == 1, out
        assert "29/30 lines (96%)" in warning[0] and "warned from 90% of either" in warning[0]
        assert "--into TOPIC" in warning[0] and "`mmctl merge A B --into C`" in warning[0]
    code, out, _ = cli(daemon, "nudge", "--json")
    assert code == 0 and set(json.loads(out)) == {"at", "pendingWrites", "noteCount", "indexOverBudget",
                                                  "needsCommit", "suggestedActions"}  # the reference's shape


def test_list_says_when_note_files_are_not_in_the_index(mm) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    mm("init")
    assert mm("write", "deploy", "--content", "make ship").code == 0
    (mm.root / "MEMORY.md").write_text("garbage\n<<<<<<< HEAD\n")  # a hand-broken index: the notes are orphans
    r = mm("list")
    assert r.code == 0 and r.out == "(no notes)\n"
    assert "1 note file(s) that MEMORY.md does not name" in r.err and "`mmctl doctor --fix`" in r.err, r.err
