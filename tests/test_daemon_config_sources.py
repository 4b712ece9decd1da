"""The sources of the daemon's config: defaults from the environment handed in, ``--source``/``--no-source``,
``[[daemon.sources]]`` tables, ``--sessions`` as the DSH folder, and refusals naming key, value and why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mmd.daemon.config import ConfigError, build_config, parse_args

REPO = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "DSH_HOME": str(tmp_path / "dsh"),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_RUNTIME_DIR": str(tmp_path / "run"), **extra}


def _settings(tmp_path: Path, argv: list[str], toml: str | None = None, **env: str) -> dict[str, tuple[Path, bool]]:
    if toml is not None:
        (tmp_path / "xdg" / "mmd").mkdir(parents=True, exist_ok=True)
        (tmp_path / "xdg" / "mmd" / "config.toml").write_text(toml, encoding="utf-8")
    cfg = build_config(parse_args(argv), _env(tmp_path, **env))
    return {s.kind: (s.folder, s.enabled) for s in cfg.sources}


def test_each_agent_defaults_to_its_own_folder_from_the_environment_handed_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _settings(tmp_path, []) == {"dsh": (tmp_path / "dsh" / "sessions", True),
                                       "claude-code": (home / ".claude" / "projects", True),
                                       "codex": (home / ".codex" / "sessions", True)}
    moved = _settings(tmp_path, [], CLAUDE_CONFIG_DIR=str(tmp_path / "cc"), CODEX_HOME=str(tmp_path / "cx"))
    assert moved["claude-code"] == (tmp_path / "cc" / "projects", True)
    assert moved["codex"] == (tmp_path / "cx" / "sessions", True)
    assert _settings(tmp_path, [], CLAUDE_CONFIG_DIR="")["claude-code"][0] == home / ".claude" / "projects"


def test_flags_beat_the_file_tables_and_sessions_stays_the_dsh_folder(tmp_path: Path) -> None:
    toml = ('[daemon]\nsessions = "~/dsh-logs"\n'
            '[[daemon.sources]]\nkind = "codex"\npath = "~/codex-logs"\n'
            '[[daemon.sources]]\nkind = "claude-code"\nenabled = false\n')
    home = tmp_path / "home"
    got = _settings(tmp_path, [], toml)
    assert got == {"dsh": (home / "dsh-logs", True), "claude-code": (home / ".claude" / "projects", False),
                   "codex": (home / "codex-logs", True)}
    cfg = build_config(parse_args([]), _env(tmp_path))
    assert cfg.sessions_dir == home / "dsh-logs"
    got = _settings(tmp_path, ["--source", f"claude-code={tmp_path / 'cc'}", "--no-source", "codex",
                               "--sessions", str(tmp_path / "s")], toml)
    assert got == {"dsh": (tmp_path / "s", True), "claude-code": (tmp_path / "cc", True),
                   "codex": (home / "codex-logs", False)}
    assert _settings(tmp_path, ["--source", f"dsh={tmp_path / 'd'}", "--sessions", str(tmp_path / "s")], toml)[
        "dsh"] == (tmp_path / "d", True)
    assert _settings(tmp_path, [], '[daemon]\nsourcesOff = ["dsh"]\n')["dsh"][1] is False


@pytest.mark.parametrize(("argv", "toml", "key", "why"), [
    (["--source", "cursor=/tmp"], None, "--source", "unknown source kind 'cursor'"),
    (["--source", "codex"], None, "--source", "must be KIND=PATH"),
    (["--source", "codex=  "], None, "--source", "must be a non-blank path"),
    (["--source", "codex=/a", "--source", "codex=/b"], None, "--source", "given twice"),
    (["--no-source", "dhs"], None, "--no-source", "unknown source kind 'dhs'"),
    (["--source", "codex=/a", "--no-source", "codex"], None, "--no-source", "turns off"),
    ([], '[[daemon.sources]]\nkind = "codex"\npath = 3\n', "daemon.sources[0].path", "non-blank path"),
    ([], '[[daemon.sources]]\npath = "/x"\n', "daemon.sources[0].kind", "unknown source kind None"),
    ([], '[[daemon.sources]]\nkind = "codex"\nenabled = "no"\n', "daemon.sources[0].enabled", "true or false"),
    ([], '[[daemon.sources]]\nkind = "codex"\nfolder = "/x"\n', "daemon.sources[0].folder", "unknown key"),
    ([], '[[daemon.sources]]\nkind = "codex"\n[[daemon.sources]]\nkind = "codex"\n', "daemon.sources[1].kind",
     "given twice"),
    ([], '[daemon]\nsources = "codex"\n', "daemon.sources", "[[daemon.sources]] tables"),
])
def test_a_bad_kind_or_path_is_refused_naming_the_key_the_value_and_why(
        tmp_path: Path, argv: list[str], toml: str | None, key: str, why: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _settings(tmp_path, argv, toml)
    assert refused.value.key == key and why in refused.value.why


def test_a_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError) as refused:
        _settings(tmp_path, ["--source", f"codex={tmp_path / 'file'}"])
    assert (refused.value.key, refused.value.value) == ("--source", str(tmp_path / "file"))
    assert "is not a folder" in refused.value.why


def test_the_daemon_refuses_to_start_on_a_bad_source(tmp_path: Path) -> None:
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "mmd.daemon.main", "--source", "cursor=/tmp"], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "--source = 'cursor=/tmp': unknown source kind 'cursor'" in done.stderr
