"""``mmctl --help``: the commands of :data:`~.parser.COMMANDS`, one line each, and how the memory behaves."""

from __future__ import annotations

from .parser import COMMANDS, PROG

__all__ = ["render_help"]

_TAIL = """\
Topics are ASCII slugs (content may be any language). Budgets are deterministic:
an over-budget write errors with usage metrics and never truncates.
When an mmd daemon owns the root, writes go through it; otherwise mmctl writes
the files itself under the root's lock. Only init and writes create a root.
Exit codes: 0 done, 1 failed, 2 usage error. `mmctl help COMMAND` for more.
"""



def render_help() -> str:
    """``mmctl --help``: the commands of :data:`COMMANDS`, one line each, and how the memory behaves."""
    def rows(reference: bool) -> str:
        chosen = [c for c in COMMANDS.values() if c.reference == reference]
        width = max(len(name) for name in COMMANDS)
        return "".join(f"  {c.name:<{width}}  {c.summary}\n" for c in chosen)

    return (f"{PROG} — Memory Standard Protocol CLI (client of the mmd daemon)\n\n"
            f"Usage: {PROG} COMMAND [ARGS] [--root PATH] [--json]\n       {PROG} --version\n\n"
            f"The reference CLI's commands:\n{rows(True)}\nBeyond the reference CLI:\n{rows(False)}\n{_TAIL}")
