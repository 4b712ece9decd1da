"""mmd.core.search: tokenizer, snippets, engine choice, the scan engine and the FTS5 engine (mm v1 §8)."""

from __future__ import annotations

import random
import sqlite3
import threading
from typing import Any

import pytest

from mmd.core.model import IndexEntry, Note
from mmd.core.search import (
    ELLIPSIS,
    Fts5Index,
    ScanIndex,
    choose_engine,
    fts5_available,
    make_snippet,
    search_fts5,
    search_scan,
    tokenize,
)

MOJIBAKE = "\u00e2\u20ac\u00a6"  # the reference's broken ellipsis "â€¦"

needs_fts5 = pytest.mark.skipif(not fts5_available(), reason="this Python's sqlite3 has no FTS5")


def note(
    topic: str,
    body: str = "",
    summary: str = "",
    tags: tuple[str, ...] = (),
    *,
    memory_id: str = "local",
    uri: str | None = None,
    updated: str = "2026-01-01T00:00:00.000Z",
) -> Note:
    entry = IndexEntry(
        topic=topic,
        memory_id=memory_id,
        summary=summary,
        tags=tags,
        file=f"memories/{topic}.md",
        updated=updated,
        body_chars=len(body),
        write_budget=4000,
        entry_body="",
    )
    return Note(entry=entry, uri=uri or f"mm://{memory_id}/{topic}", body=body, missing_file=False)


def topics(result: dict[str, Any]) -> list[str]:
    return [m["topic"] for m in result["matches"]]


# --- tokenize ------------------------------------------------------------------------------------


def test_tokenize_lowercases_latin_runs_in_order() -> None:
    assert tokenize("Deploy to US-East-1, then x_y!") == ["deploy", "to", "us", "east", "1", "then", "x", "y"]


def test_tokenize_empty_and_punctuation_only_give_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("!!! --- ... ___") == []


def test_tokenize_keeps_non_ascii_letters_and_digits_whole() -> None:
    # the reference keeps only [a-z0-9] runs ("café" -> "caf"); we keep Unicode letters/digits
    assert tokenize("Café Ελλάδα Москва ٣٤") == ["café", "ελλάδα", "москва", "٣٤"]


def test_tokenize_applies_nfkc_before_lowercasing() -> None:
    assert tokenize("ＡＢＣ１２ ﬁle ①") == ["abc12", "file", "1"]


def test_tokenize_han_runs_give_unigrams_each_followed_by_its_bigram() -> None:
    assert tokenize("部署区域") == ["部", "部署", "署", "署区", "区", "区域", "域"]
    assert tokenize("核") == ["核"]


def test_tokenize_puts_latin_tokens_before_cjk_grams() -> None:
    assert tokenize("记忆 memory 系统 v2") == ["memory", "v2", "记", "记忆", "忆", "系", "系统", "统"]


def test_tokenize_kana_hangul_and_astral_han() -> None:
    # the reference only cuts U+3400..U+9FFF; we also cut kana, hangul and astral ideographs
    assert tokenize("ひらがな") == ["ひ", "ひら", "ら", "らが", "が", "がな", "な"]
    assert tokenize("カナ") == ["カ", "カナ", "ナ"]
    assert tokenize("한국") == ["한", "한국", "국"]
    assert tokenize("\U00020000\U0002a700") == ["\U00020000", "\U00020000\U0002a700", "\U0002a700"]
    # Han and kana in one run make cross-script bigrams, like a single Han run
    assert tokenize("と漢") == ["と", "と漢", "漢"]


def test_tokenize_katakana_middle_dot_separates_runs() -> None:
    assert tokenize("ジョン・スミス") == ["ジ", "ジョ", "ョ", "ョン", "ン", "ス", "スミ", "ミ", "ミス", "ス"]


def test_tokenize_halfwidth_katakana_is_folded_to_fullwidth() -> None:
    assert tokenize("ｶﾅ") == tokenize("カナ")


def test_tokenize_matches_reference_on_ascii_and_basic_han() -> None:
    # the reference's rule, written out: [a-z0-9]+ runs of the lowercased text, then U+3400..U+9FFF grams
    def reference(text: str) -> list[str]:
        import re

        out = re.findall("[a-z0-9]+", text.lower())
        for run in re.findall("[\u3400-\u9fff]+", text):
            for i, ch in enumerate(run):
                out.append(ch)
                if i + 1 < len(run):
                    out.append(run[i : i + 2])
        return out

    rng = random.Random(5)
    alphabet = "abcXYZ019 -_.,!?\n\t部署区域核心记忆" + "()[]{}"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert tokenize(text) == reference(text), text


