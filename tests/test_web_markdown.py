"""Bodies on the review page: markdown rendered safely, cut at words, and each body shown once.

Pure functions (no daemon): :mod:`mmd.daemon.web.markdown` and the "say it once" rules of
:mod:`mmd.candidates.labels` that the page and ``mmctl review`` share.
"""

from __future__ import annotations

import pytest

from mmd.candidates.labels import quote_besides, summary_besides
from mmd.daemon.web.markdown import Markdown, cut_text

MD = Markdown(lambda: "local")


@pytest.mark.parametrize("text", [
    "[a](javascript:alert(1))", "[a](JaVaScRiPt:alert(1))", "[a]( javascript:alert(1))",
    "[a](java&#x73;cript:alert(1))", "[a](java%73cript:alert(1))", "<javascript:alert(1)>",
    "[a](vbscript:msgbox(1))", "[a](data:text/html;base64,PHNjcmlwdD4=)", "[a](file:///etc/passwd)",
    "[a](/queue/reject)", "[a](//evil.example/x)", "[a](mm://other-memory/deploy)", "[a](mm:../../etc/passwd)",
])
def test_a_link_to_anything_but_the_web_mail_or_this_memory_stays_text(text: str) -> None:
    html = MD.render(text)
    assert "<a " not in html and "href" not in html, html


def test_raw_html_and_images_are_text() -> None:
    html = MD.render('<script>alert(1)</script> <img src=x onerror="alert(2)"> ![p](https://tracker.example/p.png)'
                     '\n\n<div onclick="x()">block</div>')
    assert "<script" not in html and "<img" not in html and "<div" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;div onclick" in html


def test_web_mail_and_note_links_are_kept_and_notes_open_their_page() -> None:
    html = MD.render("[s](https://example.com/a?b=1) <mailto:me@example.com> [d](mm:deploy) [r](mm://local/release)")
    assert '<a href="https://example.com/a?b=1" rel="noopener noreferrer nofollow">s</a>' in html
    assert '<a href="mailto:me@example.com" rel="noopener noreferrer nofollow">' in html
    assert '<a href="/note/deploy">d</a>' in html and '<a href="/note/release">r</a>' in html


def test_markdown_renders_and_line_breaks_stay() -> None:
    html = MD.render("run `make check` **first**\nthen deploy\n\n- one\n- two")
    assert "<code>make check</code>" in html and "<strong>first</strong>" in html
    assert "<br>" in html and "<ul>\n<li>one</li>" in html
    assert " id=" not in MD.render("# Heading\n\n[x]: https://example.com")  # no ids from the text


def test_a_body_is_cut_at_a_word_and_says_how_much_is_left() -> None:
    assert cut_text("short", 600) == ("short", 0)
    shown, left = cut_text("alpha beta gamma delta", 13)
    assert shown == "alpha beta" and left == len("alpha beta gamma delta") - len("alpha beta")
    assert cut_text("x" * 20, 10) == ("x" * 10, 10)  # no space to cut at: cut at the limit


def test_the_summary_and_a_quote_show_only_what_the_body_does_not_say() -> None:
    cand = {"summary": "We ship from EU.", "body": "we ship from **EU**, never from US-east",
            "evidence": [{"quote": "ok so, we ship from EU, never from US-east."}, {"quote": "same as before"}]}
    assert summary_besides(cand) is None  # the body begins with it
    assert quote_besides(cand) == "same as before"  # the first quote holds the body whole: said again
    other = {"summary": "deploy region", "body": "eu-west-1 only", "evidence": [{"quote": "eu-west-1 only"}]}
    assert summary_besides(other) == "deploy region" and quote_besides(other) is None
    assert quote_besides({"body": "x", "evidence": []}) is None
