"""The review page in a real headless Chromium (Debian's ``chromium``), against a real daemon.

Each test fills the queue from ``tests/fixtures/web/sessions``, drives the page
as a person would (Playwright, pointed at ``/usr/bin/chromium``: no browser is
downloaded), then checks the files on disk and the queue in ``.mmd/state.db``.
Screenshots of the queue and memory views go to ``test-artifacts/`` (not committed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_ingest_helpers import call
from tests.web_helpers import (
    EXPECTED_TOPICS,
    by_topic,
    note_files,
    queue_rows,
    start_web_daemon,
    tighten_budget,
)

CHROMIUM = Path(os.environ.get("MMD_TEST_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    yield context.new_page()
    context.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def flash_texts(page: Any) -> list[str]:
    page.wait_for_selector("#flash")
    return [str(t) for t in page.locator("#flash li").all_inner_texts()]


def edit_page(page: Any, cand: dict[str, Any]) -> None:
    """Open the candidate's page from its card (its Edit link) and wait for its form."""
    page.locator(f"#cand-{cand['id']} a.do-edit").click()
    page.wait_for_selector("#edit textarea[name=body]")


def test_accept_with_an_edited_topic(start_daemon, tmp_path: Path, page: Any) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cand = by_topic(daemon)["deploy-region"]
    page.goto(url)
    assert page.locator("article.candidate").count() == len(EXPECTED_TOPICS)
    shot(page, "queue-view")
    edit_page(page, cand)
    page.locator("#edit input[name=topic]").fill("deploy-eu")
    page.locator("#edit input[name=tags]").fill("ops, cloud")
    page.locator("#edit button.do-accept").click()
    assert any("accepted as deploy-eu" in t for t in flash_texts(page))
    assert page.locator(f"#cand-{cand['id']}").count() == 0
    other = by_topic(daemon)["test-command"]  # onto the note just written: refused in the page's words
    edit_page(page, other)
    page.locator("#edit input[name=topic]").fill("deploy-eu")
    page.locator("#edit button.do-accept").click()
    page.wait_for_selector("#problem")
    said = page.locator("#problem").inner_text()
    assert "deploy-eu already has a note" in said and "replace: true" not in said, said
    assert page.locator("#edit input[name=topic]").input_value() == "deploy-eu"  # the form as sent, to fix
    files = note_files(daemon)
    assert "deploy-eu.md" in files and "eu-west-1" in files["deploy-eu.md"] and "deploy-region.md" not in files
    assert call(daemon, "memory.read", {"topic": "deploy-eu", "project": cand["scope"]})["tags"] == ["ops", "cloud"]
    rows = queue_rows(daemon)
    assert rows["deploy-region"] == ("accepted", None, "deploy-eu")
    assert sum(1 for r in rows.values() if r[0] == "pending") == len(EXPECTED_TOPICS) - 1


def test_accept_into_an_existing_topic(start_daemon, tmp_path: Path, page: Any) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cand = by_topic(daemon)["test-command"]
    folder = cand["evidence"][0]["project"]  # the note goes in the root of the project it was said in
    assert call(daemon, "memory.write", {"topic": "testing", "content": "CI runs on every push.",
                                         "summary": "how we test", "project": folder})["ok"]
    page.goto(url)
    edit_page(page, cand)
    # no note is chosen until one is picked: the form starts on a new note under the candidate's topic
    assert page.locator("#edit select[name=into]").input_value() == ""
    page.locator("#edit select[name=into]").select_option("testing")
    assert "characters once appended to testing" in page.locator("#count").inner_text()
    page.locator("#edit button.do-accept").click()
    assert any("appended to testing" in t for t in flash_texts(page))
    text = note_files(daemon)["testing.md"]
    assert "CI runs on every push." in text and "make check" in text
    assert "test-command.md" not in note_files(daemon)
    assert "how we test" in (daemon.root / "projects" / cand["scope"] / "MEMORY.md").read_text()
    assert queue_rows(daemon)["test-command"] == ("accepted", None, "testing")


def test_reject_with_a_reason(start_daemon, tmp_path: Path, page: Any) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cand = by_topic(daemon)["code-style"]
    page.goto(url)
    edit_page(page, cand)
    page.locator("#edit input[name=reason]").fill("the linter says it already")
    page.locator("#edit button.do-reject").click()
    assert any(f"#{cand['id']} rejected" in t for t in flash_texts(page))
    assert queue_rows(daemon)["code-style"] == ("rejected", "the linter says it already", None)
    assert note_files(daemon) == {}


