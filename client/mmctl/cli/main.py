"""``mmctl``: the command line. The reference CLI (``dsh-memory``) exactly, plus the daemon's commands.

This is the composition root of a CLI call: the only place that reads
``sys.argv`` and ``os.environ``. Environment it reads besides mm v1's
(``DSH_MEMORY_ROOT``, ``DSH_HOME``, ``XDG_RUNTIME_DIR``):

- ``MMCTL_NOW``: an ISO-8601 time that pins the clock (``loadedAt``, ``updated``
  of direct writes). A testing aid: the conformance runner pins it to the vectors' clock.
- ``MMCTL_FTS5``: ``0`` or ``1`` forces SQLite FTS5 off or on for direct
  searches (testing aid: the vectors assume it is unavailable).
- ``MMCTL_NO_DAEMON``: ``1`` never looks for a daemon (work on the files only).
- ``MMCTL_DEBUG``: ``1`` prints the traceback of an internal error.
- ``MMCTL_HOOK_BUDGET_MS``: how long a hook waits for its daemon (default 700 ms; a testing aid).

Exit codes: 0 done; 1 the operation failed (``ok: false``, not found, a broken
file, no daemon); 2 usage error. The reference exits 1 for usage errors too;
that and the ``mmctl:`` prefix of messages are listed deviations (``tests/test_conformance.py``).
Arguments are parsed by :mod:`.parser` (argparse, from one table of commands).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from mmd.core.errors import ErrorCode, MMError

from ..pins import pinned_clock, pinned_fts5
from .output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Ctx, Failure, fix_for, print_refusal
from .parser import COMMANDS, Args, Shown, UsageError, parse_args, usage_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, TextIO

__all__ = ["main"]


def _run(command: str, ctx: Ctx) -> int:
    """Run ``command`` (a key of :data:`~.parser.COMMANDS`); returns its exit code."""
    if command == "mcp":
        from ..mcp.server import serve

        if ctx.args.text("--project") is None and not ctx.args.flag("--user"):
            import os

            try:  # an agent starts its MCP server in the folder it works in: that project, whatever --root says
                ctx.scope_for_session(os.getcwd(), session=False)
            except OSError:
                pass
        return serve(ctx.root_flag(), ctx.args.text("--lang") or "en", ctx.env, scope=ctx.scope())
    from importlib import import_module

    module = import_module(f"{__package__}.{COMMANDS[command].module}")
    return int(getattr(module, f"cmd_{command}")(ctx))


def main(argv: list[str] | None = None, *, env: Mapping[str, str] | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None, stdin: BinaryIO | None = None) -> int:
    """Run one ``mmctl`` command; returns the exit code (the console script exits with it).

    Args:
        argv: the arguments after the program name (default ``sys.argv[1:]``).
        env: the environment (default ``os.environ``).
        stdout, stderr: where to print (default the process's, written as UTF-8).
        stdin: where ``--content -`` reads the body (default the process's stdin, as bytes).
    """
    environ = os.environ if env is None else env
    ctx = Ctx(Args(), environ, stdout or sys.stdout, stderr or sys.stderr, stdin)
    try:
        ctx.args = parse_args(_arguments(sys.argv[1:] if argv is None else list(argv)))
        command = ctx.args.positionals[0]
        try:
            ctx.now = pinned_clock(environ)
        except ValueError as error:
            raise UsageError(str(error)) from None
        ctx.fts5 = pinned_fts5(environ)
        return _run(command, ctx)
    except Shown as shown:
        ctx.write(shown.text)
        return EXIT_OK
    except UsageError as error:
        ctx.error(error.message)
        usage = error.usage or (usage_line(ctx.args.positionals[0]) if ctx.args.positionals else "")
        if usage:
            ctx.err.write(usage + "\n")
        return EXIT_USAGE
    except Failure as error:
        ctx.error(error.message)
        return EXIT_FAILED
    except MMError as error:
        # The reference lets these escape as "internal error: MemoryError: …". They are the user's to fix, not
        # bugs: the code and the message (the thing and the value), then the fix (conformance rule
        # "core-error-named", tests/conformance_rules.py).
        from mmd.core.config_file import ConfigError

        ctx.error(error.message if isinstance(error, ConfigError) else f"{error.code.value}: {error.message}")
        ctx.error(fix_for(error, ctx))
        print_refusal(ctx, error.code.value, error.message, error.details)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_FAILED
    except Exception as error:  # noqa: BLE001 - a person gets one line, not a traceback
        from ..errors import MmctlError

        if isinstance(error, MmctlError):
            ctx.error(error.message)
            print_refusal(ctx, error.code, error.message, error.data.get("details"))
            return EXIT_FAILED
        ctx.error(f"internal error: {type(error).__name__}: {error}")
        if environ.get("MMCTL_DEBUG") == "1":
            import traceback

            ctx.err.write(traceback.format_exc())
        else:
            ctx.error("this is a bug in mmctl; run again with MMCTL_DEBUG=1 for the traceback and report it")
        return EXIT_FAILED


def _arguments(argv: list[str]) -> list[str]:
    """``argv`` as text; an argument that is not valid UTF-8 (Python decodes it with surrogates) is refused.

    Raises:
        Failure: ``E_INVALID: argument N is not valid UTF-8 …`` (exit code 1), naming the bytes.
    """
    for number, word in enumerate(argv, 1):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            shown = word.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise Failure(f"{ErrorCode.E_INVALID.value}: argument {number} is not valid UTF-8: {shown!r}; "
                          "give text in UTF-8") from None
    return argv

