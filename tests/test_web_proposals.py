"""An agent's replace and delete proposals on the review page, over HTTP against a real daemon with ``--http``: the
cards say what accepting does and show the difference, and the edit form honours the proposal's action (a delete
deletes, a replace keeps the note's summary unless it is changed)."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode, urlsplit

from tests.test_ingest_helpers import call
from tests.web_helpers import note_files, request


def _page(start_daemon: Any) -> tuple[Any, str, str, str]:
    """A daemon serving the page: ``(daemon, url, cookie, origin)``."""
    daemon = start_daemon("--http", "127.0.0.1:0")
    url = str(call(daemon, "daemon.status")["http"]["url"])
    status, headers, _ = request(url, "/?" + urlsplit(url).query)
    assert status == 200
    return daemon, url, headers["set-cookie"].split(";")[0], f"http://{urlsplit(url).netloc}"


def _field(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found is not None, name
    return html.unescape(found.group(1))


def _card(page: str, cid: int) -> str:
    return page.split(f'id="cand-{cid}"')[1].split("</article>")[0]


def _notes(daemon: Any) -> None:
    """The two notes the proposals target: ``beta-test`` and ``testing``, each with a summary of its own."""
    for topic, body, summary in (("beta-test", "Run the beta suite with make beta.", "Beta tests"),
                                 ("testing", "Run cargo test.", "How we test")):
        assert call(daemon, "memory.write", {"topic": topic, "content": body, "summary": summary})["ok"]


def _propose(daemon: Any, **params: Any) -> int:
    out = call(daemon, "memory.propose", {"agent": "codex", **params})
    assert out["status"] == "queued", out
    return int(out["id"])


def test_the_cards_name_a_replace_and_a_delete_and_show_what_accepting_changes(start_daemon: Any) -> None:
    daemon, url, cookie, _ = _page(start_daemon)
    _notes(daemon)
    gone = _propose(daemon, topic="beta-test", action="delete", reason="the beta is over")
    new = _propose(daemon, content="Run cargo nextest --all.", topic="testing", action="replace")
    _, _, page = request(url, "/", cookie=cookie)
    delete_card, replace_card = _card(page, gone), _card(page, new)
    assert '<span class="proposal">delete</span>' in delete_card and ">Delete</button>" in delete_card
    assert "deletes beta-test; its text now:\n- Run the beta suite with make beta." in html.unescape(delete_card)
    assert '<span class="proposal">replace</span>' in replace_card
    shown = html.unescape(replace_card)
    assert "replaces the text of testing:" in shown and "-Run cargo test.\n+Run cargo nextest --all." in shown
    _, _, form = request(url, f"/queue/{gone}", cookie=cookie)  # a delete has no text to edit
    assert 'name="body"' not in form and "Delete beta-test</button>" in form and "- Run the beta suite" in form


def test_an_edit_of_a_delete_deletes_or_is_refused_and_one_of_a_replace_keeps_the_summary(start_daemon: Any) -> None:
    daemon, url, cookie, origin = _page(start_daemon)
    _notes(daemon)
    gone = _propose(daemon, topic="beta-test", action="delete")
    new = _propose(daemon, content="Run cargo nextest --all.", topic="testing", action="replace")
    _, _, page = request(url, f"/queue/{new}", cookie=cookie)
    assert _field(page, "summary") == "How we test"  # the summary accepting it writes: the note's own

    def post(cid: int, **fields: str) -> str:
        _, _, shown = request(url, f"/queue/{cid}", cookie=cookie)
        body = urlencode({"csrf": _field(shown, "csrf"), "rev": _field(shown, "rev"), "id": cid, "edit": "1",
                          "back": "/", **fields})
        status, headers, answer = request(url, "/queue/accept", method="POST", cookie=cookie, origin=origin,
                                          body=body)
        return answer if status == 200 else request(url, headers["location"], cookie=cookie)[2]

    # the form the page used to offer for a delete, sent with a text of its own: refused, nothing changed
    refused = post(gone, topic="beta-test", summary="Delete the note beta-test.", tags="", into="",
                   body="Keep it: the beta goes on.")
    assert "proposes to delete the note beta-test" in html.unescape(refused)
    assert "Run the beta suite" in note_files(daemon)["beta-test.md"]
    assert call(daemon, "queue.get", {"id": gone})["status"] == "pending"
    # sent back unchanged (as posting that form unchanged did): the note is deleted, never overwritten
    post(gone, topic="beta-test", summary="Delete the note beta-test.", tags="", into="",
         body="Delete the note beta-test.")
    assert "beta-test.md" not in note_files(daemon) and call(daemon, "memory.read", {"topic": "beta-test"}) is None
    assert call(daemon, "queue.get", {"id": gone})["status"] == "accepted"
    post(new, topic="testing", summary="How we test", tags="", into="", body="Run cargo nextest --all.")
    note = call(daemon, "memory.read", {"topic": "testing"})
    assert (note["body"], note["summary"]) == ("Run cargo nextest --all.", "How we test")


def test_the_summary_field_of_a_replace_is_the_agents_when_it_gave_one(start_daemon: Any) -> None:
    daemon, url, cookie, _ = _page(start_daemon)
    assert call(daemon, "memory.write", {"topic": "testing", "content": "Run cargo test.",
                                         "summary": "How we test"})["ok"]
    new = _propose(daemon, content="Run cargo nextest --all.", topic="testing", action="replace",
                   summary="Tests run with nextest")
    _, _, page = request(url, f"/queue/{new}", cookie=cookie)
    assert _field(page, "summary") == "Tests run with nextest"
    assert "no note: replace the text of the note under the topic above" in page