def test_a_batch_of_five_with_one_over_budget(start_daemon, tmp_path: Path, page: Any) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    tighten_budget(daemon, 100)
    cands = by_topic(daemon)
    chosen = ["api-auth", "api-errors", "api-paging", "api-rate", "big-notes"]
    page.goto(url)
    for topic in chosen:
        page.locator(f"#cand-{cands[topic]['id']} input.pick").check()
    page.locator("#batch-accept").click()
    texts = flash_texts(page)
    assert texts[0] == "accept: 4 of 5 done"
    refused = [t for t in texts if f"#{cands['big-notes']['id']}" in t]
    figures = f"{cands['big-notes']['chars']} characters against a write budget of 100"
    assert refused and "over budget" in refused[0] and figures in refused[0]
    assert page.locator("#flash li.failed").count() == 2  # the head line and the refused item
    files = note_files(daemon)
    assert {f"{t}.md" for t in chosen[:4]} <= set(files) and "big-notes.md" not in files
    rows = queue_rows(daemon)
    assert [rows[t][0] for t in chosen] == ["accepted"] * 4 + ["pending"]
    assert page.locator(f"#cand-{cands['big-notes']['id']}").count() == 1


def test_search_ranks_as_mmctl_search(start_daemon, tmp_path: Path, page: Any) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    for topic, body in (("tokens", "bearer tokens rotate weekly"), ("paging", "cursor tokens for paging"),
                        ("style", "four spaces")):
        assert call(daemon, "memory.write", {"topic": topic, "content": body})["ok"]
    page.goto(url)
    page.goto(url.split("?")[0] + "memory")
    page.locator("#q").fill("tokens")
    page.locator("#q").press("Enter")
    page.wait_for_selector("#results")
    shown = page.locator("#results li.match a").all_inner_texts()
    expected = [m["topic"] for m in call(daemon, "memory.search", {"query": "tokens"})["matches"]]
    assert shown == expected and set(shown) == {"tokens", "paging"}
    scores = page.locator("#results li.match small").all_inner_texts()  # 0.67, not 0.6671929097862714
    assert len(scores) == 2 and all(re.fullmatch(r"\d+\.\d\d", s) for s in scores), scores
    assert set(note_files(daemon)) == {"tokens.md", "paging.md", "style.md"}
    assert all(r[0] == "pending" for r in queue_rows(daemon).values())


def test_delete_a_note_confirmed_inline(start_daemon, tmp_path: Path, page: Any) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    for topic in ("keep-me", "drop-me"):
        assert call(daemon, "memory.write", {"topic": topic, "content": f"{topic} body", "tags": "demo"})["ok"]
    page.goto(url)
    page.goto(url.split("?")[0] + "memory")
    shot(page, "memory-view")
    entry = page.locator('li.entry[data-topic="drop-me"]')
    entry.locator("details.delete summary").click()
    page.on("dialog", lambda d: pytest.fail(f"a blocking dialog appeared: {d.message}"))
    entry.locator("button.do-delete").click()
    assert any("drop-me deleted" in t for t in flash_texts(page))
    assert page.locator('li.entry[data-topic="drop-me"]').count() == 0
    assert set(note_files(daemon)) == {"keep-me.md"}
    assert "drop-me" not in (daemon.root / "MEMORY.md").read_text()
    assert all(r[0] == "pending" for r in queue_rows(daemon).values())


