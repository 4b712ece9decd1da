"""The review page's gate against a real daemon: token, cookie, Host, Origin, CSRF, loopback only, no tracebacks.

Every refused request is checked to have changed nothing: the files on disk
and the queue in ``.mmd/state.db`` are as before.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests.test_ingest_helpers import call
from tests.web_helpers import by_topic, note_files, queue_rows, request, start_web_daemon


def _cookie(url: str) -> str:
    status, headers, _ = request(url, "/?" + urlsplit(url).query)
    assert status == 200
    return headers["set-cookie"].split(";")[0]


def _form(url: str, cookie: str, **fields: Any) -> str:
    status, _, page = request(url, "/", cookie=cookie)
    assert status == 200
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    return urlencode({"csrf": csrf, **fields})


def test_the_token_url_answers_the_queue_page_and_sets_a_cookie(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    status, headers, page = request(url, "/?" + urlsplit(url).query)
    assert status == 200 and "Review queue" in page and "deploy-region" in page
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    cookie = headers["set-cookie"].split(";")[0]
    assert request(url, "/memory", cookie=cookie)[0] == 200
    assert request(url, "/status", cookie=cookie)[0] == 200


def test_no_token_a_foreign_host_or_origin_or_no_csrf_are_refused_and_change_nothing(  # type: ignore[no-untyped-def]
        start_daemon, tmp_path: Path) -> None:
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    assert call(daemon, "memory.write", {"topic": "keep", "content": "keep me"})["ok"]
    cookie = _cookie(url)
    origin = f"http://{urlsplit(url).netloc}"
    cid = by_topic(daemon)["deploy-region"]["id"]
    files, rows = note_files(daemon), queue_rows(daemon)
    good = _form(url, cookie, id=cid, rev=call(daemon, "memory.index")["revision"], back="/")
    wrong_token = "mmd_" + cookie.split("=")[0][4:] + "=" + "x" * 43
    refusals = [
        ("GET without token or cookie", request(url, "/"), 403),
        ("GET with a wrong cookie", request(url, "/", cookie=wrong_token), 403),
        ("GET with a wrong token", request(url, "/?token=" + "y" * 43), 403),
        ("GET with a foreign Host", request(url, "/", cookie=cookie, host=f"evil.example:{urlsplit(url).port}"), 400),
        ("token URL with a foreign Host", request(url, "/?" + urlsplit(url).query, host="evil.example"), 400),
        ("POST without a token", request(url, "/queue/accept", method="POST", origin=origin, body=good), 403),
        ("POST from a foreign Origin", request(url, "/queue/accept", method="POST", cookie=cookie,
                                              origin="http://evil.example", body=good), 403),
        ("POST without an Origin", request(url, "/queue/accept", method="POST", cookie=cookie, body=good), 403),
        ("POST without the CSRF token", request(url, "/queue/accept", method="POST", cookie=cookie, origin=origin,
                                                body=urlencode({"id": cid, "back": "/"})), 403),
        ("delete without the CSRF token", request(url, "/memory/delete", method="POST", cookie=cookie,
                                                  origin=origin, body=urlencode({"topic": "keep"})), 403),
    ]
    for what, (status, headers, page), expected in refusals:
        assert status == expected, what
        assert "<html" in page and "Traceback" not in page, what
        assert "set-cookie" not in headers, what
    assert note_files(daemon) == files and queue_rows(daemon) == rows
    # the same form with everything in order goes through
    status, headers, _ = request(url, "/queue/accept", method="POST", cookie=cookie, origin=origin, body=good)
    assert status == 303 and queue_rows(daemon)["deploy-region"][0] == "accepted"


def test_a_stale_page_is_told_and_overwrites_nothing(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cookie = _cookie(url)
    origin = f"http://{urlsplit(url).netloc}"
    shown = call(daemon, "memory.index")["revision"]
    form = _form(url, cookie, topic="", rev=shown, back="/memory")
    assert call(daemon, "memory.write", {"topic": "moved", "content": "written after the page was shown"})["ok"]
    status, headers, _ = request(url, "/memory/delete", method="POST", cookie=cookie, origin=origin,
                                 body=form.replace("topic=", "topic=moved"))
    assert status == 303
    _, _, page = request(url, headers["location"], cookie=cookie)
    assert "This page was out of date" in page  # its revision is every root's (issue 27)
    assert "moved.md" in note_files(daemon)
    cid = by_topic(daemon)["release-day"]["id"]
    batch = _form(url, cookie, action="accept", rev=shown, back="/") + f"&ids={cid}"
    status, headers, _ = request(url, "/queue/batch", method="POST", cookie=cookie, origin=origin, body=batch)
    _, _, page = request(url, headers["location"], cookie=cookie)
    assert "This page was out of date" in page and queue_rows(daemon)["release-day"][0] == "pending"


def test_errors_are_pages_and_no_route_reads_a_path(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cookie = _cookie(url)
    for path in ("/note/..%2F..%2Fetc%2Fpasswd", "/note/MEMORY.md", "/static/..%2F__init__.py", "/static/app.py",
                 "/nowhere", "/note/absent-topic"):
        status, _, page = request(url, path, cookie=cookie)
        assert status in (400, 404), path
        assert "<html" in page and "Traceback" not in page and "root:" not in page, path


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "192.0.2.1:8080", "[::]:0", "example.com:80", "127.0.0.1"])
def test_a_non_loopback_listen_address_is_refused_at_start(tmp_path: Path, listen: str) -> None:
    done = subprocess.run([sys.executable, "-m", "mmd.daemon.main", "--root", str(tmp_path / "root"),
                           "--no-ingest", "--http", listen], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "http.listen" in done.stderr
    assert not (tmp_path / "root").exists()


def test_the_config_file_key_is_read_and_checked_as_the_flag(tmp_path: Path) -> None:
    from mmd.daemon.config import ConfigError, build_config

    conf = tmp_path / "config.toml"
    conf.write_text('[http]\nlisten = "127.0.0.1:0"\n')
    env = {"HOME": str(tmp_path)}
    assert build_config({"config": str(conf), "root": str(tmp_path / "r")}, env).http_listen == ("127.0.0.1", 0)
    assert build_config({"root": str(tmp_path / "r")}, env).http_listen is None
    conf.write_text('[http]\nlisten = "0.0.0.0:8080"\n')
    with pytest.raises(ConfigError) as refused:
        build_config({"config": str(conf), "root": str(tmp_path / "r")}, env)
    assert refused.value.key == "http.listen" and "loopback" in refused.value.why


def test_the_daemon_loads_the_web_stack_only_with_http() -> None:
    probe = ("import sys, mmd.daemon.main, mmd.daemon.lifecycle; "
             "print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2', 'mmd.daemon.web') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_the_status_page_shows_the_daemon_sources_queue_and_last_events(  # type: ignore[no-untyped-def]
        start_daemon, tmp_path: Path) -> None:
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    cookie = _cookie(url)
    assert call(daemon, "memory.write", {"topic": "seen", "content": "an event for the list"})["ok"]
    status, _, page = request(url, "/status", cookie=cookie)
    assert status == 200 and f"pid {call(daemon, 'daemon.status')['pid']}" in page
    assert "pending 10" in page and 'id="sources"' in page and str(tmp_path / "sessions") in page
    assert "memory/changed" in page


def test_a_review_date_is_set_and_cleared_through_memory_write(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from mmd.wire.methods import METHODS

    if "reviewAfter" not in METHODS["memory.write"].params:
        pytest.skip("memory.write takes no reviewAfter on this branch yet (the page hides the form)")
    daemon, url = start_web_daemon(start_daemon, tmp_path)
    assert call(daemon, "memory.write", {"topic": "dated", "content": "look at this again"})["ok"]
    cookie = _cookie(url)
    origin = f"http://{urlsplit(url).netloc}"
    for when, expected in (("2031-01-15", "2031-01-15"), ("", None)):
        form = _form(url, cookie, topic="dated", date=when, rev=call(daemon, "memory.index")["revision"],
                     back="/memory")
        status, headers, _ = request(url, "/memory/review-date", method="POST", cookie=cookie, origin=origin,
                                     body=form)
        assert status == 303
        entry = next(e for e in call(daemon, "memory.index")["entries"] if e["topic"] == "dated")
        assert (expected in entry["entryBody"]) if expected else "review-after" not in entry["entryBody"]
    assert note_files(daemon)["dated.md"].rstrip().endswith("look at this again")


def test_the_queue_heading_says_how_many_are_shown_and_how_many_the_budget_hides() -> None:
    """A fresh user read "Review queue 180 pending" over a page of 52 as a contradiction."""
    import re

    from mmd.daemon.web.app import templates

    template = templates(lambda: "local").get_template("queue.html")
    values = {"groups": [], "groupings": [], "offset": 0, "page_size": 100}

    def heading(**more: object) -> str:
        found = re.search(r"<h1>(.*?)</h1>", template.render(**values, **more))
        assert found is not None
        return re.sub(r"<[^>]+>", "", found.group(1))

    assert heading(page={"pending": 180, "total": 52, "candidates": []}, show_all=False) == (
        "Review queue 180 pending: 52 shown, 128 hidden by their session's budget")
    assert heading(page={"pending": 180, "total": 180, "candidates": []}, show_all=True) == "Review queue 180 pending"
    title = re.search(r"<title>(.*?)</title>", template.render(**values, page={"pending": 180, "total": 52,
                                                                               "candidates": []}, show_all=False))
    assert title is not None and title.group(1).startswith("Queue (52 of 180)")  # the tab counts what the page shows
