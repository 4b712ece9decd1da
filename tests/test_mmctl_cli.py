"""mmctl's command line without a daemon: the reference CLI's texts, ``--json`` shapes and exit codes.

The conformance vectors (``cli-*``) pin the common paths byte for byte; these
tests cover the rest: usage errors, failures, flags in both forms, the
commands beyond the reference, and the promise that a read stays light.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mmctl.cli.checks import js_number
from mmctl.cli.main import main
from mmctl.cli.parser import parse_args

NOW = "2026-01-02T03:04:05.000Z"


class Run:
    """One in-process ``mmctl`` call: ``code``, ``out``, ``err``, and ``json`` (stdout parsed)."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def mm(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``mm(*argv)`` runs mmctl on ``tmp_path/root`` with the clock pinned and no daemon around."""
    root = tmp_path / "root"
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "home"), "MMCTL_NOW": NOW, "MMCTL_FTS5": "0",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}

    def run(*argv: str, root_flag: bool = True, extra_env: dict[str, str] | None = None) -> Run:
        out, err = io.StringIO(), io.StringIO()
        args = [*argv, "--root", str(root)] if root_flag else list(argv)
        code = main(args, env={**env, **(extra_env or {})}, stdout=out, stderr=err)
        # Every output of these tests is grepped: "internal error" is left for real bugs (issue 10).
        assert "internal error" not in out.getvalue() + err.getvalue(), (argv, err.getvalue())
        return Run(code, out.getvalue(), err.getvalue())

    run.root = root  # type: ignore[attr-defined]
    run.env = env  # type: ignore[attr-defined]
    return run


def test_messages_on_stderr_start_with_mmctl(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    r = mm("read", "nowhere")
    assert (r.code, r.out, r.err) == (1, "", "mmctl: no note for topic nowhere\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["write"], "write requires a <topic>"),
    (["write", "t"], "write requires --content TEXT"),
    (["write", "t", "--content", "x", "--budget", "abc"], '--budget expects a non-negative integer (got "abc")'),
    (["search"], "search requires a <query>"),
    (["search", "q", "--limit=-1"], '--limit expects a non-negative integer (got "-1")'),
    (["delete"], "delete requires a <topic>"),
    (["uri"], "uri requires a <topic>"),
    (["frobnicate"], "unknown command: frobnicate"),
])
def test_usage_errors_exit_2(mm, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    r = mm(*argv)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"mmctl: {message}\n")


def test_help_is_printed_for_no_command_help_and_dash_h(mm) -> None:  # type: ignore[no-untyped-def]
    for argv in ([], ["help"], ["-h"], ["--help"]):
        r = mm(*argv, root_flag=False)
        assert r.code == 0 and r.out.startswith("mmctl — Memory Standard Protocol CLI") and "\n  watch " in r.out


def test_flag_values_come_as_k_eq_v_or_as_the_next_word(mm) -> None:  # type: ignore[no-untyped-def]
    assert mm("write", "a", "--content=one two", "--summary", "S", "--tags=x,y").code == 0
    note = mm("read", "a", "--json").json
    assert (note["body"], note["summary"], note["tags"]) == ("one two", "S", ["x", "y"])


def test_switches_never_take_the_next_word_and_options_mix_with_positionals() -> None:
    args = parse_args(["--root", "r", "read", "--json", "alpha", "--all"])
    assert args.positionals == ["read", "alpha"]
    assert args.flags == {"--json": True, "--all": True, "--root": "r"}
    assert parse_args(["write", "t", "--summary=--- draft", "--content", "-"]).flags["--summary"] == "--- draft"


def test_integers_are_read_as_javascript_number_does() -> None:
    assert [js_number(s) for s in ("", " 12 ", "0x10", "1e2", "1.0", "+3")] == [0, 12, 16, 100, 1, 3]
    assert all(js_number(s) != js_number(s) for s in ("abc", "1a", "0x", "--1"))


def test_mmctl_now_pins_the_clock_of_direct_writes(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "a", "--content", "x")
    assert mm("read", "a", "--json").json["updated"] == NOW
    assert mm("budget", "--json").json["loadedAt"] == NOW


