"""Codex's ``codex_hooks`` feature flag, switched in ``config.toml`` as text: every other byte kept (issue 28).

Codex runs hooks only with ``[features] codex_hooks = true`` in its ``config.toml``
(https://developers.openai.com/codex/hooks). The file is the user's, so it is never loaded and
dumped again: :func:`enable` adds (or turns on) one line and marks each line it adds with
:data:`MARK`, keeping a line it replaced as a comment above its own; :func:`disable` takes exactly
those lines out and puts the replaced line back, so the file comes back byte for byte. Lines are
found with multi-line strings skipped; the result is checked with :mod:`tomllib` (the flag must read
as set, or unset, and the file must still parse), else the edit is refused.

Owns: finding the flag's line and the marked lines. Never: reads or writes files.
"""

from __future__ import annotations

import re
import tomllib

from mmd.core.errors import ErrorCode, MMError

__all__ = ["MARK", "disable", "enable", "flag_set"]

MARK = "# added by mmctl hooks install codex"
"""The comment that ends every line :func:`enable` adds."""
_BREAK = " (with the line break before it)"
"""Added to :data:`MARK` on a first line that needed a line break after a file's unterminated last line."""
_WAS = "#mmctl-was: "
"""Begins the comment line that keeps a line :func:`enable` replaced."""
_HEADER = re.compile(r"^[ \t]*\[[ \t]*(?P<name>[^\[\]#]+?)[ \t]*\][ \t]*(#.*)?$")
_FLAG = re.compile(r"""^[ \t]*(?P<key>(features[ \t]*\.[ \t]*)?("codex_hooks"|'codex_hooks'|codex_hooks))[ \t]*=""")


def flag_set(text: str, name: str = "config.toml") -> bool | None:
    """``features.codex_hooks`` of ``text`` (None when unset).

    Raises:
        MMError(E_PARSE): if ``text`` is not valid TOML.
    """
    try:
        value = tomllib.loads(text).get("features", {})
    except tomllib.TOMLDecodeError as error:
        raise MMError(ErrorCode.E_PARSE, f"{name} is not valid TOML ({error}); fix it by hand (nothing was "
                                         "changed)") from None
    flag = value.get("codex_hooks") if isinstance(value, dict) else None
    return flag if isinstance(flag, bool) else None


def _lines(text: str) -> list[tuple[str, bool]]:
    """Each line with whether it begins outside a multi-line string (only those can be a header or a key)."""
    out: list[tuple[str, bool]] = []
    inside: str | None = None
    for line in text.splitlines(keepends=True):
        out.append((line, inside is None))
        for quote in re.findall(r'"""|\'\'\'', line):
            if inside is None:
                inside = quote
            elif quote == inside:
                inside = None
    return out


def _table(name: str) -> str:
    return re.sub(r"[ \t]*\.[ \t]*", ".", name).replace('"', "").replace("'", "")


def enable(text: str, name: str = "config.toml") -> tuple[str, str | None]:
    """``text`` with ``[features] codex_hooks = true``, and what was done (None: it was on already).

    Raises:
        MMError(E_PARSE | E_INVALID): the file is not TOML, or the flag is set in a way only a person
            should change (an inline ``features = {…}`` table); nothing is changed.
    """
    if flag_set(text, name) is True:
        return text, None
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = _lines(text)
    table, features_at, flag_at, dotted = "", -1, -1, False
    for i, (line, free) in enumerate(lines):
        if not free:
            continue
        header = _HEADER.match(line.rstrip("\r\n"))
        if header and not line.lstrip().startswith("[["):
            table = _table(header["name"])
            if table == "features" and features_at < 0:
                features_at = i
            continue
        flag = _FLAG.match(line)
        if flag and (table == "features") != (flag["key"].startswith("features")) and table in ("", "features"):
            flag_at, dotted = i, flag["key"].startswith("features")
    body = [line for line, _ in lines]
    ours = f"codex_hooks = true {MARK}"
    if flag_at >= 0:  # codex_hooks = false: kept as a comment above ours
        kept = body[flag_at]
        bare = kept.rstrip("\r\n")
        body[flag_at] = f"{_WAS}{bare}{newline}{'features.' if dotted else ''}{ours}{kept[len(bare):]}"
        action = "turned on codex_hooks (it was off; uninstall puts the old line back)"
    elif features_at >= 0:
        body.insert(features_at + 1, ours + newline)
        action = "added codex_hooks = true under [features]"
    else:
        lead = ""
        if text and not text.endswith("\n"):
            lead = newline
        body.append(f"{lead}[features] {MARK}{_BREAK if lead else ''}{newline}{ours}{newline}")
        action = "added [features] codex_hooks = true"
    new = "".join(body)
    try:
        done = flag_set(new, name)
    except MMError:
        done = None
    if done is not True:
        raise MMError(ErrorCode.E_INVALID, f"{name} sets its features in a way mmctl does not edit (an inline "
                                           "table?); add codex_hooks = true under [features] by hand (nothing "
                                           "was changed)")
    return new, action


def disable(text: str, name: str = "config.toml") -> tuple[str, str | None]:
    """``text`` without the lines :func:`enable` added (a replaced line put back), and what was done (None:
    it holds none of them).

    Raises:
        MMError(E_PARSE): the file, or the file without our lines, is not TOML (nothing is changed).
    """
    flag_set(text, name)
    out: list[str] = []
    changed = False
    for line, free in _lines(text):
        bare = line.rstrip("\r\n")
        if free and (bare.endswith(MARK) or bare.endswith(MARK + _BREAK)):
            changed = True
            if bare.endswith(_BREAK) and out:
                out[-1] = out[-1].rstrip("\r\n") if out[-1].endswith("\n") else out[-1]
            if out and out[-1].startswith(_WAS):  # the line ours replaced, with our line's ending (its own)
                out.append(out.pop()[len(_WAS):].rstrip("\r\n") + line[len(bare):])
            continue
        out.append(line)
    if not changed:
        return text, None
    new = "".join(out)
    flag_set(new, name)
    return new, "took out the codex_hooks line mmctl added"
