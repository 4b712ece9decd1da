"""Noise cues: shapes of speech that say a statement a rule fired on is of the moment, not worth remembering.

Owns: :data:`CUES` (the cue names, in order) and :func:`cues` (the cues one statement shows). Issue 30 "Fewer,
better rule drafts": a learned filter measured on sessions no one tuned on found these predictive of noise — a list
bullet inside a long reply of many statements, a digit-heavy line, a bullet under a section heading, a question,
the agent announcing its next step, an instruction for the task at hand (a request shaped so — "let's …",
"make it so …", "can you …" — at any length, a plain imperative when short) — and a review of the queue added bug
status ("the filter buttons don't work", "still seeing it") and the agent narrating what it just did ("Reduced the
padding …", "I'm adding chart styles now …"). An error analysis of the 51 labelled sessions
(``bench/queue_quality.py --extra ROOT --misses``) added two, each rarer among the drafts reviewers kept than the
rest in the 18 sessions and in the 33 of other reviewers alike: a fragment, a body of fewer than :data:`FRAGMENT`
words that leans on what was said around it ("The existing `.venv` is causing issues.", "Using `with` instead of
`case`": 8% of the agent's such drafts were kept in both, against 11% and 30% of its others, 13% of a summary's
against 26%), and the agent saying what is going on right now, in the present progressive ("6 tests are timing out",
"I'm cleaning that artifact": none of its 49 such drafts was kept, against 11% and 22% of its others).
:mod:`mmd.candidates.score` multiplies a draft's score by :attr:`~mmd.candidates.score.Tuning.noise` once per cue
(one factor for all of them: ``bench/queue_quality.py`` measures it out of fold, and one number fitted to 51
sessions has little room to learn them by heart).

Never: matches the words of one project, tool or session (only the shape of what is said: who says it, where it
sits, how it opens, how long it is, its tense), decides alone that a statement is no candidate (a cue lowers, never
drops), or imports anything outside the standard library and :mod:`mmd.candidates.statements`.
"""

from __future__ import annotations

import re

from mmd.candidates.statements import Statement
from mmd.core.lazyre import lazy_compile

__all__ = ["CUES", "FRAGMENT", "LONG_REPLY", "SHORT_INSTRUCTION", "cues"]

CUES = ("list-in-long-reply", "bullet-under-heading", "digit-heavy", "question", "next-step", "task-instruction",
        "bug-status", "narration", "fragment", "in-progress")
"""Every cue :func:`cues` may name, in the order it names them."""
LONG_REPLY = 10
"""Statements from which an utterance is a long reply of many statements (its bullets are a list of particulars)."""
SHORT_INSTRUCTION = 16
"""Most words of a short instruction for the task at hand ("ok lets get a pr up for this")."""
FRAGMENT = 20
"""Fewer words (whitespace-separated) than this in its body, the agent's or a summary's statement leans on what was
said around it: "The existing `.venv` is causing issues.", "Using `with` instead of `case`". The person's short
rules ("don't use playwright") and a lesson the agent labels as one ("Pitfall I hit: …") are never fragments."""

_DIGITS = lazy_compile(r"\d")
_NUMBER = lazy_compile(r"\d+(?:[.,:]\d+)*")
# a question without its mark: "can we rename it", "is there a way to …", "didn't we have a hint for that"
_QUESTION_OPENING = lazy_compile(
    r"^(?:\w+,? )?(?:(?:can|could|would|will) (?:you|we|i)|(?:is|are) there|"
    r"(?:do|did|does|didn'?t|don'?t) (?:you|we|i))\b", re.IGNORECASE)
_FILLER = r"(?:ok(?:ay)?|cool|great|nice|perfect|alright|right|yes|yeah|yep|good|thanks|so|and|also|now|then|nah|no|" \
          r"hmm|actually|awesome|sure|well)"
