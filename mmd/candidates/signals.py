"""Signals: our rules that say a statement of an agent session may be worth remembering.

Owns: :class:`Rule` (a name, a kind, a weight, whose words it reads, its phrasing),
:data:`RULES` (the built-in rules: the human's standing rules, preferences, corrections and
decisions; the assistant's findings; the durable sections of compaction summaries),
:data:`DURABLE_SECTIONS` / :data:`TRANSIENT_SECTIONS`, :func:`fire` (the best rule for one
statement) and :func:`possible` (whether an utterance's text need be split at all). Issue 13 "Rules
over utterances". A rule's regex runs only on a statement holding one of its triggers
(:mod:`mmd.candidates.triggers`: words it cannot match without), which changes no result.

Never: reads logs, scores across turns or caps (:mod:`mmd.candidates.score` does), matches on
words of one project or tool, fires on a markdown heading, a code block or a pasted plan (those
never reach it as statements, see :mod:`mmd.candidates.statements`), or imports anything outside
the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from mmd.candidates.statements import MAX_STATEMENT, Statement
from mmd.candidates.triggers import Folded, Triggers, branches, triggers_of
from mmd.core.lazyre import lazy_compile

__all__ = ["DURABLE_SECTIONS", "KINDS", "RULES", "TRANSIENT_SECTIONS", "Kind", "Rule", "fire", "phrases", "possible",
           "quiet", "standing", "strength", "without"]

Kind = Literal["preference", "rule", "fact", "decision", "pitfall", "environment"]
KINDS: tuple[Kind, ...] = ("preference", "rule", "fact", "decision", "pitfall", "environment")


@dataclass(frozen=True, slots=True)
class Rule:
    """One signal.

    Attributes:
        name: stable id (``human-standing-rule``), shown with the candidate.
        kind: what a memory made from it is (:data:`KINDS`).
        weight: 0..1, how likely a statement it fires on is worth keeping (the measure in
            ``bench/queue_quality.py`` set these).
        who: the utterance channels it reads (``human``, ``assistant``, ``summary``).
        pattern: searched in the statement text (case-insensitive).
        sections: for summary rules, the section names (substrings) it applies under.
        triggers: what ``pattern`` cannot match without (:func:`~mmd.candidates.triggers.triggers_of`,
            derived, never given); None: it is always searched.
    """

    name: str
    kind: Kind
    weight: float
    who: tuple[str, ...]
    pattern: re.Pattern[str]
    sections: tuple[str, ...] = ()
    _triggers: list[Triggers | None] = field(init=False, repr=False, compare=False, default_factory=list)

    @property
    def triggers(self) -> Triggers | None:
        """:func:`~mmd.candidates.triggers.triggers_of` the pattern, derived on first use (a daemon that reads no
        session never parses the rules' patterns: ~35 ms of every start)."""
        if not self._triggers:
            self._triggers.append(triggers_of(self.pattern))
        return self._triggers[0]

    def may_fire(self, folded: Folded) -> bool:
        """False when the statement (``folded``) cannot match :attr:`pattern` (a cheap check)."""
        return self.triggers is None or self.triggers.found(folded)


def _rx(*alternatives: str) -> re.Pattern[str]:
    return lazy_compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE)


DURABLE_SECTIONS: tuple[str, ...] = (
    "critical context",
    "key technical concepts",
    "technical concepts",
    "errors and fixes",
    "user feedback",
    "problem solving",
    "lessons",
    "decisions",
)
"""Compaction summary sections whose bullets may be memories (DSH and Claude Code)."""

TRANSIENT_SECTIONS: tuple[str, ...] = (
    "primary request",
    "pending",
    "current work",
    "next step",
    "files and code",
    "all user messages",
    "analysis",
)
"""Compaction summary sections that never give a candidate: they describe the moment."""

_ANY = r"[\s\S]"
# where "don't" tells someone what not to do: opening a clause, or after "you", "we", "please", "and" …;
# "the buttons don't work", "I don't need to" describe (Python's lookbehinds are of fixed width: one each)
# (the lookahead first: most positions fail on its first letter before any lookbehind is tried)
_CODE_VERB = (r"\b(?:is|are|returns|has|have|uses|requires|needs|fires|emits|expects|accepts|lives|holds|contains|"
              r"means|runs|reads|writes|only|never|doesn'?t|isn'?t|aren'?t|won'?t|can'?t)\s+\w")
