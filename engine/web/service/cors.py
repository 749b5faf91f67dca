"""CORS for pages served from other origins (`--cors-origin`): a browser's preflight `OPTIONS` from an allowed origin
is answered here, before the Gate (a preflight carries no key), with the methods and request headers the API takes;
answers to an allowed origin carry `Access-Control-Allow-Origin` and expose `Location`, `X-Request-ID` and
`X-Run-Id`. Another origin gets no CORS header at all: its preflight goes on to the Gate like any request (401).

Origins are exact (`https://app.example.com`, scheme, host and port as a browser sends them). `*` is refused: with
keys, a page of any site could drive the robots with a key it was given or tricked out of its user, and with
`--no-auth` any page its user opens could run the robots of the machine it is on. Written here rather than with
Starlette's CORSMiddleware, which answers a preflight from another origin itself (400 text/plain, with the allowed
methods) and adds the exposed headers to every origin's answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import UsageError

__all__ = ["ALLOWED_HEADERS", "EXPOSED_HEADERS", "Cors", "checked_origins"]

ALLOWED_HEADERS = ("Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", "X-Request-ID")
EXPOSED_HEADERS = ("Location", "X-Request-ID", "X-Run-Id")
_METHODS = "GET, POST, DELETE"
_MAX_AGE_S = 600
_ORIGIN = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")


def checked_origins(origins: Iterable[str]) -> frozenset[str]:
    """`origins` as a browser sends them in `Origin`; UsageError naming one that no browser would send."""
    found: set[str] = set()
    for origin in origins:
        if origin == "*":
            raise UsageError("--cors-origin '*' is refused: name each origin whose pages may call the robots "
                             "(https://app.example.com); with `*` any site's page could drive them")
        if not _ORIGIN.match(origin):
            raise UsageError(f"--cors-origin {origin!r} is not an origin: scheme://host[:port], http or https, "
                             "without a path or a trailing slash (as a browser sends it in Origin)")
        found.add(origin.lower())
    return frozenset(found)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


class Cors:
    """Preflights from `origins` answered, and their answers marked; everything else passed on untouched but for
    `Vary: Origin` (a cache must not give one origin's answer to another)."""

    def __init__(self, app: ASGIApp, origins: frozenset[str]) -> None:
        self.app = app
        self.origins = origins
        self._preflight = [(b"access-control-allow-methods", _METHODS.encode()),
                           (b"access-control-allow-headers", ", ".join(ALLOWED_HEADERS).encode()),
                           (b"access-control-max-age", str(_MAX_AGE_S).encode())]
        self._exposed = (b"access-control-expose-headers", ", ".join(EXPOSED_HEADERS).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        allowed = origin is not None and origin.decode("latin-1").lower() in self.origins
        if allowed and scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method") is not None:
            await send({"type": "http.response.start", "status": 204, "headers": [
                (b"access-control-allow-origin", origin or b""), *self._preflight, (b"vary", b"Origin")]})
            await send({"type": "http.response.body", "body": b""})
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                added = [(b"access-control-allow-origin", origin or b""), self._exposed] if allowed else []
                message["headers"] = [*message.get("headers", []), *added, (b"vary", b"Origin")]
            await send(message)

        await self.app(scope, receive, marked)
