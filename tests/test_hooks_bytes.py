"""``hooks install`` keeps every byte that is not ours and ``uninstall`` restores the file byte for byte (issues 26,
28): any indentation (2 or 4 spaces, tabs, mixed, objects and arrays on one line among indented ones), numbers as
written (``1e400``), both agents, and an agent rewriting its own file meanwhile loses nothing.

Real files; the concurrent writer is a real process (``tests/concurrent_writer.py``).
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from mmctl.hooks import CODEX, apply, hook_command, plan_flag, plan_install, plan_uninstall

from mmd.core.errors import ErrorCode, MMError
from tests.concurrent_writer import rewriting

COMMAND = hook_command("/opt/mm/bin/mmctl", Path("/home/ada/memory"))
SETTINGS = {"$schema": "https://json.schemastore.org/claude-code-settings.json", "model": "opus",
            "permissions": {"allow": ["Bash(make)"], "deny": []},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}],
                      "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command",
                                                                         "command": "git status"}]}]},
            "cleanupPeriodDays": 30}
MIXED = ('{\n    "model": "opus",\n\t"permissions": {"allow": ["Bash(make)"], "deny": []},\n  "huge": 1e400,\n'
         '  "small": -0.0e-7, "exact": 10000000000000000000001,\n  "hooks": {\n      "Stop": [{"hooks": [{"type": '
         '"command", "command": "notify"}]}]\n  },\n  "ünïcode": "\\u00e9\\ud83d\\ude00"\n}')
LAYOUTS = {
    "2 spaces": json.dumps(SETTINGS, indent=2) + "\n",
    "4 spaces": json.dumps(SETTINGS, indent=4),
    "tabs": json.dumps(SETTINGS, indent="\t") + "\n",
    "one line": json.dumps(SETTINGS),
    "compact": json.dumps(SETTINGS, separators=(",", ":")),
    "mixed, 1e400": MIXED,
    "CRLF": json.dumps(SETTINGS, indent=2).replace("\n", "\r\n") + "\r\n",
    "no hooks": '{\n  "model": "opus",\n  "n": 1e400\n}\n',
    "empty object": "{}",
    "empty object, newline": "{}\n",
    "hooks null": '{"hooks": null}',
}


def only_insertions(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` with text inserted, and nothing of ``before`` changed or removed."""
    codes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    return all(tag in ("equal", "insert") for tag, *_ in codes)