"""What an ``assistant-code-fact`` statement says of its code: a verb in the present, then a word."""
_IMPERATIVE = "(?=do)(?:^|" + "|".join(f"(?<={w})" for w in (
    r"[,;:.!?(\"'] ", r"[,;:.!?(\"']", r"[-–—] ", r"\byou ", r"\bwe ", r"\bplease ", r"\bjust ", r"\band ",
    r"\bbut ", r"\balso ", r"\bso ", r"\bthen ", r"\bor ", r"\bpls ", r"\bnow ")) + ")"
RULES: tuple[Rule, ...] = (
    # --- the human's own words ------------------------------------------------------------------
    # "for the record: …", "heads-up: …", "keep in mind …": the person says it is for you to retain
    Rule("human-notice", "fact", 0.9, ("human",), _rx(
        r"\bfor the record\b", r"\bheads[- ]up\b", r"\bfyi\b", r"\bjust so you know\b",
        r"\bbe aware\b", r"\bfor future reference\b",
        r"\bgood to know\b", r"\bnote that\b", r"\bremember that\b", r"\bbtw\b", r"\bby the way\b",
        r"顺便说", r"注意", r"提醒")),
    Rule("human-from-now-on", "rule", 0.8, ("human",), _rx(
        r"\bfrom now on\b", r"\bgoing forward\b", r"\bnext time\b",
        # "in the future" as a time ("In the future, …", "… in the future."), not "the future state"
        r"(?:^|[,;] )in (?:the )?future\b", r"\bin (?:the )?future(?=[,;:]|$)",
        r"\bevery time\b", r"以后", r"今后", r"每次")),
    Rule("human-standing-rule", "rule", 0.9, ("human",), _rx(
        r"\b(?:always|never)\b", r"\bmust(?:n'?t| not)?\b",
        _IMPERATIVE + r"do(?:n'?t| not)\s+(?!think|know|understand|see|get|mind|care|remember|believe|recall)"
                      r"(?:ever\s+)?\w+",
        r"\bshould(?:n'?t| not)\s+\w+",
        r"\bbe careful\b", r"\bavoid\b", r"\bwithout my\b",
        r"不要", r"务必", r"必须", r"别再", r"永远", r"总是", r"一律", r"一定要", r"千万")),
    Rule("human-should", "rule", 0.6, ("human",), _rx(
        r"要(?:写|用|带|加|保持|注明|标明|说明|记得|先|确保|清楚)",
        r"\bshould\b", r"\bmake sure\b", r"\bought to\b", r"\bhas to\b", r"\bneeds? to\b", r"应该",
        r"\bso (?:run|use|keep|always|never|make sure|don'?t)\b",
        r"\bkeep (?:\w+ )?(?:small|short|in sync|consistent)\b")),
    Rule("human-preference", "preference", 0.85, ("human",), _rx(
        r"\bi(?:'d| would)? (?:rather|prefer)\b", r"\bprefer\b", r"\brather than\b",
        r"\bi (?:do |really )?(?:want|need|like)\b", r"\bi'?d like\b", r"\bi would like\b",
        r"\bwould be (?:great|ok|okay|nice|fine|better)\b", r"\bis (?:ok|okay|fine) to\b", r"\baim for\b",
        r"我(?:更)?喜欢", r"我希望", r"偏好")),
    Rule("human-correction", "fact", 0.6, ("human",), _rx(
        r"^(?:no|nope|wrong|actually|wait)\b[,.!: ]", r"\bthat'?s (?:not|wrong|incorrect)\b",
        r"\bnot what i\b", r"\byou (?:missed|forgot|broke)\b", r"\bfalse positive\b",
        r"\balready (?:marked|identified|done|handled|exists?)\b", r"\bis not (?:a|an|the)\b",
        r"\b(?:isn'?t|aren'?t|doesn'?t|don'?t|won'?t) (?:need|matter|work|apply|exist)\b",
        r"\binstead\b(?! of)", r"\bno harm\b", r"\bis (?:ok|fine)\b", r"不对", r"不是", r"错了")),
    Rule("human-we-use", "decision", 0.8, ("human",), _rx(
        r"\bwe (?:use|want|need|create|keep|run|go with|will|'ll|should|can|don'?t)\b",
        r"\blet'?s\b", r"\bi think (?:we|let'?s|it)\b", r"\bmake it so\b", r"\bit (?:should|would) (?:only|be|not)\b",
        r"\bshould (?:be|not|only|have|use|run)\b", r"\bonly (?:for|when|if|in)\b", r"\bif (?:the|a|it)\b",
        r"\bremove\b", r"\brename\b", r"我们(?:用|使用|要)")),
    # where things are: a path, a port, a local address, an environment variable set ("DATABASE_URL=…")
    Rule("human-environment", "environment", 0.75, ("human",), _rx(
        r"\byou (?:have|can use|'?ll find)\b", r"\b(?:lives|located|installed|is) (?:in|at|under) [~/.]",
        r"(?:^|\s)(?:~|/tmp|/usr|/opt|/home|\.\w*venv)\S*", r"\bon port \d{2,5}\b", r"\blocalhost:\d{2,5}\b",
        r"\b[a-z0-9]+(?:_url=|_uri=|_host=|_port=|_path=|_dir=|_home=|_env=|_root=|_bin=)\S")),
    # --- the assistant's findings ---------------------------------------------------------------
    # "Pitfall I hit: …", "One thing to know: …", "Gotcha: …": the assistant flags a lesson itself
    # a lesson the assistant labels as one ("Pitfall I hit: …", "踩到一个坑：…") is nearly a marker
    Rule("assistant-lesson", "pitfall", 0.9, ("assistant",), _rx(
        r"^(?:\W*)(?:gotcha|pitfall|lesson|one thing to (?:know|note|remember))\b[^:.!?]{0,30}:\s*\S",
        r"踩到一个坑", r"踩坑", r"坑[:：]")),
    # "Note: …", "Important caveat: …" label asides in plans as often as lessons
    Rule("assistant-notice", "pitfall", 0.7, ("assistant",), _rx(
        r"^(?:\W*)(?:note|caveat|heads[- ]up|important)\b[^:.!?]{0,30}:\s*\S",
        r"\bworth (?:knowing|noting|remembering)\b", r"\bkeep in mind\b", r"注意[:：]")),
    # plain "the issue is that …" is left out: a diagnosis of the moment (shown in 4 files, no gold)
    Rule("assistant-root-cause", "pitfall", 0.75, ("assistant",), _rx(
        r"\broot cause\b", r"\bthe (?:real|actual) (?:issue|problem|bug|culprit) (?:is|was)\b",
        r"\bhappens because\b", r"\bcaused by\b", r"\bturns out\b", r"\bthe reason (?:is|was)\b",
        r"\bis (?:nearly )?empty because\b", r"\bcame from\b", r"\bmasking\b",
        r"根本原因", r"原因是", r"问题在于", r"是因为")),
    Rule("assistant-fix", "pitfall", 0.7, ("assistant",), _rx(
        r"\bfixed by\b", r"\bthe fix (?:is|was)\b", r"\bfixed (?:it|this) by\b", r"\bworks? around\b")),
    Rule("assistant-pitfall", "pitfall", 0.6, ("assistant",), _rx(
        r"\b(?:doesn'?t|does not|won'?t|can'?t|cannot|never|isn'?t|is not|aren'?t) "
        r"(?:work|catch|complete|support|resolve|emit|receive|create|run|affect|apply|accept|handle|allow|"
        r"include|parse|match|exist|persist|trigger|fire|propagate)\w*\b", r"\bdefaults? to\b",
        r"\bsilently\b", r"\bhard-?coded\b", r"\bonly (?:goes|works|contains|applies|runs)\b",
        r"\bexplicitly requires\b", r"\brequires? (?:a|an|the)\b", r"\bnot (?:a|an) \w+ you\b",
        r"\*\*not\b", r"而不是", r"不支持", r"不会", r"否则")),
    Rule("assistant-decision", "decision", 0.55, ("assistant",), _rx(
        r"\bwe'?ll use\b", r"\bi'?ll use\b", r"\bdecided\b", r"\bis now\b", r"\bnow (?:uses|prompts|runs)\b",
        r"\bsince\b.*\b(?:so|we|i)\b", r"\bbecause\b", r"\bconstraint\b")),
    # "I'm pinning X on every call so the tests give the same result anywhere": a choice and its purpose
    Rule("assistant-purpose", "decision", 0.75, ("assistant",), _rx(
        r"^(?:i'?m|i am|we'?re|we are) (?!going\b)\w+ing\b.*\bso (?:that )?(?:the|it|they|we|this|every|any)\b")),
    # "Good catch — <what is true now>": the finding after the user's correction. Weight 0.45: the
    # agreeing sentence itself matched no gold item of ../shared/real-sessions (5 shown in 4 files at
    # 0.7); what the acknowledgment is worth goes to the correction (score.cross_turn, +0.2).
    Rule("assistant-acknowledged", "fact", 0.45, ("assistant",), re.compile(
        r"^(?:(?:good|great|nice|fair) (?:catch|thinking|point|question|call)|"
        r"you'?re (?:absolutely |completely |totally )?(?:right|correct)(?: to \w+)?)"
        r"\s*[—–:-]\s*\S+(?:\s+\S+){3}", re.IGNORECASE)),
    # "`X` returns a record, not a tuple": a statement in the present about named code (the assistant's
    # plain facts are most of what reviewers keep from it and no phrase marks them); low weight, 0.55: with the
    # assistant's factor and the backtick's +0.1 a plain one clears the score floor, one with a noise cue (a fragment,
    # something in progress) does not (0.5 → 0.55 raised the 33's cv recall 0.326 → 0.368, bench/queue_cv.py)
    # (the verb before or after the first backtick: both branches hold a backtick, the rule's one trigger)
    Rule("assistant-code-fact", "fact", 0.55, ("assistant",), re.compile(
        r"^(?!(?:i|we|i'?m|i'?ve|we'?re|let'?s|now|then|next|first|understood|got it|ok(?:ay)?|sure|yes|right)\b)"
        r"(?=[^`]*`[^`]+`)(?:[^`]*`.*" + _CODE_VERB + r"|.*" + _CODE_VERB + r".*`)", re.IGNORECASE)),
    # --- compaction summaries: durable sections, one candidate a bullet ----------------------
    Rule("summary-error-fix", "pitfall", 0.8, ("summary",), _rx(_ANY), ("errors and fixes", "problem solving")),
    Rule("summary-user-feedback", "preference", 0.8, ("summary",), _rx(_ANY), ("user feedback",)),
    Rule("summary-critical", "fact", 0.75, ("summary",), _rx(_ANY), ("critical context", "lessons", "decisions")),
    Rule("summary-concept", "fact", 0.6, ("summary",), _rx(_ANY), ("technical concepts",)),
)
"""The built-in rules, most specific first within each channel."""

