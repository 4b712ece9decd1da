"""A candidate is a memory (issue 30): its body is the statement, trimmed of filler, with the list it introduces,
never the paragraph around it; its topic reads as a name; by default it goes to a note of its subject or kind."""

from __future__ import annotations

from mmd.candidates import Seen, candidates_from
from mmd.candidates.statements import memory, split, trimmed
from mmd.candidates.topics import NoteSubject, category_of, proposal, topic_name
from mmd.sources import Position, Utterance


def _memory(text: str, at: int) -> str:
    statements = split(text)
    return memory(statements[at], statements)


def test_filler_is_trimmed_and_what_is_said_kept() -> None:
    assert trimmed("ok so I think we should pin the provider version") == "We should pin the provider version"
    assert trimmed("Great — the cache lives in ~/.cache/kiln now.") == "The cache lives in ~/.cache/kiln now."
    assert trimmed("Good catch — the lock is released before the commit.") == \
        "The lock is released before the commit."
    assert trimmed("Note: staging needs the VPN.") == "Staging needs the VPN."
    assert trimmed("Root cause: the lock is released early.") == "Root cause: the lock is released early."  # a label
    assert trimmed("okay, thanks") == "okay, thanks"  # nothing left: unchanged
    assert trimmed("Soft delete it.") == "Soft delete it."
    assert trimmed("Understood. The server must run on port 5000 in prod.") == \
        "The server must run on port 5000 in prod."  # the agent's acknowledgement (a trial's accepted body kept it)
    assert trimmed("Got it — we never push to main directly.") == "We never push to main directly."
    assert trimmed("Of course.") == "Of course."


def test_a_statement_ending_in_a_colon_keeps_the_list_it_introduces() -> None:
    text = ("We looked at the three exporters today.\n\nThe standard representations handle age differently:\n"
            "- FHIR uses a valueRange\n- OMOP derives it from year_of_birth\n\nThat is all for now.")
    assert _memory(text, 1) == ("The standard representations handle age differently:\n- FHIR uses a valueRange\n"
                                "- OMOP derives it from year_of_birth")


def test_a_sentence_of_a_long_paragraph_is_itself_never_the_paragraph() -> None:
    text = ("The exporter was rewritten last week and the tests were moved into their own folder. "
            "The upload handler publishes the event before the file is written. "
            "Everything else in the pipeline looked fine when I read through the worker and the scheduler code. "
            "We can look at the retry policy tomorrow if there is time left after the release.")
    assert _memory(text, 1) == "The upload handler publishes the event before the file is written."
    # a sentence that points back takes the one it points to, no more
    leaning = text.replace("The upload handler publishes", "So the upload handler publishes")
    assert _memory(leaning, 1) == ("The exporter was rewritten last week and the tests were moved into their own "
                                   "folder. So the upload handler publishes the event before the file is written.")


def test_a_short_paragraph_is_one_statement_but_an_aside_of_the_agent_is_left_out() -> None:
    assert _memory("Not the API key. I want to use claude login because I have a subscription.", 1) == \
        "Not the API key. I want to use claude login because I have a subscription."
    assert _memory("The `list` name collides with Click's type. Let me rename it and fix the import.", 0) == \
        "The `list` name collides with Click's type."
    prompt = "Do not create any PR without my explicit approval. Then fix the typo in the readme."
    assert _memory(prompt, 0) == "Do not create any PR without my explicit approval."  # a rule stands alone


def test_a_topic_is_a_few_content_words_of_the_subject() -> None:
    names = {
        "the state bucket lives in eu-west-1, never switch the backend region.": "state-bucket",
        "`post_lines()` lives in `ledger/posting.py`; reuse it for reversals too.": "post-lines",
        "Idempotency keys are scoped per merchant, not global.": "idempotency-keys",
        "In the future, adhere to the changeset skill and make something of it": "changeset-skill",
        "We use Postgres 16 in every environment, never SQLite.": "postgres-16",
        "the retry path regenerates keys": "retry-path",
        "okay we need to commit the both release files, otherwise the worktree is not clean": "both-release-files",
    }
    for text, name in names.items():
        assert topic_name(text) == name, (text, topic_name(text))


def test_by_default_a_candidate_goes_to_a_note_of_its_subject_or_kind() -> None:
    notes = [NoteSubject.of("conventions", [], "Commit messages are in English."),
             NoteSubject.of("ci-and-tests", [], "CI runs on every push.")]
    assert proposal("always squash before merging", notes, kind="rule") == {"action": "append",
                                                                           "topic": "conventions"}
    assert proposal("run pytest with -x locally", notes, kind="environment") == {"action": "append",
                                                                                 "topic": "ci-and-tests"}
    # no such note yet: its kind's note, which the first accept creates and the next ones grow
    assert proposal("the lock is released before the commit", [], kind="pitfall") == {"action": "append",
                                                                                      "topic": "pitfalls"}
    assert category_of("Never log full card numbers.", "fact").topic == "rules"  # worded as a rule
    assert category_of("deploys go to staging first", "fact").topic == "deploy"  # by what it says
    # a mark with no kind of note gets a name of its own
    assert proposal("the close job runs at 02:00 UTC", [], kind="explicit") == {"action": "create",
                                                                                "topic": "close-job"}


def test_a_pipeline_candidate_writes_the_statement_under_its_kind() -> None:
    said = Utterance("human", "ok so I think we should always squash commits before merging to main, it keeps the "
                              "history readable.", "test", "s", "/p", None, Position("/l", seq=1))
    seen = Seen.of_index([("conventions", (), "How we work", "Commit messages are in English.")])
    (c,) = candidates_from([said], write_budget=4000, seen=seen)
    assert c.body == "We should always squash commits before merging to main, it keeps the history readable."
    assert (c.proposal_action, c.topic) == ("append", "conventions")
