"""mmctl: the client of the mmd daemon — the CLI, the Python clients and the MCP server.

Public names are imported on first use, so ``python -m mmctl read`` loads
neither pyzmq nor the MCP SDK::

    from mmctl import Client, AsyncClient, MmctlError

Errors: see :mod:`mmctl.errors` for the tree. The library is the package root
(``client``, ``aclient``, ``_base``, ``errors``, ``events``, ``backend``); method
names, topics and error codes come from :mod:`mmd.wire`, never from the daemon.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False
if TYPE_CHECKING:  # type checkers see the real classes; at run time they load on first use
    from typing import Any

    from .aclient import AsyncClient, AsyncSession, AsyncSubscription
    from .client import Client, Session, Subscription
    from .errors import (
        BudgetError,
        ConflictError,
        DaemonUnavailable,
        MmctlError,
        NoSessionError,
        RequestTimeout,
        RpcError,
        SecretRefused,
        UnsafeEndpoint,
    )
    from .events import Event
    from .transport import Curve

__all__ = [
    "AsyncClient",
    "AsyncSession",
    "AsyncSubscription",
    "BudgetError",
    "Client",
    "ConflictError",
    "Curve",
    "DaemonUnavailable",
    "Event",
    "MmctlError",
    "NoSessionError",
    "RequestTimeout",
    "RpcError",
    "SecretRefused",
    "Session",
    "Subscription",
    "UnsafeEndpoint",
]

_WHERE = {
    "AsyncClient": "aclient", "AsyncSession": "aclient", "AsyncSubscription": "aclient", "Client": "client",
    "Session": "client", "Subscription": "client", "Event": "events", "Curve": "transport",
    **{name: "errors" for name in (
        "BudgetError", "ConflictError", "DaemonUnavailable", "MmctlError", "NoSessionError", "RequestTimeout",
        "RpcError", "SecretRefused", "UnsafeEndpoint")},
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mmctl' has no attribute {name!r}")
    return getattr(import_module(f"mmctl.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
