"""Hidden text: characters that change what a reader sees, or hide what an agent reads (issue 29).

Owns: the one table of hidden characters and its exceptions, :func:`find_hidden`,
:func:`has_hidden`, :func:`escape_hidden` and :func:`reveal` (what hidden text says, for a screen to read). Hidden are

- bidi controls: U+202A–202E (embeddings, overrides), U+2066–2069 (isolates),
  U+200E/U+200F (marks) and U+061C (Arabic letter mark);
- zero-width characters: U+200B–200D, U+2060 and U+FEFF anywhere but first;
- tag characters U+E0000–E007F (they spell ASCII no one sees);
- other invisible format characters: U+00AD, U+034F, U+180E, U+2061–2064, U+206A–206F,
  U+FFF9–FFFB, U+1BCA0–1BCA3, U+1D173–1D17A, the Hangul fillers U+115F, U+1160, U+3164,
  U+FFA0, and variation selectors that follow no character they could vary (a run of
  them can carry bytes).

Not hidden: a ZWJ inside an emoji sequence (👨‍👩‍👧), a ZWJ or ZWNJ between letters of
a script that needs them (Persian می‌خواهم, Devanagari, Sinhala, Khmer …), one variation
selector after its base (❤️), an ideographic variation selector after a CJK ideograph,
and the tag characters of an emoji subdivision flag (🏴 + tags + U+E007F).

Code points are the unit of every index; lines are 1-based, counted by ``\\n``. Never:
imports anything but the standard library (the core's write door imports this module).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["Hidden", "escape_hidden", "find_hidden", "has_hidden", "reveal"]

_CANDIDATES = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"  # bidi
    "\u200b-\u200d\u2060\ufeff"  # zero-width
    "\U000e0000-\U000e007f"  # tags
    "\u00ad\u034f\u180e\u2061-\u2064\u206a-\u206f\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers
    "\ufe00-\ufe0f\U000e0100-\U000e01ef]")  # variation selectors
"""Every character that may be hidden text; :func:`_is_hidden` applies the exceptions."""

_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")
_JOINERS = frozenset("\u200c\u200d")

_JOINING_SCRIPTS = ((0x0600, 0x08FF), (0x0900, 0x0DFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x18AF),
                    (0xA8E0, 0xA8FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFC), (0x11000, 0x111FF))
"""Scripts whose spelling uses ZWJ/ZWNJ: Arabic, Syriac, Thaana, N'Ko; the Indic scripts (Devanagari to Sinhala);
Tibetan; Myanmar; Khmer and Mongolian; Devanagari Extended; Arabic presentation forms; Brahmi to Sharada."""
_EMOJI = ((0x1F000, 0x1FAFF), (0x2190, 0x21FF), (0x2300, 0x23FF), (0x2460, 0x27BF), (0x2900, 0x297F),
          (0x2B00, 0x2BFF), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3299), (0x00A9, 0x00A9),
          (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122), (0x2139, 0x2139),
          (0x20E3, 0x20E3), (0xFE0F, 0xFE0F))
"""Code points an emoji ZWJ sequence is made of (pictographs, symbols, skin tones, keycap, VS16)."""
_CJK = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F))
_FLAG = 0x1F3F4
"""🏴, the base of an emoji subdivision flag (its tag letters follow, ended by U+E007F)."""


def _in(ch: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in ranges)


class Hidden:
    """One hidden character of a text.

    Attributes:
        index: its position, in code points. line: its line (1-based).
        char: the character itself. code: ``U+202E``. name: its Unicode name (``RIGHT-TO-LEFT OVERRIDE``).
        kind: ``bidi`` | ``zero-width`` | ``tag`` | ``format``.
    """

    __slots__ = ("char", "code", "index", "kind", "line", "name")

    def __init__(self, index: int, line: int, char: str) -> None:
        self.index, self.line, self.char = index, line, char
        self.code = f"U+{ord(char):04X}"
        self.name = unicodedata.name(char, "TAG" if 0xE0000 <= ord(char) <= 0xE007F else self.code)
        self.kind = "bidi" if char in _BIDI else "zero-width" if char in _ZERO_WIDTH else \
            "tag" if 0xE0000 <= ord(char) <= 0xE007F else "format"

    def to_json(self) -> dict[str, object]:
        """``{index, line, code, name, kind}`` (the character itself left out: it shows nothing)."""
        return {"index": self.index, "line": self.line, "code": self.code, "name": self.name, "kind": self.kind}

    def __repr__(self) -> str:
        return f"Hidden({self.code} {self.kind} at {self.index}, line {self.line})"


def _base_before(text: str, i: int) -> str:
    """The character before ``i``, skipping combining marks (a virama, a vowel sign), or ""."""
    j = i - 1
    while j >= 0 and unicodedata.category(text[j]).startswith("M") and text[j] not in _ZERO_WIDTH:
        j -= 1
    return text[j] if j >= 0 else ""


def _in_flag(text: str, i: int) -> bool:
    """Whether the tag character at ``i`` belongs to an emoji subdivision flag: 🏴, 1–6 tag letters or digits,
    U+E007F."""
    start = i
    while start > 0 and 0xE0020 <= ord(text[start - 1]) <= 0xE007E:
        start -= 1
    end = i
    while end < len(text) and 0xE0020 <= ord(text[end]) <= 0xE007E:
        end += 1
    letters = text[start:end]
    return (start > 0 and ord(text[start - 1]) == _FLAG and 1 <= len(letters) <= 6 and end < len(text)
            and ord(text[end]) == 0xE007F and all(0xE0030 <= ord(c) <= 0xE0039 or 0xE0061 <= ord(c) <= 0xE007A
                                                  for c in letters))


def _is_hidden(text: str, i: int) -> bool:
    """Whether the candidate character at ``i`` is hidden text, after the exceptions of the module docstring."""
    ch = text[i]
    code = ord(ch)
    before = text[i - 1] if i else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if ch == "\ufeff":
        return i > 0
    if ch in _JOINERS:
        if ch == "\u200d" and before and after and _in(before, _EMOJI) and _in(after, _EMOJI):
            return False
        base = _base_before(text, i)
        return not (base and _in(base, _JOINING_SCRIPTS) and after and (
            _in(after, _JOINING_SCRIPTS) or unicodedata.category(after).startswith("M")))
    if 0xE0000 <= code <= 0xE007F:
        if code == 0xE007F:
            return not (i > 0 and 0xE0020 <= ord(before) <= 0xE007E and _in_flag(text, i - 1))
        return not _in_flag(text, i)
    if 0xFE00 <= code <= 0xFE0F:
        return not before or before.isspace() or _CANDIDATES.match(before) is not None
    if 0xE0100 <= code <= 0xE01EF:
        return not (before and _in(before, _CJK))
    return True


def find_hidden(text: str) -> list[Hidden]:
    """Every hidden character of ``text``, in order (see the module docstring for what counts)."""
    found: list[Hidden] = []
    line, counted = 1, 0
    for match in _CANDIDATES.finditer(text):
        i = match.start()
        if _is_hidden(text, i):
            line += text.count("\n", counted, i)
            counted = i
            found.append(Hidden(i, line, text[i]))
    return found


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds hidden text (stops at the first)."""
    return any(_is_hidden(text, m.start()) for m in _CANDIDATES.finditer(text))


def escape_hidden(text: str) -> str:
    """``text`` with each hidden character shown as ``\\u{202E}`` (upper-case hex, at least four digits); the rest
    unchanged, so plain text, emoji sequences and Persian stay as they are."""
    found = find_hidden(text)
    if not found:
        return text
    from .spans import replace_spans

    return replace_spans(text, ((h.index, h.index + 1, f"\\u{{{ord(h.char):04X}}}") for h in found))


def reveal(text: str) -> str:
    """``text`` as an agent reading it would take it in, for a screen to read (:func:`mmd.screen.instructions.flags`):
    each hidden tag character (U+E0020–E007E) as the ASCII character it spells, every other hidden character
    dropped (``ig\u200bnore`` reads ``ignore``); the rest unchanged. Never shown to a person: :func:`escape_hidden`
    is what a surface shows."""
    found = find_hidden(text)
    if not found:
        return text
    from .spans import replace_spans

    return replace_spans(text, ((h.index, h.index + 1, chr(ord(h.char) - 0xE0000) if 0xE0020 <= ord(h.char) <= 0xE007E
                                 else "") for h in found))
