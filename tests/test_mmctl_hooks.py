"""Claude Code hooks merged into a real-shaped settings.json (issue 14): only our entries change, idempotently,
with a backup before the first change; malformed files are refused and left as they were."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mmctl.hooks import BACKUP_SUFFIX, TIMEOUT_S, apply, hook_command, plan_install, plan_uninstall, settings_path

from mmd.core.errors import MMError

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "claude-settings.json"
COMMAND = hook_command("/opt/mm/bin/mmctl", Path("/home/ada/memory"))


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(FIXTURE.read_bytes())
    os.chmod(path, 0o600)
    return path


def ours(value: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(event, h) for event, groups in value.get("hooks", {}).items() for g in groups for h in g["hooks"]
            if "inject --format claude-hook" in h.get("command", "")]


def without_ours(value: dict[str, Any]) -> dict[str, Any]:
    """The settings with our hook entries (and groups they leave empty) taken out."""
    out = json.loads(json.dumps(value))
    for event, groups in list(out.get("hooks", {}).items()):
        kept = []
        for g in groups:
            g["hooks"] = [h for h in g["hooks"] if "inject --format claude-hook" not in h.get("command", "")]
            if g["hooks"]:
                kept.append(g)
        out["hooks"][event] = kept
    return out


def test_install_adds_exactly_two_hooks_and_keeps_everything_else(settings: Path) -> None:
    original = json.loads(FIXTURE.read_text())
    change = plan_install(settings, COMMAND)
    assert [a.split(":")[0] for a in change.actions] == ["added SessionStart hook", "added UserPromptSubmit hook"]
    apply(change)
    after = json.loads(settings.read_text())
    assert (settings.parent / ("settings.json" + BACKUP_SUFFIX)).read_bytes() == FIXTURE.read_bytes()
    assert os.stat(settings).st_mode & 0o777 == 0o600
    assert [e for e, _ in ours(after)] == ["SessionStart", "UserPromptSubmit"]
    assert all(h == {"type": "command", "command": COMMAND, "timeout": TIMEOUT_S} for _, h in ours(after))
    session_start = [g for g in after["hooks"]["SessionStart"] if ours({"hooks": {"x": [g]}})]
    assert session_start[0]["matcher"] == "startup|resume|clear|compact"
    # everything that was there is still there, in the same order, the other hooks included
    trimmed = without_ours(after)
    trimmed["hooks"] = {k: v for k, v in trimmed["hooks"].items() if v or k in original["hooks"]}
    assert trimmed == original
    assert list(after) == list(original)  # key order kept

    again = plan_install(settings, COMMAND)
    assert not again.changed and again.actions == []  # idempotent


def test_a_moved_mmctl_updates_our_hooks_in_place_and_the_backup_stays_the_original(settings: Path) -> None:
    apply(plan_install(settings, COMMAND))
    moved = hook_command("/usr/local/bin/mmctl")
    change = plan_install(settings, moved)
    assert [a.split(":")[0] for a in change.actions] == ["updated SessionStart hook", "updated UserPromptSubmit hook"]
    assert change.backup is None  # the backup of the first change is never overwritten
    apply(change)
    assert [h["command"] for _, h in ours(json.loads(settings.read_text()))] == [moved, moved]
    assert (settings.parent / ("settings.json" + BACKUP_SUFFIX)).read_bytes() == FIXTURE.read_bytes()


def test_uninstall_restores_the_settings_and_is_idempotent(settings: Path) -> None:
    apply(plan_install(settings, COMMAND))
    change = plan_uninstall(settings)
    assert len(change.actions) == 2
    apply(change)
    assert json.loads(settings.read_text()) == json.loads(FIXTURE.read_text())
    assert not plan_uninstall(settings).changed


def test_a_missing_file_is_created_and_uninstall_leaves_an_empty_object(tmp_path: Path) -> None:
    path = tmp_path / "project" / ".claude" / "settings.json"
    change = plan_install(path, COMMAND)
    assert change.before is None and change.backup is None
    apply(change)
    assert len(ours(json.loads(path.read_text()))) == 2
    apply(plan_uninstall(path))
    assert json.loads(path.read_text()) == {}


@pytest.mark.parametrize(("text", "code", "words"), [
    ('{"hooks": {', "E_PARSE", "not valid JSON (line 1"),
    ("[1, 2]", "E_INVALID", "must hold a JSON object"),
    ('{"hooks": []}', "E_INVALID", '"hooks" must be an object'),
    ('{"hooks": {"SessionStart": {"command": "x"}}}', "E_INVALID", "SessionStart must be a list"),
])
def test_a_malformed_settings_file_is_refused_and_left_alone(tmp_path: Path, text: str, code: str,
                                                              words: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    for plan in (lambda: plan_install(path, COMMAND), lambda: plan_uninstall(path)):
        with pytest.raises(MMError) as error:
            plan()
        assert error.value.code.value == code and words in error.value.message
        assert "nothing was changed" in error.value.message
    assert path.read_text() == text and not (tmp_path / ("settings.json" + BACKUP_SUFFIX)).exists()


def test_a_file_changed_between_plan_and_apply_keeps_the_change_and_gets_the_hooks(settings: Path) -> None:
    change = plan_install(settings, COMMAND)
    settings.write_text(settings.read_text().replace('"model"', '"model" ', 1))
    edited = settings.read_bytes()
    apply(change)  # the edit is made again on the file as it is now
    after = settings.read_bytes()
    assert b'"model" ' in after and len(ours(json.loads(after))) == 2
    apply(plan_uninstall(settings))
    assert settings.read_bytes() == edited


def test_settings_paths_per_scope(tmp_path: Path) -> None:
    assert settings_path("user", {"HOME": "/home/ada"}, tmp_path) == Path("/home/ada/.claude/settings.json")
    assert settings_path("user", {"CLAUDE_CONFIG_DIR": "/cfg"}, tmp_path) == Path("/cfg/settings.json")
    assert settings_path("project", {}, tmp_path) == tmp_path / ".claude" / "settings.json"
    with pytest.raises(MMError):
        settings_path("global", {}, tmp_path)


def test_null_hooks_are_filled_and_a_symlinked_settings_file_is_written_through(tmp_path: Path) -> None:
    # "hooks": null was an internal error (AttributeError); a symlink (dotfiles) was replaced by a plain file
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text('{"hooks": null, "model": "opus"}\n')
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles / "settings.json")
    apply(plan_install(link, COMMAND, home=str(tmp_path)), home=str(tmp_path))  # the link is inside the home
    assert link.is_symlink() and os.readlink(link) == str(dotfiles / "settings.json")
    written = json.loads((dotfiles / "settings.json").read_text())
    assert written["model"] == "opus" and len(ours(written)) == 2
    (dotfiles / "settings.json").write_text('{"hooks": {"SessionStart": null}}\n')
    apply(plan_install(link, COMMAND, home=str(tmp_path)), home=str(tmp_path))
    assert len(ours(json.loads(link.read_text()))) == 2
