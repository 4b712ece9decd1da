"""The command line as the reference CLI reads it: ``--k=v``, ``--k v``, bare ``--k``, positionals.

Quirks kept on purpose (``src/cli.ts`` ``parseArgs``): a ``--flag`` followed by
a word that does not start with ``--`` takes it as its value, except the
valueless flags (:data:`VALUELESS`); a flag at the end or before another
``--flag`` is ``True``; ``-h`` is a positional; the last occurrence of a flag
wins; integers are read with JavaScript's ``Number()``. Nothing here prints or exits.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = ["VALUELESS", "Args", "UsageError", "js_number", "parse_args"]

VALUELESS = frozenset({"--json", "--all", "--fix", "--replace"})
"""Flags that never take the next word as their value (the reference's two, plus ``--fix``)."""

_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = {"0x": 16, "0o": 8, "0b": 2}


class UsageError(Exception):
    """Raised by the CLI for a usage error (missing argument, bad flag value, unknown command): exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Args:
    """Parsed argv: ``flags`` maps ``--name`` to its string value or ``True``; ``positionals`` in order."""

    flags: dict[str, str | bool] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)

    def text(self, name: str) -> str | None:
        """The flag's string value, or None when absent or given without a value."""
        value = self.flags.get(name)
        return value if isinstance(value, str) else None

    def flag(self, name: str) -> bool:
        """True for a bare ``--name`` or ``--name=true`` (the reference's ``flagBool``)."""
        return self.flags.get(name) is True or self.text(name) == "true"

    def integer(self, name: str) -> int | None:
        """A non-negative integer flag read as JavaScript's ``Number()`` would, or None when absent.

        Raises:
            UsageError: ``<name> expects a non-negative integer (got "<raw>")`` for anything else.
        """
        raw = self.text(name)
        if raw is None:
            return None
        number = js_number(raw)
        if not math.isfinite(number) or number != int(number) or number < 0:
            raise UsageError(f'{name} expects a non-negative integer (got "{raw}")')
        return int(number)


def parse_args(argv: list[str]) -> Args:
    """Split ``argv`` (without the program name) the way the reference does."""
    args = Args()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if eq:
                args.flags[name] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--") and arg not in VALUELESS:
                args.flags[arg] = argv[i + 1]
                i += 1
            else:
                args.flags[arg] = True
        else:
            args.positionals.append(arg)
        i += 1
    return args


def js_number(raw: str) -> float:
    """JavaScript ``Number(raw)`` for a string: blank is 0, ``0x``/``0o``/``0b`` prefixes, NaN for garbage."""
    text = raw.strip(_JS_SPACE)
    if not text:
        return 0.0
    radix = _RADIX.get(text[:2].lower())
    if radix is not None:
        try:
            return float(int(text[2:], radix)) if text[2:].isalnum() else math.nan
        except ValueError:
            return math.nan
    if text.lstrip("+-") == "Infinity" and text.count("+") + text.count("-") <= 1:
        return -math.inf if text.startswith("-") else math.inf
    if _DECIMAL.fullmatch(text):
        return float(text)
    return math.nan
