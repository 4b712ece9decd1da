"""Regular expressions compiled on first use (issue 17: a one-shot ``mmctl read`` compiles only what it runs).

Owns: :func:`lazy_compile`. Never: changes what a pattern matches. After the first
use the compiled pattern's methods are bound on the placeholder itself, so later
calls cost what a module-level compiled pattern costs.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["lazy_compile"]

_METHODS = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer")


class _LazyPattern:
    """Stands for ``re.compile(pattern, flags)`` until an attribute is first read."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        compiled = re.compile(*self._args)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile{self._args!r}"


def lazy_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled when first used (``match``, ``search``, ``sub``, … and any attribute).

    Raises:
        re.error: on first use, for a bad pattern (patterns here are constants, checked by the tests).
    """
    return _LazyPattern(pattern, flags)  # type: ignore[return-value]