def test_over_budget_write_exits_1_and_prints_the_outcome(mm) -> None:  # type: ignore[no-untyped-def]
    r = mm("write", "big", "--content", "x" * 20, "--budget", "10", "--json")
    assert r.code == 1 and r.json["ok"] is False and r.json["code"] == "E_WRITE_BUDGET_EXCEEDED"
    assert r.json["usage"]["overflow"] == 10
    text = mm("write", "big", "--content", "x" * 20, "--budget", "10")
    assert text.code == 1 and text.out == ""
    assert text.err.startswith("mmctl: content exceeds its write budget; compress it to fit\n  body 20/10")
    assert not (mm.root / "memories" / "big.md").exists()


def test_reading_a_missing_topic_as_json_says_found_false(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    r = mm("read", "ghost", "--json")
    assert (r.code, r.json) == (1, {"found": False, "topic": "ghost", "uri": "mm://local/ghost"})


def test_read_shows_a_review_date_only_when_the_note_has_one(mm) -> None:  # type: ignore[no-untyped-def]
    assert mm("write", "rotation", "--content", "rotate the keys", "--review-after", "2027-01-15").code == 0
    assert mm("write", "plain", "--content", "no date here").code == 0
    assert "\nupdated: " in mm("read", "rotation").out and "\nreview after: 2027-01-15\n\nrotate the keys\n" in \
        mm("read", "rotation").out
    assert "review after" not in mm("read", "plain").out  # the reference's output, byte for byte


def test_a_bad_topic_fails_with_the_reason(mm) -> None:  # type: ignore[no-untyped-def]
    r = mm("write", "no spaces", "--content", "x")
    assert r.code == 1 and r.err.startswith('mmctl: topic "no spaces" is not a valid slug')


def test_an_escaping_core_error_names_the_code_the_value_and_the_fix(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    r = mm("uri", "bad topic")
    first, second = r.err.splitlines()
    assert r.code == 1 and r.out == ""
    assert first.startswith('mmctl: E_INVALID: topic "bad topic" is not a valid slug')
    assert second.startswith("mmctl: topics are ASCII slugs")


def test_a_broken_index_names_the_file_and_line_and_points_to_doctor(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    (mm.root / "MEMORY.md").write_text("# MEMORY.md\n\n## not a slug\n")
    for command in (["read"], ["list"], ["search", "x"], ["budget"]):
        r = mm(*command)
        first, second = r.err.splitlines()
        assert r.code == 1 and "Traceback" not in r.err, command
        assert first == f'mmctl: E_PARSE: {mm.root}/MEMORY.md: index line 3: heading "not a slug" is not a valid ' \
                        "topic slug", command
        assert second.endswith(f"`mmctl doctor --root {mm.root}` lists every problem"), command
    assert (mm.root / "MEMORY.md").read_text() == "# MEMORY.md\n\n## not a slug\n"


@pytest.mark.parametrize(("toml", "why"), [
    ('indexLines = "x"', "indexLines = 'x': must be a positive integer"),
    ("nudge.enabled = 1", "nudge.enabled = 1: must be true or false"),
    ('memoryId = "a b"', "memoryId = 'a b': memoryId \"a b\" is not a valid slug"),
    ('search.mode = "x"', "search.mode = 'x': search.mode must be one of auto, scan, fts5"),
    ("root = [unclosed", "{file}:1:9: not valid TOML: Invalid value"),
])
def test_a_bad_config_value_is_worded_as_mmd_words_it(mm, tmp_path: Path, toml: str, why: str) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "xdg" / "mmd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(toml + "\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    mm("init", extra_env={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    r = mm("read", extra_env=env)
    first, second = r.err.splitlines()
    assert r.code == 1 and first.startswith("mmctl: config error: " + why.format(file=config)), r.err
    assert second == f"mmctl: fix or remove it in {config}, which mmd reads too"
    assert "slug" not in second
    daemon = subprocess.run([sys.executable, "-m", "mmd.daemon.main", "--root", str(mm.root)], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path), **env})
    assert daemon.returncode != 0 and daemon.stderr.splitlines()[0] == "mmd:" + first[len("mmctl:"):]


def test_digest_without_any_source_exits_1(mm) -> None:  # type: ignore[no-untyped-def]
    r = mm("digest")
    assert r.code == 1 and r.err.startswith("mmctl: no digest source: ")
    assert mm("digest", "--json").json["sourceKind"] == "none"


def test_search_truncation_and_limit(mm) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        mm("write", f"t{i}", "--content", "shared word")
    r = mm("search", "shared", "--limit", "2")
    assert r.code == 0 and r.out.startswith("3 match(es) via scan — shared\n") and r.out.endswith(
        "(truncated to limit)\n")
    assert mm("search", "shared", "--limit", "0", "--json").json["total"] == 3


def test_read_all_lists_every_note(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "a", "--content", "x", "--summary", "Alpha")
    r = mm("read", "--all", "--json")
    assert [n["body"] for n in r.json["notes"]] == ["x"] and r.json["index"]["entries"][0]["summary"] == "Alpha"


def test_status_queue_and_watch_say_they_need_the_daemon_and_how_to_start_it(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    for argv in (["status"], ["queue", "list"], ["watch"]):
        r = mm(*argv)
        assert r.code == 1 and "needs the mmd daemon" in r.err and f"mmd --root {mm.root}" in r.err


def test_queue_subcommands_are_checked_before_looking_for_the_daemon(mm) -> None:  # type: ignore[no-untyped-def]
    assert mm("queue", "frob").code == 2
    assert mm("queue", "accept").code == 2


def test_nudge_works_on_the_files(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    r = mm("nudge", "--json")
    assert r.code == 0 and r.json["at"] == NOW and r.json["noteCount"] == 0
    assert "pending writes" in mm("nudge").out


def test_guide_in_english_and_chinese(mm) -> None:  # type: ignore[no-untyped-def]
    assert "Index first" in mm("guide").out
    assert "先读索引" in mm("guide", "--lang", "zh").out
    assert mm("guide", "--lang", "fr").code == 2


def test_doctor_reports_and_fix_indexes_orphans_without_deleting_anything(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "kept", "--content", "body")
    (mm.root / "memories" / "kept.md").unlink()  # now a dangling entry
    (mm.root / "memories" / "stray.md").write_text("# stray\n\nstray body\n")
    r = mm("doctor", "--json")
    assert r.code == 1 and sorted(p["kind"] for p in r.json["problems"]) == ["dangling", "orphan"]
    fixed = mm("doctor", "--fix", "--json")
    assert fixed.code == 1 and [p["kind"] for p in fixed.json["problems"]] == ["dangling"]
    assert fixed.json["fixed"][0]["done"] is True
    assert mm("read", "stray", "--json").json["body"] == "stray body"
    assert "kept" in mm("list").out  # the dangling entry stays: dropping it is the user's decision


def test_doctor_on_a_missing_root_suggests_init_and_creates_nothing(mm) -> None:  # type: ignore[no-untyped-def]
    for argv in (["doctor"], ["doctor", "--fix"]):
        r = mm(*argv)
        assert r.code == 1 and r.err.startswith("mmctl: E_NOT_INITIALIZED: no memory root at ")
        assert "mmctl init" in r.err and not mm.root.exists()


def test_a_direct_write_reports_a_lock_held_too_long(mm, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from mmctl import backend

    from mmd.core.durable import WriteLock
    from mmd.wire.endpoints import endpoints_for

    mm("init")
    monkeypatch.setattr(backend, "LOCK_WAIT_S", 0.2)
    with WriteLock(mm.root):
        r = mm("write", "a", "--content", "x")
    assert r.code == 1 and "locked by pid" in r.err and str(os.getpid()) in r.err
    # it names where this client looked for the daemon, not a generic "check that the path exists"
    assert endpoints_for(mm.root, mm.env).rpc in r.err and "XDG_RUNTIME_DIR" in r.err
    assert "mmctl status --root" in r.err and "check that the path exists" not in r.err
    with WriteLock(mm.root):  # told not to ask the daemon: it is not "a daemon that does not answer"
        r = mm("write", "a", "--content", "x", extra_env={"MMCTL_NO_DAEMON": "1"})
    assert r.code == 1 and "MMCTL_NO_DAEMON=1 tells mmctl not to ask" in r.err and "does not answer" not in r.err


ONE_SHOT_MODULES = {
    "mmctl", "mmctl.backend", "mmctl.cli", "mmctl.cli.checks", "mmctl.cli.main", "mmctl.cli.output", "mmctl.cli.parser",
    "mmctl.cli.reference", "mmctl.cli.table", "mmctl.pins", "mmctl.render", "mmd", "mmd.core", "mmd.core.budget",
    "mmd.core.clock",
    "mmd.core.config_file", "mmd.core.durable", "mmd.core.engine", "mmd.core.errors", "mmd.core.format",
    "mmd.core.index_state", "mmd.core.lazyre", "mmd.core.live_budget", "mmd.core.memory", "mmd.core.model",
    "mmd.core.options", "mmd.core.paths", "mmd.core.record", "mmd.core.rootfs", "mmd.core.snapshot", "mmd.core.store",
    "mmd.core.text", "mmd.core.uri", "mmd.core.projects", "mmctl.scope",
    "mmd.screen", "mmd.screen.hidden",  # a non-ASCII note or index is shown with its hidden text escaped (issue 29)
}
"""Every module of ours a one-shot ``read``, ``list``, ``uri`` or ``budget`` may import (issue 17; the scope, with the
current folder's project found from the files, since issue 27); search adds the search engines."""
SEARCH_MODULES = {"mmd.core.bm25", "mmd.core.fts5", "mmd.core.search"}
HEAVY = ("typing", "dataclasses", "inspect", "argparse", "json", "tomllib", "threading", "asyncio", "zmq", "mcp",
         "watchfiles", "apscheduler", "shtab", "zstandard")
"""Never imported by a one-shot read: typing- and dataclass-heavy, the parser we skip, the daemon's dependencies."""


@pytest.mark.parametrize(("argv", "extra", "allowed"), [
    (["read", "t"], SEARCH_MODULES, ()),
    (["read"], SEARCH_MODULES, ()),
    (["list"], SEARCH_MODULES, ()),
    (["uri", "t"], SEARCH_MODULES, ()),
    (["search", "deploy"], set(), ("sqlite3", "datetime")),
    (["budget"], set(), ("sqlite3", "datetime")),
])
def test_a_one_shot_read_imports_only_what_it_uses(tmp_path: Path, argv: list[str], extra: set[str],
                                                   allowed: tuple[str, ...]) -> None:
    root = tmp_path / "root"
    from mmd.core import Memory, MemoryOptions

    Memory.ensure(MemoryOptions.create(root=root)).write("t", "we deploy on Fridays", summary="deploys", tags="ops")
    probe = ("import sys, runpy; sys.argv = ['mmctl', *sys.argv[2:], '--root', sys.argv[1]]\n"
             "try:\n    runpy.run_module('mmctl', run_name='__main__')\nexcept SystemExit as done:\n"
             "    print('exit', done.code, file=sys.stderr)\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    env = {**os.environ, "DSH_HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.run([sys.executable, "-c", probe, str(root), *argv], capture_output=True, text=True,
                          env=env, timeout=60)
    *_, code, modules = proc.stderr.strip().splitlines()
    assert code == "exit 0", proc.stderr
    loaded = set(modules.split())
    ours = {m for m in loaded if m.split(".")[0] in ("mmd", "mmctl")}
    assert ours - ONE_SHOT_MODULES - SEARCH_MODULES == set()
    assert ours & extra == set()
    heavy = {m for m in loaded if m.split(".")[0] in (*HEAVY, *(("sqlite3", "datetime") if not allowed else ()))}
    assert heavy == set(), f"{argv}: {sorted(heavy)}"
    assert "mmd.core.lazyre" in ours and "mmctl.cli.reference" in ours  # the probe did run the command


def test_doctor_finds_malformed_notes_and_an_over_budget_index_and_fixes_neither(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "odd", "--content", "fine at first")
    (mm.root / "memories" / "odd.md").write_text("# not a slug!\n\nbody\n")
    index = (mm.root / "MEMORY.md").read_text()
    (mm.root / "MEMORY.md").write_text(index + "".join(f"free text line {i}\n" for i in range(250)))
    before = sorted(p.name for p in (mm.root / "memories").iterdir())
    r = mm("doctor", "--fix", "--json")
    kinds = sorted(p["kind"] for p in r.json["problems"])
    assert r.code == 1 and kinds == ["index-over-budget", "malformed"] and r.json["fixed"] == []
    assert sorted(p.name for p in (mm.root / "memories").iterdir()) == before
    text = mm("doctor").out
    assert "malformed: memories/odd.md is not an mm v1 note" in text and "consolidate it" in text


def test_a_refused_write_prints_its_figures_under_the_message(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    r = mm("write", "a", "--content", "x" * 12, "--budget", "10")
    assert r.code == 1 and r.out == ""
    message, figures = r.err.splitlines()
    assert message == "mmctl: content exceeds its write budget; compress it to fit"  # the figures follow
    from mmd.core.format import serialize_note

    would = len(serialize_note(topic="a", memory_id="local", file="memories/a.md", body="x" * 12).encode())
    assert figures.startswith(f"  body 12/10 chars (2 over), note {would}/65536 bytes, index 9/200 lines")
    from tests.conformance_rules import _cli_as_reference  # the reference's message, for the conformance runner

    assert _cli_as_reference({"stderr": r.err})["stderr"] == \
        "dsh-memory: content exceeds its write budget; compress it to fit (see usage)\n"
    empty = mm("write", "a", "--content", "")  # not a budget's refusal: no figures to explain it
    assert empty.code == 1 and empty.err == "mmctl: content must be a non-empty string\n"
    assert would > 12 and not (mm.root / "memories" / "a.md").exists()


def test_the_config_file_sets_the_root_and_the_memory_options(mm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """mmctl reads mmd's config file, so direct commands see the memory as the daemon configured it."""
    configured = tmp_path / "configured-root"
    (tmp_path / ".config" / "mmd").mkdir(parents=True)
    (tmp_path / ".config" / "mmd" / "config.toml").write_text(
        f'root = "{configured}"\nmemoryId = "work"\nindexLines = 20\ndefaultWriteBudget = 50\n')
    assert mm("write", "a", "--content", "x", root_flag=False).out == "created mm://work/a\n"
    assert (configured / "memories" / "a.md").exists() and not mm.root.exists()
    budget = mm("budget", "--json", root_flag=False).json
    assert (budget["memoryId"], budget["index"]["lineCap"]) == ("work", 20)
    refused = mm("write", "b", "--content", "y" * 51, root_flag=False)
    assert refused.code == 1 and "  body 51/50 chars (1 over)" in refused.err
    mm("init")
    assert mm("uri", "a").out == "mm://work/a\n"  # --root picks the root; the options still come from the file


def test_a_bad_config_file_is_reported_with_its_path(mm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / ".config" / "mmd").mkdir(parents=True)
    (tmp_path / ".config" / "mmd" / "config.toml").write_text("indexLines = 0\n")
    r = mm("write", "a", "--content", "x")
    assert r.code == 1 and r.err.startswith("mmctl: config error: indexLines = 0: must be a positive integer\n")
    assert "config.toml" in r.err and not (mm.root / "memories" / "a.md").exists()


def test_a_direct_write_keeps_its_lock_in_the_roots_state_folder(mm) -> None:  # type: ignore[no-untyped-def]
    """The ``state-folders`` deviation: a written root holds a ``.mmd/`` folder, which no read lists."""
    assert mm("write", "a", "--content", "x").code == 0
    assert (mm.root / ".mmd").is_dir()
    assert mm("list").out == "a\n" and mm("doctor").code == 0


def test_content_from_stdin_or_a_file_and_a_value_starting_with_dashes(mm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    body = tmp_path / "body.md"
    body.write_text("from a file — ü\n", encoding="utf-8")
    assert mm("write", "f", "--file", str(body), "--summary=--- draft").code == 0
    note = mm("read", "f", "--json").json
    assert (note["body"], note["summary"]) == ("from a file — ü", "--- draft")
    out, err = io.StringIO(), io.StringIO()
    code = main(["write", "s", "--content", "-", "--root", str(mm.root)], env={"HOME": str(tmp_path)},
                stdout=out, stderr=err, stdin=io.BytesIO(b"from stdin\n"))
    assert code == 0, err.getvalue()
    assert mm("read", "s", "--json").json["body"] == "from stdin"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_name_every_command_and_complete_topics_from_the_index(mm, shell: str) -> None:  # type: ignore[no-untyped-def]
    from mmctl.cli.parser import COMMANDS

    r = mm("completion", shell, root_flag=False)
    assert r.code == 0 and all(name in r.out for name in COMMANDS)
    assert "mmctl list 2>/dev/null" in r.out
    if shell == "bash":
        check = subprocess.run(["bash", "-n"], input=r.out, text=True, capture_output=True, timeout=30)
        assert check.returncode == 0, check.stderr


def test_doctor_finds_what_the_files_show_and_fixes_only_a_dead_writers_temp_file(mm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mm("write", "a", "--content", "x")
    mm("write", "b", "--content", "y")
    memories = mm.root / "memories"
    (memories / "a.md").write_text("no header here\n")
    (memories / ".b.md.999999999.1.abcdef01.tmp").write_text("half")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# c\n\nbody\n")
    (memories / "c.md").symlink_to(outside)
    index = mm.root / "MEMORY.md"
    clean = index.read_text()
    index.write_text(clean + "<<<<<<< HEAD\n=======\n>>>>>>> theirs\n")
    kinds = {p["kind"]: p for p in mm("doctor", "--json").json["problems"]}
    assert {"conflict-markers", "temp-file", "no-header", "outside-root"} <= set(kinds)
    assert kinds["temp-file"]["fixable"] and not kinds["no-header"]["fixable"]
    index.write_text(clean + "## Not A Slug\n")
    r = mm("doctor", "--fix", "--json")
    kinds = {p["kind"]: p for p in r.json["problems"]}
    assert r.code == 1 and "index line" in kinds["unparsable-index"]["message"] and "temp-file" not in kinds
    assert [f["done"] for f in r.json["fixed"]] == [True] and not (memories / ".b.md.999999999.1.abcdef01.tmp").exists()
    assert (memories / "a.md").read_text() == "no header here\n" and outside.read_text() == "# c\n\nbody\n"
    assert "internal error" not in mm("doctor").err


@pytest.mark.parametrize("argv", [
    ["read", "t", "--root", "r"], ["--root", "r", "read", "--all", "--json"], ["write", "t", "--content", "x y",
    "--summary=--- d", "--budget", "0x10"], ["search", "q", "--mode", "scan", "--limit=3"], ["queue"],
    ["queue", "reject", "1", "2", "--reason", "dup"], ["queue", "list", "--status", "all"], ["digest", "--text", ""],
    ["watch", "--topic", "memory/", "--count", "2"], ["completion", "fish"], ["uri", "t", "--json"],
])
def test_the_quick_path_reads_a_plain_line_as_argparse_does(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from mmctl.cli import parser

    def no_argparse(command: Any) -> Any:
        raise AssertionError("the quick path built an argparse parser")

    with monkeypatch.context() as patched:
        patched.setattr(parser, "command_parser", no_argparse)
        quick = parse_args(argv)
    monkeypatch.setattr(parser, "_plain_parse", lambda command, rest: None)
    assert parse_args(argv) == quick


def test_deleting_a_dangling_entry_says_it_removed_the_entry(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "gone", "--content", "x")
    (mm.root / "memories" / "gone.md").unlink()
    assert mm("delete", "gone").out == "deleted gone: removed its index entry (the note file was already gone)\n"
    assert mm("delete", "gone").out == "nothing to delete: no note for topic gone\n" and mm("list").out == \
        "(no notes)\n"


def test_deleting_a_missing_topic_says_there_was_nothing_to_delete(mm) -> None:  # type: ignore[no-untyped-def]
    mm("init")
    r = mm("delete", "nosuch")
    assert (r.code, r.out, r.err) == (0, "nothing to delete: no note for topic nosuch\n", "")
    as_json = mm("delete", "nosuch", "--json")  # the reference's shape, unchanged
    assert as_json.code == 0 and as_json.json["removed"] is False and as_json.json["ok"] is True
    assert list(as_json.json) == ["ok", "removed", "topic", "pendingWrites", "usage"]


def test_doctor_reports_loose_modes_and_case_twins_and_says_the_fix_it_cannot_make(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "deploy", "--content", "region a")
    note = mm.root / "memories" / "deploy.md"
    note.chmod(0o620)  # chmod g+w
    (mm.root / "memories" / "Deploy.md").write_text("# Deploy\n\nregion b\n")  # from another machine
    before = {p.name: p.read_bytes() for p in (mm.root / "memories").iterdir()}
    r = mm("doctor", "--json")
    assert r.code == 1
    found = {p["kind"]: p for p in r.json["problems"]}
    assert set(found) == {"loose-mode", "orphan", "case-twins"} and not any(p["fixable"] for p in found.values())
    assert found["loose-mode"]["message"] == (f"memories/deploy.md is writable by group (0o620): another user could "
                                              f"change the memory; `chmod go-w {note}`")
    assert found["case-twins"]["message"].startswith("topics Deploy, deploy differ only by case")
    assert "`mmctl delete Deploy`" in found["case-twins"]["message"]
    fixed = mm("doctor", "--fix")
    assert fixed.code == 1 and "internal error" not in fixed.err and "fixed:" not in fixed.out
    assert {p.name: p.read_bytes() for p in (mm.root / "memories").iterdir()} == before
    assert mm("delete", "Deploy").code == 0  # the fixes doctor names work
    subprocess.run(["chmod", "go-w", str(note)], check=True)
    assert mm("doctor").out.endswith("no problems found\n")


def test_merge_without_a_daemon_takes_a_new_summary_and_refuses_a_two_line_one(tmp_path: Path) -> None:
    """``mmctl merge … --summary S`` through the files (no daemon): the joined note is indexed under S;
    a summary with a line break is refused (exit 1) and nothing is merged."""
    root = tmp_path / "root"
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run"), "DSH_HOME": str(tmp_path / "home")}
    env.pop("DSH_MEMORY_ROOT", None)

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main([*argv, "--root", str(root)], env=env, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    assert run("write", "vpn", "--content", "The VPN needs the 2FA app.", "--summary", "VPN")[0] == 0
    assert run("write", "staging", "--content", "Staging deploys at noon.", "--summary", "Staging")[0] == 0
    code, _, err = run("merge", "vpn", "--into", "staging", "--summary", "two\nlines")
    assert code == 1 and "summary" in err
    assert sorted(json.loads(run("list", "--json")[1])["topics"]) == ["staging", "vpn"]
    code, out, _ = run("merge", "vpn", "--into", "staging", "--summary", "Deploys: staging at noon, VPN needs 2FA")
    assert (code, out) == (0, "merged vpn into staging (updated)\n")
    notes = json.loads(run("list", "--json")[1])["notes"]
    assert [(n["topic"], n["summary"]) for n in notes] == [("staging", "Deploys: staging at noon, VPN needs 2FA")]
    assert "MEMORY.md" in os.listdir(root) and "Deploys: staging at noon" in (root / "MEMORY.md").read_text()


def test_a_one_shot_write_through_the_daemon_imports_no_dataclasses_and_no_openssl(daemon) -> None:  # type: ignore[no-untyped-def]
    """The write goes through the daemon (zmq is needed), but not through dataclasses/inspect or hashlib's
    OpenSSL: ~8 ms of every call (issue 17: ``mmctl write`` via the daemon <= 60 ms)."""
    probe = ("import sys, runpy; sys.argv = ['mmctl', *sys.argv[2:], '--root', sys.argv[1]]\n"
             "try:\n    runpy.run_module('mmctl', run_name='__main__')\nexcept SystemExit as done:\n"
             "    print('exit', done.code, file=sys.stderr)\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", probe, str(daemon.root), "write", "t", "--content", "via the daemon"],
                          capture_output=True, text=True, env=daemon.env, timeout=60)
    *_, code, modules = proc.stderr.strip().splitlines()
    assert code == "exit 0", proc.stderr
    loaded = set(modules.split())
    assert "zmq" in loaded and "mmctl.client" in loaded  # it did go through the daemon
    assert loaded & {"dataclasses", "inspect", "hashlib", "_hashlib"} == set()
    assert (daemon.root / "memories" / "t.md").read_text().endswith("via the daemon\n")


def test_reading_a_note_whose_file_is_gone_says_so(mm) -> None:  # type: ignore[no-untyped-def]
    # the empty body printed with exit 0 read as an empty note
    mm("write", "victim", "--content", "body", "--summary", "V")
    (mm.root / "memories" / "victim.md").unlink()
    r = mm("read", "victim")
    assert r.code == 0 and r.out.startswith("# victim\n") and "body" not in r.out
    assert "memories/victim.md is missing" in r.err and "mmctl doctor" in r.err


def test_a_write_that_makes_a_root_at_a_given_root_says_so(tmp_path: Path) -> None:
    """``--root /x/memroy`` (a typo) made a root silently; the write says so once, on stderr."""
    env = {"HOME": str(tmp_path), "MMCTL_NO_DAEMON": "1"}
    out, err = io.StringIO(), io.StringIO()
    typo = tmp_path / "memroy"
    assert main(["write", "x", "--content", "hi", "--root", str(typo)], env=env, stdout=out, stderr=err) == 0
    assert out.getvalue() == "created mm://local/x\n"
    assert err.getvalue() == f"mmctl: note: {typo} (--root) held no memory root; this write made a new one there\n"
    out, err = io.StringIO(), io.StringIO()
    assert main(["write", "y", "--content", "hi", "--root", str(typo)], env=env, stdout=out, stderr=err) == 0
    assert err.getvalue() == ""
