"""The mm core under hostile files and bad input (issues 11 and 15): containment, the door, modes, case.

Each test runs the real core on real files; the full-disk tests mount a tiny tmpfs
when the machine allows it (root), and skip visibly otherwise.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mmctl.cli.main import main

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.health import case_twins, loose_modes, remove_stale_temp_files, stale_temp_files
from mmd.core.paths import INDEX_NAME

NOW = "2026-01-02T03:04:05.000Z"
HEADER = ("# MEMORY.md\n\nMemory Standard Index — hand-load priority; managed by dsh-memory-standard.\n"
          "Hard caps: 200 lines / 25600 bytes. Over budget => rewrite (never truncate).\n\n"
          "> mm-id: local\n> mm-version: 1\n> mm-kind: index\n> mm-caps: 200 lines / 25600 bytes\n")


def make(root: Path, **kw: object) -> Memory:
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(root.parent / "home")}, **kw)  # type: ignore[arg-type]
    return Memory.ensure(options, now=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), fts5=False)


def entry(topic: str, file: str | None = None, summary: str = "") -> str:
    return (f"## {topic}\n- **summary:** {summary}\n- **tags:** \n- **file:** {file or f'memories/{topic}.md'}\n"
            f"- **updated:** {NOW}\n- **budget:** 1/4000\n")


def note(topic: str, body: str) -> str:
    return (f"# {topic}\n\n> mm-id: local\n> mm-version: 1\n> mm-kind: note\n> mm-topic: {topic}\n"
            f"> mm-file: memories/{topic}.md\n\n{body}\n")


def hand_root(root: Path, index: str, notes: dict[str, str]) -> None:
    (root / "memories").mkdir(parents=True)
    (root / INDEX_NAME).write_text(index)
    for topic, body in notes.items():
        (root / "memories" / f"{topic}.md").write_text(note(topic, body))


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` but ``.mmd/``: its bytes and mode (temp files included)."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.is_file() and ".mmd" not in p.parts}


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {"HOME": str(root.parent), "DSH_HOME": str(root.parent / "home"), "MMCTL_NOW": NOW, "MMCTL_FTS5": "0",
           "XDG_RUNTIME_DIR": str(root.parent / "run")}
    code = main([*argv, "--root", str(root)], env=env, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- containment


@pytest.mark.parametrize("file", ["MEMORY.md", "./MEMORY.md", ".mmd/lock", "memories", "notes/evil.md"])
def test_an_entry_may_name_only_a_note_under_memories(tmp_path: Path, file: str) -> None:
    root = tmp_path / "root"
    hand_root(root, HEADER + entry("evil", file) + "\n" + entry("good"), {"good": "good body"})
    (root / ".mmd").mkdir()
    (root / ".mmd" / "lock").write_text("")
    (root / "notes").mkdir()
    (root / "notes" / "evil.md").write_text(note("evil", "outside memories"))
    memory = make(root)
    with pytest.raises(MMError) as info:
        memory.read_topic("evil")
    assert info.value.code == "E_PARSE" and "memories/" in info.value.message
    assert memory.read_topic("good").body == "good body"  # type: ignore[union-attr]
    assert [p["topic"] for p in memory.budget()["anomalies"]["malformedNotes"]] == ["evil"]
    outcome = memory.delete("evil")
    assert outcome["ok"] and outcome["removed"] is False
    assert (root / INDEX_NAME).is_file() and (root / ".mmd" / "lock").is_file() and (root / "memories").is_dir()
    assert (root / "notes" / "evil.md").is_file()
    assert "## evil" not in (root / INDEX_NAME).read_text() and "## good" in (root / INDEX_NAME).read_text()


def test_a_memories_folder_swapped_for_a_symlink_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "inside")["ok"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "alpha.md").write_text(note("alpha", "outside secret"))
    (root / "memories").rename(tmp_path / "moved")
    (root / "memories").symlink_to(outside)
    memory.reload()
    with pytest.raises(MMError) as info:
        memory.read_topic("alpha")
    assert info.value.code == "E_PARSE"
    with pytest.raises(MMError):
        memory.write("alpha", "through the link")
    assert memory.delete("alpha")["removed"] is False
    assert (outside / "alpha.md").read_text() == note("alpha", "outside secret")
    assert sorted(p.name for p in outside.iterdir()) == ["alpha.md"]


def alpha_and_a_secret(tmp_path: Path) -> tuple[Path, Memory, Path]:
    """A root holding note ``alpha`` ("inside") and a note-shaped file outside it ("outside secret")."""
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "inside")["ok"]
    secret = tmp_path / "secret.md"
    secret.write_text(note("alpha", "outside secret"))
    return root, memory, secret


def test_a_note_swapped_for_a_symlink_in_a_loop_is_never_served(tmp_path: Path) -> None:
    root, memory, secret = alpha_and_a_secret(tmp_path)
    path = root / "memories" / "alpha.md"
    real, link = root / "memories" / "real.tmp", root / "memories" / "link.tmp"
    real.write_bytes(path.read_bytes())
    link.symlink_to(secret)
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.link(real, root / "memories" / "r2.tmp")
            os.replace(root / "memories" / "r2.tmp", path)
            os.symlink(secret, root / "memories" / "l2.tmp")
            os.replace(root / "memories" / "l2.tmp", path)

    thread = threading.Thread(target=swap)
    thread.start()
    bodies = set()
    try:
        for _ in range(3000):
            memory.reload()
            bodies.add(memory.snapshot.note("alpha").body)  # type: ignore[union-attr]
    finally:
        stop.set()
        thread.join()
    assert "outside secret" not in bodies
    assert bodies <= {"inside", ""}


def test_an_index_symlinked_outside_the_root_is_refused_and_never_written_through(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    outside = tmp_path / "outside.md"
    outside.write_text(HEADER + entry("secret"))
    (root / INDEX_NAME).unlink()
    (root / INDEX_NAME).symlink_to(outside)
    with pytest.raises(MMError) as info:
        memory.reload()
    assert info.value.code == "E_PARSE" and "symlink" in info.value.message
    with pytest.raises(MMError):
        memory.write("alpha", "body")
    assert outside.read_text() == HEADER + entry("secret")


# --------------------------------------------------------------------------- the door

BREAKS = ["\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\x00", "\ud800"]


@pytest.mark.parametrize("field", ["summary", "tags", "updated"])
@pytest.mark.parametrize("char", BREAKS, ids=[f"U+{ord(c):04X}" for c in BREAKS])
def test_a_line_break_nul_or_lone_surrogate_in_a_one_line_field_is_refused(tmp_path: Path, field: str,
                                                                          char: str) -> None:
    root = tmp_path / "root"
    memory = make(root)
    before = (root / INDEX_NAME).read_bytes()
    with pytest.raises(MMError) as info:
        memory.write("alpha", "body", **{field: f"one{char}## evil"})
    assert info.value.code == "E_INVALID" and field in info.value.message
    assert (root / INDEX_NAME).read_bytes() == before and not (root / "memories" / "alpha.md").exists()


@pytest.mark.parametrize("char", ["\x00", "\ud800", "\udfff"])
def test_nul_or_a_lone_surrogate_in_content_is_refused(tmp_path: Path, char: str) -> None:
    root = tmp_path / "root"
    memory = make(root)
    with pytest.raises(MMError) as info:
        memory.write("alpha", f"before{char}after")
    assert info.value.code == "E_INVALID"
    assert not (root / "memories" / "alpha.md").exists()
    assert memory.write("alpha", "line\r\nbreaks\u2028are content")["ok"]


def test_the_cli_refuses_a_nul_in_content_with_exit_1(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root)
    code, _, err = cli(root, "write", "alpha", "--content", "a\x00b")
    assert code == 1 and "U+0000" in err
    assert not (root / "memories" / "alpha.md").exists()


# --------------------------------------------------------------------------- modes


def test_folders_are_0700_and_files_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        root = tmp_path / "deep" / "root"
        memory = make(root)
        assert memory.write("alpha", "body")["ok"]
    finally:
        os.umask(old)
    for folder in (tmp_path / "deep", root, root / "memories", root / ".mmd"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for file in (root / INDEX_NAME, root / "memories" / "alpha.md"):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    assert loose_modes(root) == []


def test_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "body")["ok"]
    os.chmod(root / INDEX_NAME, 0o640)
    os.chmod(root / "memories" / "alpha.md", 0o400)
    assert memory.write("alpha", "new body")["ok"] and memory.write("beta", "b")["ok"]
    assert stat.S_IMODE((root / INDEX_NAME).stat().st_mode) == 0o640
    assert stat.S_IMODE((root / "memories" / "alpha.md").stat().st_mode) == 0o400
    assert stat.S_IMODE((root / "memories" / "beta.md").stat().st_mode) == 0o600


def test_loose_modes_names_group_and_world_writable_paths(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "body")["ok"]
    os.chmod(root, 0o777)
    os.chmod(root / "memories" / "alpha.md", 0o620)
    assert loose_modes(root) == [
        {"path": ".", "mode": "0o777", "writable_by": "group+world"},
        {"path": "memories/alpha.md", "mode": "0o620", "writable_by": "group"},
    ]


# --------------------------------------------------------------------------- case


def test_a_topic_differing_only_by_case_is_a_conflict_naming_the_existing_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("Deploy", "first")["ok"]
    with pytest.raises(MMError) as info:
        memory.write("deploy", "second")
    assert info.value.code == "E_CONFLICT" and info.value.details == "Deploy" and "'Deploy'" in info.value.message
    assert memory.write("Deploy", "updated")["ok"]
    assert sorted(p.name for p in (root / "memories").iterdir()) == ["Deploy.md"]


def test_case_twins_reports_pairs_in_a_root_written_elsewhere(tmp_path: Path) -> None:
    root = tmp_path / "root"
    hand_root(root, HEADER + entry("Deploy") + "\n" + entry("deploy") + "\n" + entry("other"),
              {"Deploy": "a", "deploy": "b", "other": "c", "OTHER": "d"})
    memory = make(root)
    assert case_twins(root, memory.snapshot.entries) == [["Deploy", "deploy"], ["OTHER", "other"]]


# --------------------------------------------------------------------------- hand-edited MEMORY.md


def test_hand_written_header_lines_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    extras = "TEAM RULE: never deploy on Fridays\n> mm-owner: platform-team\n"
    hand_root(root, HEADER + "\n" + extras + "\n" + entry("alpha"), {"alpha": "a"})
    memory = make(root)
    assert memory.write("beta", "b")["ok"]
    after_write = (root / INDEX_NAME).read_text()
    assert "\nTEAM RULE: never deploy on Fridays\n> mm-owner: platform-team\n## alpha\n" in after_write
    assert memory.delete("alpha")["ok"] and memory.write("beta", "b2")["ok"]
    text = (root / INDEX_NAME).read_text()
    assert text.count("TEAM RULE: never deploy on Fridays\n") == 1 and text.count("> mm-owner: platform-team\n") == 1
    assert [e.topic for e in memory.reload().snapshot.entries] == ["beta"]


def test_a_topic_indexed_twice_by_hand_is_never_rewritten_over_its_twin(tmp_path: Path) -> None:
    """Two ``## alpha`` sections (a hand edit): a write or delete of alpha would keep one and lose the
    other's text and note link, so it is refused (E_CONFLICT naming both lines) and changes nothing;
    other topics are written as usual, both sections kept; doctor names the twin entries."""
    root = tmp_path / "root"
    twin = entry("alpha", file="memories/alpha2.md", summary="second") + "hand-written text\n"
    hand_root(root, HEADER + entry("alpha") + "\n" + twin, {"alpha": "a", "alpha2": "b"})
    memory = make(root)
    for attempt in range(2):  # from the file as read, then from the state our own write left
        before = (root / INDEX_NAME).read_bytes()
        for change in (lambda: memory.write("alpha", "new"), lambda: memory.delete("alpha"),
                       lambda: memory.store.merge(["alpha"], "beta")):
            with pytest.raises(MMError) as info:
                change()
            assert info.value.code == "E_CONFLICT" and "2 entries for topic 'alpha' (lines 10, 17" in info.value.message
            assert (root / INDEX_NAME).read_bytes() == before
        assert memory.write("beta", f"b{attempt}")["ok"]
        kept = [(e.file, e.entry_body) for e in memory.reload().snapshot.entries if e.topic == "alpha"]
        assert kept == [("memories/alpha.md", ""), ("memories/alpha2.md", "hand-written text")]
    code, out, _ = cli(root, "doctor", "--json")
    problems = [p for p in json.loads(out)["problems"] if p["kind"] == "duplicate-entry"]
    assert code == 1 and [(p["topic"], p["fixable"]) for p in problems] == [("alpha", False)]


@pytest.mark.parametrize("char", ["\x0c", "\x0b", "\x85"], ids=["FF", "VT", "NEL"])
def test_a_hand_edited_summary_blocks_no_other_write_and_no_delete(tmp_path: Path, char: str) -> None:
    root = tmp_path / "root"
    bad = entry("alpha", summary=f"page one{char}page two")
    hand_root(root, HEADER + bad + "\n" + entry("gamma"), {"alpha": "a", "gamma": "g"})
    memory = make(root)
    problems = memory.snapshot.anomalies["malformedEntries"]
    assert [(p["topic"], p["code"]) for p in problems] == [("alpha", "E_INVALID")]
    assert memory.budget()["anomalies"]["malformedEntries"] == problems
    assert memory.write("beta", "b")["ok"]
    assert bad in (root / INDEX_NAME).read_text()  # the untouched section, byte for byte
    assert memory.delete("gamma")["removed"] and memory.delete("alpha")["removed"]
    assert "malformedEntries" not in memory.reload().snapshot.anomalies
    assert [e.topic for e in memory.snapshot.entries] == ["beta"]


@pytest.mark.parametrize("char", ["\x0c", "\x0b", "\x85"], ids=["FF", "VT", "NEL"])
def test_a_write_of_the_hand_edited_topic_itself_folds_its_kept_fields(tmp_path: Path, char: str) -> None:
    root = tmp_path / "root"
    hand_root(root, HEADER + entry("alpha", summary=f"page one{char}page two").replace(
        "- **tags:** ", f"- **tags:** x{char}y, z"), {"alpha": "a"})
    memory = make(root)
    assert memory.write("alpha", "new body")["ok"]
    alpha = memory.reload().snapshot.entries[0]
    assert (alpha.summary, alpha.tags) == ("page one page two", ("x-y", "z"))
    assert "malformedEntries" not in memory.snapshot.anomalies


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r", "mixed"])
def test_every_line_ending_parses_without_losing_an_entry_or_a_line(tmp_path: Path, eol: str) -> None:
    root = tmp_path / "root"
    index = HEADER + entry("alpha") + "\n" + entry("beta") + "\nfree line one\nfree line two\n"
    alpha = note("alpha", "line one\nline two\n\nline four")

    def convert(text: str) -> str:
        if eol != "mixed":
            return text.replace("\n", eol)
        endings = ["\n", "\r\n", "\r"]
        return "".join(line + endings[i % 3] for i, line in enumerate(text.split("\n")))

    (root / "memories").mkdir(parents=True)
    (root / INDEX_NAME).write_bytes(convert(index).encode())
    (root / "memories" / "alpha.md").write_bytes(convert(alpha).encode())
    (root / "memories" / "beta.md").write_bytes(convert(note("beta", "b")).encode())
    memory = make(root)
    assert [e.topic for e in memory.snapshot.entries] == ["alpha", "beta"]
    assert memory.snapshot.entries[1].entry_body == "free line one\nfree line two"
    assert memory.read_topic("alpha").body == "line one\nline two\n\nline four"  # type: ignore[union-attr]
    assert "malformedNotes" not in memory.snapshot.anomalies


# --------------------------------------------------------------------------- broken notes


@pytest.mark.parametrize(("raw", "code"), [
    (b"# not a topic!\n\nbody\n", "E_INVALID"),
    (b"# alpha\n\nbad \xff\xfe utf-8\n", "E_PARSE"),
])
def test_a_broken_note_read_by_topic_is_an_error_while_the_rest_serves(tmp_path: Path, raw: bytes,
                                                                       code: str) -> None:
    root = tmp_path / "root"
    hand_root(root, HEADER + entry("alpha") + "\n" + entry("beta"), {"beta": "fine"})
    (root / "memories" / "alpha.md").write_bytes(raw)
    memory = make(root)
    with pytest.raises(MMError) as info:
        memory.read_topic("alpha")
    assert info.value.code == code and "alpha" in info.value.message
    assert memory.read_topic("beta").body == "fine"  # type: ignore[union-attr]
    exit_code, out, err = cli(root, "read", "alpha")
    assert exit_code == 1 and out == "" and "alpha" in err
    assert cli(root, "read", "beta")[0] == 0


# --------------------------------------------------------------------------- full disk: all or nothing


@pytest.fixture
def tiny_fs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 512 KiB tmpfs mounted on a temp folder (needs root; skips visibly otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root; the rename double below covers the index step")
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs refused here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave_bytes: int) -> Path:
    """Fill the file system, then free ``leave_bytes`` (whole pages)."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096) == 4096:
            pass
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    os.truncate(filler, filler.stat().st_size // 4096 * 4096 - leave_bytes)
    return filler


def test_a_full_disk_leaves_both_files_as_before_and_no_orphan_note(tiny_fs: Path) -> None:
    root = tiny_fs / "root"
    memory = make(root, index_bytes=10**6, index_lines=10**4)
    for i in range(40):
        assert memory.write(f"topic-{i:02}", f"body {i}", summary="s" * 300)["ok"]
    assert (root / INDEX_NAME).stat().st_size > 3 * 4096
    before = tree(root)
    filler = fill(tiny_fs, 4096)  # room for a note's temp file, not for the index's
    for topic in ("topic-07", "brand-new"):
        with pytest.raises(MMError) as info:
            memory.write(topic, "the body that did not fit")
        assert info.value.code == "E_IO"
        assert tree(root) == before
    assert memory.reload().read_topic("topic-07").body == "body 7"  # type: ignore[union-attr]
    assert memory.read_topic("brand-new") is None and not (root / "memories" / "brand-new.md").exists()
    filler.unlink()
    assert memory.write("topic-07", "fits now")["ok"]
    assert memory.reload().read_topic("topic-07").body == "fits now"  # type: ignore[union-attr]


def test_a_failed_index_rename_puts_the_previous_note_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "old body")["ok"]
    os.chmod(root / "memories" / "alpha.md", 0o640)
    before = tree(root)
    real_replace = os.replace

    def replace(src: str, dst: str, **kwargs: object) -> None:
        if dst == INDEX_NAME:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    for topic in ("alpha", "beta"):
        with pytest.raises(MMError) as info:
            memory.write(topic, "new body")
        assert info.value.code == "E_IO"
        assert tree(root) == before
    assert stat.S_IMODE((root / "memories" / "alpha.md").stat().st_mode) == 0o640


