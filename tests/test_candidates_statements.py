"""Statements: sentences and bullets of utterance text, never headings, code, tables or tool output."""

from __future__ import annotations

from mmd.candidates.statements import MAX_STATEMENT, looks_pasted, marked, split, summarize


def texts(text: str) -> list[str]:
    return [s.text for s in split(text)]


def test_sentences_of_a_paragraph_are_statements_lowercase_too() -> None:
    assert texts("don't write python code. only change javascript code.") == [
        "don't write python code.", "only change javascript code."]


def test_abbreviations_do_not_end_a_sentence() -> None:
    assert texts("Use a queue, e.g. Redis for this. It scales.") == ["Use a queue, e.g. Redis for this.", "It scales."]


def test_a_bullet_with_its_continuation_is_one_statement() -> None:
    got = split("- the cache is keyed by tenant\n  and never expires\n- second point here")
    assert [s.text for s in got] == ["the cache is keyed by tenant and never expires", "second point here"]
    assert all(s.bullet for s in got)


def test_a_heading_is_never_a_statement_but_names_the_section() -> None:
    got = split("## Errors and Fixes\n- Fixed by pinning the driver.\n\n**Next step:**\n- run it again")
    assert [s.text for s in got] == ["Fixed by pinning the driver.", "run it again"]
    assert [s.section for s in got] == ["errors and fixes", "next step"]
    assert split("# Plan\n\n## Phase 1\n\n### Step 2") == []


def test_code_blocks_tables_and_tool_output_are_skipped() -> None:
    text = (
        "Before the block.\n```python\nnever = 'always do this'\n```\n"
        "| rule | never |\n|---|---|\n"
        "$ npm run build\n"
        "2026-01-02 10:00:01 ERROR never retried\n"
        "Traceback (most recent call last):\n"
        "src/app.py:12: error: always wrong\n"
        "After the block."
    )
    assert texts(text) == ["Before the block.", "After the block."]


def test_a_long_statement_is_cut_at_a_word() -> None:
    (statement,) = split("word " * 300)
    assert len(statement.text) <= MAX_STATEMENT and statement.text.endswith("word…")


def test_summarize_cuts_at_a_word_with_an_ellipsis() -> None:
    text = "the deploy script must run from the repository root because it reads relative paths " * 3
    got = summarize(text)
    assert len(got) <= 120 and got.endswith("…") and text.startswith(got[:-1])
    assert summarize("short  text\n") == "short text"


def test_pasted_plans_and_logs_are_recognised() -> None:
    plan = "Implement the following plan:\n\n# Plan\n\nAlways use the cache."
    spec = "# Spec\n" + "Some words here.\n" * 100 + "## Part A\ntext\n## Part B\ntext\n"
    log = "\n".join(f"2026-01-02 10:00:{i:02d} INFO step {i}" for i in range(10))
    assert looks_pasted(plan) and looks_pasted(spec) and looks_pasted(log)
    assert not looks_pasted("never push to main without a review. we use squash merges.")


def test_a_marked_line_is_its_own_paragraph() -> None:
    said = split("Orders keep their product row.\n记住：迁移文件不要手改\nmm: use uv")
    assert [s.text for s in said] == ["Orders keep their product row.", "记住：迁移文件不要手改", "mm: use uv"]
    assert len({s.paragraph for s in said}) == 3
    assert marked("REMEMBER: x") and marked("- mm: y") and not marked("remembered to run it")


def test_an_inline_enumeration_is_one_statement_an_item() -> None:
    assert texts("Rules: 1) a pawn moves one square forward 2) a knight jumps over other pieces") == [
        "Rules:", "a pawn moves one square forward", "a knight jumps over other pieces"]
    assert texts("(1) keep the cache warm always (2) never drop the index silently") == [
        "keep the cache warm always", "never drop the index silently"]


def test_numbers_that_are_not_an_enumeration_split_nothing() -> None:
    assert texts("Meet at 10:30 tomorrow with the team.") == ["Meet at 10:30 tomorrow with the team."]
    assert texts("Python 3: the default interpreter now") == ["Python 3: the default interpreter now"]
    assert texts("see 1) and 2) for details") == ["see 1) and 2) for details"]  # items under three words
    assert texts("fix 2: the retry loop and 1: the cache") == ["fix 2: the retry loop and 1: the cache"]  # not 1, 2


def test_a_summary_drops_markdown_bold_and_keeps_code() -> None:
    from mmd.candidates.statements import summary_line

    assert summary_line("**Root cause:** the `pool` leaks **every** night") == (
        "Root cause: the `pool` leaks every night")
    assert summary_line("2 ** 10 is 1024, and a**b stays") == "2 ** 10 is 1024, and a**b stays"
    assert summary_line("the norm is x**2 + y**2 here") == "the norm is x**2 + y**2 here"
