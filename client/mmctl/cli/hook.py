"""``mmctl inject --format claude-hook|codex-hook``: the hook before every prompt (issues 14, 26, 31).

It reads the agent's hook input on stdin (``session_id``: the client is ``claude-code:<id>`` or
``codex:<id>``; a ``SessionStart`` after ``clear`` or ``compact`` gives the index again) and prints
``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``, or nothing. A hook never holds a prompt:
it answers within about 1 s, from the files when the daemon does not (saying that memory may be stale), and
always exits 0; what cannot be given at all is a ``systemMessage`` for the person, never context for the model.

Speed (issue 31, ``docs/speed.md``): a person waits for this before every prompt, so the path through a running
daemon loads only what it uses: the scope's modules (the project is found from the files, no ``git``
subprocess), :mod:`json` and :mod:`mmctl.zmtp` — ZMTP spoken on the daemon's ipc socket by hand, not pyzmq (~36 ms
to import). The handshake is the probe (no ``daemon.status`` first): one request per root the scope reads, then
one confirmation per root. The files' path loads the core when it is taken. ``tests/test_hook_imports.py`` pins
both lists.
"""

from __future__ import annotations

import time

from mmd.core.errors import MMError
from mmd.wire.hooknames import MEMORY_INJECT_NAME, MEMORY_INJECTED_NAME

from .output import EXIT_OK, Ctx, Failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..injection import HookInput, Injection
    from ..zmtp import Connection

__all__ = ["HOOK_BUDGET_S", "INJECT", "INJECTED", "PROBE_S", "run_hook"]

HOOK_BUDGET_S = 0.7
"""How long a hook may take once ``mmctl`` has started, seconds (the interpreter's own start comes before, ~0.1 s):
it never holds a prompt (the agent waits for it). A daemon that has not answered by then is left behind and
the files answer."""
PROBE_S = 0.25
"""Of :data:`HOOK_BUDGET_S`, how long the daemon has to finish the connection's handshake before it counts as not
answering."""
INJECT, INJECTED = MEMORY_INJECT_NAME, MEMORY_INJECTED_NAME
"""The two methods the hook sends (:data:`mmd.wire.methods.MEMORY_INJECT` and ``MEMORY_INJECTED``, named by
:mod:`mmd.wire.hooknames`: the method table's module is not loaded here, its tables cost ~3 ms)."""


def _budget_s(env: Any) -> float:
    """:data:`HOOK_BUDGET_S`, or ``MMCTL_HOOK_BUDGET_MS`` milliseconds when that is a positive integer (a testing
    aid: a loaded test machine must not turn an answering daemon into a stale answer)."""
    raw = str(env.get("MMCTL_HOOK_BUDGET_MS", ""))
    return int(raw) / 1000 if raw.isdigit() and int(raw) > 0 else HOOK_BUDGET_S


def run_hook(ctx: Ctx, form: str) -> int:
    """Run the hook of ``form`` (``claude-hook`` | ``codex-hook``): always exit 0 with a shape the agent accepts,
    within about 1 s.

    Through the daemon when one answers in time, else on the files when their lock is free in time, else
    from the files without the lock (:func:`mmctl.injection.stale_text`: memory may be stale).
    """
    from ..injection import hook_input, hook_output, session_context

    budget_s = _budget_s(ctx.env)
    deadline = time.monotonic() + budget_s
    try:
        hook = hook_input(ctx.stdin_bytes(), form)
        if hook.cwd:  # the agent's folder names the project, whatever --root says (docs/projects.md)
            ctx.scope_for_session(hook.cwd)
        root = ctx.need_root()
        daemon, injection = _plan(ctx, hook, deadline)
        if injection is None:
            return _stale(ctx, hook, root, budget_s)
    except MMError as error:
        return _fail(ctx, f"{error.code.value}: {error.message}")
    except Failure as failure:
        return _fail(ctx, str(failure))
    said = session_context(hook.event, injection.text, injection.result.get("distill"))
    if not _printed(ctx, hook_output(hook.event, said)):
        return EXIT_OK  # the agent went away: nothing committed, the next call gives the same text
    from ..zmtp import WireError

    try:
        if daemon is not None:
            daemon.deadline = max(deadline, time.monotonic() + 0.05)
        injection.commit()
    except (MMError, WireError) as error:  # printed but not recorded: the next prompt repeats it, no harm
        ctx.error(f"the injection was printed but not recorded ({error}); the next prompt gives it again")
    return EXIT_OK


def _stale(ctx: Ctx, hook: HookInput, root: Any, budget_s: float) -> int:
    """The answer from the files, without their lock, when neither the daemon nor the lock answered in time."""
    from ..injection import hook_output, session_context, stale_text

    scope = ctx.scope()  # the roots the daemon would have answered from: the project's, then the user root
    roots = [(label, ctx.options_of(scope if label == scope.label else None)) for label, _ in scope.read_roots()]
    where = str(scope.project.top) if scope.is_project and scope.project is not None else None
    from ..pins import wants_daemon

    asked = wants_daemon(ctx.env)
    text = stale_text(hook.event, roots or [("user", ctx.options_of(None))], now=ctx.now,
                      max_bytes=ctx.args.integer("--max-bytes"), where=where, asked=asked)
    ctx.error(f"{root}: no answer from its daemon (or its lock) within {budget_s:g} s; answered from the files"
              if asked else f"{root}: its lock is held (MMCTL_NO_DAEMON=1: its daemon was not asked); answered "
              "from the files")
    return _print(ctx, hook_output(hook.event, session_context(hook.event, text)))