_ACKNOWLEDGED = next(rule for rule in RULES if rule.name == "assistant-acknowledged")
_QUESTION_WORDS = lazy_compile(
    r"^(?:why|what|how|where|which|who|when|is|are|do|does|did|can you|could you|would you|will you)\b",
    re.IGNORECASE)
_NONE = lazy_compile(r"^\W*(?:none|n/?a|nothing|no errors?)\W*(?:\(.*\))?\W*$", re.IGNORECASE)
_PROGRESS = lazy_compile(
    r"^(?:let me|i'?ll|i will|i'?m going to|now,? (?:let me|i(?:'ll| will| need| have to| can|'m going)\b)|next,? i|"
    r"first,? (?:let me|i)|i'?m now|(?:the )?next step is|"
    r"perfect|great|done|all (?:done|\d+)|good|ok(?:ay)?|sure|excellent|here'?s|here is)\b",
    re.IGNORECASE)
# output pasted into a sentence: a path with a line number, a warning or error class, a prompt
_TOOL_TEXT = lazy_compile(r"\S+\.\w+:\d+\b|\b\w+(?:Error|Exception|Warning): |^[$>#] |\s[$>] \S|\bwarn\b.*={5,}|"
                        # a package manager's or tool's own log line, pasted: "npm error …", "yarn warn …"
                        r"^(?:npm|pnpm|yarn|bun|pip|cargo|gradle|mvn|docker|kubectl|terraform) (?:ERR!|error|warn|"
                        r"WARN|notice)\b")
