"""``mmd service install|uninstall|status``: run mmd as a user service (systemd or launchd).

Renders the unit templates shipped in ``mmd/daemon/units/`` with the command
of this installation (``sys.executable -m mmd.daemon.main``), writes them where
the user's service manager looks, and drives the manager, printing every step.
Nothing here runs as root or touches system-wide folders.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["ServicePlan", "main", "plan", "render_plist", "render_unit"]

UNIT_NAME = "mmd.service"
AGENT_LABEL = "local.mmd"
CARRIED_ENV = ("DSH_HOME", "DSH_MEMORY_ROOT", "XDG_CONFIG_HOME")
"""Variables the installing shell had that decide the daemon's root and config; the unit keeps them."""


def _template(name: str) -> str:
    return resources.files("mmd.daemon").joinpath("units", name).read_text(encoding="utf-8")


def daemon_command(extra: Sequence[str] = ()) -> list[str]:
    """The argv that runs this installation's daemon: this Python, ``-m mmd.daemon.main``, then ``extra``."""
    return [sys.executable, "-m", "mmd.daemon.main", *extra]


def render_unit(command: Sequence[str], environment: Mapping[str, str] | None = None) -> str:
    """The systemd user unit with ``ExecStart`` set to ``command`` and ``Environment=`` lines (quoted for systemd)."""
    exec_line = " ".join(_systemd_quote(arg) for arg in command)
    env_lines = "".join(f"Environment={_systemd_quote(f'{k}={v}')}\n" for k, v in (environment or {}).items())
    return _template("mmd.service").replace("@ENVIRONMENT@", env_lines).replace("@EXEC@", exec_line)


def render_plist(command: Sequence[str], log_dir: Path, environment: Mapping[str, str] | None = None) -> str:
    """The launchd agent running ``command`` with ``environment``, logging to ``log_dir/mmd.log``."""
    from xml.sax.saxutils import escape

    pairs = "".join(f"\n    <key>{escape(k)}</key>\n    <string>{escape(v)}</string>"
                    for k, v in (environment or {}).items())
    text = _template("mmd.plist").replace("@LOGDIR@", escape(str(log_dir)))
    text = text.replace("@ENVIRONMENT@", pairs + ("\n  " if pairs else ""))
    program = "\n    ".join(f"<string>{escape(arg)}</string>" for arg in command)
    head, _, rest = text.partition("<string>@PYTHON@</string>")
    rest = rest.split("</array>", 1)[1]
    return f"{head}{program}\n  </array>{rest}"


def _systemd_quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "/._-=:@+," for c in arg):
        return arg.replace("%", "%%")
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$") + '"'


@dataclass(frozen=True)
class ServicePlan:
    """What one action does: the file to write or remove, its text, and the manager commands, in order."""

    manager: str
    path: Path
    text: str | None
    commands: list[list[str]]


def plan(action: str, *, platform: str, home: Path, uid: int, extra: Sequence[str] = (),
         start: bool = True, env: Mapping[str, str] | None = None) -> ServicePlan:
    """The steps of ``action`` (``install`` | ``uninstall`` | ``status``) for ``platform`` (``sys.platform``).

    ``env`` is the installing environment: :data:`CARRIED_ENV` variables set there go into the unit,
    and ``$XDG_CONFIG_HOME`` places the systemd unit (``~/.config`` otherwise).

    Raises:
        ValueError: for an unknown action or a platform with neither systemd nor launchd.
    """
    command = daemon_command(extra)
    environ = env or {}
    carried = {k: environ[k] for k in CARRIED_ENV if environ.get(k)}
    if platform == "darwin":
        path = home / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        domain = f"gui/{uid}"
        steps = {
            "install": [["launchctl", "bootstrap", domain, str(path)]] if start else [],
            "uninstall": [["launchctl", "bootout", f"{domain}/{AGENT_LABEL}"]],
            "status": [["launchctl", "print", f"{domain}/{AGENT_LABEL}"]],
        }
        text = render_plist(command, home / "Library" / "Logs" / "mmd", carried)
        manager = "launchd"
    elif platform.startswith("linux"):
        path = Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user" / UNIT_NAME
        systemctl = ["systemctl", "--user"]
        steps = {
            # try-restart: an install over a running unit applies its new flags (enable --now leaves it running
            # as it was); a unit not running is left alone, and enable --now starts it
            "install": [[*systemctl, "daemon-reload"], *([[*systemctl, "try-restart", UNIT_NAME]] if start else []),
                        [*systemctl, "enable", *(["--now"] if start else []), UNIT_NAME]],
            "uninstall": [[*systemctl, "disable", "--now", UNIT_NAME], [*systemctl, "daemon-reload"]],
            "status": [[*systemctl, "status", "--no-pager", UNIT_NAME]],
        }
        text = render_unit(command, carried)
        manager = "systemd"
    else:
        raise ValueError(f"no user service manager known for platform {platform!r} (systemd or launchd)")
    if action not in steps:
        raise ValueError(f"unknown action {action!r}: install, uninstall or status")
    return ServicePlan(manager, path, text if action == "install" else None, steps[action])


Runner = Callable[[list[str]], int]


def _run(argv: list[str]) -> int:
    try:
        return subprocess.run(argv, check=False).returncode
    except FileNotFoundError:
        print(f"mmd service: {argv[0]} not found", file=sys.stderr)
        return 127


def _quiet(argv: list[str]) -> int:
    """``argv``'s exit status, its output dropped; 127 when the program is not on PATH (as a shell says)."""
    try:
        return subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    except FileNotFoundError:
        return 127