# --- make_snippet --------------------------------------------------------------------------------

MID = "aaaa bbbb cccc dddd eeee needle ffff gggg hhhh iiii"


def test_make_snippet_returns_text_that_fits_unchanged() -> None:
    assert make_snippet("short body", "short", 20) == "short body"
    assert make_snippet("x" * 20, "nope", 20) == "x" * 20


def test_make_snippet_windows_around_the_needle_with_real_ellipses() -> None:
    # the reference gives "â€¦ eeee needle ffff â€¦" (mojibake, 24 code points)
    assert make_snippet(MID, "needle", 20) == "… eeee needle ffff …"


def test_make_snippet_without_match_shows_the_head() -> None:
    text = "this body never says the word so the head is shown trimmed"
    assert make_snippet(text, "onlytopic", 20) == "this body never say…"
    assert make_snippet(text, "", 20) == "this body never say…"


def test_make_snippet_finds_the_needle_case_insensitively() -> None:
    assert make_snippet(MID.upper(), "needle", 20) == "… EEEE NEEDLE FFFF …"


def test_make_snippet_needle_near_start_has_no_leading_ellipsis() -> None:
    assert make_snippet(MID, "bbbb", 20) == "aaaa bbbb cccc dddd…"


def test_make_snippet_window_reaching_the_end_keeps_the_last_character() -> None:
    # match at 5, lead 10 // 3 = 3, window [2, 12) ends exactly at the end of the text: the
    # reference trims it to 9 and drops the final "l" silently ("…cdefghijk"); we mark the cut
    assert make_snippet("abcdefghijkl", "fgh", 10) == "…cdefghij…"
    assert make_snippet("abcdefghijk", "fgh", 10) == "…cdefghijk"


def test_make_snippet_counts_code_points_not_utf16_units() -> None:
    emoji = "🎉" * 8
    assert make_snippet(emoji, "🎉", 8) == emoji
    # the match at 8 opens the window 8 // 3 = 2 code points earlier
    assert make_snippet(emoji + "x", "x", 8) == "…🎉🎉x"


def test_make_snippet_small_caps() -> None:
    assert make_snippet("abcdefghij", "h", 5) == "abcd…"
    assert make_snippet("abcdefghij", "h", 1) == "…"
    assert make_snippet("abcdefghij", "h", 0) == ""
    assert make_snippet("", "x", 0) == ""


def test_make_snippet_never_exceeds_cap() -> None:
    rng = random.Random(11)
    alphabet = "ab c🎉部İ\n"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        needle = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
        cap = rng.randint(-2, 40)
        out = make_snippet(text, needle, cap)
        assert len(out) <= max(cap, 0), (text, needle, cap, out)
        assert MOJIBAKE not in out
        if len(text) <= cap:
            assert out == text
        else:
            assert out.count(ELLIPSIS) >= 1 or cap <= 0


# --- engine choice ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "available", "engine"),
    [
        ("scan", True, "scan"),
        ("scan", False, "scan"),
        ("auto", True, "fts5"),
        ("auto", False, "scan"),
        ("fts5", True, "fts5"),
        ("fts5", False, "scan"),
        ("bogus", True, "fts5"),
    ],
)
def test_choose_engine_never_upgrades_scan(requested: str, available: bool, engine: str) -> None:
    assert choose_engine(requested, available) == engine


def test_fts5_probe_is_a_cached_bool() -> None:
    assert isinstance(fts5_available(), bool)
    assert fts5_available() is fts5_available()


# --- scan ---------------------------------------------------------------------------------------


def test_scan_ranks_topic_over_summary_over_body() -> None:
    notes = [
        note("deploy", body="nothing here"),  # topic x3
        note("alpha", body="x", summary="deploy"),  # summary x2
        note("beta", body="x", tags=("deploy",)),  # tags x2
        note("gamma", body="deploy"),  # body x1
        note("delta", body="deploy deploy deploy deploy"),  # 4 body hits beat a topic hit
    ]
    result = search_scan(notes, "deploy", 10, 160)
    assert [(m["topic"], m["score"]) for m in result["matches"]] == [
        ("delta", 4),
        ("deploy", 3),
        ("alpha", 2),
        ("beta", 2),
        ("gamma", 1),
    ]


def test_scan_score_sums_weighted_counts_of_distinct_query_tokens() -> None:
    n = note("deploy", body="we deploy with actions; actions run", summary="deploy notes", tags=("ci", "deploy"))
    # deploy: topic 3 + summary 2 + tags 2 + body 1 = 8; actions: body 2
    assert search_scan([n], "deploy actions", 10, 160)["matches"][0]["score"] == 10
    # repeated query tokens count once
    assert search_scan([n], "Deploy DEPLOY deploy", 10, 160)["matches"][0]["score"] == 8