_REASON = lazy_compile(r"\b(?:because|otherwise|so that|since|as long as|due to)\b|因为|否则", re.IGNORECASE)
_REQUEST = lazy_compile(
    r"^(?:\w+,? )?(?:let'?s|lets|can (?:we|you|i)|could (?:we|you)|please|pls|would you|try|go ahead|"
    r"okay,? so|ok,? so|so can|i(?:'d| would)? (?:like|want) to)\b", re.IGNORECASE)
_STANDING = lazy_compile(
    r"\b(?:always|never|must|don'?t|do not|should(?:n'?t| not)|from now on|every time|instead)\b|"
    r"以后|不要|务必|必须|一律|永远|不能|别再|千万|绝不", re.IGNORECASE)
# said of this moment only: "don't push yet", "for now", "tomorrow"
_ONE_OFF = lazy_compile(r"\b(?:yet|for now|tomorrow|tonight|today|right now|this time|at the moment|for the moment)\b|"
                      r"暂时|先不|今天|明天", re.IGNORECASE)
# the assistant guessing ("probably the cache", "it might be", "either … or …"): a hypothesis, not a finding
_HEDGE = lazy_compile(r"\b(?:might|(?-i:may)|maybe|perhaps|probably|possibly|likely|could be|i think|i suspect|seems?|"
                    r"appears? to|either)\b", re.IGNORECASE)