def execute(action: str, steps: ServicePlan, *, dry_run: bool, run: Runner = _run,
            out: Callable[[str], None] = print) -> int:
    """Carry out ``steps``, printing each; returns the exit code (the first failing command's, or 0)."""
    if action == "install" and steps.text is not None:
        if dry_run:
            out(f"would write {steps.path}:\n{steps.text}")
        else:
            steps.path.parent.mkdir(parents=True, exist_ok=True)
            steps.path.write_text(steps.text, encoding="utf-8")
            out(f"wrote {steps.path}")
    code = 0
    for argv in steps.commands:
        out(("would run: " if dry_run else "running: ") + shlex.join(argv))
        if not dry_run:
            code = run(argv)
            if code != 0 and action != "status":
                out(f"mmd service: {shlex.join(argv)} exited {code}")
                return code
    if action == "uninstall":
        if dry_run:
            out(f"would remove {steps.path}")
        elif steps.path.exists():
            steps.path.unlink()
            out(f"removed {steps.path}")
        else:
            out(f"{steps.path} was not there")
    return code


def user_bus(env: Mapping[str, str]) -> bool:
    """Whether a systemd user bus is reachable: ``$DBUS_SESSION_BUS_ADDRESS``, or ``$XDG_RUNTIME_DIR/bus``."""
    if env.get("DBUS_SESSION_BUS_ADDRESS"):
        return True
    runtime = env.get("XDG_RUNTIME_DIR")
    return bool(runtime) and os.path.exists(os.path.join(str(runtime), "bus"))


def status_words(steps: ServicePlan, *, bus: bool, run: Runner | None = None) -> str:
    """The user service's state in words: ``installed: yes|no, enabled: …, running: …`` (systemd).

    ``enabled`` is read from the ``default.target.wants`` link; ``running`` asks
    ``systemctl --user is-active`` (``unknown`` without a bus, naming ``mmctl status`` to ask the daemon);
    a unit not installed gets a second line naming ``mmd service install``.
    """
    installed = steps.path.is_file()
    enabled = (steps.path.parent / "default.target.wants" / UNIT_NAME).exists()
    hint = "" if installed else "\nnot installed as a user service: `mmd service install` installs and starts it"
    if not bus:
        running = "unknown (no systemd user bus here to ask; `mmctl status` says whether a daemon answers)"
    else:
        code = (run or _quiet)(["systemctl", "--user", "is-active", "--quiet", UNIT_NAME])
        running = ("unknown (systemctl is not on PATH; `mmctl status` says whether a daemon answers)" if code == 127
                   else "yes" if code == 0 else "no")
    return (f"{steps.path}: installed: {'yes' if installed else 'no'}, enabled: {'yes' if enabled else 'no'}, "
            f"running: {running}{hint}")


def _without_bus(action: str, steps: ServicePlan) -> int:
    """``install`` refused, ``uninstall`` done on the file alone, ``status`` in words: no systemd user bus."""
    if action == "install":
        print("mmd service: no systemd user bus here ($XDG_RUNTIME_DIR/bus is missing: log in to a systemd user "
              "session, or `loginctl enable-linger $USER`), so the service cannot be enabled; nothing was "
              "installed", file=sys.stderr)
        return 1
    if action == "status":
        print(status_words(steps, bus=False))
        return 0
    if steps.path.exists():
        steps.path.unlink()
        wants = steps.path.parent / "default.target.wants" / UNIT_NAME
        if wants.is_symlink():
            wants.unlink()
        print(f"removed {steps.path} (no systemd user bus: nothing to disable)")
    else:
        print(f"{steps.path} was not there")
    return 0


def main(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """``mmd service …``; returns the exit code (2 for a usage error, 1 for a failed step).

    On Linux without a systemd user bus, ``install`` says so and writes nothing,
    ``uninstall`` removes the unit file, ``status`` reports in words.
    """
    parser = argparse.ArgumentParser(prog="mmd service", description="Run mmd as a user service.")
    parser.add_argument("action", choices=("install", "uninstall", "status"))
    parser.add_argument("--dry-run", action="store_true", help="print the file and commands, change nothing")
    parser.add_argument("--no-start", action="store_true", help="install and enable without starting")
    args, extra = parser.parse_known_args(list(argv))
    if extra and extra[0] == "--":
        extra = extra[1:]
    if extra and args.action != "install":
        parser.error(f"unexpected arguments: {' '.join(extra)}")
    if extra:  # the unit's daemon flags are refused now, as `mmd` would refuse them, not at the unit's start
        from .config import parse_args as daemon_flags

        daemon_flags(extra, env)
    home = Path(env.get("HOME") or Path.home())
    try:
        steps = plan(args.action, platform=sys.platform, home=home, uid=os.getuid(), extra=extra,
                     start=not args.no_start, env=env)
    except ValueError as error:
        print(f"mmd service: {error}", file=sys.stderr)
        return 2
    if steps.manager == "systemd" and not user_bus(env) and not args.dry_run:
        return _without_bus(args.action, steps)
    existed = steps.path.exists()
    code = execute(args.action, steps, dry_run=args.dry_run)
    if args.action == "install" and code != 0 and not existed and not args.dry_run and steps.path.exists():
        steps.path.unlink()
        print(f"removed {steps.path} again: the install did not finish")
    if args.action == "status" and steps.manager == "systemd":
        print(status_words(steps, bus=True))
    return code