def test_scan_matches_whole_tokens_only() -> None:
    notes = [note("a", body="redeploy deployment"), note("b", body="deploy")]
    assert topics(search_scan(notes, "deploy", 10, 160)) == ["b"]
    assert search_scan(notes, "dep", 10, 160)["total"] == 0


def test_scan_ties_are_ordered_by_topic_code_points() -> None:
    notes = [note(t, body="same words") for t in ("beta", "Alpha", "alpha", "10", "Zed")]
    assert topics(search_scan(notes, "same", 10, 160)) == ["10", "Alpha", "Zed", "alpha", "beta"]


def test_scan_result_shape_and_key_order() -> None:
    result = search_scan([note("ui", body="The UI is a React app.")], "react", 10, 160)
    assert list(result) == ["query", "engine", "total", "truncated", "matches"]
    assert list(result["matches"][0]) == ["topic", "uri", "updated", "score", "snippet"]
    assert result == {
        "query": "react",
        "engine": "scan",
        "total": 1,
        "truncated": False,
        "matches": [
            {
                "topic": "ui",
                "uri": "mm://local/ui",
                "updated": "2026-01-01T00:00:00.000Z",
                "score": 1,
                "snippet": "The UI is a React app.",
            }
        ],
    }


def test_scan_uri_is_the_notes_uri() -> None:
    # one memory id per snapshot: the match echoes note.uri, not a URI rebuilt from entry.memory_id
    n = note("deploy", body="deploy", memory_id="other", uri="mm://team/deploy")
    assert search_scan([n], "deploy", 10, 160)["matches"][0]["uri"] == "mm://team/deploy"


def test_scan_limit_truncates_and_total_counts_every_match() -> None:
    notes = [note(f"doc{i}", body="common " * i) for i in range(5)]
    result = search_scan(notes, "common", 2, 160)
    assert result["total"] == 4
    assert result["truncated"] is True
    assert topics(result) == ["doc4", "doc3"]
    assert search_scan(notes, "common", 4, 160)["truncated"] is False


def test_scan_limit_cut_inside_a_tie_keeps_the_earliest_topics() -> None:
    notes = [note(f"t{i:02d}", body="tie") for i in reversed(range(30))] + [note("zz", body="tie tie")]
    result = search_scan(notes, "tie", 3, 160)
    assert [(m["topic"], m["score"]) for m in result["matches"]] == [("zz", 2), ("t00", 1), ("t01", 1)]
    assert result["total"] == 31


def test_scan_query_without_tokens_matches_nothing() -> None:
    result = search_scan([note("a", body="text")], "!!! ---", 10, 160)
    assert result == {"query": "!!! ---", "engine": "scan", "total": 0, "truncated": False, "matches": []}


def test_scan_snippet_uses_summary_when_body_is_empty() -> None:
    n = note("missing", summary="Summary used when the detail file is missing entirely")
    match = search_scan([n], "missing", 10, 20)["matches"][0]
    assert match["snippet"] == "…le is missing enti…"
    assert len(match["snippet"]) == 20


def test_scan_snippet_centres_on_first_query_token() -> None:
    n = note("mid", body=MID)
    assert search_scan([n], "needle iiii", 10, 20)["matches"][0]["snippet"] == "… eeee needle ffff …"


def test_scan_cjk_query_scores_unigrams_and_bigrams() -> None:
    notes = [note("region", body="核心服务部署在东部区域。", summary="部署区域"), note("other", body="部门")]
    result = search_scan(notes, "部署区域", 10, 160)
    # summary: 7 grams x2 = 14; body: 部 x2, 部署, 署, 区, 区域, 域 = 7
    assert [(m["topic"], m["score"]) for m in result["matches"]] == [("region", 21), ("other", 1)]


def test_scan_finds_kana_and_hangul() -> None:
    notes = [note("jp", summary="ひらがなと漢字"), note("ko", body="한국어 문서")]
    assert topics(search_scan(notes, "ひらがな", 10, 160)) == ["jp"]
    assert topics(search_scan(notes, "한국어", 10, 160)) == ["ko"]


def test_scan_index_is_reusable_and_prepare_returns_itself() -> None:
    notes = [note("a", body="alpha beta"), note("b", body="beta gamma")]
    index = ScanIndex(notes)
    assert index.prepare() is index
    assert index.notes == tuple(notes)
    first = index.search("beta", 10, 160)
    assert index.search("beta", 10, 160) == first == search_scan(notes, "beta", 10, 160)
    assert topics(index.search("gamma alpha", 10, 160)) == ["a", "b"]