# "okay, fix is pushed, let's update from main": a request after a clause, not only at the start
_LETS = lazy_compile(r"(?:^|[,;:.!] |\b(?:so|and|then|now|ok(?:ay)?|yes|nah|no) )let'?s\b", re.IGNORECASE)
_PLAN = lazy_compile(r"\b(?:i need to|let me|i'?m going to|i will now|next i'?ll)\b|"
                   r"\b(?:is|are|was|were|has been|have been) already (?:applied|done|in place|fixed|committed|pushed|"
                   r"merged|there|set|installed|running)\b", re.IGNORECASE)
_WORD = lazy_compile(r"[\u4e00-\u9fff]{2}|[^\W\d_\u4e00-\u9fff]{2,}")


def quiet(statement: Statement, who: str) -> bool:
    """Whether a statement can never be a candidate, whatever its phrasing.

    Quiet: fewer than 4 words (2 CJK characters count as one) or fewer than 3 of 3+ letters
    ("no, keep as is", "ok do it"), a question that opens with a
    question word, an assistant progress note ("Let me …", "I'll …", "Perfect!", "… is already applied"), and a
    summary bullet that says "(none)".
    """
    text = statement.text.strip(" *_`>")
    words = _WORD.findall(text)
    if len(words) < 4 or sum(1 for w in words if len(w) >= 3 or not w.isascii()) < 3:
        return True
    if text.endswith("?") and _QUESTION_WORDS.match(text):
        return True
    if text.endswith(":") or _TOOL_TEXT.search(text):
        return True
    if who == "assistant" and _PROGRESS.match(text) and not _ACKNOWLEDGED.pattern.search(text):
        return True
    if who == "assistant" and _PLAN.search(text):
        return True
    return who == "summary" and bool(_NONE.match(text))


def standing(text: str) -> bool:
    """Whether ``text`` is worded as a standing rule: "always", "never", "must", "don't", "from now on",
    "instead", "以后", "不要", "必须", "不能" …"""
    return bool(_STANDING.search(text))


def phrases(rule: Rule) -> tuple[str, ...]:
    """The top-level alternatives of a rule's pattern (``a|b|(?:c|d)`` -> ``a``, ``b``, ``(?:c|d)``).

    Escapes and character classes are respected; a pattern without a top-level ``|`` is one phrase.
    """
    return tuple(branches(rule.pattern.pattern))


def without(rules: Sequence[Rule], drop: Collection[tuple[str, int]]) -> tuple[Rule, ...]:
    """``rules`` with the phrases ``(rule name, index in phrases(rule))`` of ``drop`` taken out.

    A rule left without a phrase is left out. For the measure (``bench/queue_quality.py``: a
    phrase written after reading one session's gold is dropped when that session is held out).
    """
    out: list[Rule] = []
    for rule in rules:
        kept = [p for i, p in enumerate(phrases(rule)) if (rule.name, i) not in drop]
        if kept:
            out.append(replace(rule, pattern=re.compile("|".join(kept), rule.pattern.flags)))
    return tuple(out)


def _summary_rule(statement: Statement, rules: Sequence[Rule]) -> Rule | None:
    section = statement.section
    if not section or any(t in section for t in TRANSIENT_SECTIONS):
        return None
    for rule in rules:
        if rule.who == ("summary",) and any(s in section for s in rule.sections):
            return rule
    return None