# --------------------------------------------------------------------------- crashed writers' temp files


def test_temp_files_of_a_crashed_writer_are_reported_and_removed_live_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("alpha", "a")["ok"]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid, live_pid = int(dead.stdout), os.getpid()
    names = {f"memories/.alpha.md.{dead_pid}.3.0badc0de.tmp": dead_pid, f".MEMORY.md.{dead_pid}.4.12ab.tmp": dead_pid,
             f".mmd/.state.json.{dead_pid}.1.ff.tmp": dead_pid, f"memories/.beta.md.{live_pid}.9.abcd.tmp": live_pid}
    for rel in names:
        (root / rel).write_text("partial")
    (root / "memories" / ".not-ours.tmp").write_text("kept")
    found = stale_temp_files(root)
    assert {t["path"]: (t["pid"], t["alive"]) for t in found} == {
        rel: (pid, pid == live_pid) for rel, pid in names.items()}
    removed = remove_stale_temp_files(root)
    assert removed == sorted(rel for rel, pid in names.items() if pid == dead_pid)
    assert [t["path"] for t in stale_temp_files(root)] == [f"memories/.beta.md.{live_pid}.9.abcd.tmp"]
    assert (root / "memories" / ".not-ours.tmp").exists() and memory.reload().read_topic("alpha") is not None


