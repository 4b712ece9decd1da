"""The core store's write door (``mmd.core.screening``): hidden text never in a summary or tags, in a body only when
allowed; a secret refused naming its field, kind and line, files untouched, unless a person allows it (recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core.errors import ErrorCode, MMError
from mmd.core.store import MemoryStore
from mmd.screen.secrets import find_secrets
from tests.test_screen_secrets import SECRETS

NOW = "2026-01-01T00:00:00.000Z"
HIDDEN = {"bidi": "\u202e", "zero-width": "\u200b", "tag": "\U000e0049"}


def _store(tmp_path: Path, screen: bool = True) -> MemoryStore:
    options = MemoryOptions.create(root=tmp_path / "root")
    Memory.ensure(options)
    store = MemoryStore(options, lambda: NOW, screen=find_secrets if screen else None)
    store.write("seed", "a seed note", summary="Seed")
    return store


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".mmd" not in p.parts}


@pytest.mark.parametrize(("kind", "template", "value"), SECRETS,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)])
def test_a_write_holding_each_kind_of_secret_is_refused_naming_kind_and_line(tmp_path: Path, kind: str, template: str,
                                                                             value: str) -> None:
    store = _store(tmp_path)
    before = _files(store.root)
    versions = store.versions.log()
    with pytest.raises(MMError) as refused:
        store.write("seed", "Context first.\n" + template.format(value))
    error = refused.value
    assert error.code is ErrorCode.E_SECRET and f"content holds a secret: {kind} at line 2" in error.message
    assert "--allow-secret" in error.message and value not in error.message and value not in str(error.details)
    assert error.details == {"field": "content", "secrets": [{"field": "content", "kind": kind, "line": 2}]}
    assert _files(store.root) == before and [v.id for v in store.versions.log()] == [v.id for v in versions]


def test_a_secret_in_the_summary_tags_or_topic_is_refused_and_a_topic_never_allowed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = _files(store.root)
    for kwargs, field in (({"summary": "db password is hunter2"}, "summary"),
                          ({"tags": "ops, AKIA4XKQ7RZP2MBN6TWD"}, "tags")):
        with pytest.raises(MMError) as refused:
            store.write("seed", "fine", **kwargs)
        assert refused.value.code is ErrorCode.E_SECRET and refused.value.details["field"] == field
    with pytest.raises(MMError) as topic:
        store.write("key-AKIA4XKQ7RZP2MBN6TWD", "fine", allow_secret=True)
    assert topic.value.details["field"] == "topic" and "choose a topic" in topic.value.message
    assert _files(store.root) == before


def test_a_persons_allowed_secret_is_written_and_recorded_without_its_value(tmp_path: Path) -> None:
    store = _store(tmp_path)
    done = store.write("staging", "notes\nthe staging db password is hunter2", allow_secret=True)
    assert done["ok"] and done["allowed"] == {"secrets": [{"field": "content", "kind": "password", "line": 2}]}
    kept = store.versions.log("staging")[0]
    assert kept.allowed == done["allowed"] and kept.to_commit()["allowed"] == done["allowed"]
    assert "hunter2" not in str(kept.to_commit())
    assert "hunter2" in (store.root / "memories" / "staging.md").read_text()


@pytest.mark.parametrize("kind", sorted(HIDDEN))
def test_hidden_text_is_refused_in_summary_and_tags_and_in_a_body_unless_allowed(tmp_path: Path, kind: str) -> None:
    store = _store(tmp_path, screen=False)  # the core's own check: on without any screen
    char = HIDDEN[kind]
    before = _files(store.root)
    for kwargs, field in (({"summary": f"run{char} it"}, "summary"), ({"tags": f"ops{char}"}, "tags")):
        for allow in (False, True):
            with pytest.raises(MMError) as refused:
                store.write("seed", "fine", allow_hidden=allow, **kwargs)
            assert refused.value.code is ErrorCode.E_INVALID
            assert f"{field} holds hidden text: U+" in refused.value.message
    with pytest.raises(MMError) as body:
        store.write("seed", f"line one\nUse the fast path.{char}")
    assert f"({kind}) at line 2" in body.value.message and "--allow-hidden" in body.value.message
    assert body.value.details["hidden"][0]["kind"] == kind
    assert _files(store.root) == before
    done = store.write("seed", f"line one\nUse the fast path.{char}", allow_hidden=True)
    assert done["ok"] and done["allowed"]["hidden"][0]["code"] == f"U+{ord(char):04X}"


def test_emoji_and_persian_joiners_are_written_as_they_are(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.write("family", "👨\u200d👩\u200d👧 and می\u200cخواهم", summary="❤️ family")["ok"]


def test_a_merge_whose_notes_hold_a_secret_or_hidden_text_is_refused_unless_allowed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.write("keys", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", allow_secret=True)
    before = _files(store.root)
    with pytest.raises(MMError) as refused:
        store.merge(["keys"], "seed")
    assert refused.value.code is ErrorCode.E_SECRET and "github token at line 3" in refused.value.message
    with pytest.raises(MMError) as hidden:
        store.merge(["keys"], "seed", summary="joined\u200b", allow_secret=True)
    assert hidden.value.code is ErrorCode.E_INVALID
    assert _files(store.root) == before
    merged = store.merge(["keys"], "seed", allow_secret=True)
    assert merged["ok"] and merged["allowed"]["secrets"][0]["kind"] == "github token"