# the agent saying what it does next or is doing now: "Now updating the test expectations", "Next, the parser",
# "I'm adding chart styles now", "Time to run the suite", "Moving on to the docs"; "Now I notice …" is what it found,
# as the quiet rule reads it (signals._PROGRESS), not what it does next
_NEXT_STEP = lazy_compile(
    rf"^(?:{_FILLER}[,.!:—–-]*\s+)*(?:"
    r"(?:now|next|then|finally)\b(?!\s+that\b)(?!,?\s+i\s+(?:notice|noticed|realize|see|understand|found|know)\b)|"
    r"(?:i'?m|i am|we'?re|we are)\s+(?:now\s+|going\s+to\s+|about\s+to\s+|also\s+)?\w+ing\b|"
    r"(?:i'?ll|i will|let me|let'?s|lets|time to|moving on|starting with)\b)|"
    r"\bnow\W*$", re.IGNORECASE)
_TASK_VERB = (r"(?:add|fix|make|get|put|run|try|change|update|remove|delete|move|create|commit|push|merge|open|close|"
              r"show|write|implement|build|set|give|go|do|check|test|revert|rename|refactor|clean|deploy|install|start|"
              r"stop|restart|bump|upgrade|split|combine|rewrite|improve|look|find|search|read|save|render|generate|"
              r"send|review|continue|proceed|undo|redo|finish|wrap|ship|publish|release|draft|prepare|investigate|"
              r"debug|explain|tell|summarize|list)")
# "ok lets get a pr up for this", "make it so i can drag and drop the pieces", "can you rename it", "I'd like you to":
# a request shaped so is one at any length; a plain imperative ("rename this dump …") only when short
_REQUEST = lazy_compile(
    rf"^(?:{_FILLER}[,.!:—–-]*\s+)*(?:let'?s\b|lets\b|please\b|pls\b|can you\b|could you\b|would you\b|"
    r"i(?:'d| would)? (?:like|want|need) you to\b|make it so\b|now,? (?:i (?:want|need|'d like)|make|add|let'?s)\b)|"
    r"\bmake it so\b", re.IGNORECASE)
_INSTRUCTION = lazy_compile(rf"^(?:{_FILLER}[,.!:—–-]*\s+)*{_TASK_VERB}\b|\bfor (?:this|that|now)\W*$", re.IGNORECASE)
# worded as a rule for good: "always", "never", "must", "from now on" …, and "don't" telling someone what not to do
# (opening a clause, or after "you", "we", "please" …; "the buttons don't work" describes)
_STANDING = lazy_compile(r"\b(?:always|never|must|from now on|every time|in (?:the )?future|going forward|whenever|"
                       r"instead)\b|(?:^|[,;:.!?] |\b(?:you|we|please|just|and|but|so|then|also) )(?:don'?t|do not)\b|"
                       r"以后|不要|务必|必须|一律|永远|不能|别再|千万|绝不", re.IGNORECASE)
# the state of the task at hand: "the filter buttons at the top don't work", "no, i'm still seeing this happen"
_BUG_STATUS = lazy_compile(
    r"\bstill\b.{0,40}\b(?:not|n'?t|broken|fail\w*|happen\w*|seeing|getting|there|wrong|same|show\w*|crash\w*)\b|"
    r"\bi(?:'m| am) (?:still )?(?:seeing|getting)\b|\bnothing (?:happens|happened|changed|shows)\b|"
    r"(?<!if )(?<!whether )\b(?:it|this|that|everything) (?:works|worked|is working|fails|failed|crashes|crashed|"
    r"is broken|broke)\b|"
    r"\b(?:same|that|this) error\b|\bno longer (?:works|shows|happens|crashes)\b", re.IGNORECASE)
_HUMAN_BROKEN = lazy_compile(
    r"\b(?:doesn'?t|does not|don'?t|didn'?t|isn'?t|is not|aren'?t|are not|won'?t|not) (?:work|load|show|appear|render|"
    r"happen|respond|move|update|change|display|start|open|save|fire|run)\w*\b", re.IGNORECASE)
# the agent reporting what it just did: "Reduced the padding …", "I've updated the tests", "All tests pass"
_NARRATION = lazy_compile(
    r"^(?:\W*)(?:(?:i'?ve|i have|we'?ve|we have|i|we)\s+(?:just\s+|now\s+|also\s+)?)?"
    r"(?:added|updated|changed|fixed|removed|created|moved|renamed|implemented|wrote|made|refactored|replaced|"
    r"reverted|cleaned|committed|pushed|deleted|installed|switched|reduced|increased|extracted|converted|applied|"
    r"rewrote|restored|simplified|dropped|wired|hooked|split|merged|bumped|tightened|adjusted)\b|"
    r"\b(?:all |the )?(?:\d+ )?tests? (?:pass|passed|are passing|now pass|still pass)\b|"
    r"\b(?:is|are) (?:now )?(?:done|complete|ready|in place)\b", re.IGNORECASE)

