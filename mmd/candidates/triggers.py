"""Triggers: the words a rule's pattern cannot match without, to skip text no rule can fire on cheaply.

Owns: :class:`Triggers` (what one pattern needs: whole words, or substrings of the casefolded text),
:func:`triggers_of` (a pattern -> its :class:`Triggers`, or None when it needs no fixed text) and
:class:`Folded` (a text casefolded once, with its words, for many :meth:`Triggers.found` checks).
Issue 13 (the daemon's backfill speed: a rule's regex runs only on text holding one of its words).

Sound by construction, never a guess: a pattern's match always holds one of its triggers, so
``not triggers.found(text)`` proves ``pattern.search(text)`` is None. A trigger is a run of literal
characters the pattern must match (an optional or repeated atom, a class, ``.``, an escape other
than a literal one or a look-around ends a run; an alternation needs one run of each branch); it is a
*word* when ``\\b``, ``^``, ``$`` or whitespace bound it on both sides and it is all word
characters, checked against the text's words, otherwise a substring of the casefolded text.
Casefolding keeps every case-insensitive match (``ı`` is also folded to ``i``, as ``re`` matches them).

Never: changes what a rule matches (it only says where it cannot), reads anything but the pattern's
text, or imports anything outside the standard library. A pattern it cannot read (verbose, inline
flags, named groups) gets None: it is always searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from mmd.core.lazyre import lazy_compile

__all__ = ["Folded", "Triggers", "branches", "triggers_of"]

_WORDS = lazy_compile(r"\w+")
_DOTLESS = str.maketrans({"ı": "i"})
# one character the regex matches literally when escaped, and the escapes that bound a word
_LITERAL_ESCAPES = frozenset("\\.*+?()[]{}|^$-/~'\":,;!&#%@=<>")
_BOUNDS = frozenset("bsAZ")
_QUANTIFIERS = "?*{"


class Folded:
    """A text casefolded once, with its words, for checking many :class:`Triggers` against it.

    Attributes:
        text: the casefolded text (``ı`` folded to ``i``).
        words: the casefolded ``\\w+`` runs of the original text (a run is cut where the
            original's words are, whatever casefolding does to a character).
        ascii: the text is all ASCII (no part with another character can be in it).
    """

    __slots__ = ("ascii", "text", "words")

    def __init__(self, text: str) -> None:
        self.ascii = text.isascii()
        if self.ascii:
            self.text = text.lower()
            self.words = frozenset(_WORDS.findall(self.text))
        else:
            self.text = text.casefold().translate(_DOTLESS)
            self.words = frozenset(w.casefold().translate(_DOTLESS) for w in _WORDS.findall(text))


@dataclass(frozen=True, slots=True)
class Triggers:
    """What one pattern cannot match without: one of ``words`` as a word, or one of ``parts`` anywhere.

    Attributes:
        words: whole words, casefolded.
        parts: substrings of the casefolded text.
    """

    words: frozenset[str]
    parts: tuple[str, ...]
    ascii_parts: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ascii_parts", tuple(p for p in self.parts if p.isascii()))

    def found(self, folded: Folded) -> bool:
        """Whether the text may match: one of the words is among its words, or a part is in it."""
        if not self.words.isdisjoint(folded.words):
            return True
        text = folded.text
        return any(part in text for part in (self.ascii_parts if folded.ascii else self.parts))

    def __or__(self, other: Triggers) -> Triggers:
        return Triggers(self.words | other.words, tuple(dict.fromkeys(self.parts + other.parts)))


# --- reading a pattern ----------------------------------------------------------------------------
# A sequence is a list of atoms: ("lit", char), ("bound",) (\b ^ $ whitespace: a word cannot run on
# across it), ("gap",) (anything else), ("alt", [sequence, …]) (a group of one or more branches).

_Atom = tuple[object, ...]


class _Unreadable(Exception):
    pass


def _structure(pattern: str) -> Iterator[tuple[int, str, int]]:
    """``(index, character, depth)`` of each ``(``, ``)`` and ``|`` of ``pattern`` outside escapes and
    character classes; depth counts the groups open after the character."""
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            i += 1 if pattern[i + 1 : i + 2] == "^" else 0  # "[^" and "[]" / "[^]" open a class
            i += 1 if pattern[i + 1 : i + 2] == "]" else 0
        elif char in "()|":
            depth += {"(": 1, ")": -1, "|": 0}[char]
            yield i, char, depth
        i += 1


def branches(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern (``a|b|(?:c|d)`` -> ``a``, ``b``, ``(?:c|d)``), escapes and
    character classes respected; a pattern without a top-level ``|`` is one branch."""
    out, start = [], 0
    for i, char, depth in _structure(pattern):
        if char == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
    out.append(pattern[start:])
    return out


def _group_end(pattern: str, i: int) -> int:
    """The index after the ``)`` closing the group opened at ``pattern[i] == "("``."""
    for at, char, depth in _structure(pattern[i:]):
        if char == ")" and depth == 0:
            return i + at + 1
    raise _Unreadable(pattern)


def _atoms(pattern: str) -> list[_Atom]:
    """The atoms of one branch (no top-level ``|``)."""
    atoms: list[_Atom] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "(":
            end = _group_end(pattern, i)
            inner = pattern[i + 1 : end - 1]
            if inner.startswith("?:"):
                atom: _Atom = ("alt", [_atoms(b) for b in branches(inner[2:])])
            elif inner.startswith(("?=", "?!", "?<=", "?<!")):
                atom = ("gap",)  # a look-around matches no text of its own
            elif inner.startswith("?"):
                raise _Unreadable(pattern)  # inline flags, named groups, conditionals
            else:
                atom = ("alt", [_atoms(b) for b in branches(inner)])
            i = end
        elif char == "[":
            end = i + 1
            end += 1 if pattern[end : end + 1] == "^" else 0
            end += 1 if pattern[end : end + 1] == "]" else 0
            end = pattern.index("]", end) + 1
            atom, i = ("gap",), end
        elif char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped in _BOUNDS or escaped.isspace():
                atom = ("bound",)
            elif escaped in _LITERAL_ESCAPES:
                atom = ("lit", escaped)
            else:
                atom = ("gap",)
            i += 2
        elif char in "^$" or char.isspace():
            atom, i = ("bound",), i + 1
        elif char in ".|)":
            atom, i = ("gap",), i + 1
        else:
            atom, i = ("lit", char), i + 1
        if i < len(pattern) and pattern[i] in _QUANTIFIERS + "+":
            optional = pattern[i] in _QUANTIFIERS and not re.match(r"\{[1-9]", pattern[i:])
            i = (pattern.index("}", i) + 1) if pattern[i] == "{" else i + 1
            i += 1 if pattern[i : i + 1] in ("?", "+") else 0  # lazy or possessive
            if optional or atom[0] != "lit":
                atom = ("gap",)  # an optional atom, or a repeated one: no fixed text
            else:
                atoms.append(atom)  # "a+" holds "a", then anything
                atom = ("gap",)
        atoms.append(atom)
    return atoms


def _need(atoms: list[_Atom], left: bool, right: bool) -> Triggers | None:
    """The best triggers of a sequence bounded (``left``/``right``: by a word boundary) or not."""
    best: Triggers | None = None
    run: list[str] = []
    run_left = left

    def close(bounded_right: bool) -> None:
        nonlocal best
        piece = "".join(run).casefold().translate(_DOTLESS)
        if piece:
            word = run_left and bounded_right and bool(re.fullmatch(r"\w+", piece))
            found = Triggers(frozenset({piece}) if word else frozenset(), () if word else (piece,))
            best = _better(best, found)

    for n, atom in enumerate(atoms):
        kind = atom[0]
        if kind == "lit":
            if not run:
                run_left = n == 0 and left or n > 0 and atoms[n - 1][0] == "bound"
            run.append(str(atom[1]))
            continue
        close(kind == "bound")
        run = []
        if kind == "alt":
            branches = atom[1]
            assert isinstance(branches, list)
            before = n == 0 and left or n > 0 and atoms[n - 1][0] == "bound"
            after = n == len(atoms) - 1 and right or n + 1 < len(atoms) and atoms[n + 1][0] == "bound"
            union: Triggers | None = Triggers(frozenset(), ())
            for branch in branches:
                need = _need(branch, before, after)
                union = None if union is None or need is None else union | need
            if union is not None and branches:
                best = _better(best, union)
    close(right)
    return best


# words in most sentences: a trigger made of them is checked, but skips little
_COMMON = frozenset("""a an the to of in on at is it be do so we i you if or and not no for that this
what from has can does use now only just make keep like need want would should every next good real thing""".split())


def _cost(t: Triggers) -> float:
    """About how often the triggers are in a sentence, smaller is better: the sum over them, a common
    word 20, another word 1 + 6/length, a part 2 + 12/length (200 when it is one or two ASCII
    characters: in most sentences)."""
    return (sum(20.0 if w in _COMMON else 1 + 6 / len(w) for w in t.words)
            + sum(200.0 if len(p) <= 2 and p.isascii() else 2 + 12 / len(p) for p in t.parts))


def _better(a: Triggers | None, b: Triggers) -> Triggers:
    return b if a is None or _cost(b) < _cost(a) else a


def triggers_of(pattern: re.Pattern[str]) -> Triggers | None:
    """What ``pattern`` cannot match without, or None when a match may hold no fixed text.

    Read from ``pattern.pattern``: each top-level branch needs its own triggers, the pattern the
    union. None for a branch without a fixed run (``[\\s\\S]``, ``\\w+``) and for patterns with
    the VERBOSE flag, inline flags or groups other than ``(?:…)``, ``(…)`` and look-arounds.
    """
    if pattern.flags & re.VERBOSE:
        return None
    try:
        union: Triggers | None = None
        for branch in branches(pattern.pattern):
            need = _need(_atoms(branch), False, False) if branch else None
            if need is None:
                return None
            union = need if union is None else union | need
        return union
    except (_Unreadable, ValueError):
        return None
