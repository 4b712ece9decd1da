"""The command line of ``mmctl``: one table of commands (:data:`COMMANDS`), parsed with :mod:`argparse`.

Owns: the commands' parsing, from the table of :mod:`.table` (``mmctl --help``, ``mmctl help COMMAND`` and ``mmctl
COMMAND --help`` all come from it), and turning argv into :class:`Args`. Every command takes ``--root PATH``;
the ones that print a result take ``--json``. Options and positionals may come in any order
(``parse_intermixed_args``); a value that starts with ``--`` is given as ``--summary='--- draft'`` (quoted: the
shell splits it otherwise). Refused with :class:`UsageError` (exit code 2): unknown commands and options, extra
positionals, bad choices, an option without its value, and every value the table can check
(:func:`.checks.check_values`: integers and their range, empty paths, review dates, client keys, candidate ids);
exit code 1 is left for what fails on the data. Integers are read as the reference CLI reads them (JavaScript's
``Number()``, :func:`.checks.js_number`: ``0x10`` is 16). Nothing here prints or exits: help and version text come
back as :class:`Shown`.
"""

from __future__ import annotations

from .table import AGENTS, COMMANDS, JSON, PROJECT, ROOT, UNSCOPED, USER, Command, Opt, Pos, common_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable
    from typing import Any, NoReturn

__all__ = ["AGENTS", "COMMANDS", "JSON", "PROJECT", "PROG", "ROOT", "UNSCOPED", "USER", "Args", "Command", "Opt",
           "Pos", "Shown", "UsageError", "add_arguments", "common_options", "parse_args", "usage_line"]

PROG = "mmctl"


class UsageError(Exception):
    """A usage error (missing argument, bad flag value, unknown command): exit code 2.

    Attributes:
        message: what is wrong, one line.
        usage: the command's one-line usage (``usage: mmctl write …``), or "" when none applies.
    """

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class Shown(Exception):
    """Not an error: the command line asked for help or the version; ``text`` goes to stdout, exit code 0."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Args:
    """A parsed command line: ``flags`` maps ``--name`` to its string value or ``True``; ``positionals`` are
    ``[command, *its positionals]``."""

    def __init__(self, flags: dict[str, str | bool] | None = None, positionals: list[str] | None = None) -> None:
        self.flags: dict[str, str | bool] = flags if flags is not None else {}
        self.positionals: list[str] = positionals if positionals is not None else []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Args) and (self.flags, self.positionals) == (other.flags, other.positionals)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Args(flags={self.flags!r}, positionals={self.positionals!r})"

    def text(self, name: str) -> str | None:
        """The flag's string value, or None when absent."""
        value = self.flags.get(name)
        return value if isinstance(value, str) else None

    def flag(self, name: str) -> bool:
        """True for a given switch."""
        return self.flags.get(name) is True

    def integer(self, name: str) -> int | None:
        """A non-negative integer flag read as JavaScript's ``Number()`` would, or None when absent.

        Raises:
            UsageError: ``<name> expects a non-negative integer (got "<raw>")`` for anything else.
        """
        raw = self.text(name)
        if raw is None:
            return None
        import math  # loaded only by a command given an integer option

        from .checks import js_number

        number = js_number(raw)
        if not math.isfinite(number) or number != int(number) or number < 0:
            raise UsageError(f'{name} expects a non-negative integer (got "{raw}")')
        return int(number)

    def number(self, name: str) -> float | None:
        """A finite number flag (``0.6``, ``1e-1``; a score), or None when absent.

        Raises:
            UsageError: ``<name> expects a number (got "<raw>")`` for anything else (``nan``, ``inf``, ``x``).
        """
        raw = self.text(name)
        if raw is None:
            return None
        import math  # loaded only by a command given a number option

        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise UsageError(f'{name} expects a number (got "{raw}")')
        return number


def _builder() -> type[argparse.ArgumentParser]:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            from .suggest import reworded  # loaded only for a refusal

            raise UsageError(reworded(self.prog, message), " ".join(self.format_usage().split()))

        def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
            raise Shown(message or "")

        def print_help(self, file: Any = None) -> None:
            raise Shown(self.format_help())

    return Parser


def _meant(word: str, words: Iterable[str]) -> str:
    from .suggest import did_you_mean  # loaded only for a mistyped word

    return did_you_mean(word, words)


