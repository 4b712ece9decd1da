"""Statements: the pieces of an utterance a candidate can be made of.

Owns: :func:`split` (utterance text -> :class:`Statement` list: a sentence, a bullet or an item of an
inline enumeration ("1) … 2) …"), at most :data:`MAX_STATEMENT` code points, each with the markdown
section it sits under),
:func:`summarize` (a short summary cut at a word with ``…``), :func:`summary_line` (a candidate's
summary, markdown bold dropped), :func:`looks_pasted` (a pasted plan, spec or log in a human prompt), and what a
candidate's body is: :func:`trimmed` (the statement without its spoken filler: "ok", "I think", "So,", "Great —"),
:func:`introduced` (the list a statement ending in ``:`` introduces) and :func:`memory` (both: the text an accepted
candidate writes, issue 30 "A candidate is a memory").

Never: decides whether a statement is worth remembering (:mod:`mmd.candidates.signals` does),
returns a markdown heading, a code block, a table row or tool-output-like lines as a statement,
or imports anything outside the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mmd.core.lazyre import lazy_compile

__all__ = ["LEANING", "MAX_STATEMENT", "MAX_SUMMARY", "PARAGRAPH", "Statement", "introduced", "looks_pasted", "marked",
           "memory", "split", "summarize", "summary_line", "trimmed"]

MAX_STATEMENT = 500
"""Longest statement, in code points (issue 13 "one statement a candidate")."""
MAX_SUMMARY = 120
"""Longest summary, in code points, the ``…`` included."""


@dataclass(frozen=True, slots=True)
class Statement:
    """One sentence or one bullet of an utterance.

    Attributes:
        text: the statement, whitespace folded, ``’`` read as ``'``, leading bullet marker removed, at most
            :data:`MAX_STATEMENT` code points (cut at a word with ``…`` when longer).
        section: the nearest markdown heading or bold label above it, casefolded, without
            numbering or punctuation (``errors and fixes``), or ``""`` when none.
        bullet: True when it was a list item.
        index: its 0-based order among the statements of the utterance.
        paragraph: the 0-based paragraph (or list) it belongs to.
    """

    text: str
    section: str
    bullet: bool
    index: int
    paragraph: int


_FENCE = lazy_compile(r"^\s*(```|~~~)")
_HEADING = lazy_compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
# a line that is only a bold label, "**Label**", "**Label:**", "1. **Label**:" or "Label:" (short)
_LABEL = lazy_compile(r"^\s*(?:\d+[.)]\s*)?(?:\*\*|__)(.+?)(?:\*\*|__)\s*:?\s*$")
# a line a person marked on purpose (mm v1 §9 markers): its own paragraph, never another statement's context
_MARKED = lazy_compile(r"^\s*(?:[-*+]\s+)?(?:mm:|memo:|remember\b|记住[:：]|记忆[:：])", re.IGNORECASE)
_PLAIN_LABEL = lazy_compile(r"^\s*(?:\d+[.)]\s*)?([A-Z][\w /&'-]{0,48}):\s*$")
_BULLET = lazy_compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+(.*)$")
_TABLE = lazy_compile(r"^\s*\|")
_RULE_LINE = lazy_compile(r"^\s*([-*_=])\1{2,}\s*$")
# lines that look like output of a tool, a log or a shell, not like prose
_TOOLISH = lazy_compile(
    r"""^\s*(?:
        \$\s|>>>\s|\#\s?\w+@|            # shell and REPL prompts
        \d{4}-\d\d-\d\d[T ]\d\d:\d\d|    # a timestamped log line
        \[\d\d:\d\d|                      # [12:00:01]
        (?:File\s"|Traceback\s|at\s[\w.$<>]+\(|\w+(?:Error|Exception|Warning):\s)|  # stack traces
        \S+:\d+(?::\d+)?:\s|              # path:line: messages of compilers and linters
        [{\[]["{\[]|                      # JSON
        [│├└┌┐┘┤┬┴┼╭╮╯╰║═]|               # box drawing
        [+-]{3}\s|@@\s                    # diffs
    )""",
    re.VERBOSE,
)
_SENTENCE_END = lazy_compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`*]*\w)|(?<=[。！？；])")
_ABBREV = lazy_compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|Mr|Dr|No|Fig)|\b[A-Z])\.$")
_WS = lazy_compile(r"\s+")
_BOLD = lazy_compile(r"(?<![\w*])\*\*(?=\S)(.+?)(?<=\S)\*\*(?![\w*])")  # not x**2 + y**2
# a marker of an inline enumeration: "1:", "2)", "(3)" standing alone before a space
_ENUM_MARK = lazy_compile(r"(?:(?<=\s)|^)\(?(\d{1,2})[:)](?=\s)")
_SECTION_NOISE = lazy_compile(r"[^\w\s]+")


def summarize(text: str, limit: int = MAX_SUMMARY) -> str:
    """``text`` with whitespace folded, cut to at most ``limit`` code points at a word with ``…``.

    A text within the limit comes back folded but whole. A single word longer than the limit is
    cut inside the word (there is no word boundary to cut at).
    """
    folded = _WS.sub(" ", text).strip()
    if len(folded) <= limit:
        return folded
    head = folded[: limit - 1]
    cut = head.rfind(" ")
    if cut >= limit // 2:
        head = head[:cut]
    return head.rstrip(" ,;:-–—") + "…"


def summary_line(text: str, limit: int = MAX_SUMMARY) -> str:
    """A candidate's summary: ``text`` without markdown bold markers (``**Root cause:**`` reads
    ``Root cause:``; code in backticks stays), cut as :func:`summarize` cuts. The body keeps its markdown."""
    return summarize(_BOLD.sub(r"\1", text), limit)


# spoken filler before what is said: "ok", "So,", "I think", "Great —", "Good catch —", "Note:", the agent's
# "Understood." (repeated: "ok so i think"); a label that says what the statement is ("Root cause:", "Pitfall:") is kept
_FILLER = lazy_compile(
    r"^(?:(?:(?:good|great|nice|fair) (?:catch|point|question|call|thinking)|you'?re (?:absolutely |totally )?right|"
    r"ok(?:ay)?|so|well|yes|yeah|yep|alright|all right|right|great|good|cool|nice|perfect|awesome|excellent|"
    r"sure|thanks|thank you|hmm+|oh|ah|also|and|but|actually|anyway|basically|honestly|btw|by the way|fyi|"
    r"understood|got it|absolutely|of course|certainly|makes sense|that makes sense|indeed|"
    r"note(?: that)?|heads[- ]up|update|i think|i guess|i believe|i feel like|i mean|to be honest|in fact|just)"
    r"\b[\s,.!:;…—–-]*)+", re.IGNORECASE)


def trimmed(text: str) -> str:
    """``text`` without the spoken filler it opens with ("ok", "So,", "I think", "Great —", "Good catch —", "Also",
    "Note:" …, several in a row), its first letter capitalized; ``text`` itself when fewer than three words would
    be left."""
    cut = _FILLER.match(text)
    if cut is None or not cut.group(0):
        return text
    rest = text[cut.end():].lstrip()
    if len(rest.split()) < 3:
        return text
    return rest[:1].upper() + rest[1:]


def introduced(statement: Statement, statements: list[Statement]) -> list[Statement]:
    """The list items a statement ending in ``:`` introduces: the bullets right after it (the same paragraph or
    the next), in order; ``[]`` for any other statement."""
    if not statement.text.endswith(":") or statement.bullet:
        return []
    out: list[Statement] = []
    for s in statements[statement.index + 1:]:
        if not s.bullet or s.paragraph > statement.paragraph + 1 or out and s.paragraph != out[0].paragraph:
            break
        out.append(s)
    return out


PARAGRAPH = 250
"""A paragraph of at most this many code points (two or three sentences a person typed) is one statement."""
LEANING = 300
"""Most code points of a sentence with the sentences it leans on (:func:`memory`)."""
# a sentence that cannot stand alone: it points back ("This is why …", "So …") or the next one completes it
_POINTS_BACK = lazy_compile(r"^(?:this|that|these|those|it|its|it's|they|their|so|then|otherwise|which|also|but|and|"
                          r"because|hence|thus|therefore|that's|here|there|such|both|either|instead)\b", re.IGNORECASE)
_COMPLETES = lazy_compile(r"^(?:because|otherwise|so|that's why|this is why|this means|which|since|as a result|"
                        r"that way|this way|it|this|that|they|these|those|its|it's|instead|but|also|and)\b",
                        re.IGNORECASE)


# what the agent says of its own work between statements: never part of a memory ("Let me check …", "Sorry …")
_ASIDE = lazy_compile(r"^(?:let me|let's|i'll|i will|i'm going to|now,? (?:let me|i'll)|next,? i|waiting|sorry|"
                    r"thanks|perfect|done|great|ok(?:ay)?)\b", re.IGNORECASE)
_STANDS_ALONE = lazy_compile(r"(?:do not|don't|never|always|please (?:do not|don't|never|always))\b", re.IGNORECASE)
"""A sentence opening as a rule of its own ("Do not create any PR without my approval.") needs no neighbour."""
_ALONE_WORDS = 6


def memory(statement: Statement, statements: list[Statement]) -> str:
    """What a candidate of ``statement`` writes (issue 30 "A candidate is a memory"), :func:`trimmed` of filler.

    A bullet, and a sentence opening as a rule of its own ("Do not …", "Never …", "Always …", six words or more),
    is itself; a sentence of a short paragraph (at most :data:`PARAGRAPH` code points) is the paragraph;
    a sentence of a longer one is itself with the sentences it leans on, within :data:`LEANING` code points (one
    opening "This …", "So …", "Because …" takes the one before; one the next completes, "… Otherwise …", takes the
    next), never the rest of the paragraph; an aside of the agent's ("Let me check …", "Sorry …") is never taken.
    A last sentence ending in ``:`` keeps the list it introduces (one ``- item`` a line, whole items within
    :data:`MAX_STATEMENT` code points).
    """
    if statement.bullet or _STANDS_ALONE.match(statement.text) and len(statement.text.split()) >= _ALONE_WORDS:
        return _with_list(trimmed(statement.text), statement, statements)
    same = [s for s in statements if s.paragraph == statement.paragraph and not s.bullet
            and (s.index == statement.index or not _ASIDE.match(s.text))]
    at = next(i for i, s in enumerate(same) if s.index == statement.index)
    first, last = at, at
    if sum(len(s.text) + 1 for s in same) - 1 <= PARAGRAPH:
        first, last = 0, len(same) - 1
    else:
        size = len(statement.text)
        while first > 0 and _POINTS_BACK.match(same[first].text) and size + len(same[first - 1].text) < LEANING:
            first -= 1
            size += len(same[first].text) + 1
        while last + 1 < len(same) and _COMPLETES.match(same[last + 1].text) and \
                size + len(same[last + 1].text) < LEANING:
            last += 1
            size += len(same[last].text) + 1
    return _with_list(trimmed(" ".join(s.text for s in same[first:last + 1])), same[last], statements)


def _with_list(text: str, last: Statement, statements: list[Statement]) -> str:
    """``text`` with the list ``last`` introduces, one ``- item`` a line, whole items within :data:`MAX_STATEMENT`."""
    for item in introduced(last, statements):
        line = f"\n- {item.text}"
        if len(text) + len(line) > MAX_STATEMENT:
            break
        text += line
    return text


def marked(text: str) -> bool:
    """Whether a line or statement opens with an mm v1 §9 marker (``mm:``, ``MEMO:``, ``REMEMBER``,
    ``记住：``, ``记忆：``): the marker rules make it a pinned candidate of its own."""
    return bool(_MARKED.match(text))


def looks_pasted(text: str) -> bool:
    """Whether a human prompt is mostly pasted material (a plan, spec, transcript or log).

    True when the text opens with a paste marker ("Implement the following plan"), or is long
    (over 1,500 code points) and carries three or more markdown headings, or when over half of
    its non-blank lines (of at least 8) look like tool or log output.
    """
    head = text.lstrip()[:80].casefold()
    if head.startswith(("implement the following plan", "here is the plan", "<pasted", "[pasted")):
        return True
    lines = [line for line in text.splitlines() if line.strip()]
    headings = sum(1 for line in lines if _HEADING.match(line))
    if len(text) > 1500 and headings >= 3:
        return True
    toolish = sum(1 for line in lines if _TOOLISH.match(line))
    return len(lines) >= 8 and toolish * 2 > len(lines)


def _section_name(raw: str) -> str:
    return _WS.sub(" ", _SECTION_NOISE.sub(" ", raw)).strip().casefold()


def _enumerated(paragraph: str) -> list[str]:
    """``paragraph`` cut before each marker of an inline enumeration (``1: … 2: …``, ``1) … 2) …``,
    ``(1) … (2) …``): markers numbered 1, 2, 3 … in order, at least two, each item of three words
    or more; anything else (``at 10:30``, a lone ``2:``, ``see 1) and 2)``) comes back whole."""
    marks = list(_ENUM_MARK.finditer(paragraph))
    if len(marks) < 2 or [int(m.group(1)) for m in marks] != list(range(1, len(marks) + 1)):
        return [paragraph]
    ends = [m.start() for m in marks[1:]] + [len(paragraph)]
    items = [paragraph[m.end():end] for m, end in zip(marks, ends, strict=True)]  # markers dropped, as bullets'
    if any(len(item.split()) < 3 for item in items):
        return [paragraph]
    lead = paragraph[: marks[0].start()]
    return ([lead] if lead.strip() else []) + items


def _sentences(paragraph: str) -> list[str]:
    pieces = _enumerated(paragraph)
    if len(pieces) > 1:
        return [sentence for piece in pieces for sentence in _sentences_of(piece)]
    return _sentences_of(paragraph)


def _sentences_of(paragraph: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for found in _SENTENCE_END.finditer(paragraph):
        piece = paragraph[start : found.start()]
        if _ABBREV.search(piece.rstrip("\"')]")):
            continue
        parts.append(piece)
        start = found.end()
    parts.append(paragraph[start:])
    return [p.strip() for p in parts if p.strip()]


def _clean(text: str) -> str:
    # a typographic apostrophe (Codex writes "I’ll", "don’t") reads as the ASCII one the rules spell
    return _WS.sub(" ", text).strip().replace("\u2019", "'")


class _Splitter:
    """One pass over the lines of an utterance; see :func:`split`."""

    def __init__(self) -> None:
        self.out: list[Statement] = []
        self.section = ""
        self.paragraph = 0
        self.prose: list[str] = []
        self.item: list[str] | None = None

    def emit(self, text: str, bullet: bool) -> None:
        text = _clean(text)
        if len(text) < 3 or not re.search(r"\w", text):
            return
        if len(text) > MAX_STATEMENT:
            text = summarize(text, MAX_STATEMENT)
        self.out.append(Statement(text, self.section, bullet, len(self.out), self.paragraph))

    def flush(self) -> None:
        if self.item is not None:
            self.emit(" ".join(self.item), True)
            self.item = None
        if self.prose:
            for sentence in _sentences(" ".join(self.prose)):
                self.emit(sentence, False)
            self.prose = []

    def boundary(self) -> None:
        self.flush()
        self.paragraph += 1

    def line(self, line: str) -> None:
        heading = _HEADING.match(line) or _LABEL.match(line) or _PLAIN_LABEL.match(line)
        if heading:
            self.boundary()
            self.section = _section_name(heading.group(1))
            return
        if _TABLE.match(line) or _RULE_LINE.match(line) or _TOOLISH.match(line):
            self.boundary()
            return
        if marked(line):
            self.boundary()  # a marked line is its own paragraph, never another statement's context
        bullet = _BULLET.match(line)
        if bullet:
            self.flush()
            self.item = [bullet.group(2)]
        elif self.item is not None and line[:1].isspace():
            self.item.append(line)
        else:
            if self.item is not None:
                self.flush()
            self.prose.append(line)


def split(text: str) -> list[Statement]:
    """Split utterance text into statements, in order.

    A statement is one sentence of a prose paragraph, one item of an inline enumeration in it
    (``1: … 2: …``, ``1) … 2) …``, ``(1) … (2) …``; marker dropped) or one list item (with its indented
    continuation lines). Skipped, never returned: fenced code blocks, markdown headings and bold
    or ``Label:`` lines standing alone (they become the ``section`` of what follows), table rows,
    horizontal rules, lines that look like tool, shell, log, JSON or diff output, and pieces
    shorter than 3 code points or without a word character. Longer than :data:`MAX_STATEMENT`
    code points: cut at a word with ``…``. Never raises on any string.
    """
    splitter = _Splitter()
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            splitter.boundary()
            continue
        if in_code:
            continue
        if not line.strip():
            splitter.boundary()
            continue
        splitter.line(line)
    splitter.flush()
    return splitter.out
