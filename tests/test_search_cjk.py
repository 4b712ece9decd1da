"""The FTS5 engine never finds less than scan (issue 17): CJK, kana, Hangul, mixed scripts, short terms.

SQLite's ``unicode61`` tokenizer keeps a run of CJK characters (and any letters
glued to it) as one token, so the reference's FTS5 search finds nothing for
``部署`` or ``itgc`` in ``重跑gen-itgc后``. Our FTS5 engine also matches the scan
engine's tokens, so for every query ``auto`` and ``fts5`` return a superset of
``scan``'s topics, while FTS5 query syntax stays literal text.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mmd.core.memory import Memory
from mmd.core.options import MemoryOptions
from mmd.core.search import Fts5Index, ScanIndex, fts5_available

from .test_search import note, topics

pytestmark = pytest.mark.skipif(not fts5_available(), reason="this Python's sqlite3 has no FTS5")

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

NOTES = {
    "han": "核心服务部署在东部区域。已修复登录问题，订单金额校验。今天下雨了",
    "kana": "本番にデプロイした。あめがふるひ、キャッシュを消す",
    "hangul": "서버배포완료 오늘비가온다",
    "mixed": "重跑gen-itgc后通过",
    "fullwidth": "ＩＴＧＣ控制测试",
    "astral": "𠀀𠀁 石",
    "latin": "we deploy to us-east-1 using github actions",
    "syntax": 'this AND that, NEAR(here) or "quoted" key:value star* minus-sign',
}

CASES = [
    # (query, topics that must be found)
    ("部署", {"han"}),
    ("修复", {"han"}),
    ("金额", {"han"}),
    ("雨", {"han"}),
    ("服务部署", {"han"}),
    ("デプロイ", {"kana"}),
    ("ふ", {"kana"}),
    ("キャッシュ", {"kana"}),
    ("배포", {"hangul"}),
    ("비", {"hangul"}),
    ("itgc", {"mixed", "fullwidth"}),
    ("gen-itgc", {"mixed", "fullwidth"}),
    ("重跑gen-itgc后", {"mixed", "fullwidth"}),
    ("ｇｅｎ", {"mixed"}),
    ("𠀁", {"astral"}),
    ("石", {"astral"}),
    ("deploy", {"latin"}),
    ("AND", {"syntax"}),
    ("near", {"syntax"}),
    ('"quoted"', {"syntax"}),
    ("key:value", {"syntax"}),
    ("star*", {"syntax"}),
    ("-sign", {"syntax"}),
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    root = tmp_path_factory.mktemp("cjk") / "root"
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(root.parent / "home")})
    memory = Memory.ensure(options, now=lambda: NOW, fts5=True)
    for topic, body in NOTES.items():
        assert memory.write(topic, body)["ok"]
    return memory.reload()


@pytest.mark.parametrize("mode", ["auto", "fts5", "scan"])
@pytest.mark.parametrize(("query", "expected"), CASES)
def test_cjk_search_table(memory: Memory, mode: str, query: str, expected: set[str]) -> None:
    result = memory.search(query, mode=mode, limit=len(NOTES))
    assert result["engine"] == ("scan" if mode == "scan" else "fts5")
    assert expected <= set(topics(result)), result
    assert result["total"] == len(result["matches"])


def test_fts5_syntax_in_a_query_is_literal_text(memory: Memory) -> None:
    # "star*" is no prefix query: "starting" does not match; NOT/AND/OR/NEAR are words, never operators
    assert topics(memory.search("deplo*", mode="fts5")) == []
    assert topics(memory.search("github NOT actions", mode="fts5"))[0] == "latin"
    assert memory.search("OR", mode="fts5")["total"] == 1  # the word "or" in the syntax note only


def test_latin_ranking_is_the_references_bm25(memory: Memory) -> None:
    # Latin queries keep the reference's exact bm25 when its phrase finds the note
    index = memory.snapshot.search_index("fts5")
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE memfts USING fts5(topic UNINDEXED, body)")
    for n in memory.snapshot.notes:
        db.execute("INSERT INTO memfts VALUES (?, ?)",
                   (n.topic, " ".join([n.topic, n.entry.summary, " ".join(n.entry.tags), n.body])))
    want = db.execute("SELECT topic, -rank FROM memfts WHERE memfts MATCH '\"github\" OR \"actions\"' "
                      "ORDER BY rank").fetchall()
    got = [(m["topic"], m["score"]) for m in index.search("github actions", 10, 160)["matches"]]
    assert got == want


# --- property: on random mixed-script notes and queries, fts5 finds a superset of scan ----------

_ALPHABET = st.sampled_from(
    list("abcxyz019 -_:*\"'()^.,") + ["AND", "OR", "NEAR", "NOT", " "] * 2
    + list("部署修复金额雨区域東京") + list("デプロイあめがふる") + list("배포비가") + list("ＡＢｃ１ﬁé")
    + ["𠀀", "\u3000", "。"]
)
_TEXT = st.lists(_ALPHABET, max_size=24).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(_TEXT, min_size=1, max_size=8), query=_TEXT, pick=st.integers(0, 7),
       cut=st.tuples(st.integers(0, 24), st.integers(0, 24)))
def test_fts5_topics_are_a_superset_of_scan_topics(bodies: list[str], query: str, pick: int,
                                                   cut: tuple[int, int]) -> None:
    notes = [note(f"t{i}", body=body) for i, body in enumerate(bodies)]
    body = bodies[pick % len(bodies)]
    queries = [query, body[min(cut): max(cut)]]  # a free query and a piece of a note
    with Fts5Index(notes) as fts:
        scan = ScanIndex(notes)
        for q in queries:
            if not q.strip():
                continue
            want = scan.search(q, len(notes), 40)
            got = fts.search(q, len(notes), 40)
            assert set(topics(want)) <= set(topics(got)), (q, want, got)
            assert got["total"] >= want["total"]
            assert all(m["score"] > 0 for m in got["matches"])
