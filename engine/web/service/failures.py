"""The answers that are not a route's own, as `{error, problems}` like every refusal of the API: 404 for a path it
does not serve, 405 (with `Allow`) for a method a path does not take, and 500 for an exception no handler expected
(a store that fails): its message says only that the server failed and names the request's id, which the server's
log line carries with the exception (engine.web.service.gate.RequestLog). Starlette's own are text/plain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

__all__ = ["exception_handlers", "failure_body"]


def failure_body(request_id: str | None) -> bytes:
    """The 500's body: what happened and where the server's log tells more; nothing of the cause."""
    where = f"; its log names this request {request_id}" if request_id else ""
    return orjson.dumps({"error": f"the server failed to answer{where}", "problems": []})


def _refused(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps({"error": message, "problems": []}), status, headers=headers,
                    media_type="application/json")


async def _http_refusal(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _refused(404, "no such path: the API's paths are in /openapi.json", exc.headers)
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return _refused(405, f"{request.method} is not a method of this path; it takes {allowed}", exc.headers)
    return _refused(exc.status_code, str(exc.detail), exc.headers)


async def _failed(request: Request, _exc: Exception) -> Response:
    # The exception goes on to RequestLog, which logs it with the request's id.
    return Response(failure_body(request.scope.get("state", {}).get("request_id")), 500,
                    media_type="application/json")


def exception_handlers() -> dict[Any, Any]:
    """Starlette's `exception_handlers` for the robots API."""
    return {HTTPException: _http_refusal, Exception: _failed}