def test_the_page_updates_live_after_an_external_mmctl_write(start_daemon, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                              page: Any) -> None:
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    page.goto(url)
    page.goto(url.split("?")[0] + "memory")
    page.wait_for_selector("#live:not([hidden])")
    page.evaluate("window.__sameDocument = true")
    done = subprocess.run([sys.executable, "-m", "mmctl", "write", "from-terminal", "--content", "written outside",
                           "--root", str(daemon.root)], env=daemon.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    page.wait_for_selector('li.entry[data-topic="from-terminal"]', timeout=10_000)
    assert page.evaluate("window.__sameDocument") is True  # updated in place, not reloaded
    assert page.locator("#rev").inner_text() == str(call(daemon, "memory.index")["revision"])
    assert note_files(daemon) == {"from-terminal.md": (daemon.root / "memories" / "from-terminal.md").read_text()}
    assert all(r[0] == "pending" for r in queue_rows(daemon).values())


def test_the_queue_updates_live_after_a_decision_made_elsewhere(start_daemon, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                 page: Any) -> None:
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cand = by_topic(daemon)["release-day"]
    page.goto(url)
    page.wait_for_selector("#live:not([hidden])")
    page.evaluate("window.__sameDocument = true")
    assert call(daemon, "queue.reject", {"id": cand["id"], "reason": "decided in the terminal"})["ok"]
    page.wait_for_selector(f"#cand-{cand['id']}", state="detached", timeout=10_000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.locator("article.candidate").count() == len(EXPECTED_TOPICS) - 1
    assert queue_rows(daemon)["release-day"] == ("rejected", "decided in the terminal", None)
    assert note_files(daemon) == {}


def test_an_append_proposal_with_its_evidence_is_accepted_into_its_note(start_daemon, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                        page: Any) -> None:
    from tests.web_helpers import append_proposal

    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cand = append_proposal(daemon, tmp_path / "sessions", "s-web-3")
    page.goto(url)
    card = page.locator(f"#cand-{cand['id']}")
    assert card.locator(".proposal").inner_text() == "append to" and card.locator(".topic").inner_text() == "deploy"
    assert card.locator(".md").inner_text() == "staging deploys need the VPN token from the team vault."
    assert card.locator(".from q").count() == 0  # the quote says the body again: not shown twice
    assert card.locator(".score").inner_text() == f"{cand['score']:.2f}"
    assert card.locator(".seen").inner_text() == str(cand["seen"])
    assert card.locator("button.do-accept").inner_text() == "Append"
    card.locator("button.do-accept").click()
    assert any("appended to deploy" in t for t in flash_texts(page))
    note = call(daemon, "memory.read", {"topic": "deploy"})
    assert note["body"] == ("Staging deploys go through the bastion.\n\n"
                            "staging deploys need the VPN token from the team vault.")
    assert note["summary"] == "how staging deploys work" and note["tags"] == ["staging"]
    assert queue_rows(daemon)[cand["topic"]] == ("accepted", None, "deploy")
    undone = call(daemon, "queue.undo", {"id": cand["id"]})
    assert undone["reverted"] == "restored"
    assert call(daemon, "memory.read", {"topic": "deploy"})["body"] == "Staging deploys go through the bastion."
    assert note_files(daemon)["deploy.md"].rstrip().endswith("Staging deploys go through the bastion.")


def test_a_sessions_hidden_candidates_open_from_its_group(start_daemon, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          page: Any) -> None:
    from tests.test_ingest_helpers import candidates, user_message, wait_until

    daemon, url = start_web_daemon(start_daemon, tmp_path)
    folder = tmp_path / "sessions" / "--home-dev-shop--" / "s-web-4"
    folder.mkdir()
    header = (b'{"type":"session","version":4,"id":"s-web-4","createdAt":1790787873424,"isSeeded":false,'
              b'"delegationDepth":0}\n')
    rules = ("the cart service should retry payment calls twice", "the invoice job should run after midnight UTC",
             "the search index should be rebuilt on each deploy", "the admin pages should stay behind the VPN",
             "the mobile API should keep the v1 routes until March", "the image cache should expire after a week")
    (folder / "session.v4.jsonl").write_bytes(header + user_message(1, ".\n\n".join(rules) + ".", "m1"))
    def of_session() -> list[dict[str, Any]]:
        return [c for c in candidates(daemon, "pending") if c["source"]["sessionId"] == "s-web-4"]

    try:
        mine = wait_until(lambda: (found := of_session()) and len(found) == 6 and found, what="six candidates")
    except AssertionError:
        raise AssertionError(of_session()) from None
    hidden = [c for c in mine if not c["visible"]]
    assert hidden and len(hidden) < 6  # the budget shows a few of one prompt's six rules
    page.goto(url)
    page.goto(re.sub(r"/\?.*$|/$", "", url.split("?")[0]) + "/?group=session")
    group = page.locator("section.group", has_text="session: s-web-4")
    assert all(group.locator(f"#cand-{c['id']}").count() == 0 for c in hidden)
    group.locator("a.session-all").click()
    page.wait_for_selector(f"#cand-{hidden[0]['id']}")
    assert "session s-web-4: 6 pending, hidden ones too" in " ".join(page.locator("h1").inner_text().split())
    assert {int(x) for x in page.locator("article.candidate").evaluate_all("els => els.map(e => e.id.slice(5))")} \
        == {c["id"] for c in mine}
    page.locator("#whole-queue").click()
    page.wait_for_selector("select#group")
    assert page.locator(f"#cand-{hidden[0]['id']}").count() == 0