def strength(statement: Statement, who: str, rules: Sequence[Rule] = RULES) -> float:
    """How strongly the phrasing of a fired statement speaks for keeping it: about 0.4..1.4.

    One more rule of the same channel that also fires adds 0.15; a reason given ("because",
    "otherwise", "so that") adds 0.1; a question (ends with ``?``) halves it; a request for
    the task at hand ("let's …", "can we …", "please …", "I'd like to …") without a standing-rule word
    counts 0.6, and so does one with "let's" after a clause ("okay, it's pushed, let's …");
    an assistant guess ("might", "probably", "either …") counts 0.6;
    something said of the moment only ("yet", "for now", "tomorrow") counts 0.6, a second such
    word 0.6 again;
    a summary bullet with a standing-rule word ("always", "never") adds 0.2; an assistant
    statement that opens its reply adds 0.2, one that names code in backticks 0.1.
    """
    text = statement.text
    others = len(_matching(statement, who, rules, every=True)) if who != "summary" else 1
    value = 1.0 + 0.15 * max(0, others - 1)
    if _REASON.search(text):
        value += 0.1
    if text.rstrip(" *_`)").endswith("?"):
        value *= 0.5
    if who == "human" and (_REQUEST.match(text) or _LETS.search(text)) and not _STANDING.search(text):
        value *= 0.6
    value *= 0.6 ** len({m.group(0).casefold() for m in _ONE_OFF.finditer(text)})
    if who == "summary" and _STANDING.search(text):
        value += 0.2
    if who == "assistant" and _HEDGE.search(text):
        value *= 0.6  # a guess, not a finding
    if who == "assistant" and statement.index == 0:
        value += 0.2  # a diagnosis opens the reply that follows the investigation
    if who == "assistant" and "`" in text:
        value += 0.1  # names the code it is about
    return value


def fire(statement: Statement, who: str, rules: Sequence[Rule] = RULES) -> Rule | None:
    """The first rule of ``rules`` (:data:`RULES`) for ``who`` whose pattern is in ``statement``, or None.

    ``who`` is an utterance channel (``human``, ``assistant``, ``summary``; anything else never
    fires). Summary statements fire only under a durable section (:data:`DURABLE_SECTIONS`),
    never under a transient one. :func:`quiet` statements never fire. A rule whose triggers are not
    in the statement is not searched (it cannot match): the result is the full search's.
    """
    if who == "summary":
        return None if quiet(statement, who) else _summary_rule(statement, rules)
    if not _maybe(statement, who, rules) or quiet(statement, who):
        return None
    found = _matching(statement, who, rules, every=False)
    return found[0] if found else None


_CHANNELS: dict[tuple[int, str], tuple[Sequence[Rule], Triggers | None]] = {}


def _channel(rules: Sequence[Rule], who: str) -> Triggers | None:
    """The triggers of every rule of ``rules`` for ``who`` (None: one of them has none), kept per rule set."""
    key = (id(rules), who)
    kept = _CHANNELS.get(key)
    if kept is None or kept[0] is not rules:
        union: Triggers | None = Triggers(frozenset(), ())
        for rule in rules:
            if who in rule.who:
                union = None if union is None or rule.triggers is None else union | rule.triggers
        if len(_CHANNELS) > 64:
            _CHANNELS.clear()
        kept = _CHANNELS[key] = (rules, union)
    return kept[1]


# statements.split cuts a statement inside a word (summarize) only within a run this long without a space
_CUT_IN_A_WORD = lazy_compile(rf"\S{{{MAX_STATEMENT - 1 - MAX_STATEMENT // 2}}}")


def possible(text: str, who: str, rules: Sequence[Rule] = RULES) -> bool:
    """False when no statement of ``text`` (as :func:`~mmd.candidates.statements.split` makes them)
    can fire a rule of ``rules`` for ``who``: then the text need not be split (a cheap check).

    Sound, never a guess: a statement's words and parts are the text's (a statement is a run of the
    text, whitespace folded), unless a statement is cut inside a word, which a run of 249 code points
    without whitespace allows: then (and for ``summary``, whose rules go by section) it is True.
    """
    if who == "summary":
        return True
    union = _channel(rules, who)
    if union is None or _CUT_IN_A_WORD.search(text):
        return True
    return union.found(Folded(text))


def _maybe(statement: Statement, who: str, rules: Sequence[Rule]) -> list[Rule]:
    """The rules for ``who`` whose triggers are in the statement: no other rule can match it."""
    folded = Folded(statement.text)
    union = _channel(rules, who)
    if union is not None and not union.found(folded):
        return []
    return [rule for rule in rules if who in rule.who and rule.may_fire(folded)]


def _matching(statement: Statement, who: str, rules: Sequence[Rule], *, every: bool) -> list[Rule]:
    """The rules for ``who`` whose pattern is in the statement, in order (only the first unless ``every``)."""
    out: list[Rule] = []
    for rule in _maybe(statement, who, rules):
        if rule.pattern.search(statement.text):
            out.append(rule)
            if not every:
                break
    return out
