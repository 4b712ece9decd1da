"""The screen: what must not be remembered as is — secrets, instructions aimed at an agent, hidden text (issue 29).

Owns: one module per concern, each holding its patterns in one place:
:mod:`.secrets` (``find_secrets``, ``redact``), :mod:`.instructions` (``flags``) and
:mod:`.hidden` (``find_hidden``, ``escape_hidden``). Every function takes a text and returns
plain values (findings never carry a secret's value), so every surface — the core store's
write door, the candidate rules, injection, the daemon, ``mmctl`` — screens the same way.

Arrows: the standard library only; :mod:`.secrets` loads the ``detect-secrets`` plugins'
patterns lazily, the first time a text holds a token-like run, so a one-shot read, a hook
or a prose write never imports it. :mod:`mmd.core` may import :mod:`.hidden` (stdlib only)
for its own always-on check. Never: reads files, writes anything, or imports another mmd package.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .hidden import Hidden, escape_hidden, find_hidden, reveal
    from .instructions import Flag, flags
    from .secrets import Finding, find_secrets, redact

# Names load on first use (PEP 562): the core's write door imports .hidden alone.
_HOME = {"Hidden": "hidden", "escape_hidden": "hidden", "find_hidden": "hidden", "reveal": "hidden",
         "Flag": "instructions", "flags": "instructions", "Finding": "secrets", "find_secrets": "secrets",
         "redact": "secrets"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Finding", "Flag", "Hidden", "escape_hidden", "find_hidden", "find_secrets", "flags", "redact", "reveal"]
