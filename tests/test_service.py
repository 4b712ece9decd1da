"""mmd as a user service: the rendered unit and plist, and what install/uninstall do."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmd.daemon import service


def test_systemd_unit_is_notify_with_watchdog_and_this_installation_command(tmp_path: Path) -> None:
    unit = service.render_unit(service.daemon_command(["--sessions", "/a b/%s"]))
    assert "Type=notify" in unit and "WatchdogSec=30" in unit and "Restart=on-failure" in unit
    exec_line = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert exec_line == f'ExecStart={sys.executable} -m mmd.daemon.main --sessions "/a b/%%s"'
    assert "@EXEC@" not in unit


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    path = tmp_path / "mmd.service"
    path.write_text(service.render_unit(service.daemon_command(), {"DSH_HOME": "/a b/$x%y"}))
    result = subprocess.run(["systemd-analyze", "verify", "--user", str(path)], capture_output=True, text=True,
                            env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)})
    problems = [line for line in result.stderr.splitlines() if "mmd.service" in line]
    assert not problems, result.stderr


def test_launchd_plist_parses_and_keeps_the_daemon_alive(tmp_path: Path) -> None:
    text = service.render_plist(service.daemon_command(["--root", "/x&y"]), tmp_path / "Logs")
    agent = plistlib.loads(text.encode())
    assert agent["Label"] == "local.mmd"
    assert agent["ProgramArguments"] == [sys.executable, "-m", "mmd.daemon.main", "--root", "/x&y"]
    assert agent["KeepAlive"] == {"SuccessfulExit": False} and agent["RunAtLoad"] is True
    assert agent["StandardErrorPath"] == str(tmp_path / "Logs" / "mmd.log")


def test_install_writes_the_unit_then_enables_it_and_uninstall_removes_it(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    lines: list[str] = []

    def run(argv: list[str]) -> int:
        calls.append(argv)
        return 0

    steps = service.plan("install", platform="linux", home=tmp_path, uid=1000)
    assert service.execute("install", steps, dry_run=False, run=run, out=lines.append) == 0
    unit = tmp_path / ".config/systemd/user/mmd.service"
    assert unit.read_text() == service.render_unit(service.daemon_command())
    assert calls == [["systemctl", "--user", "daemon-reload"],
                     ["systemctl", "--user", "try-restart", "mmd.service"],  # a running unit takes the new flags
                     ["systemctl", "--user", "enable", "--now", "mmd.service"]]
    assert lines[0] == f"wrote {unit}"
    calls.clear()
    steps = service.plan("uninstall", platform="linux", home=tmp_path, uid=1000)
    assert service.execute("uninstall", steps, dry_run=False, run=run, out=lines.append) == 0
    assert not unit.exists()
    assert calls[0] == ["systemctl", "--user", "disable", "--now", "mmd.service"]


def test_a_failing_manager_command_stops_the_install_and_says_so(tmp_path: Path) -> None:
    lines: list[str] = []
    steps = service.plan("install", platform="darwin", home=tmp_path, uid=501)
    assert service.execute("install", steps, dry_run=False, run=lambda argv: 5, out=lines.append) == 5
    assert lines[-1].endswith("exited 5") and "launchctl bootstrap gui/501" in lines[-1]


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mmd.daemon.main", "service", "install", "--dry-run"],
                            capture_output=True, text=True, env={**os.environ, "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "would write" in result.stdout and "would run: systemctl --user daemon-reload" in result.stdout
    assert not any(tmp_path.iterdir())


def test_the_repository_systemd_folder_shows_the_shipped_templates() -> None:
    repo = Path(__file__).resolve().parent.parent
    for name in ("mmd.service", "mmd.plist"):
        assert (repo / "systemd" / name).read_text() == service._template(name)


def test_install_keeps_the_installing_environment_and_honours_xdg_config_home(tmp_path: Path) -> None:
    env = {"DSH_HOME": "/data/dsh home", "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PATH": "/bin"}
    steps = service.plan("install", platform="linux", home=tmp_path, uid=1000, env=env)
    assert steps.path == tmp_path / "cfg" / "systemd" / "user" / "mmd.service"
    assert steps.text is not None
    assert 'Environment="DSH_HOME=/data/dsh home"\n' in steps.text
    assert f'Environment=XDG_CONFIG_HOME={tmp_path / "cfg"}\n' in steps.text and "PATH" not in steps.text
    mac = service.plan("install", platform="darwin", home=tmp_path, uid=501, env=env)
    assert mac.text is not None
    assert plistlib.loads(mac.text.encode())["EnvironmentVariables"]["DSH_HOME"] == "/data/dsh home"


def test_status_with_a_user_bus_but_no_systemctl_says_so(tmp_path: Path) -> None:
    # it was a traceback: FileNotFoundError: 'systemctl'
    runtime = tmp_path / "run"
    runtime.mkdir()
    (runtime / "bus").write_text("")
    result = subprocess.run([sys.executable, "-m", "mmd.daemon.main", "service", "status"], capture_output=True,
                            text=True, env={**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime),
                                            "PATH": str(tmp_path / "no-bin")})
    assert "Traceback" not in result.stderr, result.stderr
    assert "running: unknown (systemctl is not on PATH" in result.stdout
    assert result.returncode == 127 and "mmd service: systemctl not found" in result.stderr  # as a shell says
