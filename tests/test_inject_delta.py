"""Per-client injection: baseline, delta by content hash, none, and the one-time review reminder (issue 14)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.snapshot import Snapshot
from mmd.inject.baseline import command_for
from mmd.inject.delta import ClientView, Injection, content_hash, plan_injection, prepare

TODAY = date(2026, 3, 1)


class Root:
    """A real memory root with a clock that advances a minute per write."""

    def __init__(self, path: Path) -> None:
        options = MemoryOptions.create(root=path, env={"DSH_HOME": str(path.parent / "home")},
                                       index_lines=5000, index_bytes=500_000)
        self.minute = 0
        self.memory = Memory.ensure(options, now=self._now, fts5=False)

    def _now(self) -> datetime:
        self.minute += 1
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=self.minute)

    def write(self, topic: str, body: str, **kw: object) -> None:
        assert self.memory.write(topic, body, **kw)["ok"]

    def snapshot(self) -> Snapshot:
        return self.memory.reload().snapshot


@pytest.fixture
def root(tmp_path: Path) -> Root:
    r = Root(tmp_path / "root")
    for i in range(5):
        r.write(f"topic-{i}", f"body {i}", summary=f"summary {i}", tags="a, b")
    return r


def test_content_hash_is_12_hex_of_sha256_over_summary_tags_body() -> None:
    expected = hashlib.sha256(json.dumps(["s", ["a", "b"], "body ü"], ensure_ascii=False,
                                         separators=(",", ":")).encode()).hexdigest()[:12]
    assert content_hash("s", ("a", "b"), "body ü") == expected == content_hash("s", ["a", "b"], "body ü")
    assert content_hash("s", ("a", "b"), "body ü") == "600ebac9be30"  # pinned: views in state.db rely on it
    variants = {content_hash("s", ("a", "b"), "body"), content_hash("s2", ("a", "b"), "body"),
                content_hash("s", ("a",), "body"), content_hash("s", ("a", "b"), "body2"),
                content_hash("s", ("a,b",), "body"), content_hash("", ("s", "a", "b"), "body")}
    assert len(variants) == 6


def test_hashes_follow_the_content_not_the_write_time(root: Root) -> None:
    before = dict(prepare(root.snapshot()).hashes)
    root.write("topic-1", "body 1")  # same text, new `updated`
    assert prepare(root.snapshot()).hashes == before
    root.write("topic-1", "body 1", tags="b, a")
    assert prepare(root.snapshot()).hashes["topic-1"] != before["topic-1"]


def test_baseline_then_none_then_delta_of_exactly_the_written_topic(root: Root) -> None:
    first = plan_injection(None, root.snapshot(), today=TODAY)
    assert first.mode == "baseline" and "- topic-4: summary 4 <mm://local/topic-4>" in first.text
    assert set(first.view.hashes) == {f"topic-{i}" for i in range(5)}
    quiet = plan_injection(first.view, root.snapshot(), today=TODAY)
    assert (quiet.mode, quiet.text, quiet.unchanged) == ("none", "", 5)
    root.write("topic-2", "body 2 changed")
    root.write("new-topic", "fresh", summary="a new one")
    delta = plan_injection(first.view, root.snapshot(), today=TODAY)
    assert delta.mode == "delta"
    assert (delta.added, delta.updated, delta.removed, delta.unchanged) == (("new-topic",), ("topic-2",), (), 4)
    command = command_for(root.snapshot().root)  # "mmctl --root <root>": the root is not ~/.dsh/memory
    assert " --root /" in command
    assert delta.text.split("\n") == [
        "Memory mm://local/ changed since you last saw it: 1 added, 1 updated; 4 unchanged "
        f"(read one: {command} read <topic>, MCP mem_reload then mem_read):",
        "- added new-topic: a new one <mm://local/new-topic>",
        "  fresh",
        "- updated topic-2: summary 2 <mm://local/topic-2>",
        "  body 2 changed",
    ]
    assert delta.to_json() == {"mode": "delta", "text": delta.text, "added": ["new-topic"], "updated": ["topic-2"],
                               "removed": [], "unchanged": 4, "reminded": [], "bytes": len(delta.text.encode())}


def test_an_uncommitted_delta_is_given_again_and_a_committed_one_is_not(root: Root) -> None:
    view = plan_injection(None, root.snapshot(), today=TODAY).view
    root.write("topic-0", "changed")
    dropped = plan_injection(view, root.snapshot(), today=TODAY)  # its text never reached the agent
    again = plan_injection(view, root.snapshot(), today=TODAY)
    assert again.mode == "delta" and again.updated == dropped.updated == ("topic-0",) and again.text == dropped.text
    after = plan_injection(again.view, root.snapshot(), today=TODAY)
    assert after.mode == "none"


def test_a_delete_is_reported_removed(root: Root) -> None:
    view = plan_injection(None, root.snapshot(), today=TODAY).view
    root.memory.delete("topic-3")
    delta = plan_injection(view, root.snapshot(), today=TODAY)
    assert (delta.mode, delta.removed, delta.added, delta.updated) == ("delta", ("topic-3",), (), ())
    assert delta.unchanged == 4
    assert delta.text.endswith("\n- removed topic-3") and "1 removed; 4 unchanged" in delta.text
    assert "topic-3" not in delta.view.hashes


def test_the_baseline_view_records_topics_named_only_by_count(root: Root) -> None:
    for i in range(40):
        root.write(f"more-{i:02d}", "x", summary="a summary that takes room " * 3)
    base = plan_injection(None, root.snapshot(), today=TODAY, max_bytes=600)
    assert base.bytes <= 600 and "older topics not shown" in base.text
    assert len(base.view.hashes) == 45
    assert plan_injection(base.view, root.snapshot(), today=TODAY).mode == "none"


def test_a_big_delta_keeps_to_the_budget_and_counts_the_rest(root: Root) -> None:
    view = plan_injection(None, root.snapshot(), today=TODAY).view
    for i in range(60):
        root.write(f"bulk-{i:02d}", "x", summary="imported")
    delta = plan_injection(view, root.snapshot(), today=TODAY, max_bytes=1024)
    assert delta.bytes <= 1024 and len(delta.added) == 60
    command = command_for(root.snapshot().root)
    assert delta.text.split("\n")[-1].endswith(f"more changes not shown; `{command} read` (MCP mem_read) lists them.")
    assert delta.text.split("\n")[1] == "- added bulk-59: imported <mm://local/bulk-59>"  # newest first
    assert plan_injection(delta.view, root.snapshot(), today=TODAY).mode == "none"


def test_the_review_reminder_comes_once_on_a_quiet_call(root: Root) -> None:
    root.write("topic-1", "body 1", review_after="2026-02-15")
    view = plan_injection(None, root.snapshot(), today=TODAY).view
    root.write("topic-0", "changed")
    busy = plan_injection(view, root.snapshot(), today=TODAY)
    assert busy.mode == "delta" and "may be stale" not in busy.text  # a call with news does not remind
    reminder = plan_injection(busy.view, root.snapshot(), today=TODAY)
    assert reminder.mode == "reminder" and reminder.reminded == ("topic-1",)
    assert reminder.text == ("- may be stale: re-check topic-1 <mm://local/topic-1> (review date 2026-02-15), "
                             "then rewrite it with a new review date or delete it.")
    dropped_again = plan_injection(busy.view, root.snapshot(), today=TODAY)
    assert dropped_again.text == reminder.text  # uncommitted: given again
    after = plan_injection(reminder.view, root.snapshot(), today=TODAY)
    assert (after.mode, after.text) == ("none", "")
    assert reminder.view.hashes == busy.view.hashes  # the reminder does not move the diff baseline


def test_a_new_review_date_reminds_again_and_a_future_one_does_not_yet(root: Root) -> None:
    root.write("topic-1", "body 1", review_after="2026-02-15")
    root.write("topic-2", "body 2", review_after="2026-03-02")
    view = plan_injection(None, root.snapshot(), today=TODAY).view
    view = plan_injection(view, root.snapshot(), today=TODAY).view
    assert dict(view.reminded) == {"topic-1": "2026-02-15"}
    tomorrow = plan_injection(view, root.snapshot(), today=TODAY + timedelta(days=1))
    assert tomorrow.reminded == ("topic-2",)
    view = tomorrow.view
    root.write("topic-1", "body 1", review_after="2026-03-01")  # same text, a new date: no delta
    renewed = plan_injection(view, root.snapshot(), today=TODAY)
    assert renewed.mode == "reminder" and renewed.reminded == ("topic-1",)


def test_views_round_trip_through_json_and_bad_ones_are_refused(root: Root) -> None:
    root.write("topic-1", "body 1", review_after="2026-02-01")
    view = plan_injection(None, root.snapshot(), today=TODAY).view
    view = plan_injection(view, root.snapshot(), today=TODAY).view
    stored = json.loads(json.dumps(view.to_json()))
    assert ClientView.from_json(stored) == ClientView(dict(view.hashes), dict(view.reminded))
    assert plan_injection(ClientView.from_json(stored), root.snapshot(), today=TODAY).mode == "none"
    for bad in (None, [], {"hashes": []}, {"hashes": {"a": 1}}, {"hashes": {}, "reminded": {"a": None}}):
        with pytest.raises(MMError) as caught:
            ClientView.from_json(bad)
        assert caught.value.code == "E_INVALID"


def test_prepare_is_cached_per_snapshot_and_bad_budgets_are_refused_in_every_mode(root: Root) -> None:
    snap = root.snapshot()
    assert prepare(snap) is prepare(snap)
    view = plan_injection(None, snap, today=TODAY).view
    for v in (None, view):
        with pytest.raises(MMError, match="maxBytes"):
            plan_injection(v, snap, today=TODAY, max_bytes=0)


def test_an_empty_root_gets_a_baseline_then_the_first_write_as_a_delta(tmp_path: Path) -> None:
    r = Root(tmp_path / "empty")
    first: Injection = plan_injection(None, r.snapshot(), today=TODAY)
    assert first.mode == "baseline" and "no topics yet" in first.text and dict(first.view.hashes) == {}
    assert plan_injection(first.view, r.snapshot(), today=TODAY).mode == "none"
    r.write("hello", "world")
    assert plan_injection(first.view, r.snapshot(), today=TODAY).added == ("hello",)
