"""Topics that fit: a readable slug for a new note, or a proposal to append to a note on the same subject.

Owns: :func:`topic_slug` (whole words, at most :data:`TOPIC_SLUG_MAX` characters, never a clipped
word), :func:`topic_name` (a name: a few content words of what a statement is about, issue 30),
:data:`CATEGORIES` (the notes of a kind a project keeps: rules, decisions, pitfalls, environment, facts, and by
subject build, testing, deploy), :class:`NoteSubject` (what a note is about: its topic words, tags and body
words) and :func:`proposal` (``{"action": "create" | "append", "topic"}``: a note on the same subject, else one
of the same category, so accepts grow notes instead of the index). Issue 13 "Topics that fit", issue 30 "A
candidate is a memory".

Never: reads the memory root (the caller hands the notes in) or writes anything.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from mmd.core.lazyre import lazy_compile

from .identity import normalized
from .signals import standing
from .statements import trimmed

__all__ = ["CATEGORIES", "CATEGORY_SUMMARIES", "TOPIC_SLUG_MAX", "Category", "NoteSubject", "category_of", "proposal",
           "subject_words", "topic_name", "topic_slug"]

TOPIC_SLUG_MAX = 40
"""Longest proposed slug, in characters (ASCII)."""

_STOP = frozenset("""
a an and are as at be been but by can could did do does don for from had has have how i if in into is it its
just let like may me might must my no not of on once only or our out over please same should so some such than
that the their them then there these they this those to too up us use used using very was we were what when
where which while who why will with would you your yet also all any each every here now still always never
make sure run runs want need needs get got going one two via per new old else instead rather
""".split())
_FUNCTION = frozenset("a an and are as at be by for from in into is it its of on or our so that the this to we with "
                      "you your i my me us them they there".split())
"""Function words a slug leaves out (a slug keeps verbs: ``run-tests-make-test-fast``)."""
_ASCII_WORD = lazy_compile(r"[a-z0-9]+")
_BODY_ONLY = 5


def _content_words(text: str) -> list[str]:
    """ASCII words of :func:`~.identity.normalized` text, stop words and one-letter words dropped, in order."""
    return [w for w in _ASCII_WORD.findall(normalized(text)) if len(w) > 1 and w not in _STOP]


def subject_words(text: str) -> frozenset[str]:
    """The content words of ``text`` (see :func:`topic_slug`), as a set."""
    return frozenset(_content_words(text))


_APOSTROPHE = lazy_compile(r"(?<=[A-Za-z])['\u2019](?=[A-Za-z])")
_PRONOUN_CONTRACTION = lazy_compile(
    r"\b(?:i|you|we|they|he|she|it|that|there|here|what|let)['\u2019](?:d|ll|ve|re|m|s)\b", re.IGNORECASE)
"""``I'd``, ``you're``, ``it's`` …: left out whole (``I'd`` folded would read as the word ``id``)."""
_FILLER = frozenset("""
also just so no yes ok okay then but because why actually really maybe well right sure hmm like not do does did
good great thanks point since says said see try
can could would should will what how when where which who all any some here now still again very too yet if else
dont doesnt didnt cant wont isnt arent wasnt werent shouldnt wouldnt couldnt havent hasnt youre youve youll youd
im ive ill its thats theres heres lets whats hes shes theyre theyve weve were re ll ve these those
please pls want wants wanted need needs ask asked has have had was bit
""".split())
"""Filler a slug leaves out: contractions (apostrophe folded: ``don't`` → ``dont``), their fragments, hedges,
and the words of asking (``please``, ``want``, ``need``, ``ask``): a note is named for its subject."""
_SLUG_WORDS = 5


def _slug_words(text: str) -> list[str]:
    """Whole words of ``text`` for a slug, in order, once each: apostrophes folded into their word, function
    words, filler and one-letter fragments (``s`` of ``it's``) left out; numbers kept (``15-4``)."""
    folded = normalized(_APOSTROPHE.sub("", _PRONOUN_CONTRACTION.sub(" ", text)))
    words = (w for w in _ASCII_WORD.findall(folded)
             if (len(w) > 1 or w.isdigit()) and w not in _FUNCTION and w not in _FILLER)
    return list(dict.fromkeys(words))


def topic_slug(text: str, *, limit: int = TOPIC_SLUG_MAX, taken: Collection[str] = ()) -> str:
    """A readable topic slug from ``text``: its first whole words but function words and filler, joined by ``-``.

    At most ``limit`` characters (ASCII) and at most five words, never a clipped word: a word that does not fit
    is skipped. ``don't`` folds to ``dont`` and is left out as filler, with ``also``, ``just``, ``you're`` and
    the like. A slug in ``taken`` (topics proposed for other statements) is made distinct by a later word of the
    text, else by 4 hex of its normalized text. Text without ASCII content words (e.g. only CJK) gives
    ``memo-<8 hex of its normalized text>``. Issue 13 "Topics that fit".
    """
    digest = hashlib.sha256(normalized(text).encode()).hexdigest()
    pool = _slug_words(text)
    if not pool or all(w.isdigit() for w in pool):
        return f"memo-{digest[:8]}"
    words = _fit(pool, limit, _SLUG_WORDS)
    slug = "-".join(words)
    if slug not in taken:
        return slug
    for extra in pool:
        if extra not in words:
            longer = "-".join(_fit([*words[:_SLUG_WORDS - 1], extra], limit, _SLUG_WORDS))
            if longer not in taken and longer != slug:
                return longer
    while words and len(slug) + 5 > limit:
        words = words[:-1]
        slug = "-".join(words)
    return f"{slug}-{digest[:4]}" if slug else f"memo-{digest[:8]}"


def _fit(pool: Sequence[str], limit: int, most: int) -> list[str]:
    """The first words of ``pool`` whose ``-``-joined length stays within ``limit``, at most ``most`` of them."""
    words: list[str] = []
    size = 0
    for word in pool:
        extra = len(word) + (1 if words else 0)
        if size + extra > limit:
            continue
        words.append(word)
        size += extra
        if len(words) == most:
            break
    return words


@dataclass(frozen=True, slots=True)
class NoteSubject:
    """What one note is about: ``topic``, its topic words and tags (``names``) and its body words."""

    topic: str
    names: frozenset[str]
    body: frozenset[str]

    @classmethod
    def of(cls, topic: str, tags: Iterable[str], body: str, summary: str = "") -> NoteSubject:
        """The subject of a note from its topic, tags, body and summary."""
        names = subject_words(" ".join([topic.replace("-", " ").replace("_", " "), *tags]))
        return cls(topic, names, subject_words(f"{summary} {body}"))


_NAME_WORDS = 4
"""Most words of a :func:`topic_name`."""
_VERB = frozenset("""
is are was were be been being am has have had do does did must should shall can could will would may might need needs
lives live uses use used run runs ran goes go went gets get got makes make made takes take keeps keep holds hold
returns return calls call creates create writes write reads read sends send works work fails fail breaks break
requires require expects expect accepts accept contains contain means mean stays stay moved moves move belongs belong
happens happen lets let forces force fires fire emits emit lands land points point depends depend sits sit comes come
avoid avoids prefer prefers opens closes starts ends leaves arrives begins finishes listens waits stores owns
""".split())
"""Words that end a subject ("the state bucket *lives* in …"): common English verbs, none of one project."""
_IMPERATIVE = _VERB | frozenset("""
add fix put try change update remove delete open show build set check test pin skip ask push pull merge commit
rename move write create install deploy release publish bump upgrade keep log name mark wrap split
""".split())
"""Words that open an imperative ("*run* the tests with …"), verbs as a sentence's first word."""
_VERB_ENDING = lazy_compile(r"(?:ates|izes|ises|ifies|ed)$")
"""Word endings of a verb after a subject ("the retry path *regenerates* keys", "the module *moved*")."""
_PRONOUN = frozenset("we i you they it this that these those there he she".split())
_OPENER = lazy_compile(r"^\s*(?:(?:in|for|on|at|from|after|before|when|once|if|during|since)\b[^,;:]{0,60}[,;:]\s*)?"
                     r"(?:(?:please|always|never|just|also|only|do not|don'?t|make sure(?: that)?|remember(?: that)?|"
                     r"note(?: that)?)\b\s*)*", re.IGNORECASE)
"""What opens a sentence before its subject: a leading phrase up to its comma ("In the future, …") and the words
of a rule ("always", "never", "don't", "make sure" …)."""
_PREPOSITION = frozenset("with in on at to for from by of into onto under over via than as when if before after "
                         "because so unless until through about across between without within like".split())
_CODE = lazy_compile(r"`([^`]{2,60})`")


def topic_name(text: str, *, limit: int = TOPIC_SLUG_MAX, taken: Collection[str] = ()) -> str:
    """A name for a note of ``text``: a few content words of what it is about, never a clipped sentence.

    The first code name in backticks when the text opens with it (``post_lines()`` lives in … → ``post-lines``);
    else the subject before the first verb (the state bucket lives in … → ``state-bucket``); else, for an
    imperative (run the tests with …), what the verb acts on, up to a preposition (``tests``). Leading phrases
    ("In the future, …") and rule words ("always", "don't") are skipped; at most four words, whole, within
    ``limit`` characters. Made distinct from ``taken`` and, without a name, given as :func:`topic_slug` does.
    """
    body = _OPENER.sub("", trimmed(text.strip()), count=1).strip()
    code = _CODE.match(body)
    words = _slug_words(code.group(1)) if code else []
    if not words:
        clause = re.split(r"[,;:()\[\]]|[.!?](?:\s|$)|\s[—–-]\s", body, maxsplit=1)[0]
        raw = [w.casefold() for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'’]*", clause)]
        if raw and raw[0] in _PRONOUN:  # "we use Postgres 16 …": what the verb acts on
            raw = raw[1:]
        if raw and raw[0] in _IMPERATIVE:  # an imperative ("need to commit the files"): what it acts on
            raw = list(itertools.dropwhile(lambda w: w in _PREPOSITION or w in _IMPERATIVE, raw[1:]))
        span = _subject(raw)
        if len(span) == 1 and raw[1:2] and raw[1] in _PREPOSITION:  # "adhere to the skill": a verb, then its object
            span = _subject(list(itertools.dropwhile(lambda w: w in _PREPOSITION, raw[1:])))
        words = [w for w in _slug_words(" ".join(span)) if w not in _PREPOSITION][:_NAME_WORDS]
    name = "-".join(_fit(words, limit, _NAME_WORDS))
    if not name or all(w.isdigit() for w in name.split("-")):
        return topic_slug(text, limit=limit, taken=taken)
    if name not in taken:
        return name
    return topic_slug(text, limit=limit, taken=taken)


def _subject(raw: list[str]) -> list[str]:
    """The words of ``raw`` before its first verb or preposition (the first word is taken unless it is one)."""
    if not raw or raw[0] in _VERB or raw[0] in _PREPOSITION:
        return []
    return raw[:1] + list(itertools.takewhile(
        lambda w: w not in _VERB and w not in _PREPOSITION and not _VERB_ENDING.search(w), raw[1:]))


@dataclass(frozen=True, slots=True)
class Category:
    """A note of one kind a project keeps: its ``topic``, the candidate kinds it holds, the words that name it in a
    note's topic (``aliases``), and for a subject category the words of a statement about it (``subject``)."""

    topic: str
    kinds: frozenset[str]
    aliases: frozenset[str]
    subject: frozenset[str] = frozenset()


CATEGORIES: tuple[Category, ...] = (
    Category("testing", frozenset(), frozenset("testing tests test ci qa".split()), frozenset(
        "test tests testing pytest jest vitest unittest coverage ci e2e fixture fixtures flaky".split())),
    Category("build", frozenset(), frozenset("build builds building compile tooling lint".split()), frozenset(
        "build builds building compile compiles compiler bundle bundler webpack vite makefile cmake cargo gradle "
        "maven lint linter linting typecheck".split())),
    Category("deploy", frozenset(), frozenset("deploy deploys deployment deploying release releases releasing "
                                              "ops".split()), frozenset(
        "deploy deploys deployed deployment deploying release releases releasing publish publishing rollout "
        "staging production prod changeset changelog".split())),
    Category("rules", frozenset({"rule", "preference"}), frozenset(
        "rules conventions convention guidelines preferences style standards policies policy workflow".split())),
    Category("pitfalls", frozenset({"pitfall"}), frozenset(
        "pitfalls pitfall gotchas gotcha lessons caveats troubleshooting issues bugs".split())),
    Category("decisions", frozenset({"decision"}), frozenset("decisions decision architecture adr design".split())),
    Category("environment", frozenset({"environment"}), frozenset(
        "environment env setup machine paths dev-environment".split())),
    Category("facts", frozenset({"fact"}), frozenset("facts notes knowledge codebase overview".split())),
)
"""The notes of a kind (in the order a statement is tried against them: a subject before a kind)."""
CATEGORY_SUMMARIES = {
    "testing": "How this is tested: commands, fixtures, CI",
    "build": "How this is built and linted",
    "deploy": "Deploys and releases",
    "rules": "Rules and preferences to follow",
    "pitfalls": "Pitfalls met, and how to avoid them",
    "decisions": "Decisions made, and why",
    "environment": "The environment: machines, paths, setup",
    "facts": "Facts about the codebase",
}
"""The index summary of a :data:`CATEGORIES` note an accept creates: what the note holds, not its first statement
(which the note outgrows at the next accept)."""


def category_of(text: str, kind: str) -> Category | None:
    """The :data:`CATEGORIES` note a statement of ``kind`` belongs in: the first subject category whose words it
    says, else the one holding its kind (a fact or a mark worded as a standing rule — "never", "always", "must" … —
    is a rule); None for a kind no category holds (a plain mark: ``uri``, ``explicit``, ``summary``)."""
    words = frozenset(_ASCII_WORD.findall(normalized(text)))
    for category in CATEGORIES:
        if category.subject and words & category.subject:
            return category
    if kind not in ("rule", "preference", "pitfall", "decision", "environment") and standing(text):
        kind = "rule"
    return next((c for c in CATEGORIES if kind in c.kinds), None)


def _note_of(category: Category, notes: Sequence[NoteSubject]) -> str | None:
    """The first note whose topic names ``category`` (its topic is the category's, or holds one of its aliases)."""
    for note in notes:
        parts = frozenset(re.split(r"[-_./]+", note.topic.casefold()))
        if note.topic == category.topic or parts & category.aliases:
            return note.topic
    return None


def proposal(text: str, notes: Sequence[NoteSubject], *, fallback: str | None = None,
             taken: Collection[str] = (), kind: str | None = None) -> dict[str, str]:
    """Where a candidate should go: ``{"action": "append", "topic"}`` or ``{"action": "create", "topic"}``.

    A note shares the candidate's subject when the candidate's content words hit the note's topic
    words or tags (2 points each) and its body words (1 point each) for at least 4 points with at
    least one topic-word or tag hit, or at least :data:`_BODY_ONLY` body hits; the best-scoring
    note wins (ties: the first). Else, for a candidate of ``kind``, a note of its category
    (:func:`category_of`: testing, build, deploy by what it says, else rules, pitfalls, decisions, environment,
    facts by its kind) when one is among ``notes``, else that category's topic, appended to (the first accept
    creates it: so ten accepts of a project grow a few notes, not ten topics). Else the proposal creates
    ``fallback`` or :func:`topic_name` of ``text`` (distinct from ``taken``).
    """
    words = subject_words(text)
    best: tuple[int, str] | None = None
    for note in notes:
        names, body = len(words & note.names), len(words & note.body)
        points = 2 * names + body
        if (names >= 1 and points >= 4) or body >= _BODY_ONLY:
            if best is None or points > best[0]:
                best = (points, note.topic)
    if best is not None:
        return {"action": "append", "topic": best[1]}
    category = category_of(text, kind) if kind is not None and fallback is None else None
    if category is not None:
        return {"action": "append", "topic": _note_of(category, notes) or category.topic}
    return {"action": "create", "topic": fallback or topic_name(text, taken=taken)}
