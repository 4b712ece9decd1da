"""One CLI call's context: parsed args, environment, streams, how to print, where the memory is.

Printing follows the reference: JSON is one line (``JSON.stringify``) and a
newline; messages on stderr start with ``mmctl: ``. Exit codes have names here.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path

from mmd.core.clock import Clock, system_clock
from mmd.core.errors import ErrorCode, MMError
from mmd.core.paths import INDEX_NAME

from .parser import Args

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, TextIO

if TYPE_CHECKING:
    from mmd.core.memory import Memory
    from mmd.core.options import MemoryOptions

    from ..backend import Daemon, Direct
    from ..scope import Scope

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "PROG", "Ctx", "Failure", "aligned", "fix_for", "js_json",
           "print_refusal"]

EXIT_OK = 0
"""The command did what was asked."""
EXIT_FAILED = 1
"""The operation failed: ``ok: false``, not found, a broken file, no daemon."""
EXIT_USAGE = 2
"""Usage error: missing argument, bad flag value, unknown command."""
PROG = "mmctl"
"""The prefix of messages on stderr."""


class Failure(Exception):
    """Raised by a command to stop with exit code 1 after printing ``mmctl: <message>`` on stderr."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _plain(value: Any) -> Any:
    """JavaScript's number printing: integral floats lose their ``.0``, NaN and infinities become null."""
    if isinstance(value, float):
        import math  # only a float pays for it

        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII kept, key order kept."""
    import json  # only a --json call pays for it

    try:
        text = json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"))
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON.stringify escapes those
        text = json.dumps(_plain(value), separators=(",", ":"))
    return text


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None or value == "" else str(value)


def aligned(rows: list[tuple[str, Any]]) -> str:
    """``key  value`` lines with the values in one column; nested values are flattened to ``k=v, …``."""
    width = max((len(k) for k, _ in rows), default=0)
    return "".join(f"{k.ljust(width)}  {_flat(v)}\n" for k, v in rows)


def _utf8(stream: TextIO) -> TextIO:
    if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower().replace("-", "") != "utf8":
        stream.reconfigure(encoding="utf-8")
    return stream


def _not_a_root(root: Path) -> str:
    """What is wrong with ``root`` (no MEMORY.md under it) and a fix that works for that case."""
    if root.exists() and not root.is_dir():
        holder = root.parent
        if (holder / INDEX_NAME).is_file():
            return f"is a file, not a folder; the memory root is the folder holding {INDEX_NAME}: --root {holder}"
        return "is a file, not a folder; give --root the folder that holds MEMORY.md (or a new folder to `mmctl init`)"
    if root.is_dir():
        return f"has no {INDEX_NAME}; create one with `mmctl init --root {root}`, or give the right --root"
    parent = root.parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), parent)
    if not existing.is_dir():
        return f"does not exist, and {existing} is a file, not a folder; give the right --root"
    make = "" if parent.is_dir() else f"`mkdir -p {parent}` and "
    return f"does not exist; create one with {make}`mmctl init --root {root}`, or give the right --root"


class Ctx:
    """Everything a command needs.

    Attributes:
        args: the parsed command line.
        env: the environment.
        out, err: the output streams.
        now: the clock (``MMCTL_NOW``).
        fts5: forced FTS5 availability (``MMCTL_FTS5``) or None.
    """

    def __init__(self, args: Args, env: Mapping[str, str], out: TextIO, err: TextIO,
                 stdin: BinaryIO | None = None) -> None:
        self.args = args
        self.stdin = stdin
        self.env = env
        self.out = _utf8(out)
        self.err = _utf8(err)
        self.now: Clock = system_clock
        self.fts5: bool | None = None
        self._daemon: Daemon | None | bool = False
        self._scope: Scope | None = None

    # --- arguments ------------------------------------------------------------------------------

    @property
    def json(self) -> bool:
        """``--json`` was given."""
        return self.args.flag("--json")

    @property
    def rest(self) -> list[str]:
        """The positionals after the command."""
        return self.args.positionals[1:]

    def root_flag(self) -> str | None:
        """``--root`` when given a non-empty value (the reference ignores an empty one)."""
        root = self.args.text("--root")
        return root if root else None

    def home(self) -> Path:
        """The user root: ``--root``, else the config file's ``root``, else mm v1 §2 (a project root named with
        ``--root`` gives its home's)."""
        return self.scope().home

    def scope(self) -> Scope:
        """Where this call reads and writes (:func:`mmctl.scope.resolve_scope`: ``--project``, ``--user``, ``--root``,
        else the current folder's project), resolved once.

        Raises:
            UsageError: for a scope that names nothing (exit code 2, nothing changed).
        """
        if self._scope is None:
            from ..scope import ScopeError, resolve_scope
            from .parser import UsageError

            try:
                cwd: str | None = os.getcwd()
            except OSError:  # the folder was removed under us: no project to be in
                cwd = None
            own = self.args.positionals[:1] in (["queue"], ["review"])  # their --project filters or moves candidates
            try:
                self._scope = resolve_scope(self._configured_root(), root_flag=self.root_flag(),
                                            project_flag=None if own else self.args.text("--project"),
                                            user=self.args.flag("--user"), env=self.env, cwd=cwd)
            except ScopeError as error:
                raise UsageError(str(error)) from None
        return self._scope

    def _configured_root(self) -> Path:
        """:func:`mmd.core.config_file.configured_root` of ``--root``; that module (and the config file) is loaded
        only without ``--root``, which names the root alone (the hook before every prompt has it: issue 31)."""
        explicit = self.root_flag()
        if explicit:
            from mmd.core.paths import resolve_root

            return resolve_root(explicit, self.env)
        from mmd.core.config_file import configured_root

        return configured_root(None, self.env)

    def user_scope_if_unmade(self) -> Scope | None:
        """The scope a check reads when this call's is a project without its root yet: the user root behind it
        (nothing is created, as reads create nothing); None (the scope unchanged) otherwise."""
        scope = self.scope()
        if not scope.is_project or scope.alone or (scope.root / INDEX_NAME).is_file():
            return None
        from ..scope import resolve_scope

        self._scope = resolve_scope(self._configured_root(), root_flag=self.root_flag(), project_flag=None,
                                    user=True, env=self.env, cwd=None)
        return scope

    def scope_for_session(self, folder: str, *, session: bool = True) -> Scope:
        """Take the scope of an agent working in ``folder`` (a hook's ``cwd``, an MCP server's folder): its project
        in the home ``--root`` or the config names, unless ``--project`` or ``--user`` was given
        (:func:`mmctl.scope.session_scope`); with ``session`` (a hook: an agent session runs there) a plain
        folder is a project too."""
        if self.args.text("--project") is None and not self.args.flag("--user"):
            from ..scope import session_scope

            self._scope = session_scope(self._configured_root(), folder, session=session)
        return self.scope()

    def direct_of(self, scope: Scope | None) -> Direct:
        """The files of ``scope``'s own root, or of the user root for None."""
        from ..backend import Direct

        if scope is None:
            return Direct(str(self.home()), self.env, self.now, self.fts5)
        return Direct(str(scope.root), self.env, self.now, self.fts5, scope=scope)

    def options_of(self, scope: Scope | None) -> MemoryOptions:
        """The memory options of ``scope``'s own root, or of the user root for None."""
        return self.direct_of(scope).options()

    def root(self) -> Path:
        """The root this call writes to: the scope's (:meth:`scope`), the user root unless a project is in scope."""
        return self.scope().root

    def root_origin(self, user: bool = False) -> str:
        """How :meth:`root` (``user``: the user root) was resolved, in words: ``--root``, the config file,
        ``$DSH_MEMORY_ROOT``, ``$DSH_HOME``, or the project in scope."""
        scope = self.scope()
        if scope.is_project and not scope.alone and not user:
            return f"the project root of {scope.origin}"
        if self.root_flag():
            return "from --root"
        from mmd.core.config_file import config_path, configured_root
        from mmd.core.paths import resolve_root

        if configured_root(None, self.env) != resolve_root(None, self.env):
            return f"from the root in {config_path(None, self.env)}"
        if self.env.get("DSH_MEMORY_ROOT", "").strip():
            return "from $DSH_MEMORY_ROOT"
        if self.env.get("DSH_HOME", "").strip():
            return "from $DSH_HOME/memory"
        return "the default, ~/.dsh/memory"

    def need_root(self) -> Path:
        """The resolved root when it is an mm root (a folder holding MEMORY.md); reads never create one.

        Raises:
            Failure: ``E_NOT_INITIALIZED: no memory root at PATH (how it was resolved); …`` naming the fix.
        """
        root, user = self.root(), False
        if (root / INDEX_NAME).is_file():
            return root
        scope = self.scope()
        if scope.is_project and not scope.alone:  # a project without its root yet reads the user root behind it
            if (scope.home / INDEX_NAME).is_file():
                return root
            root, user = scope.home, True  # the user root is what is missing: say how IT was resolved
        raise Failure(f"{ErrorCode.E_NOT_INITIALIZED.value}: no memory root at {root} ({self.root_origin(user)}): "
                      f"it {_not_a_root(root)}")

    def stdin_bytes(self) -> bytes:
        """All of stdin, as bytes (``--content -``)."""
        if self.stdin is not None:
            return self.stdin.read()
        import sys

        return sys.stdin.buffer.read()

    def creatable_root(self) -> Path:
        """The resolved root, checked before ``init`` or a write creates it.

        A root given with ``--root`` must have an existing parent (a typo makes no
        folders); a configured or default root is created with its parents (mm v1 §2).

        Raises:
            Failure: naming the root, how it was resolved and the fix, for a root that is a file, a
                missing parent (``--root`` only), or a parent that is not a writable folder.
        """
        scope = self.scope()
        if scope.is_project and scope.root != scope.home:  # its home is checked; its own folder the write makes
            return self._creatable(scope.home, "the user root")
        return self._creatable(self.root(), self.root_origin())

    def _creatable(self, root: Path, origin: str) -> Path:
        if root.exists() and not root.is_dir():
            raise Failure(f"the memory root {root} ({origin}) is a file, not a folder; give a folder")
        if root.exists():
            return root
        parent = root.parent
        existing = next((p for p in (parent, *parent.parents) if p.exists()), parent)
        if not existing.is_dir():
            raise Failure(f"cannot create the memory root {root} ({origin}): {existing} is a file, not a folder")
        if self.root_flag() and not parent.is_dir():
            raise Failure(f"cannot create the memory root {root} ({origin}): its parent folder {parent} does not "
                          f"exist; create it first (`mkdir -p {parent}`) or fix the path")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise Failure(f"cannot create the memory root {root} ({origin}): {existing} is not writable")
        return root

    # --- printing -------------------------------------------------------------------------------

    def write(self, text: str) -> None:
        """Print ``text`` on stdout as is."""
        self.out.write(text)
        self.out.flush()

    def print_json(self, value: Any) -> None:
        """Print ``value`` as one line of JSON."""
        self.write(js_json(value) + "\n")

    def error(self, message: str) -> None:
        """Print ``mmctl: <message>`` on stderr."""
        self.err.write(f"{PROG}: {message}\n")
        self.err.flush()

    # --- where the memory is --------------------------------------------------------------------

    def direct(self) -> Direct:
        """The files, worked on by this process."""
        from ..backend import Direct

        scope = self.scope()
        return Direct(str(scope.root), self.env, self.now, self.fts5, scope=scope)

    def memories(self, *, search: bool = False) -> list[tuple[str, Memory]]:
        """``(scope label, memory)`` of each root reads see (:meth:`mmctl.scope.Scope.read_roots`), the scope's own
        first; on the files, a fresh live view each (mm v1 §7)."""
        from ..backend import Direct

        scope = self.scope()
        out = []
        for label, root in scope.read_roots():
            own = scope if label == scope.label else None
            out.append((label, Direct(str(root), self.env, self.now, self.fts5, scope=own).memory(search=search)))
        return out

    def daemon(self) -> Daemon | None:
        """The daemon owning the root, if one answers (looked for once per call)."""
        if self._daemon is False:
            from ..backend import find_daemon
            from ..pins import wants_daemon

            found = find_daemon(self.home(), self.env) if wants_daemon(self.env) else None
            if found is not None:
                found.client.project = self.scope().param
            self._daemon = found
        return self._daemon  # type: ignore[return-value]

    def look_again(self) -> bool:
        """Look for the root's daemon anew (after a direct write found the root's lock held); whether one answers."""
        self._daemon = False
        return self.daemon() is not None

    def need_daemon(self, command: str) -> Daemon:
        """The daemon, or a :class:`Failure` saying that ``command`` needs one and how to start it."""
        self.need_root()
        found = self.daemon()
        if found is None:
            from mmd.wire.endpoints import endpoints_for

            rpc = endpoints_for(self.home(), self.env).rpc
            holder = _lock_holder(self.home())
            if holder is not None:
                raise Failure(f"`{command}` needs the mmd daemon: {holder} holds the root {self.home()} but nothing "
                              f"answers at {rpc}; a daemon started with another $XDG_RUNTIME_DIR listens elsewhere "
                              f"(give this client the same), else it is stuck: restart it")
            raise Failure(f"`{command}` needs the mmd daemon, and none answers for {self.home()} (at {rpc}); "
                          f"start it with `mmd --root {self.home()}` (or its systemd user unit), then retry")
        return found


