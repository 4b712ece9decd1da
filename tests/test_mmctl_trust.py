"""``mmctl`` without a daemon (issue 29): direct writes screened as the daemon's are, ``--allow-secret`` recorded,
``log`` and ``restore`` from the version history, ``doctor`` naming secrets and hidden text (never a value)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from mmctl.cli.main import main

from tests.test_mmctl_cli import NOW, Run

CURATED = "Curated release checklist: freeze, tag, build, sign, publish, announce. " * 20


@pytest.fixture
def mm(tmp_path: Path) -> Callable[..., Run]:
    """``mm(*argv)``: mmctl in-process on ``tmp_path/root``, no daemon around, the clock pinned."""
    root = tmp_path / "root"
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "home"), "MMCTL_NOW": NOW, "MMCTL_FTS5": "0",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}

    def run(*argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = main([*argv, "--root", str(root)], env=env, stdout=out, stderr=err)
        return Run(code, out.getvalue(), err.getvalue())

    run.root = root  # type: ignore[attr-defined]
    return run


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".mmd" not in p.parts}


def test_a_direct_write_with_a_secret_is_refused_and_allowed_only_by_the_flag(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "seed", "--content", "a seed note")
    before = _files(mm.root)
    r = mm("write", "staging", "--content", "notes\nuse AKIA4XKQ7RZP2MBN6TWD for uploads")
    assert r.code == 1 and "content holds a secret: aws access key at line 2" in r.err and "AKIA4X" not in r.err
    assert mm("write", "staging", "--content", "ok", "--summary", "pw is \u200bhidden").code == 1
    assert _files(mm.root) == before
    r = mm("write", "staging", "--content", "notes\nuse AKIA4XKQ7RZP2MBN6TWD for uploads", "--allow-secret")
    assert r.code == 0 and "aws access key (content, line 2)" in r.err
    [kept] = json.loads(mm("log", "staging", "--json").out)["commits"]
    assert kept["allowed"] == {"secrets": [{"field": "content", "kind": "aws access key", "line": 2}]}
    assert "[allowed: aws access key]" in mm("log", "staging").out


def test_log_and_restore_work_on_the_files_alone(mm) -> None:  # type: ignore[no-untyped-def]
    assert mm("write", "release", "--content", CURATED, "--budget", "2000").code == 0
    assert mm("write", "release", "--content", "see the wiki").code == 0
    commits = json.loads(mm("log", "release", "--json").out)["commits"]
    assert [c["chars"] for c in commits] == [len("see the wiki"), len(CURATED)]
    assert set(commits[0]) >= {"commit", "parents", "date", "author", "subject", "revisions", "topics", "root",
                               "otherRoot"}
    r = mm("restore", "release", "--at", f"r{commits[1]['revisions'][0]}")
    assert r.code == 0 and "wrote release back" in r.out, r.err
    assert mm("read", "release", "--json").out and json.loads(mm("read", "release", "--json").out)["body"] == CURATED
    assert mm("delete", "release").code == 0
    gone = json.loads(mm("log", "release", "--json").out)["commits"][0]
    r = mm("restore", "release", "--at", gone["commit"])
    assert r.code == 1 and "a restore never deletes" in r.err
    assert mm("restore", "release", "--at", "r1").code == 1  # no version kept at r1: said, nothing written
    r = mm("restore", "release", "--at", "r999999")  # a revision the root never reached: said, nothing written
    assert r.code == 1 and "r999999 is after the root's newest revision" in r.err, r.err
    r = mm("restore", "release", "--at", commits[0]["commit"])
    assert r.code == 0 and json.loads(mm("read", "release", "--json").out)["body"] == "see the wiki"


def test_doctor_names_secrets_and_hidden_text_by_kind_topic_and_line_never_the_value(mm) -> None:  # type: ignore[no-untyped-def]
    mm("write", "ops", "--content", "ops notes")
    note = mm.root / "memories" / "ops.md"
    note.write_text(note.read_text().replace("ops notes", "ops notes\nthe db password is hunter2\nrun\u202e it"))
    r = mm("doctor", "--json")
    found = [(p["kind"], p["topic"], p["field"], p["line"]) for p in json.loads(r.out)["problems"]]
    assert r.code == 1 and found == [("secret", "ops", "body", 2), ("hidden-text", "ops", "body", 3)]
    assert "hunter2" not in r.out and "\u202e" not in r.out
    text = mm("doctor").out
    assert "memories/ops.md, line 2 of its body holds a password" in text and "U+202E RIGHT-TO-LEFT OVERRIDE" in text
    shown = mm("read", "ops").out
    assert "run\\u{202E} it" in shown and "\u202e" not in shown