def ours(path: Path, mark: str = "inject --format claude-hook") -> list[str]:
    value = json.loads(path.read_text())
    return [e for e, groups in (value.get("hooks") or {}).items() for g in groups for h in g["hooks"]
            if mark in h.get("command", "")]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_install_changes_only_our_entries_and_uninstall_restores_every_byte(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "settings.json"
    original = LAYOUTS[layout].encode()
    path.write_bytes(original)
    apply(plan_install(path, COMMAND))
    installed = path.read_bytes().decode()
    assert ours(path) == ["SessionStart", "UserPromptSubmit"]
    if layout != "hooks null":
        assert only_insertions(original.decode(), installed), installed
    if "1e400" in layout:
        assert "1e400" in installed and "10000000000000000000001" in installed and "-0.0e-7" in installed
    assert not plan_install(path, COMMAND).changed  # idempotent
    if "\n" in LAYOUTS[layout] and layout != "empty object, newline":  # a new group is laid out as its siblings
        assert f'"command": "{COMMAND}"' in installed or f'"command":"{COMMAND}"' in installed
    apply(plan_uninstall(path))
    if layout == "hooks null":
        assert path.read_bytes() == b"{}"  # the null is not ours to restore
    else:
        assert path.read_bytes() == original
    assert not plan_uninstall(path).changed


def test_new_entries_follow_the_files_indentation(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(LAYOUTS["tabs"])
    apply(plan_install(path, COMMAND))
    lines = path.read_text().splitlines()
    added = [line for line in lines if COMMAND in line]
    assert added and all(line.startswith("\t" * 6 + '"command"') for line in added)
    path.write_text(LAYOUTS["4 spaces"])
    apply(plan_install(path, COMMAND))
    assert all(line.startswith(" " * 24 + '"command"') for line in path.read_text().splitlines() if COMMAND in line)
    path.write_text(LAYOUTS["one line"])
    apply(plan_install(path, COMMAND))
    assert "\n" not in path.read_text()


def test_a_moved_mmctl_changes_only_the_command_strings(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(MIXED)
    apply(plan_install(path, COMMAND))
    first = path.read_text()
    moved = hook_command("/usr/local/bin/mmctl", Path("/home/ada/memory"))
    apply(plan_install(path, moved))
    assert path.read_text() == first.replace(COMMAND, moved)


def test_codex_hooks_and_its_feature_flag_round_trip_byte_for_byte(tmp_path: Path) -> None:
    hooks, config = tmp_path / "hooks.json", tmp_path / "config.toml"
    hooks_before = (b'{\n  "hooks": {\n    "Stop": [\n      {\n        "hooks": [{"type": "command", '
                    b'"command": "say done"}]\n      }\n    ]\n  }\n}\n')
    config_before = (b'model = "gpt-5-codex"  # mine\nmodel_reasoning_effort = "high"\n\n[projects."/home/ada/api"]\n'
                     b'trust_level = "trusted"\n\n[features]\nweb_search_request = true\n')
    hooks.write_bytes(hooks_before)
    config.write_bytes(config_before)
    command = hook_command("/opt/mm/bin/mmctl", Path("/home/ada/memory"), CODEX)
    apply(plan_install(hooks, command, CODEX))
    apply(plan_flag(config, True))
    assert ours(hooks, "inject --format codex-hook") == ["SessionStart", "UserPromptSubmit"]
    import tomllib

    assert tomllib.loads(config.read_text())["features"] == {"codex_hooks": True, "web_search_request": True}
    assert only_insertions(config_before.decode(), config.read_text())
    apply(plan_uninstall(hooks, CODEX))
    apply(plan_flag(config, False))
    assert hooks.read_bytes() == hooks_before and config.read_bytes() == config_before
    for before in (b"", b'model = "o3"', b'[features]\ncodex_hooks = false # off for now\n'):
        config.write_bytes(before)
        apply(plan_flag(config, True))
        assert tomllib.loads(config.read_text())["features"]["codex_hooks"] is True
        apply(plan_flag(config, False))
        assert config.read_bytes() == before


@pytest.mark.parametrize(("text", "words"), [
    ('{"hooks": {', "not valid JSON (line 1, column 12"),
    ('{"a": NaN}', "not valid JSON (line 1, column 7"),
    ('{"a": 1,}', "not valid JSON (line 1, column 9"),
    ('{"hooks": {"UserPromptSubmit": [1]}}', "UserPromptSubmit must be a list"),
])
def test_what_is_not_strict_json_of_the_right_shape_is_refused(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(MMError) as caught:
        plan_install(path, COMMAND)
    assert words in caught.value.message and "nothing was changed" in caught.value.message
    assert path.read_text() == text


@pytest.mark.timeout(30)
def test_a_read_only_file_a_fifo_and_a_symlink_out_of_the_home_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"model": "opus"}')
    os.chmod(settings, 0o444)
    with pytest.raises(MMError, match=r"is read-only \(mode 0444\)"):
        plan_install(settings, COMMAND, home=str(home))
    assert settings.read_text() == '{"model": "opus"}' and settings.stat().st_mode & 0o777 == 0o444
    settings.unlink()
    os.mkfifo(settings)
    with pytest.raises(MMError, match="is a FIFO, not a regular file"):
        plan_install(settings, COMMAND, home=str(home))
    settings.unlink()
    elsewhere = tmp_path / "shared" / "settings.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text("{}")
    settings.symlink_to(elsewhere)
    with pytest.raises(MMError, match=f"is a symlink to {elsewhere}, outside your home"):
        plan_install(settings, COMMAND, home=str(home))
    assert elsewhere.read_text() == "{}"


def test_an_agent_rewriting_its_settings_every_few_ms_loses_nothing_over_20_installs_and_uninstalls(
        tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    original = json.dumps({**SETTINGS, "counter": 0}, indent=2) + "\n"
    path.write_text(original)
    def again(install: bool) -> None:
        """Install (or uninstall), again as a person would when the file kept changing under it (refused, nothing
        written: on a loaded machine the agent can win each of one attempt's retries)."""
        for _ in range(20):
            try:
                apply(plan_install(path, COMMAND) if install else plan_uninstall(path))
                return
            except MMError as error:
                assert error.code == ErrorCode.E_IO and "kept changing" in error.message, error
        raise AssertionError("refused 20 times in a row")

    with rewriting(path, tmp_path) as result:
        for _ in range(20):
            again(install=True)
            again(install=False)
    assert result["writes"] > 5 and result["broken"] == 0
    assert result["lost"] == 0, f"{result['lost']} of the agent's {result['writes']} writes were lost"
    apply(plan_uninstall(path))  # an install the agent's own rewrite undid leaves nothing behind either
    assert path.read_text() == original.replace('"counter": 0', f'"counter": {result["last"]}')