# --------------------------------------------------------------------------- through a real daemon


@pytest.mark.timeout(60)
async def test_the_daemon_inherits_the_door_and_the_case_check(daemon) -> None:  # type: ignore[no-untyped-def]
    from .test_daemon_helpers import Client, RpcFailure

    client = Client(daemon.rpc)
    try:
        assert (await client.call("memory.write", {"topic": "Deploy", "content": "first"}))["ok"]
        refused = [
            ({"topic": "alpha", "content": "a\u0000b"}, "E_INVALID"),
            ({"topic": "alpha", "content": "body", "summary": "page\u000cbreak"}, "E_INVALID"),
            ({"topic": "alpha", "content": "body", "tags": "a\u2028b"}, "E_INVALID"),
            ({"topic": "deploy", "content": "second"}, "E_CONFLICT"),
        ]
        for params, code in refused:
            with pytest.raises(RpcFailure) as info:
                await client.call("memory.write", params)
            assert info.value.code == code, params
        assert sorted(p.name for p in (daemon.root / "memories").iterdir()) == ["Deploy.md"]
        assert (await client.call("memory.write", {"topic": "alpha", "content": "fine"}))["ok"]
    finally:
        client.close()


def test_budget_and_doctor_agree_on_a_note_symlinked_outside_the_root(tmp_path: Path) -> None:
    root, memory, secret = alpha_and_a_secret(tmp_path)
    (root / "memories" / "alpha.md").unlink()
    (root / "memories" / "alpha.md").symlink_to(secret)
    anomalies = memory.budget()["anomalies"]
    assert anomalies["danglingEntries"] == 0
    assert [(p["topic"], p["code"]) for p in anomalies["malformedNotes"]] == [("alpha", "E_PARSE")]
    code, out, err = cli(root, "doctor", "--json")
    assert code != 0 and "malformed" in out + err and "alpha" in out + err
