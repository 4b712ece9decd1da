"""Help for one action of a command that has several (``mmctl queue accept --help``).

Owns: which options each action of ``mmctl queue`` reads (:data:`QUEUE_ACTIONS`), the help text of one
action (:func:`action_help`) and its usage line for a usage error (:func:`action_usage`), built from the
command table (:data:`.parser.COMMANDS`): the action's line of the command's epilog, its ids, its options.
Loaded only when such help is asked for, or a queue command line is refused.

Never: parses a command line for running (:func:`.parser.parse_args` does), or prints.
"""

from __future__ import annotations

import argparse

from .parser import COMMANDS, PROG, Command, Pos, add_arguments

__all__ = ["QUEUE_ACTIONS", "action_help", "action_usage"]

QUEUE_ACTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "list": ("", ("--status", "--limit", "--offset", "--all", "--min-score", "--project", "--agent", "--session")),
    "show": ("ID", ()),
    "accept": ("ID...", ("--topic", "--into", "--content", "--file", "--summary", "--tags", "--replace")),
    "reject": ("ID...", ("--below", "--dry-run", "--reason")),
    "undo": ("ID...", ()),
}
"""``mmctl queue``'s actions: the ids each takes (``""``, one ``ID``, ``ID...``) and the options it reads."""


def action_help(name: str, action: str) -> str | None:
    """The help of ``mmctl <name> <action>``: usage with only the action's options, its line of the command's
    epilog as the description, and the command's epilog after its action list. None when ``name`` has no
    per-action help or ``action`` is not one of its actions."""
    parser = _action_parser(name, action)
    return parser.format_help() if parser is not None else None


def action_usage(name: str, action: str) -> str | None:
    """The one-line usage of ``mmctl <name> <action>`` (``usage: mmctl queue list [-h] …``), or None."""
    parser = _action_parser(name, action)
    return " ".join(parser.format_usage().split()) if parser is not None else None


def _action_parser(name: str, action: str) -> argparse.ArgumentParser | None:
    if name != "queue" or action not in QUEUE_ACTIONS:
        return None
    command = COMMANDS[name]
    ids, flags = QUEUE_ACTIONS[action]
    overview, _, notes = command.epilog.partition("\n\n")
    row = next((row for row in overview.splitlines() if row.split()[:1] == [action]), "")
    line = row.strip().split("   ", 1)[-1].strip()  # "  accept ID [ID…]   write each …" -> "write each …"
    id_pos = command.positionals[1]
    only = Command(f"{name} {action}", command.module, line,
                   (Pos(id_pos.name, id_pos.help, many=ids == "ID...", kind=id_pos.kind),) if ids else (),
                   tuple(o for o in command.options if o.flag in flags), json=command.json)
    parser = argparse.ArgumentParser(prog=f"{PROG} {name} {action}", description=only.summary,
                                     epilog=notes or None, formatter_class=argparse.RawDescriptionHelpFormatter)
    return add_arguments(parser, only)
