"""An injection over a scope's roots: the project's root, then the user root (``docs/projects.md``).

:func:`plan_scoped` plans one :class:`~.injection.Injection` per root the scope
reads (through the daemon when one serves the home, else on the files, each root
keeping its own client view), splits the byte budget between them
(:func:`mmd.inject.scopes.budget_split`) and joins them under labelled headings
(:func:`mmd.inject.scopes.join_injections`). Its commit commits every part. A
user-root scope gives exactly what :func:`~.injection.plan` gives.

Never: reads the environment, or renders a root's text itself.
"""

from __future__ import annotations

from mmd.inject.scopes import DEFAULT_MAX_BYTES, budget_split, join_injections

from .injection import Injection, plan
from .scope import USER, Scope

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook before every prompt imports this module (issue 31)
    from collections.abc import Callable
    from typing import Any

    from mmd.core.clock import Clock
    from mmd.core.options import MemoryOptions

__all__ = ["plan_scoped"]


def plan_scoped(scope: Scope, client_key: str, *, daemon: Any | None, options: Callable[[Scope | None], MemoryOptions],
                now: Clock, max_bytes: int | None = None, reset: bool = False,
                lock_wait_s: float | None = None, prompt: bool = False) -> Injection:
    """The injection for ``client_key`` over ``scope``'s roots.

    Args:
        daemon: a :class:`mmctl.Client` of the home's daemon, or None (on the files).
        options: the memory options of the scope's own root (given ``scope``) or of the user root (given None).
        max_bytes: the whole text's budget, UTF-8 bytes (default :data:`mmd.inject.baseline.DEFAULT_MAX_BYTES`).
        lock_wait_s: how long a part on the files waits for its root's lock (default :func:`~.injection.plan`'s).
        prompt: a hook before an agent's prompt: sent with the scope's own part (the daemon counts the prompt in
            that scope), whose ``distill`` line the joined result keeps.

    Raises:
        As :func:`~.injection.plan`, for any part.
    """
    labels = [label for label, _ in scope.read_roots()]
    if not scope.is_project or labels == [USER] and scope.alone:
        return plan(client_key, daemon=daemon, options=lambda: options(None), now=now, max_bytes=max_bytes,
                    reset=reset, lock_wait_s=lock_wait_s, prompt=prompt)
    budgets = budget_split(DEFAULT_MAX_BYTES if max_bytes is None else max_bytes, len(labels))
    parts: list[tuple[str, Injection]] = []
    for label, budget in zip(labels, budgets, strict=True):
        of: Scope | None = scope if label != USER else None
        remote = None if daemon is None else _Scoped(daemon, scope.param if of is not None else USER)
        parts.append((label, plan(client_key, daemon=remote, options=_fixed(options, of), now=now,
                                  max_bytes=budget, reset=reset, lock_wait_s=lock_wait_s,
                                  prompt=prompt and not parts)))
    where = str(scope.project.top) if scope.project is not None else None
    result = join_injections([(label, injection.result) for label, injection in parts], where)

    def commit() -> None:
        for _, injection in parts:
            injection.commit()
        result["committed"] = True

    return Injection(result, commit)


def _fixed(options: Callable[[Scope | None], MemoryOptions], of: Scope | None) -> Callable[[], MemoryOptions]:
    return lambda: options(of)


class _Scoped:
    """A daemon client's ``inject``/``injected`` in one root (``project``: a key, a path or ``user``)."""

    def __init__(self, client: Any, project: str | None) -> None:
        self._client, self._project = client, project

    def inject(self, client_key: str, **kwargs: Any) -> Any:
        return self._client.inject(client_key, project=self._project, **kwargs)

    def injected(self, client_key: str, token: str) -> Any:
        return self._client.injected(client_key, token, project=self._project)
