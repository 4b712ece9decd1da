"""The review page's gate: token, cookie, ``Host``, ``Origin`` and the CSRF token, as one ASGI middleware.

Owns: the per-start secret (a random token made when the page starts, never
stored), the checks every request passes before any route runs, and the CSRF
token the forms carry. A request is answered only when its ``Host`` names the
listen address (no DNS rebinding), and it carries the token (``?token=…``, which
also sets the cookie) or the cookie; a POST must also come from the page's own
``Origin``, and its form must carry the CSRF token (checked by the route, which
reads the form: :func:`check_csrf`). A refusal is a small HTML page with its
status (400, 403), never a traceback. Never: reads memory, calls a method, or
logs the token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

__all__ = ["Gate", "GateMiddleware", "Refused", "check_csrf"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Refused(Exception):
    """A request the gate or a route refuses: ``status`` (HTTP) and a sentence for people."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Gate:
    """The secret of one page start and the names it answers to.

    Args:
        host: the listen address (``127.0.0.1``, ``::1``).
        port: the bound port.

    Attributes:
        token: the random per-start token (URL-safe, 43 characters).
        csrf: the CSRF token the forms carry (derived from ``token``).
        cookie: the cookie's name (per port, so two daemons on one machine keep their own).
    """

    def __init__(self, host: str, port: int) -> None:
        self.token = secrets.token_urlsafe(32)
        self.csrf = hmac.new(self.token.encode(), b"mmd-csrf", hashlib.sha256).hexdigest()
        self.cookie = f"mmd_{port}"
        bracketed = f"[{host}]" if ":" in host else host
        self.hosts = {f"{bracketed}:{port}", f"localhost:{port}"}
        """``Host`` values accepted."""
        self.origins = {f"http://{h}" for h in self.hosts}
        """``Origin`` values accepted on POST."""
        self.url = f"http://{bracketed}:{port}/?token={self.token}"
        """The URL ``mmctl ui`` opens."""

    def check(self, scope: Scope) -> bool:
        """Pass or refuse one HTTP request; True when it came with the token in its query (set the cookie).

        Raises:
            Refused(400): for a ``Host`` that is not the listen address.
            Refused(403): without the token or the cookie, or for a POST from another ``Origin``.
        """
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host", "") not in self.hosts:
            raise Refused(400, "This page answers only at its own address (the Host header names another).")
        by_query = _same(parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[-1],
                         self.token)
        if not by_query:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(headers.get("cookie", ""))
            except Exception:  # noqa: BLE001 - a malformed cookie header is just no cookie
                jar = SimpleCookie()
            morsel = jar.get(self.cookie)
            if morsel is None or not _same(morsel.value, self.token):
                raise Refused(403, "Open this page with `mmctl ui`: it knows this start's token.")
        if scope.get("method") == "POST" and headers.get("origin", "") not in self.origins:
            raise Refused(403, "Refused: this form was not sent from this page (Origin).")
        return by_query

    def set_cookie_header(self) -> tuple[bytes, bytes]:
        """The ``Set-Cookie`` header that lets later requests in without the token in the URL."""
        return b"set-cookie", f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()


class GateMiddleware:
    """ASGI middleware: every HTTP request passes :meth:`Gate.check` before the app sees it.

    Args:
        app: the wrapped application.
        gate: the page's gate.
        refused: renders a refusal page (UTF-8 HTML bytes).
    """

    def __init__(self, app: ASGIApp, gate: Gate, refused: Callable[[Refused], bytes]) -> None:
        self.app, self.gate, self.refused = app, gate, refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse with a page, or call the app adding the safety headers (and the cookie after a token URL)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            by_query = self.gate.check(scope)
        except Refused as refusal:
            body = self.refused(refusal)
            await send({"type": "http.response.start", "status": refusal.status,
                        "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                    (b"content-length", str(len(body)).encode()), *_SAFE_HEADERS]})
            await send({"type": "http.response.body", "body": body})
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *_SAFE_HEADERS]
                if by_query:
                    headers.append(self.gate.set_cookie_header())
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


_SAFE_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"content-security-policy",
     b"default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'"),
)
"""Sent with every answer: no framing, no sniffing, no token in a Referer to another site (while POSTs keep
their real Origin), nothing cached, no foreign script, forms posted only here."""


def _same(given: str, token: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())


def check_csrf(form_value: object, gate: Gate) -> None:
    """Refuse a POST whose form lacks the page's CSRF token.

    Raises:
        Refused(403): when the ``csrf`` field is missing or wrong.
    """
    if not isinstance(form_value, str) or not hmac.compare_digest(form_value.encode(), gate.csrf.encode()):
        raise Refused(403, "Refused: the form carried no valid CSRF token. Reload the page and try again.")
