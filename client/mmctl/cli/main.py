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

Exit codes: 0 done; 1 the operation failed (``ok: false``, not found, a broken
file, no daemon); 2 usage error. The reference exits 1 for usage errors too;
that and the ``mmctl:`` prefix of messages are our two listed deviations.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TextIO

from mmd.core.errors import MMError

from ..pins import pinned_clock, pinned_fts5
from .output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Ctx, Failure
from .parser import UsageError, parse_args

__all__ = ["COMMANDS", "HELP", "main"]

HELP = """\
mmctl — Memory Standard Protocol CLI (client of the mmd daemon)

Usage:
  mmctl init [--root PATH] [--json]
  mmctl write <topic> --content TEXT [--budget N] [--summary S] [--tags T] [--root PATH] [--json]
  mmctl read [topic] [--all] [--root PATH] [--json]
  mmctl list [--root PATH] [--json]
  mmctl search <query> [--mode auto|scan|fts5] [--limit N] [--root PATH] [--json]
  mmctl budget [--root PATH] [--json]
  mmctl digest [--file PATH] [--text TEXT] [--max-items N] [--topic-hint S] [--root PATH] [--json]
  mmctl delete <topic> [--root PATH] [--json]
  mmctl uri <topic> [--root PATH]
  mmctl help

Beyond the reference CLI:
  mmctl status [--root PATH] [--json]                      the daemon's state (needs the daemon)
  mmctl queue list [--status S] [--limit N] [--offset N] [--json]   the review queue (needs the daemon)
  mmctl queue show <id> [--json]
  mmctl queue accept <id> [--topic T] [--content C] [--summary S] [--tags T] [--replace] [--json]
  mmctl queue reject <id> [--reason R] [--json]
  mmctl watch [--topic T] [--count N] [--json]             print events as they come (needs the daemon)
  mmctl nudge [--root PATH] [--json]                       the nudge report
  mmctl guide [--lang en|zh]                               the agents' guide to this memory
  mmctl doctor [--fix] [--root PATH] [--json]              dangling entries, orphan files, malformed notes
  mmctl mcp [--lang en|zh] [--root PATH]                   serve the MCP tools over stdio

Topics are ASCII slugs (content may be any language). Budgets are deterministic:
an over-budget write errors with usage metrics and never truncates.
When an mmd daemon owns the root, writes go through it; otherwise mmctl writes
the files itself under the root's lock. Exit codes: 0 done, 1 failed, 2 usage error.
"""


COMMANDS: dict[str, str] = {
    **dict.fromkeys(("init", "write", "read", "list", "search", "budget", "digest", "delete", "uri"), "reference"),
    "status": "status", "watch": "status", "queue": "queue", "nudge": "guide", "guide": "guide", "doctor": "doctor",
}
"""Command name → the module of ``mmctl.cli`` whose ``cmd_<name>`` runs it (imported lazily: ``read`` stays light).
``mcp`` is not here: it runs :func:`mmctl.mcp.server.serve`."""


def _run(command: str, ctx: Ctx) -> int:
    """Run ``command`` (a key of :data:`COMMANDS`, or ``mcp``); returns its exit code."""
    if command == "mcp":
        from ..mcp.server import serve

        return serve(ctx.root_flag(), ctx.args.text("--lang") or "en", ctx.env)
    from importlib import import_module

    module = import_module(f"{__package__}.{COMMANDS[command]}")
    return int(getattr(module, f"cmd_{command}")(ctx))


def main(argv: list[str] | None = None, *, env: Mapping[str, str] | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run one ``mmctl`` command; returns the exit code (the console script exits with it).

    Args:
        argv: the arguments after the program name (default ``sys.argv[1:]``).
        env: the environment (default ``os.environ``).
        stdout, stderr: where to print (default the process's, written as UTF-8).
    """
    environ = os.environ if env is None else env
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    ctx = Ctx(args, environ, stdout or sys.stdout, stderr or sys.stderr)
    command = args.positionals[0] if args.positionals else None
    try:
        try:
            ctx.now = pinned_clock(environ)
        except ValueError as error:
            raise UsageError(str(error)) from None
        ctx.fts5 = pinned_fts5(environ)
        if command in (None, "help", "--help", "-h"):
            ctx.write(HELP)
            return EXIT_OK
        if command not in COMMANDS and command != "mcp":
            raise UsageError(f"unknown command: {command}\n{HELP}")
        return _run(command, ctx)
    except UsageError as error:
        ctx.error(error.message)
        return EXIT_USAGE
    except Failure as error:
        ctx.error(error.message)
        return EXIT_FAILED
    except MMError as error:
        # The reference lets these escape as "internal error: MemoryError: …"; we keep that first line
        # (scripts and the vectors match on it) and add what to do on the next one.
        ctx.error(f"internal error: MemoryError: {error.message}")
        ctx.error(_hint(error))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_FAILED
    except Exception as error:  # noqa: BLE001 - a person gets one line, not a traceback
        from ..errors import MmctlError

        if isinstance(error, MmctlError):
            ctx.error(error.message)
            return EXIT_FAILED
        ctx.error(f"internal error: {type(error).__name__}: {error}")
        if environ.get("MMCTL_DEBUG") == "1":
            import traceback

            ctx.err.write(traceback.format_exc())
        else:
            ctx.error("this is a bug in mmctl; run again with MMCTL_DEBUG=1 for the traceback and report it")
        return EXIT_FAILED


def _hint(error: MMError) -> str:
    code = error.code.value
    if code == "E_PARSE":
        return "a file under the memory root is not mm v1; `mmctl doctor` shows what is wrong"
    if code == "E_INVALID":
        return "topics are ASCII slugs: letters, digits, '.', '_' and '-' (see `mmctl help`)"
    if code == "E_IO":
        return "check that the memory root (--root, $DSH_MEMORY_ROOT or $DSH_HOME/memory) is writable"
    return "see `mmctl help`"
