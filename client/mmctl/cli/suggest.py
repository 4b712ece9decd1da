"""What a mistyped word on the command line was most likely meant to be: an option, a command, a choice, a topic.

Owns: the near words (:func:`near`: :mod:`difflib`'s ratio, at least :data:`CUTOFF` and within
:data:`CLOSE` of the closest, the closest first) and the sentences that offer them: argparse's
refusals reworded with the option meant (``unknown option --sumary (did you mean --summary?)``;
the value typed after it is not called an unexpected argument), a bad choice with the one meant,
an unknown command with the command meant, a topic with no note with the topics near it. Loaded
only once something was mistyped. Never: prints, exits, or reads the memory (callers pass the
words in).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

__all__ = ["CUTOFF", "did_you_mean", "near", "reworded"]

CUTOFF = 0.6
"""Least similarity (difflib's ratio, 0–1) of a word offered for a mistyped one."""
CLOSE = 0.1
"""A word is offered beside the closest one only when its ratio is within this of the closest's (``--stauts``:
``--status`` at 0.875, not ``--tags`` at 0.714)."""

_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def near(word: str, words: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``words`` nearest to ``word`` (see the module docstring), the closest first; never ``word``."""
    matcher = difflib.SequenceMatcher(b=word)
    scored = []
    for candidate in sorted(set(words) - {word}):
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF and matcher.ratio() >= CUTOFF:
            scored.append((matcher.ratio(), candidate))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [w for ratio, w in scored[:n] if ratio >= scored[0][0] - CLOSE]


def did_you_mean(word: str, words: Iterable[str], quote: str = "") -> str:
    """`` (did you mean X?)`` / `` (did you mean X or Y?)`` for the words near ``word`` (each between
    ``quote``), or "" when none is."""
    found = [f"{quote}{w}{quote}" for w in near(word, words)]
    if not found:
        return ""
    return f" (did you mean {', '.join(found[:-1])} or {found[-1]}?)" if len(found) > 1 else \
        f" (did you mean {found[0]}?)"


def reworded(prog: str, message: str, options: Mapping[str, bool] | None = None) -> str:
    """argparse's ``message`` for the command ``prog`` (``mmctl write``), as mmctl says it.

    ``unrecognized arguments`` becomes ``unknown option …`` (with the option meant, out of
    ``options``: ``{flag: takes a value}``, by default the command's in :data:`.parser.COMMANDS`)
    and ``unexpected argument …``; a word right after a mistyped option whose meant option takes
    a value is that value, not an unexpected argument. A bad choice names the choice meant.
    """
    if options is None:
        from .parser import COMMANDS, JSON, ROOT

        command = COMMANDS.get(prog.split(" ", 1)[-1])
        flags = (*command.options, ROOT, *((JSON,) if command.json else ())) if command else ()
        options = {o.flag: o.kind != "switch" for o in flags} | {"--help": False}
    if message.startswith("unrecognized arguments: "):
        words = message.split(": ", 1)[1].split(" ")
        unknown: list[str] = []
        extra: list[str] = []
        i = 0
        while i < len(words):
            word = words[i]
            if word.startswith("-") and len(word) > 1:
                flag = word.split("=", 1)[0]
                meant = near(flag, options, n=1)
                unknown.append(flag + did_you_mean(flag, options))
                if meant and options[meant[0]] and "=" not in word and i + 1 < len(words) \
                        and not words[i + 1].startswith("-"):
                    i += 1  # its value
            else:
                extra.append(word)
            i += 1
        parts = ([f"unknown option {', '.join(unknown)}"] if unknown else []) + \
            ([f"unexpected argument {', '.join(repr(w) for w in extra)}"] if extra else [])
        message = "; ".join(parts)
    else:
        found = _CHOICE.search(message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            message += did_you_mean(found.group(1), choices, "'").replace(" (", " — ", 1).rstrip(")")
    return f"{prog.split(' ', 1)[-1]}: {message}"