# what is going on right now, in the present progressive: "The existing `.venv` is causing issues", "6 tests are
# timing out", "I'm cleaning that artifact" (a noun in -ing is no verb: "is nothing", "a string", "is missing";
# "is using SQLite" is counted too: none of the agent's drafts so worded was kept in the 51 sessions)
_IN_PROGRESS = lazy_compile(
    r"\b(?:is|are|isn'?t|aren'?t|am|i'?m|we'?re|they'?re|it'?s|that'?s)\s+(?:not\s+|still\s+|now\s+|being\s+|currently\s+|"
    r"also\s+|just\s+|already\s+|actually\s+)*(?!\w*thing\b|string\b|during\b|missing\b)\w{2,}ing\b", re.IGNORECASE)

# a choice the agent is making, with its purpose, is no report of the moment: "I'm pinning `TZ=UTC` on every call so
# the tests give the same result anywhere" (the assistant-purpose rule's shape)
_PURPOSE = lazy_compile(r"\bso (?:that )?(?:the|it|they|we|this|every|any)\b", re.IGNORECASE)
# a lesson the agent labels as one stands alone however short: "Pitfall I hit: `Sum()` returns None on …"
_LESSON = lazy_compile(r"^\W*(?:gotcha|pitfall|lesson|caveat|one thing to (?:know|note|remember))\b[^:.!?]{0,30}:\s*\S",
                     re.IGNORECASE)


def cues(statement: Statement, who: str, statements: int, body: str | None = None) -> tuple[str, ...]:
    """The noise cues (:data:`CUES`) that ``statement`` shows, in that order.

    Args:
        statement: one statement a rule fired on (:func:`~mmd.candidates.statements.split`).
        who: its utterance's channel (``human``, ``assistant``, ``summary``; a summary's bullets are its sections',
            so the list and heading cues never apply to them).
        statements: how many statements its utterance has.
        body: what a candidate of it writes (:func:`~mmd.candidates.statements.memory`: the statement with the
            sentences it leans on); None: the statement's text.

    A statement worded as a standing rule ("always", "never", "don't", "from now on" …) is never a task instruction
    or bug status: that is how a person says a rule for good. The fragment and in-progress cues are the agent's (a
    summary's bullets can be fragments too) and read the body when it is given. Never raises on any text.
    """
    text = statement.text.strip(" *_`>")
    found: list[str] = []
    if who != "summary" and statement.bullet and statements >= LONG_REPLY:
        found.append("list-in-long-reply")
    if who != "summary" and statement.bullet and statement.section:
        found.append("bullet-under-heading")
    chars = sum(1 for c in text if not c.isspace())
    if chars and (len(_DIGITS.findall(text)) >= 0.15 * chars or len(_NUMBER.findall(text)) >= 4):
        found.append("digit-heavy")
    if "?" in text or who == "human" and _QUESTION_OPENING.match(text):
        found.append("question")
    if who == "assistant" and _NEXT_STEP.search(text):
        found.append("next-step")
    standing = bool(_STANDING.search(text))
    if who == "human" and not standing and (_REQUEST.search(text) or len(text.split()) <= SHORT_INSTRUCTION
                                            and _INSTRUCTION.search(text)):
        found.append("task-instruction")
    if not standing and (_BUG_STATUS.search(text) or who == "human" and _HUMAN_BROKEN.search(text)):
        found.append("bug-status")
    if who == "assistant" and _NARRATION.search(text):
        found.append("narration")
    if who != "human" and len((text if body is None else body).split()) < FRAGMENT and not _LESSON.match(text):
        found.append("fragment")
    if who == "assistant" and _IN_PROGRESS.search(text if body is None else body) and not _PURPOSE.search(text):
        found.append("in-progress")
    return tuple(found)