def test_scan_index_over_no_notes() -> None:
    assert ScanIndex([]).search("x", 10, 160)["total"] == 0


def test_scan_index_is_safe_to_share_between_threads() -> None:
    notes = [note(f"n{i}", body=f"word{i % 7} shared") for i in range(200)]
    index = ScanIndex(notes)
    expected = search_scan(notes, "shared word3", 5, 160)
    results: list[dict[str, Any]] = []

    def worker() -> None:
        for _ in range(20):
            results.append(index.search("shared word3", 5, 160))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80 and all(r == expected for r in results)


# --- FTS5 ---------------------------------------------------------------------------------------


def fts_corpus() -> list[Note]:
    return [
        note("deploy", body="we deploy to us-east-1 using github actions", summary="Deployment notes", tags=("infra",)),
        note("auth", body="the auth system uses OAuth 2.0 and JWT", summary="Auth design", tags=("security",)),
        note("ui", body="the UI is a react app", summary="Frontend", tags=("web",)),
        note("notes", body='a container holding the word or inside, and "quoted" text', summary="misc"),
        note("other", body="a second deploy note", summary="second deploy note"),
        note("region", body="核心服务部署在东部区域。", summary="部署区域"),
    ]


@needs_fts5
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("deploy", [("other", 0.8493949993376035), ("deploy", 0.7367542086592378)]),
        ("deploy actions", [("deploy", 1.8754115491470216), ("other", 0.8493949993376035)]),
        ("us-east-1", [("deploy", 1.1386573404877838)]),
        ("OAuth jwt", [("auth", 2.2773146809755676)]),
    ],
)
def test_fts5_latin_scores_are_the_references_negated_bm25_ranks(query: str, expected: list[tuple[str, float]]) -> None:
    with Fts5Index(fts_corpus()) as index:
        result = index.search(query, 10, 160)
    assert result["engine"] == "fts5"
    assert result["total"] == len(expected)
    assert [m["topic"] for m in result["matches"]] == [t for t, _ in expected]
    for match, (_, score) in zip(result["matches"], expected, strict=True):
        assert match["score"] == pytest.approx(score, rel=1e-9)


@needs_fts5
def test_fts5_finds_cjk_terms_the_reference_misses() -> None:
    with Fts5Index(fts_corpus()) as index:
        short = index.search("部署", 10, 160)  # the reference: nothing (unicode61 keeps the Han run whole)
        whole = index.search("部署区域", 10, 160)  # the reference: region, 1.809918218067918 (its summary)
    assert topics(short) == ["region"] and short["total"] == 1
    assert topics(whole) == ["region"] and whole["total"] == 1
    # the reference's phrase contribution plus the Han grams' contributions
    assert whole["matches"][0]["score"] > 1.809918218067918


@needs_fts5
def test_fts5_single_document_score_is_the_idf_floor() -> None:
    with Fts5Index([note("fresh", body="brandnewterm here")]) as index:
        assert index.search("brandnewterm", 10, 160)["matches"][0]["score"] == pytest.approx(1e-06, rel=1e-9)


@needs_fts5
@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"deploy',
        'deploy"',
        '"deploy"',
        "'",
        "it's",
        "-",
        "-deploy",
        "us-east-1",
        "*",
        "deploy*",
        ":",
        "body:deploy",
        "(",
        "(deploy",
        "deploy)",
        "()",
        "   ",
        "",
        "NEAR(deploy actions)",
        "deploy AND OR NOT",
        "^deploy",
        "a\x00b",
        "\ud800",
    ],
)
def test_fts5_query_syntax_characters_never_raise(query: str) -> None:
    with Fts5Index(fts_corpus()) as index:
        result = index.search(query, 10, 160)
    assert result["engine"] == "fts5"
    assert result["total"] == len(result["matches"]) or result["truncated"]


@needs_fts5
def test_fts5_query_with_unbalanced_quote_returns_no_error() -> None:
    with Fts5Index(fts_corpus()) as index:
        # the quote is doubled inside the phrase; unicode61 then drops it as punctuation
        assert topics(index.search('"deploy', 10, 160)) == ["other", "deploy"]
        assert topics(index.search('deploy "', 10, 160)) == ["other", "deploy"]
        assert index.search('"', 10, 160)["total"] == 0


@needs_fts5
def test_fts5_terms_are_quoted_phrases_not_operators() -> None:
    with Fts5Index(fts_corpus()) as index:
        # "or" is the word, not the OR operator: only the note that contains it matches
        assert topics(index.search("or", 10, 160)) == ["notes"]
        # a hyphenated term is a phrase of its tokens
        assert topics(index.search("us-east-1", 10, 160)) == ["deploy"]


