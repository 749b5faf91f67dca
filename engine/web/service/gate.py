"""ASGI middleware in front of the robots API and the studio: the bearer key and its rate limit (`Gate`), and one
log line per request (`RequestLog`): method, path (never the query, which may carry a secret), status, duration,
the key's id (never the key), and the run and robot a handler names in the request's state.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Iterable
from typing import Any, Protocol

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import UsageError
from engine.runs.service_logs import log
from engine.web.service.chat_wire import CHAT_PATHS, error_body
from engine.web.service.failures import failure_body
from engine.web.service.keys import KeyRing, retry_after

__all__ = ["Gate", "RateLimits", "RequestLog"]

_PROBES = frozenset({"/health", "/ready"})
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RateLimits(Protocol):
    async def take(self, key_id: str, rpm: float) -> float: ...


async def _refuse(send: Send, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = (),
                  path: str = "") -> None:
    body = error_body(status, message) if path in CHAT_PATHS else orjson.dumps({"error": message, "problems": []})
    await _send_json(send, status, body, headers)


async def _send_json(send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


def _state(scope: Scope) -> dict[str, Any]:
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


class Gate:
    """401 without a known bearer key, 429 (with Retry-After) past the key's requests per minute; `ring` None
    (`--no-auth`, loopback only) lets every request through. Public paths (the OpenAPI document) need no key."""

    def __init__(self, app: ASGIApp, ring: KeyRing | None, limits: RateLimits, rpm: float | None,
                 public: frozenset[str] = frozenset()) -> None:
        if rpm is not None and not (math.isfinite(rpm) and rpm >= 0):  # nan would let every request through
            raise UsageError(f"the server's rpm (--rpm) is the requests a minute each key may make: a finite "
                             f"number, 0 for no limit; not {rpm!r}")
        self.app = app
        self.ring = ring
        self.limits = limits
        self.rpm = rpm
        self.public = public
        # A public path with a parameter (`/v1/hooks/{name}`: a webhook, whose signature authenticates it) is a pattern
        # of one path segment per parameter; only those paths pass, never a path below them.
        self._public_patterns = [re.compile(re.sub(r"\\\{[A-Za-z_]+\\\}", "[^/]+", re.escape(path)))
                                 for path in public if "{" in path]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.ring is None or scope["path"] in self.public \
                or any(pattern.fullmatch(scope["path"]) for pattern in self._public_patterns):
            await self.app(scope, receive, send)
            return
        presented = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                presented = value
                break
        scheme, _, token = presented.decode("latin-1").partition(" ")
        key = self.ring.identify(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if key is None:
            await _refuse(send, 401, "send a key of this server as `Authorization: Bearer KEY`",
                          [(b"www-authenticate", b'Bearer realm="diagrama"')], scope["path"])
            return
        _state(scope)["key_id"] = key.key_id
        _state(scope)["admin"] = key.admin  # sees every caller's runs (engine.web.service.tenants)
        rpm = key.rpm or self.rpm
        if rpm:
            wait = await self.limits.take(key.key_id, rpm)
            if wait > 0:
                await _refuse(send, 429, f"key '{key.key_id}' is past its {rpm:g} requests a minute",
                              [(b"retry-after", retry_after(wait).encode())], scope["path"])
                return
        _state(scope)["key"] = token.strip()  # only for the run's redactor: it scrubs the caller's key from the run
        await self.app(scope, receive, send)


class RequestLog:
    """One `request` line per HTTP request, written when its answer ends (an event stream's, when it closes); the
    request's id (its X-Request-ID, or a new one) is sent back in X-Request-ID."""

    def __init__(self, app: ASGIApp, logger: str) -> None:
        self.app = app
        self.log = log(logger)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        given = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"x-request-id"), "")
        request_id = given if _REQUEST_ID.match(given) else secrets.token_hex(8)
        _state(scope)["request_id"] = request_id  # a 500's answer names it (engine.web.service.failures)
        status = 500  # an answer never started: the server's own failure
        started = False

        async def sending(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = message["status"], True
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            # Not re-raised: the server would print it again, without the request's id. Its message may hold what
            # a caller must not read (a store's path, a driver's words): only the log has it.
            self.log.error("request_failed", method=scope["method"], path=scope["path"], request_id=request_id,
                           error=type(exc).__name__, exc_info=exc)
            if not started:
                await _send_json(sending, 500, failure_body(request_id))
        finally:
            state = scope.get("state", {})
            # A load balancer's probes come every few seconds: at debug level, unless they fail.
            write = self.log.debug if scope["path"] in _PROBES and status < 400 else self.log.info
            write("request", method=scope["method"], path=scope["path"], status=status,
                  duration_ms=round((time.perf_counter() - began) * 1000, 3), key_id=state.get("key_id"),
                  request_id=request_id, run_id=state.get("run_id"), robot=state.get("robot"))