def _lock_holder(root: Path) -> str | None:
    """``pid N`` (or ``another process``) when the root's write lock is held now, else None (taken and let go)."""
    from mmd.core.durable import LockHeld, WriteLock

    lock = WriteLock(root)
    try:
        lock.acquire(blocking=False)
    except LockHeld as held:
        return held.holder
    except MMError:
        return None
    lock.release()
    return None


def fix_for(error: MMError, ctx: Ctx) -> str:
    """The fix for a core error a user can cause, in one sentence naming what to change (printed under its
    message): the config file to edit, ``mmctl doctor`` for a file that is not mm v1, the slug rule, a root
    that is read-only or not writable, ``mmctl init``."""
    from mmd.core.config_file import ConfigError, config_path

    code, message = error.code, error.message
    if isinstance(error, ConfigError):
        where = config_path(None, ctx.env)
        return f"fix or remove it in {where}, which mmd reads too" if where else "fix the config file"
    root = f"{ctx.root()} ({ctx.root_origin()})"
    if code == ErrorCode.E_PARSE:
        return (f"a file under the memory root {root} is not mm v1: fix it by hand; "
                f"`mmctl doctor --root {ctx.root()}` lists every problem")
    if code in (ErrorCode.E_INVALID, ErrorCode.E_CONFLICT) and message.startswith("topic"):
        return "topics are ASCII slugs: letters, digits, '.', '_' and '-' (see `mmctl help`)"
    from ..backend import LOCKED

    if code == ErrorCode.E_IO and message.startswith(LOCKED):
        return f"`mmctl status --root {ctx.root()}` says whether a daemon answers this client"
    if code == ErrorCode.E_IO:
        read_only = "read-only file system" in message.lower()
        in_root = str(ctx.root()) in message or any(f" {rel}" in message for rel in ("memories/", "MEMORY.md", ".mmd/"))
        if not in_root:  # another file (an export target, a settings file)
            return ("that file system is read-only: remount it read-write or choose another path" if read_only
                    else "check that the path exists and that you can write to it")
        if read_only:
            return f"the memory root {root} is on a read-only file system: remount it read-write or give another --root"
        return f"check that the memory root {root} is a folder you can write to"
    if code == ErrorCode.E_DIGEST_SOURCE:
        return "give a readable file (--file PATH) or the text itself (--text TEXT)"
    if code == ErrorCode.E_NOT_INITIALIZED:
        return f"create it with `mmctl init --root {ctx.root()}`, or give the right --root"
    command = ctx.args.positionals[0] if ctx.args.positionals else ""
    return f"see `mmctl help {command}`" if command else "see `mmctl help`"

def print_refusal(ctx: Ctx, code: str, message: str, details: Any) -> None:
    """With ``--json``, the screen's refusal (a secret, ``E_SECRET``, or hidden text: ``E_INVALID`` naming it) as
    ``{ok: false, code, message, details}`` on stdout too, as a budget refusal prints its outcome: a script reads
    what was refused and where (kinds and lines, never a value). Other errors keep the reference's output."""
    screened = code == "E_SECRET" or (isinstance(details, dict) and "hidden" in details)
    if ctx.json and screened:
        ctx.print_json({"ok": False, "code": code, "message": message, "details": details})
