"""mmd.sources: the registry and the DSH / other adapters behind the Source contract (sliced reads, opaque cursors)."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

import mmd.sources
from mmd.sources import SESSIONS_FOLDER, SOURCES
from mmd.sources.dsh.session import read_session

FIXTURES = Path(__file__).parent / "fixtures"
FORK = FIXTURES / "sessions" / "--home-test-fork--" / "fork-of-fork"
DECOYS = FIXTURES / "sessions" / "--home-test-decoys--" / "session-decoys" / "session.v4.jsonl"
DSH, OTHER = SOURCES["dsh"], SOURCES["other"]


def test_the_registry_names_its_sources_by_their_own_names_and_imports_nothing_heavy() -> None:
    assert list(SOURCES)[:2] == ["dsh", "other"] and set(SESSIONS_FOLDER) <= set(SOURCES)
    assert all(source.name == name for name, source in SOURCES.items())
    assert set(mmd.sources.__all__) == {"FOLDERS", "SESSIONS_FOLDER", "SESSIONS_KIND", "SOURCES", "WHO",
                                        "Position", "Slice", "Source",
                                        "Utterance", "Who"}
    code = ("import sys, mmd.sources; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('zstandard', 'zmq', 'watchfiles') or m.startswith(('mmd.core', 'mmd.daemon', 'mmd.candidates'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[1])
    assert out.stdout.strip() == "[]"


def test_default_dirs_come_from_the_env_handed_in(tmp_path: Path) -> None:
    assert DSH.default_dir({"DSH_HOME": str(tmp_path)}, Path("/home/x")) == tmp_path / "sessions"
    assert OTHER.default_dir({}, Path("/home/x")) == Path("/home/x/.dsh/sessions")


def test_classify_gives_each_file_to_one_source(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "sessions", root)
    shutil.copytree(FIXTURES / "ingest" / "other", root / "other")
    fork = root / FORK.relative_to(FIXTURES / "sessions")
    assert DSH.classify(fork / "session.v2.jsonl", root)
    assert not DSH.classify(fork / "session.jsonl", root)  # an older generation
    assert not OTHER.classify(fork / "session.jsonl", root)  # a DSH name is never an other log
    assert not DSH.classify(fork / "session.lock", root) and not OTHER.classify(fork / "session.lock", root)
    for name in ("notes.md", "agent-log.jsonl", "config.json"):
        assert OTHER.classify(root / "other" / name, root) and not DSH.classify(root / "other" / name, root)
    assert not OTHER.classify(tmp_path / "outside.md", root)


def test_a_dsh_log_read_in_slices_gives_what_one_read_gives_and_the_stored_cursor_shape(tmp_path: Path) -> None:
    path = str(tmp_path / "session.v4.jsonl")
    shutil.copyfile(DECOYS, path)
    whole = read_session(path)
    cursor = None
    said, consumed, slices = [], 0, 0
    while True:
        s = DSH.read(path, cursor, max_bytes=1, max_chars=1_000_000)
        said += s.utterances
        consumed += s.consumed
        slices += 1
        cursor = json.loads(json.dumps(s.cursor))
        if not s.more:
            break
    assert slices > 3 and consumed == Path(path).stat().st_size
    assert [(u.text, u.position.seq, u.position.uuid) for u in said] == [
        (r.text, r.seq, r.message_id) for r in whole.records if r.text.strip()]
    assert {u.who for u in said} <= {"human", "assistant", "summary"} and {u.agent for u in said} == {"dsh"}
    assert cursor == whole.cursor.to_json()  # {"log": …, "state": …}, as state.db has always held it
    again = DSH.read(path, whole.cursor.to_json(), max_bytes=1 << 20, max_chars=1 << 20)
    assert again.utterances == [] and again.consumed == 0 and not again.restarted


def test_a_dsh_named_file_that_is_not_dsh_is_read_as_text_from_then_on(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text('{"type":"note","text":"MEMO: not a DSH header"}\n', encoding="utf-8")
    first = DSH.read(str(path), None, max_bytes=1 << 20, max_chars=1 << 20)
    assert [(u.who, u.session_id, u.position.seq) for u in first.utterances] == [("text", None, None)]
    assert "log" not in first.cursor and first.cursor["offset"] == path.stat().st_size and first.warnings
    # the next read (the old daemon stored this cursor under kind "other") reads nothing twice
    second = DSH.read(str(path), first.cursor, max_bytes=1 << 20, max_chars=1 << 20)
    assert second.utterances == [] and second.consumed == 0
    with path.open("a", encoding="utf-8") as f:
        f.write('{"type":"note","text":"REMEMBER: a later line"}\n')
    third = DSH.read(str(path), second.cursor, max_bytes=1 << 20, max_chars=1 << 20)
    assert [u.text for u in third.utterances] == ['{"type":"note","text":"REMEMBER: a later line"}']


def test_other_logs_are_one_text_utterance_per_read_and_documents_are_reread_only_when_changed(tmp_path: Path) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("## Deploys\nstaging first\n", encoding="utf-8")
    first = OTHER.read(str(doc), None, max_bytes=1 << 20, max_chars=1 << 20)
    assert [(u.who, u.agent, u.text) for u in first.utterances] == [("text", "other", "## Deploys\nstaging first\n")]
    assert first.consumed == doc.stat().st_size and not first.more
    assert OTHER.read(str(doc), first.cursor, max_bytes=1 << 20, max_chars=1 << 20).utterances == []
    assert OTHER.read(str(doc), {"log": {}, "state": {}}, max_bytes=1 << 20, max_chars=1 << 20).utterances


def test_is_live_is_the_session_lock_held(tmp_path: Path) -> None:
    session = tmp_path / "s"
    shutil.copytree(FORK, session)
    log = session / "session.v2.jsonl"
    assert not DSH.is_live(log) and not OTHER.is_live(log)
    with open(session / "session.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        held = DSH.is_live(log)
    assert held or not Path("/proc/locks").exists()