@needs_fts5
def test_fts5_limit_total_truncated_and_snippet_needle() -> None:
    with Fts5Index(fts_corpus()) as index:
        result = index.search("actions deploy", 1, 12)
        assert index.search("the deploy", 10, 160)["total"] == 5  # auth, ui, notes + deploy, other
    assert result["total"] == 2
    assert result["truncated"] is True
    assert topics(result) == ["deploy"]
    # the snippet centres on the first raw query term, "actions"
    assert result["matches"][0]["snippet"] == "…hub actions"


@needs_fts5
def test_search_fts5_maps_rows_onto_the_given_notes() -> None:
    notes = fts_corpus()
    with Fts5Index(notes) as index:
        assert search_fts5(index, notes, "react", 10, 160) == index.search("react", 10, 160)
        assert search_fts5(index, notes[:1], "react", 10, 160)["matches"] == []  # ui not in the given notes


@needs_fts5
def test_fts5_index_after_close_returns_no_rows() -> None:
    index = Fts5Index(fts_corpus())
    index.close()
    assert index.search("deploy", 10, 160)["total"] == 0


@needs_fts5
def test_fts5_accepts_lone_surrogates_in_notes() -> None:
    with Fts5Index([note("odd", body="x \ud800 y")]) as index:
        assert topics(index.search("x", 10, 160)) == ["odd"]


@needs_fts5
def test_fts5_one_word_scores_equal_sqlites_bm25_bit_for_bit() -> None:
    # one-word phrases are scored from the term's instances, not by bm25(): the figures must not move
    rng = random.Random(5)
    words = ["alpha", "Beta", "gamma", "delta", "x1", "42", "部署", "naïve", "us-east-1", "q"]
    notes = [note(f"n{i:02d}", body=" ".join(rng.choices(words, k=rng.randint(0, 30))), summary=rng.choice(words),
                  tags=tuple(rng.sample(words, 2))) for i in range(60)]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE memfts USING fts5(topic UNINDEXED, body)")
    db.executemany("INSERT INTO memfts VALUES (?, ?)", [
        (n.topic, " ".join([n.topic, n.entry.summary, " ".join(n.entry.tags), n.body])) for n in notes])
    with Fts5Index(notes) as index:
        for word in ("alpha", "BETA", "gamma", "delta", "x1", "42", "q", "nothing"):
            want = dict(db.execute("SELECT topic, -rank FROM memfts WHERE memfts MATCH ?", (f'"{word}"',)))
            got = {m["topic"]: m["score"] for m in index.search(word, 100, 10)["matches"]}
            assert got == want, word


def test_a_new_index_reads_changed_notes_afresh_and_reuses_unchanged_ones() -> None:
    # the counts memo is keyed by the whole text: a rewritten body, summary or tag is never served stale
    before = [note("a", body="alpha words", summary="first"), note("b", body="bravo", tags=("x",))]
    assert topics(ScanIndex(before).search("alpha", 10, 40)) == ["a"]
    after = [note("a", body="other words", summary="first"), note("b", body="bravo", tags=("y",))]
    index = ScanIndex(after)
    assert index.search("alpha", 10, 40)["total"] == 0
    assert topics(index.search("other", 10, 40)) == ["a"]
    assert index.search("x", 10, 40)["total"] == 0 and topics(index.search("y", 10, 40)) == ["b"]
    assert topics(index.search("bravo words", 10, 40)) == ["a", "b"]


@needs_fts5
@pytest.mark.parametrize("first", ["scan", "fts5"])
def test_both_engines_of_a_snapshot_share_one_scan_token_index(tmp_path: Any, first: str) -> None:
    from mmd.core import Memory, MemoryOptions

    memory = Memory.ensure(MemoryOptions.create(root=tmp_path / "root"), fts5=True)
    memory.write("deploy", "we deploy 部署 on Fridays")
    memory.load()
    snapshot = memory.snapshot
    other = "fts5" if first == "scan" else "scan"
    before = snapshot.search_index(first)
    after = snapshot.search_index(other)
    fts5, scan = (after, before) if first == "scan" else (before, after)
    assert fts5.scan is scan
    assert snapshot.search_index("scan") is scan and snapshot.search_index("fts5") is fts5
    assert [m["topic"] for m in memory.search("部署", mode="scan")["matches"]] == ["deploy"]
    assert [m["topic"] for m in memory.search("部署", mode="fts5")["matches"]] == ["deploy"]
