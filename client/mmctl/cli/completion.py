"""``mmctl completion bash|zsh|fish``: the shell completion script, generated from the command table by shtab.

Owns: one argparse parser with a subparser per command of
:data:`~.parser.COMMANDS` (the same declarations the commands parse with),
handed to ``shtab.complete``; topics complete from the index (``mmctl list``).
Never does: install the script (the command's help says where it goes).
"""

from __future__ import annotations

import argparse

from .output import EXIT_OK, Ctx
from .parser import COMMANDS, PROG, add_arguments

__all__ = ["cmd_completion", "completion_parser"]

_TOPICS = f"{PROG} list 2>/dev/null | grep -v '^(no notes)$'"
"""The shell command that lists the topics a positional ``TOPIC`` completes to."""


def completion_parser() -> argparse.ArgumentParser:
    """``mmctl`` as one argparse parser with a subparser per command (for completion only)."""
    import shtab

    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--version", action="store_true")
    commands = parser.add_subparsers(dest="command")
    for command in COMMANDS.values():
        sub = add_arguments(commands.add_parser(command.name, help=command.summary), command)
        for action in sub._actions:
            if action.dest == "topic" and not action.option_strings:
                action.complete = shtab.cmd(_TOPICS)  # type: ignore[attr-defined]
            elif action.metavar == "PATH":
                action.complete = shtab.FILE  # type: ignore[attr-defined]
    return parser


def cmd_completion(ctx: Ctx) -> int:
    """``completion SHELL``: print the script for ``bash``, ``zsh`` or ``fish`` on stdout."""
    import shtab

    shell = ctx.rest[0] if ctx.rest else ""
    if not shell:
        from .parser import UsageError

        raise UsageError("completion requires a <shell>: bash, zsh or fish")
    ctx.write(shtab.complete(completion_parser(), shell=shell))
    return EXIT_OK
