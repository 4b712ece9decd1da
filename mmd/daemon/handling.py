"""Binding RPC handlers to the wire's methods: the :func:`handles` mark and the import-time check (:func:`bind`).

A handler is a method of :class:`~.methods.Methods` (or of a mixin it inherits) marked with
``@handles(wire.X)``; :func:`bind` finds every mark through the class's MRO and checks the table against
:data:`mmd.wire.methods.METHODS` once, at import. Never touches a socket.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from mmd.wire.methods import METHODS, Method

__all__ = ["bind", "handles"]

F = TypeVar("F", bound=Callable[..., Any])
_HANDLER_ATTR = "__mmd_method__"


def handles(method: Method) -> Callable[[F], F]:
    """Mark a :class:`Methods` function as the handler of ``method`` (checked at import, see :func:`bind`)."""

    def mark(fn: F) -> F:
        setattr(fn, _HANDLER_ATTR, method.name)
        return fn

    return mark


def bind(cls: type) -> dict[str, str]:
    """``{method name: handler attribute}`` of ``cls``, checked against the wire's method table.

    Raises:
        TypeError: if a method of ``METHODS`` has no handler or two, a handler names a method the
            wire does not list, or a handler's kind (plain function or coroutine) does not match
            the method's ``inline`` flag. Raised at import: a daemon with a hole in its table never starts.
    """
    bound: dict[str, str] = {}
    for attr, fn in {k: v for c in reversed(cls.__mro__) for k, v in vars(c).items()}.items():
        name = getattr(fn, _HANDLER_ATTR, None)
        if name is None:
            continue
        if name in bound:
            raise TypeError(f"{name} has two handlers: {bound[name]} and {attr}")
        if name not in METHODS:
            raise TypeError(f"{attr} handles {name}, which is not in mmd.wire.methods.METHODS")
        if inspect.iscoroutinefunction(fn) == METHODS[name].inline:
            raise TypeError(f"{attr}: {name} is {'inline' if METHODS[name].inline else 'awaited'}, "
                            f"so its handler must {'not ' if METHODS[name].inline else ''}be a coroutine")
        bound[name] = attr
    missing = sorted(set(METHODS) - set(bound))
    if missing:
        raise TypeError(f"no handler for {', '.join(missing)}")
    return bound
