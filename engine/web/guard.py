"""Who may talk to the studio: requests for this server's own host, state changes only from its own page.

A web page on any other site can make the user's browser send requests to 127.0.0.1, and a
DNS-rebinding host can even read the answers. So every request must name one of the bound
host names in `Host`; a state-changing one must also come from the same origin (`Origin`,
`Sec-Fetch-Site`), as `application/json` (which a cross-site form cannot send without a CORS
preflight we never answer), with the per-server token the page was served with.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["TOKEN_HEADER", "Guard", "allowed_hosts", "new_token"]

TOKEN_HEADER = "x-diagrama-token"
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The `Host` values a browser sends for this server: the bound name, loopback names, with and without port."""
    names = {host, *_LOOPBACK_NAMES} if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0") else {host}
    names |= set(extra)
    found = set()
    for name in names:
        name = f"[{name}]" if ":" in name and not name.startswith("[") else name
        found |= {name.lower(), f"{name.lower()}:{port}"}
    return frozenset(found)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = orjson.dumps({"error": message})
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware applying the rules above to every HTTP request."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str], token: str) -> None:
        self.app = app
        self.hosts = hosts
        self.token = token

    def _problem(self, scope: Scope) -> tuple[int, str] | None:
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", [])}
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return 421, f"this server answers only for its own address, not Host {host[:100]!r}"
        if scope.get("method", "GET") in _SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{host}", f"https://{host}"}:
            return 403, "requests that change anything must come from the studio's own page (foreign Origin refused)"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "requests that change anything must come from the studio's own page (cross-site refused)"
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return 415, "send JSON with Content-Type: application/json"
        if not secrets.compare_digest(headers.get(TOKEN_HEADER, ""), self.token):
            return 403, f"missing or wrong {TOKEN_HEADER} header (the studio page sends it; scripts read it from GET /api/session)"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self._problem(scope)
            if problem is not None:
                await _refuse(send, *problem)
                return
        await self.app(scope, receive, send)