def _plan(ctx: Ctx, hook: HookInput, deadline: float) -> tuple[_Daemon | None, Injection | None]:
    """``(daemon or None, injection)`` of a hook over its scope's roots (the daemon found from the home), or
    ``(None, None)`` when neither the daemon nor the roots' locks answered by ``deadline``.

    Raises:
        MMError: what the files cannot give either (a bad option, a broken index); never ``E_IO`` (a lock held).
    """
    from ..pins import wants_daemon
    from ..scoped import plan_scoped

    client = ctx.args.text("--client") or hook.client_key
    scope = ctx.scope()

    def planned(daemon: _Daemon | None, lock_wait_s: float) -> Injection:
        return plan_scoped(scope, client, daemon=daemon, options=ctx.options_of, now=ctx.now,
                           max_bytes=ctx.args.integer("--max-bytes"), reset=hook.reset, lock_wait_s=lock_wait_s,
                           prompt=hook.event == "UserPromptSubmit")

    if wants_daemon(ctx.env):
        from ..zmtp import WireError

        try:
            daemon = _connect(ctx, deadline)
        except WireError:
            return None, None  # its daemon accepts but does not answer: it may hold the lock
        if daemon is not None:
            daemon.project = scope.param
            try:
                return daemon, planned(daemon, 0)
            except WireError:
                return None, None  # the daemon took too long, or refused: the files answer
    try:
        return None, planned(None, _left_s(deadline))
    except MMError as error:
        if error.code.value != "E_IO":
            raise
    return None, None


def _left_s(deadline: float) -> float:
    """Seconds left until ``deadline``, at least 0.05 (a lock free now is taken even at the end of the budget)."""
    return max(0.05, deadline - time.monotonic())


def _connect(ctx: Ctx, deadline: float) -> _Daemon | None:
    """The home's daemon on a checked connection whose handshake ended within :data:`PROBE_S`, or None when
    nobody listens (the files answer, with their lock).

    Raises:
        WireError (Silent): a process accepts but does not answer, or fails the checks.
    """
    from mmd.wire.endpoints import discover, ipc_path

    from ..zmtp import Absent, Connection

    home = ctx.home()
    endpoints = discover(home, ctx.env)
    path = ipc_path(endpoints.rpc)
    if path is None:  # tcp:// and CURVE: pyzmq's client (no hook has been configured so yet)
        from ..backend import find_daemon

        found = find_daemon(home, ctx.env, timeout_ms=int(min(PROBE_S, _left_s(deadline)) * 1000))
        return None if found is None else _Daemon(found.client, deadline)
    wire = Connection(str(path))
    try:
        wire.open(min(deadline, time.monotonic() + PROBE_S))
    except Absent:
        return None
    return _Daemon(wire, deadline)


class _Daemon:
    """What an injection asks the daemon (:func:`mmctl.injection.plan`, :func:`mmctl.scoped.plan_scoped`): its
    ``inject`` and ``injected``, with their params as :class:`mmctl.Client` builds them, each by :attr:`deadline`.

    Attributes:
        wire: a :class:`mmctl.zmtp.Connection`, or a :class:`mmctl.Client` (``tcp://``).
        deadline: ``time.monotonic()`` seconds by which each answer must come.
        project: the scope the requests go with (:attr:`mmctl._base.Methods.project`).
    """

    def __init__(self, wire: Connection | Any, deadline: float) -> None:
        self.wire, self.deadline = wire, deadline
        self.project: str | None = None

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        """The result of ``method``.

        Raises:
            WireError: no answer by :attr:`deadline`, or an error answer (:class:`~mmctl.zmtp.Refused`).
        """
        if params.get("project") is None:
            params["project"] = self.project
        from ..zmtp import Connection, WireError

        if isinstance(self.wire, Connection):
            return self.wire.call(method, params, self.deadline)
        from ..errors import MmctlError

        self.wire.timeout_ms = max(50, int((self.deadline - time.monotonic()) * 1000))
        try:
            return self.wire.call(method, {k: v for k, v in params.items() if v is not None})
        except MmctlError as error:
            raise WireError(str(error)) from error

    def inject(self, client: str, *, max_bytes: int | None = None, reset: bool = False, project: str | None = None,
               prompt: bool = False) -> Any:
        """``memory.inject`` → its result (:meth:`mmctl.Client.inject`)."""
        return self._call(INJECT, {"client": client, "maxBytes": max_bytes, "reset": reset or None,
                                   "project": project, "prompt": prompt or None})

    def injected(self, client: str, token: str, *, project: str | None = None) -> Any:
        """``memory.injected`` → ``{ok, client, token}`` (:meth:`mmctl.Client.injected`)."""
        return self._call(INJECTED, {"client": client, "token": token, "project": project})


def _fail(ctx: Ctx, message: str) -> int:
    """A hook that cannot inject: a warning for the person (``systemMessage``, and stderr), exit 0."""
    from ..injection import hook_error

    ctx.error(message)
    return _print(ctx, hook_error(message))


def _printed(ctx: Ctx, text: str) -> bool:
    """Print a hook's output; whether stdout took it."""
    try:
        ctx.write(text)
    except (BrokenPipeError, OSError):
        return False
    return True


def _print(ctx: Ctx, text: str) -> int:
    """Print a hook's output and end it: exit 0 whatever happened (a hook's failure never reaches the model)."""
    _printed(ctx, text)
    return EXIT_OK
