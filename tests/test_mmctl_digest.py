"""``mmctl digest --file F``: a recognised agent log goes through the daemon's adapter and candidate pipeline.

Fixtures (``tests/fixtures/digest``): a DSH log, a Claude Code transcript and a Codex rollout whose typed
prompts and replies carry ``mm:`` markers, beside markers in text no adapter emits (tool output, injected
reminders and plugin text, developer messages). The reference's line flattening finds those too; the
adapters never do. Any other file keeps the reference's digest byte for byte (conformance rule
``digest-agent-log``).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from mmctl.cli.main import main

from mmd.candidates import Seen, candidates_from
from mmd.core.digest import digest
from mmd.sources.recognise import read_whole, recognise, recognise_text
from tests.test_ingest_helpers import backfilled, candidates

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLAUDE = FIXTURES / "digest" / "claude-code-session.jsonl"
CODEX = FIXTURES / "digest" / "codex-rollout.jsonl"
DSH = FIXTURES / "digest" / "dsh-session.jsonl"
DSH_LEGACY = FIXTURES / "sessions" / "--home-test-legacy--" / "session-v0-legacy" / "session.jsonl"
OTHER = FIXTURES / "ingest" / "other" / "agent-log.jsonl"
NOISE = {CLAUDE: {"tool-output-noise", "reminder-noise"}, CODEX: {"developer-noise", "function-output-noise"},
         DSH: {"plugin-noise", "tool-noise"}}


def digest_json(tmp_path: Path, *argv: str) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {"HOME": str(tmp_path), "DSH_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "MMCTL_NO_DAEMON": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    code = main(["digest", *argv, "--root", str(tmp_path / "root")], env=env, stdout=out, stderr=err)
    return code, json.loads(out.getvalue()) if "--json" in argv else out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("path", "agent"), [(CLAUDE, "claude-code"), (CODEX, "codex"), (DSH, "dsh"),
                                             (DSH_LEGACY, "dsh"), (OTHER, None)])
def test_an_agent_log_is_recognised_by_its_content_wherever_it_lies(path: Path, agent: str | None,
                                                                     tmp_path: Path) -> None:
    moved = tmp_path / "anything.txt"
    shutil.copy(path, moved)
    assert recognise(path) == recognise(moved) == recognise_text(path.read_text(encoding="utf-8")) == agent


@pytest.mark.parametrize("path", [CLAUDE, CODEX, DSH])
def test_digest_of_an_agent_log_goes_through_the_daemons_adapter_and_pipeline(path: Path, tmp_path: Path) -> None:
    code, got, err = digest_json(tmp_path, "--file", str(path), "--json")
    assert (code, err) == (0, "")
    agent = recognise(path)
    utterances, _ = read_whole(path, str(agent))
    expected = [c for c in candidates_from(utterances, write_budget=4000, seen=Seen()) if getattr(c, "visible", True)]
    expected = sorted({c.norm: c for c in reversed(expected)}.values(), key=lambda c: (-c.score, expected.index(c)))
    assert got["agent"] == agent and got["sourceKind"] == "session-log" and got["source"] == str(path)
    assert [(c["topic"], c["body"]) for c in got["candidates"]] == [(c.topic, c.body) for c in expected]
    assert got["candidates"] and all(c["source"]["sessionId"] == utterances[0].session_id for c in got["candidates"])
    reference = {c["topic"] for c in digest(file=path, dsh_home="")["candidates"]}
    mine = {c["topic"] for c in got["candidates"]}
    assert not mine & NOISE[path] and NOISE[path] <= reference  # the difference, pinned
    code, text, _ = digest_json(tmp_path, "--file", str(path))
    assert code == 0 and text.startswith(f"digest from {path} ({agent} log) — {len(expected)} candidate(s)")


def test_another_file_keeps_the_reference_digest(tmp_path: Path) -> None:
    code, got, _ = digest_json(tmp_path, "--file", str(OTHER), "--json")
    assert code == 0 and "agent" not in got
    assert got == digest(file=str(OTHER), dsh_home="")


def test_a_note_already_holding_a_candidate_drops_it_as_the_daemon_does(tmp_path: Path) -> None:
    code, first, _ = digest_json(tmp_path, "--file", str(CLAUDE), "--json")
    kept = first["candidates"][0]
    out, err = io.StringIO(), io.StringIO()
    main(["write", kept["topic"], "--content", kept["body"], "--root", str(tmp_path / "root")],
         env={"HOME": str(tmp_path), "MMCTL_NO_DAEMON": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")},
         stdout=out, stderr=err)
    _, again, _ = digest_json(tmp_path, "--file", str(CLAUDE), "--json")
    assert [c["body"] for c in again["candidates"]] == [c["body"] for c in first["candidates"][1:]]


def test_digest_finds_what_a_real_daemon_queues_from_the_same_logs(start_daemon, tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude = home / ".claude" / "projects" / "-home-ana-code-kiln" / "44444444-2222-4333-8444-555555555555.jsonl"
    codex = home / ".codex" / "sessions" / "2026" / "02" / "17" / \
        "rollout-2026-02-17T07-50-05-019c68dc-1111-7226-b63c-5ab791b7584a.jsonl"
    for source, target in ((CLAUDE, claude), (CODEX, codex)):
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    daemon = start_daemon("--heartbeat-ms", "200")
    backfilled(daemon)
    queued = {(c["topic"], c["body"]) for c in candidates(daemon)}
    found: set[tuple[str, str]] = set()
    for log in (claude, codex):
        out, err = io.StringIO(), io.StringIO()
        assert main(["digest", "--file", str(log), "--json", "--root", str(daemon.root)], env=dict(daemon.env),
                    stdout=out, stderr=err) == 0, err.getvalue()
        found |= {(c["topic"], c["body"]) for c in json.loads(out.getvalue())["candidates"]}
    assert found and found == queued


def test_a_file_that_cannot_be_read_keeps_the_references_message_and_adds_the_fix(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    env = {"HOME": str(tmp_path), "MMCTL_NO_DAEMON": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    for missing in (tmp_path / "nothing.jsonl", tmp_path):
        err.seek(0)
        err.truncate()
        assert main(["digest", "--file", str(missing), "--root", str(tmp_path / "root")], env=env, stdout=out,
                    stderr=err) == 1
        first, fix = err.getvalue().splitlines()
        assert first.startswith("mmctl: E_DIGEST_SOURCE: digest source ") and first.endswith(f": {missing}"), first
        assert fix == "mmctl: give a readable file (--file PATH) or the text itself (--text TEXT)"


def test_digest_of_an_agent_log_lists_each_statement_once_by_score_like_queue_list(tmp_path: Path) -> None:
    """A marked 0.6 conclusion said first, then one prompt whose two rules share one body (the queue merges them)."""
    code, got, err = digest_json(tmp_path, "--file", str(FIXTURES / "digest" / "claude-code-order.jsonl"), "--json")
    assert (code, err) == (0, "")
    scores = [c["score"] for c in got["candidates"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 2, got["candidates"]
    bodies = [c["body"] for c in got["candidates"]]
    assert len(set(bodies)) == len(bodies) and bodies[0].startswith("You must not create any PR")