def command_parser(command: Command) -> argparse.ArgumentParser:
    """The argparse parser of one command (help text, choices and metavars from the table)."""
    import argparse

    parser = _builder()(prog=f"{PROG} {command.name}", description=command.summary, epilog=command.epilog or None,
                        allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    return add_arguments(parser, command)


def add_arguments(parser: argparse.ArgumentParser, command: Command) -> argparse.ArgumentParser:
    """Declare ``command``'s positionals and options (with ``--root`` and, if it prints a result, ``--json``)."""
    import argparse

    for pos in command.positionals:
        parser.add_argument(pos.name, nargs="*" if pos.many else "?", help=pos.help, default=pos.default,
                            choices=pos.choices, metavar=pos.name.upper())
    for opt in (*command.options, *common_options(command)):
        dest = opt.flag[2:].replace("-", "_")
        if opt.kind == "switch":
            parser.add_argument(opt.flag, action="store_true", help=opt.help, dest=dest)
        else:
            parser.add_argument(opt.flag, metavar=opt.metavar, help=opt.help, choices=opt.choices, dest=dest,
                                nargs="?" if opt.bare_is_missing else None, default=argparse.SUPPRESS)
    return parser


def usage_line(name: str) -> str:
    """The one-line usage of command ``name`` (``usage: mmctl write [-h] …``), or "" for an unknown name."""
    command = COMMANDS.get(name)
    return " ".join(command_parser(command).format_usage().split()) if command else ""


def _command_word(argv: list[str]) -> int | None:
    """The index of the command in ``argv``: the first word that is not an option or an option's value."""
    valued = {o.flag for c in COMMANDS.values() for o in (*c.options, ROOT, PROJECT) if o.kind != "switch"}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--" or not word.startswith("-") or word == "-":
            return i + 1 if word == "--" and i + 1 < len(argv) else (None if word == "--" else i)
        i += 2 if word in valued else 1
    return None


def parse_args(argv: list[str]) -> Args:
    """Parse ``argv`` (without the program name) against :data:`COMMANDS`.

    Raises:
        UsageError: for anything the table refuses (message and the command's one-line usage).
        Shown: for ``--help``, ``-h``, ``--version``, ``help [COMMAND]`` or no command at all.
    """
    from mmd import __version__

    at = _command_word(argv)
    if at is None:
        if "--version" in argv:
            raise Shown(f"{PROG} {__version__}\n")
        known = {o.flag for c in COMMANDS.values() for o in (*c.options, ROOT, PROJECT, USER, JSON)} | {"-h", "--help"}
        unknown = [w for w in argv if w.startswith("-") and w.split("=", 1)[0] not in known]
        if unknown:
            raise UsageError(f"unknown option {unknown[0]}{_meant(unknown[0].split('=')[0], known | {'--version'})}",
                             f"usage: {PROG} COMMAND [ARGS] | {PROG} --version")
        raise Shown(_help_text())
    name = argv[at]
    command = COMMANDS.get(name)
    if command is None:
        raise UsageError(f"unknown command: {name}{_meant(name, COMMANDS)}",
                         f"usage: {PROG} COMMAND [ARGS]; commands: {', '.join(COMMANDS)}")
    rest = argv[:at] + argv[at + 1:]
    if command.name == "queue" and {"-h", "--help"} & set(rest):
        _action_help(command.name, rest)
    quick = _plain_parse(command, rest) if name != "help" else None
    if quick is not None:
        return quick
    parser = command_parser(command)
    try:
        namespace = parser.parse_intermixed_args(rest)
    except UsageError as error:  # `queue list --status bogus`: the list's usage, not every action's
        error.usage = _action_usage(command.name, rest) or error.usage
        raise
    values = vars(namespace)
    if name == "help":
        return _help(values.get("command"))
    args = Args(positionals=[name])
    for pos in command.positionals:
        value = values.pop(pos.name, None)
        args.positionals += value if isinstance(value, list) else ([value] if value is not None else [])
    for opt in (*command.options, *common_options(command)):
        value = values.get(opt.flag[2:].replace("-", "_"))
        if value is True or isinstance(value, str):
            args.flags[opt.flag] = value
    from .checks import check_values

    return check_values(command, args)


def _plain_parse(command: Command, rest: list[str]) -> Args | None:
    """``rest`` parsed without argparse when it is plainly valid, else None (argparse then decides).

    Plainly valid: only positionals that do not start with ``-``, known switches, known options as
    ``--opt=value`` or ``--opt value`` (the value not starting with ``-``), within the positionals' count,
    choices and integers of the table. argparse reads such a line the same way; a one-shot ``read`` then
    never builds a parser.
    """
    options = {o.flag: o for o in (*command.options, *common_options(command))}
    args = Args(positionals=[command.name])
    words: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if not word.startswith("-"):
            words.append(word)
        else:
            name, eq, value = word.partition("=")
            opt = options.get(name)
            if opt is None or (opt.kind == "switch" and eq) or name in ("-h", "--help"):
                return None
            if opt.kind == "switch":
                args.flags[name] = True
            elif eq:
                args.flags[name] = value
            elif i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                i += 1
                args.flags[name] = rest[i]
            else:
                return None
            if opt.choices and args.flags[name] not in opt.choices:
                return None
        i += 1
    return _place(command, words, args)


def _place(command: Command, words: list[str], args: Args) -> Args | None:
    """``words`` given to the command's positionals (None when they do not fit), then the integers checked."""
    many = any(p.many for p in command.positionals)
    if len(words) > len(command.positionals) and not many:
        return None
    for pos, word in zip(command.positionals, words, strict=False):
        if pos.choices and not pos.many and word not in pos.choices:
            return None
    args.positionals += words
    if not words and command.positionals and command.positionals[0].default is not None:
        args.positionals.append(command.positionals[0].default)
    from .checks import check_values

    return check_values(command, args)  # argparse passes a bad value too: the message is ours either way


def _action_help(name: str, rest: list[str]) -> None:
    """Raise :class:`Shown` with the help of the action ``rest`` names (``queue accept -h``), if it names one: its
    first word that is no option nor an option's value."""
    from .actions import action_help

    at = _command_word(rest)
    text = action_help(name, rest[at]) if at is not None else None
    if text is not None:
        raise Shown(text)


def _action_usage(name: str, rest: list[str]) -> str | None:
    from .actions import action_usage

    at = _command_word(rest)
    return action_usage(name, rest[at]) if at is not None else None


def _help_text() -> str:
    from .helptext import render_help  # only --help pays for it
    return render_help()


def _help(topic: str | None) -> NoReturn:
    if topic is None:
        raise Shown(_help_text())
    command = COMMANDS.get(topic)
    if command is None:
        raise UsageError(f"help: unknown command {topic!r}{_meant(topic, COMMANDS)}",
                         f"usage: {PROG} help [COMMAND]; commands: {', '.join(COMMANDS)}")
    raise Shown(command_parser(command).format_help())
