"""``mmctl status`` exits 0 whenever the daemon answers, whatever it reports (issue 10); 1 only when none answers.

Scripts and monitors read the report (``--json``) to judge health; the exit code says only whether a daemon
answered, so a report of trouble (an index that no longer parses, an index over budget, a source with
errors) is still exit 0 with the report printed.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from mmctl.cli.main import main
from mmctl.cli.status import wrap_parts

from tests.test_ingest_helpers import backfilled, wait_until


def cli(daemon: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--root", str(daemon.root)], env=dict(daemon.env), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_status_exits_0_while_the_daemon_reports_trouble(start_daemon, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "60")  # the ingest row needs three lines
    sessions = tmp_path / "sessions" / "--home-x--" / "session-bad"
    sessions.mkdir(parents=True)
    (sessions / "session.jsonl").write_bytes(b"\x00\x01 not a log\n")
    daemon = start_daemon("--heartbeat-ms", "200")
    backfilled(daemon)
    (daemon.root / "MEMORY.md").write_text("# MEMORY.md\n\n## not a slug\n")
    report = wait_until(lambda: (r := json.loads(cli(daemon, "status", "--json")[1]))["watcher"]["errors"] and r,
                        what="the daemon to report the broken index")
    assert "E_PARSE" in report["watcher"]["lastError"] and report["ingest"]["warnings"] > 0, report
    code, out, err = cli(daemon, "status")
    assert (code, err) == (0, "") and "E_PARSE" in out
    assert "None" not in out and "True" not in out and "running yes" in out  # read by a person, not Python
    assert "…" not in out and f"sessionsDir {report['ingest']['sessionsDir']}" in out  # wrapped, never cut
    code, out, err = cli(daemon, "status", "--json")
    assert (code, err) == (0, "") and json.loads(out)["root"] == str(daemon.root)


def test_status_exits_1_when_no_daemon_answers(tmp_path: Path) -> None:
    root = tmp_path / "root"
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path / "run"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    main(["init", "--root", str(root)], env=env, stdout=io.StringIO(), stderr=io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    assert main(["status", "--root", str(root)], env=env, stdout=out, stderr=err) == 1
    assert err.getvalue().startswith("mmctl: `status` needs the mmd daemon, and none answers for ")


def test_an_index_over_its_caps_is_a_warning_naming_the_way_out(start_daemon) -> None:
    """A MEMORY.md pushed over its caps from outside (a git merge, a hand edit) refuses every write but a
    shrinking one; status shows the figures and says how to consolidate, until a merge brings it back."""
    daemon = start_daemon("--index-lines", "30")
    for topic in ("alpha", "beta"):
        assert cli(daemon, "write", topic, "--content", f"{topic} body")[0] == 0
    code, out, _ = cli(daemon, "status")
    assert code == 0 and "2 entries · 22/30 lines" in out and "warning: MEMORY.md" not in out
    assert "looseModes  -" in out  # nothing to list reads as nothing, not as Python's []
    index = daemon.root / "MEMORY.md"
    extra = "".join(f"\n## gamma{n}\n- **summary:** hand-added\n- **file:** memories/alpha.md\n" for n in range(3))
    index.write_text(index.read_text() + extra)
    report = wait_until(lambda: (r := json.loads(cli(daemon, "status", "--json")[1]))["index"]["overBudget"] and r,
                        what="the daemon to see the index over its caps")
    assert report["index"]["lineCap"] == 30 and report["index"]["lines"] > 30 and report["index"]["entries"] == 5
    code, out, _ = cli(daemon, "status")
    assert code == 0 and "warning: MEMORY.md is over its caps (" in out and "`mmctl merge A B --into C`" in out
    assert cli(daemon, "write", "delta", "--content", "more")[0] == 1  # refused: it would grow the index
    assert cli(daemon, "merge", "gamma0", "gamma1", "gamma2", "--into", "alpha")[0] == 0
    wait_until(lambda: not json.loads(cli(daemon, "status", "--json")[1])["index"]["overBudget"],
               what="the merge to bring the index under its caps")
    assert "warning: MEMORY.md" not in cli(daemon, "status")[1]


def test_a_long_status_row_wraps_between_whole_parts() -> None:
    value = "running yes · sessionsDir /home/someone/a/long/folder/of/sessions · errors 0 · warnings 2"
    pad = "\n" + " " * 12
    assert wrap_parts(value, 40, 12) == (f"running yes ·{pad}sessionsDir /home/someone/a/long/folder/of/sessions ·"
                                         f"{pad}errors 0 · warnings 2")
    assert wrap_parts("pending 0 · total 0", 40, 12) == "pending 0 · total 0"


def test_a_project_root_near_its_caps_is_a_warning_too(start_daemon, tmp_path: Path) -> None:
    """The user root's index row is the one ``status`` prints; a project root filling up was silent there (a trial
    found 197/200 lines warned by ``nudge`` only). Each root has its own caps (200 lines here): 24 topics are 176
    lines (88%), 25 are 183 (91%), warned from 90%."""
    import subprocess

    repo = tmp_path / "tool"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, capture_output=True)
    daemon = start_daemon()
    for n in range(24):
        assert cli(daemon, "write", f"t{n:02}", "--content", "body", "--project", str(repo))[0] == 0
    assert "warning: project root" not in cli(daemon, "status")[1]
    assert cli(daemon, "write", "t24", "--content", "body", "--project", str(repo))[0] == 0
    code, out, _ = cli(daemon, "status")
    warned = [line for line in out.splitlines() if line.startswith("warning: project root")]
    assert code == 0 and len(warned) == 1 and "MEMORY.md is near its caps: 183/200 lines (91%)" in warned[0], out
