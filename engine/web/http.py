"""JSON in and out for the studio's endpoints: answers through their models (engine.web.models), refusals as
JSON answers rather than 500s.

A request body is read chunk by chunk and refused (413) as soon as it passes the limit, or at
once when its Content-Length announces more: a huge upload never sits in memory whole.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engine.errors import DiagramaError
from engine.format.redact import redact_text
from engine.format.values import dumps
from engine.runtime.context import Services
from engine.web.files import FolderError, os_failure
from engine.web.models import ErrorAnswer

__all__ = ["JSON", "answer", "error", "handle", "json_body", "read_body"]

_MAX_BODY = 8 * 1024 * 1024
_TOO_LARGE = "the request body is larger than 8 MB"
_log = logging.getLogger("diagrama.studio")


class JSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        # dumps, not orjson alone: a file may hold an integer past 64 bits, which orjson refuses.
        return dumps(content, option=orjson.OPT_NON_STR_KEYS)


def answer(model: BaseModel | Sequence[BaseModel], status: int = 200) -> Response:
    """A model (or a list of them) as the JSON answer, keys as the page reads them (`from`, `with`)."""
    return JSON(dumped(model), status_code=status)


def dumped(model: BaseModel | Sequence[BaseModel]) -> Any:
    if isinstance(model, BaseModel):
        return model.model_dump(by_alias=True)
    return [item.model_dump(by_alias=True) for item in model]


def error(status: int, message: str) -> Response:
    return answer(ErrorAnswer(error=message), status)


async def read_body(request: Request, limit: int = _MAX_BODY) -> bytes:
    """The request's body, read while it stays within `limit` bytes; FolderError 413 as soon as it does not."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise FolderError(400, "Content-Length is not a number")
        if int(declared) > limit:
            raise FolderError(413, _TOO_LARGE)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:  # a chunked upload (or one that sends more than it announced): stop reading here
            raise FolderError(413, _TOO_LARGE)
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object; FolderError (400/413/422) for anything else."""
    raw = await read_body(request)
    try:
        payload = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        raise FolderError(400, "the request body is not JSON") from None
    if not isinstance(payload, dict):
        raise FolderError(422, "the request body must be a JSON object")
    return payload


def handle(endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """Turn refused paths and bad input into JSON answers, never a 500 with a traceback."""

    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except FolderError as exc:
            return error(exc.status, exc.message)
        except DiagramaError as exc:
            # A message may quote an input, and an input may be a key.
            return error(400, redact_text(str(exc), Services().secrets()))
        except OSError as exc:  # a file the endpoint touched could not be read or written: the cause, not a traceback
            status, cause = os_failure(exc)
            _log.warning("%s %s: a file could not be read or written: %s", request.method, request.url.path, cause)
            return error(status, f"a file could not be read or written: {cause}")

    return answer
