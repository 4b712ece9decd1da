"""``mmctl review`` through a pseudo-terminal (pexpect) and ``mmctl ui``, against a real daemon with ``--http``.

The review keys go in one keystroke each (cbreak mode, as a person types them);
the files on disk and the queue in ``.mmd/state.db`` are checked afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.web_helpers import note_files, queue_rows, request, start_web_daemon

pexpect = pytest.importorskip("pexpect", reason="pexpect (the test extra) is not installed")

FAKE_EDITOR = """\
import sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
text = text.replace("topic: api-errors", "topic: api-error-format").rstrip("\\n") + " (edited in the editor)\\n"
open(path, "w", encoding="utf-8").write(text)
"""


def test_review_accepts_edits_rejects_undoes_and_quits(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    editor = tmp_path / "fake_editor.py"
    editor.write_text(FAKE_EDITOR)
    env = {**daemon.env, "EDITOR": f"{sys.executable} {editor}", "NO_COLOR": "1", "COLUMNS": "100"}
    child = pexpect.spawn(sys.executable, ["-m", "mmctl", "review", "--project", "/home/dev/api",
                                           "--root", str(daemon.root)], env=env, encoding="utf-8", timeout=20)
    try:
        def at(topic: str, where: str = r"\d+/\d+") -> None:
            child.expect(rf"\[{where}\] #\d+ {topic}\s")
            child.expect_exact("[q]uit > ")

        at("api-auth", "1/4")
        child.send("a")
        child.expect("accepted #\\d+ as api-auth")
        at("api-errors", "2/4")  # counted over the session: the decided one still counts
        child.send("e")
        child.expect("accepted #\\d+ as api-error-format")
        at("api-paging")
        child.send("r")
        child.expect_exact("reason (Enter for none): ")
        child.sendline("cursor paging is in the style guide")
        child.expect("rejected #\\d+")
        at("api-rate")
        child.send("u")
        child.expect("undone: #\\d+ is pending again")
        at("api-paging")
        child.send("u")
        child.expect("undone: #\\d+ is pending again; its note deleted")
        at("api-errors")
        child.send("s")
        at("api-paging")
        child.send("s")
        at("api-rate")
        child.send("q")
        child.expect("1 accepted, 0 rejected, 2 skipped, 2 undone")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "\x1b[" not in (child.before or "")  # NO_COLOR: plain text
    files = note_files(daemon)
    assert set(files) == {"api-auth.md"} and "bearer tokens" in files["api-auth.md"]
    rows = queue_rows(daemon)
    assert rows["api-auth"] == ("accepted", None, "api-auth")
    assert rows["api-errors"] == rows["api-paging"] == rows["api-rate"] == ("pending", None, None)
    assert sum(1 for r in rows.values() if r[0] == "pending") == 9


def test_review_accepts_into_an_existing_topic(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.test_ingest_helpers import call

    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    assert call(daemon, "memory.write", {"topic": "api-notes", "content": "The API is versioned in the path.",
                                         "summary": "how the API works", "project": "/home/dev/api"})["ok"]
    child = pexpect.spawn(sys.executable, ["-m", "mmctl", "review", "--project", "/home/dev/api",
                                           "--root", str(daemon.root)], env={**daemon.env, "NO_COLOR": "1"},
                          encoding="utf-8", timeout=20)
    try:
        child.expect_exact("[q]uit > ")
        child.send("i")
        child.expect_exact("notes: api-notes")  # the topics there are, to choose from
        child.expect_exact("accept into which topic? ")
        child.sendline("api-notes")
        child.expect("appended #\\d+ to api-notes")
        child.expect_exact("[q]uit > ")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    text = note_files(daemon)["api-notes.md"]
    assert "versioned in the path" in text and "bearer tokens" in text
    assert call(daemon, "memory.read", {"topic": "api-notes", "project": "/home/dev/api"})["summary"] == \
        "how the API works"
    assert queue_rows(daemon)["api-auth"] == ("accepted", None, "api-notes")


def test_review_without_a_terminal_reads_one_key_per_line(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    done = subprocess.run([sys.executable, "-m", "mmctl", "review", "--root", str(daemon.root)], input="s\nr\n\nq\n",
                          env=daemon.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout and "0 accepted, 1 rejected, 1 skipped, 0 undone" in done.stdout
    assert "  > " in done.stdout and ", None)" not in done.stdout  # evidence without a time reads "(dsh)"
    assert sum(1 for r in queue_rows(daemon).values() if r[0] == "rejected") == 1


def test_ui_print_gives_the_token_url_as_its_last_line(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    done = subprocess.run([sys.executable, "-m", "mmctl", "ui", "--print", "--root", str(daemon.root)],
                          env=daemon.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()[-1]
    assert printed == url and printed.startswith("http://127.0.0.1:") and "/?token=" in printed
    status, _, page = request(printed, "/" + printed.split("/", 3)[3])
    assert status == 200 and "Review queue" in page


def test_ui_says_how_when_the_daemon_serves_no_page(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon = start_daemon("--no-ingest")
    done = subprocess.run([sys.executable, "-m", "mmctl", "ui", "--print", "--root", str(daemon.root)],
                          env=daemon.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "--http 127.0.0.1:0" in done.stderr and done.stdout == ""


def test_review_takes_the_candidates_that_came_in_meanwhile(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.test_ingest_helpers import candidates, user_message, wait_until

    daemon, _ = start_web_daemon(start_daemon, tmp_path)
    child = pexpect.spawn(sys.executable, ["-m", "mmctl", "review", "--project", "/home/dev/api",
                                           "--root", str(daemon.root)], env={**daemon.env, "NO_COLOR": "1"},
                          encoding="utf-8", timeout=20)
    try:
        for _ in range(3):
            child.expect_exact("[q]uit > ")
            child.send("s")
        child.expect(r"\] #\d+ api-rate\s")
        log = next((tmp_path / "sessions" / "--home-dev-api--").rglob("session.v4.jsonl"))
        with open(log, "ab") as f:
            f.write(user_message(50, "mm:api-versioning the version goes in the path, /v2/", "m50"))
        wait_until(lambda: any(c["topic"] == "api-versioning" for c in candidates(daemon, "pending")),
                   what="the new candidate")
        child.expect_exact("[q]uit > ")
        child.send("s")
        child.expect_exact("1 new candidate(s) came in meanwhile")
        child.expect(r"\] #\d+ api-versioning\s")
        child.expect_exact("[q]uit > ")
        child.send("a")
        child.expect("accepted #\\d+ as api-versioning")
        child.expect("0 rejected, 4 skipped")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert "api-versioning.md" in note_files(daemon)
    assert queue_rows(daemon)["api-versioning"] == ("accepted", None, "api-versioning")


def test_review_wraps_at_words_shows_each_body_once_and_takes_the_pages_keys(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.test_ingest_helpers import call
    from tests.web_helpers import DENSE, DENSE_COUNT

    daemon, _ = start_web_daemon(start_daemon, tmp_path, fixture=DENSE, expected=DENSE_COUNT)
    ranked = call(daemon, "queue.list", {"limit": 100})["candidates"]
    longest = max(ranked, key=lambda c: len(c["body"]))
    at = ranked.index(longest) + 1
    child = pexpect.spawn(sys.executable, ["-m", "mmctl", "review", "--root", str(daemon.root)],
                          env={**daemon.env, "NO_COLOR": "1", "COLUMNS": "60"}, encoding="utf-8", timeout=20,
                          dimensions=(40, 60))
    try:
        child.expect_exact("[q]uit > ")
        for _ in range(at - 1):
            child.send("j")
            child.expect_exact("[q]uit > ")
        child.send("j")
        child.expect_exact("[q]uit > ")
        child.send("k")  # back to the longest one: shown again whole
        child.expect(rf"\[{at}/{DENSE_COUNT}\] #{longest['id']} ")
        child.expect_exact("[q]uit > ")
        shown = child.before
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    lines = [line.rstrip() for line in (shown or "").replace("\r", "").split("\n")]
    where = next(i for i, line in enumerate(lines) if line.startswith("  > "))
    first = next(i for i, line in enumerate(lines) if line.startswith("  " + longest["body"][:12]))
    kind = next(i for i, line in enumerate(lines) if line.startswith("  explicit"))
    heading = " ".join(line.strip() for line in lines[:kind])  # its end, after "[at/total] #id ", wrapped too
    assert heading == f"{longest['topic']} · to root {longest['scope']}, not this folder's (user)"  # not here: named
    meta = " ".join(line.strip() for line in lines[kind:first])  # kind, project, score… wrapped as well
    proposed = "append to it" if longest["proposal"]["action"] == "append" else "a new note"
    assert meta.startswith("explicit · said by the person · /home/dev/chess · score") and meta.endswith(proposed), meta
    body_lines = lines[first:where]
    assert all(len(line) <= 60 for line in lines), [line for line in lines if len(line) > 60]
    assert " ".join(line.strip() for line in body_lines) == longest["body"]  # whole words, nothing lost
    assert len(body_lines) > 5  # wrapped, not one long line
    text = " ".join(line.strip() for line in lines)
    assert text.count(longest["body"][:40]) == 1  # the body once: the quote (the same words) is not shown again
    assert any(line.startswith("  > human · dsh") for line in lines)  # where it was said, one line
