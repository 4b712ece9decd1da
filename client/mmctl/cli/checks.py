"""The values ``mmctl``'s parser checks before any command runs: the checked kinds of :class:`.parser.Opt` and
:class:`.parser.Pos`.

Owns: what a well-formed integer, positive integer, path, review date, client key
and candidate id is on the command line, and the usage error naming the flag and
the value. Never reads a memory root, never asks the daemon: a value refused here
fails the same way on every root (exit code 2, with the command's usage line);
what fails on the data (a missing topic, a budget) is the commands' (exit code 1).
"""

from __future__ import annotations

from mmd.core.lazyre import lazy_compile

from .parser import ROOT, Args, Command, Opt, UsageError, usage_line

__all__ = ["check_values", "js_number"]

_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = lazy_compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = {"0x": 16, "0o": 8, "0b": 2}

_ID_LIMIT = 2**63


def check_values(command: Command, args: Args) -> Args:
    """``args`` when every value of a checked kind is well formed (see :class:`Opt` and :class:`Pos`).

    The checks need no memory root and no daemon: integers and their range, a non-empty path,
    a review date (``YYYY-MM-DD`` or ``<N>d|w|m|y``, :mod:`mmd.core.review_date`), a client key
    (1 to 200 code points, no control characters), a candidate id (a positive integer below 2**63).

    Raises:
        UsageError: naming the flag or the positional and the value, with the command's usage line.
    """
    try:
        for opt in (*command.options, ROOT):
            raw = args.text(opt.flag)
            if raw is not None:
                _check_option(opt, raw, args)
        words = args.positionals[1:] if any(p.kind == "id" for p in command.positionals) else []
        for raw in words[1:]:  # the action, then the ids
            if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) < _ID_LIMIT):
                raise UsageError(f"{command.name} {words[0]}: a candidate id is a positive integer (got {raw!r}); "
                                 "`mmctl queue list` shows the ids")
    except UsageError as error:
        raise UsageError(error.message, error.usage or usage_line(command.name)) from None
    return args


def _check_option(opt: Opt, raw: str, args: Args) -> None:
    """Refuse ``raw`` when it is not of ``opt``'s kind (:func:`check_values`)."""
    if opt.kind == "int":
        args.integer(opt.flag)
    elif opt.kind == "number":
        args.number(opt.flag)
    elif opt.kind == "posint" and args.integer(opt.flag) == 0:
        raise UsageError(f'{opt.flag} expects a positive integer (got "{raw}")')
    elif opt.kind == "path" and not raw.strip():
        raise UsageError(f"{opt.flag} expects a path, not an empty value")
    elif opt.kind == "key" and (not raw.strip() or len(raw) > 200 or any(ord(c) < 0x20 or ord(c) == 0x7F
                                                                          for c in raw)):
        raise UsageError(f"{opt.flag} expects 1 to 200 characters without control characters (got {raw!r})")
    elif opt.kind == "date" and raw != "":
        from datetime import UTC, datetime

        from mmd.core.errors import MMError
        from mmd.core.review_date import resolve_review_after

        try:
            resolve_review_after(raw, datetime.now(UTC).date())
        except MMError as error:
            raise UsageError(f"{opt.flag}: {error.message}") from None


def js_number(raw: str) -> float:
    """JavaScript ``Number(raw)`` for a string: blank is 0, ``0x``/``0o``/``0b`` prefixes, NaN for garbage."""
    import math

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
