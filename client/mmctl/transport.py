"""The ZeroMQ side of a client socket: CURVE keys for a ``tcp://`` daemon, and how a socket connects.

Owns: :class:`Curve` (the key triple and loading it from ``zmq.auth`` certificate files) and
:func:`connect` (linger, reconnect interval, ``IMMEDIATE`` for a DEALER, every topic for a SUB).
Both the sync and the async client use them (re-exported by :mod:`._base`). Imports ``zmq``
only when a socket is set up or keys are loaded.
"""

from __future__ import annotations

import os
from typing import Any

from mmd.core.record import Record

__all__ = ["Curve", "connect"]


class Curve(Record):
    """ZeroMQ CURVE keys for a ``tcp://`` daemon (DESIGN.md: tcp only with CURVE); all Z85 ``bytes``.

    Attributes:
        server_public: the daemon's public key.
        public, secret: this client's key pair; its public certificate must be in the daemon's
            ``curveClientKeysDir``.
    """

    __slots__ = ("server_public", "public", "secret")

    def __init__(self, server_public: bytes, public: bytes, secret: bytes) -> None:
        self.server_public, self.public, self.secret = server_public, public, secret

    @classmethod
    def from_files(cls, server_certificate: str | os.PathLike[str],
                   client_certificate: str | os.PathLike[str]) -> Curve:
        """Keys from ``zmq.auth`` certificate files: the daemon's public one and this client's secret one.

        Raises:
            ValueError: if the client certificate holds no secret key. OSError: if a file cannot be read.
        """
        import zmq.auth

        server_public, _ = zmq.auth.load_certificate(os.fspath(server_certificate))
        public, secret = zmq.auth.load_certificate(os.fspath(client_certificate))
        if secret is None:
            raise ValueError(f"{os.fspath(client_certificate)} holds no secret key")
        return cls(server_public, public, secret)

    def apply(self, sock: Any) -> None:
        """Make ``sock`` (not yet connected) a CURVE client of the daemon."""
        sock.curve_serverkey = self.server_public
        sock.curve_publickey = self.public
        sock.curve_secretkey = self.secret


def connect(sock: Any, endpoint: str, curve: Curve | None) -> Any:
    """Set up a client socket (DEALER or SUB; pyzmq sync or asyncio) and connect it to ``endpoint``.

    No linger on close, a 50 ms reconnect interval (a restarted daemon is found at once),
    CURVE when given; a DEALER also queues only to a connected peer (``IMMEDIATE``) and a
    SUB takes every topic (filtering happens in the client, so ``seq`` gaps mean lost events).
    """
    import zmq

    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RECONNECT_IVL, 50)
    if sock.type == zmq.DEALER:
        sock.setsockopt(zmq.IMMEDIATE, 1)
    elif sock.type == zmq.SUB:
        sock.setsockopt(zmq.SUBSCRIBE, b"")
    if curve is not None:
        curve.apply(sock)
    sock.connect(endpoint)
    return sock
