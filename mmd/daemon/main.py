"""``mmd``: the console script. Builds the one :class:`~.config.Config` and runs the :class:`~.lifecycle.Daemon`.

This is the composition root: the only place that reads ``sys.argv`` and
``os.environ`` and hands them down. The daemon's modules are imported once the command line asks for a daemon:
``mmd --version``, a refused argument, ``mmd service`` and the git merge driver (git runs it during a merge of
a ``--git`` root) never load them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from mmd import __version__

__all__ = ["main", "merge_driver_command"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the daemon; returns the exit code (see ``lifecycle.EXIT_*``).

    With no arguments: resolve the root as mm v1 §2 does, create it if missing, serve.
    ``mmd service install|uninstall|status`` manages the user service (:mod:`.service`);
    ``mmd merge-index BASE OURS THEIRS PATH`` is the git merge driver (:mod:`.git.driver`), which
    git runs itself during a merge of a root kept with ``--git``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["service"]:
        from .service import main as service_main

        return service_main(args[1:], os.environ)
    if args[:1] == ["merge-index"]:
        from .git.driver import main as driver_main

        return driver_main(args[1:])
    from .config import ConfigError, build_config, parse_args

    env = dict(os.environ)
    try:
        flags = parse_args(args, env)
    except SystemExit as stop:
        return int(stop.code or 0)
    if flags.pop("version", False):
        print(f"mmd {__version__}")
        return 0
    import asyncio

    from .lifecycle import EXIT_CONFIG, Daemon
    from .logs import setup_logging

    try:
        config = build_config(flags, env)
    except ConfigError as error:
        print(f"mmd: {error.message}", file=sys.stderr)  # worded by mmd.core.config_file, as mmctl prints it
        return EXIT_CONFIG
    setup_logging(config.log_level, config.journal)
    daemon = Daemon(config, reload_config=lambda: build_config(flags, dict(os.environ)),
                    merge_driver=merge_driver_command())
    code = asyncio.run(daemon.serve())
    if daemon.failure is not None:
        print(f"mmd: {daemon.failure}", file=sys.stderr)
    return code


def merge_driver_command() -> list[str]:
    """The command git runs as the merge driver: this ``mmd`` by absolute path, plus ``merge-index``.

    The installed console script when ``mmd`` was started as one, else this Python running this module.
    """
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "mmd" and os.access(script, os.X_OK):
        return [script, "merge-index"]
    return [os.path.abspath(sys.executable), "-m", "mmd.daemon.main", "merge-index"]


if __name__ == "__main__":
    sys.exit(main())
