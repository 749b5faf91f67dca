"""HttpRequest offline: answers from a scenario's scripted replies for the block, in order, never the network.

A reply is `{status, json | text, headers, delay}`, or `{error: timeout}` (the block times out) or
`{error: connection}` (a dropped connection, which the block retries with the next reply). A block for
which nothing is scripted is refused (`http_offline`): an offline run must neither reach the network nor
make up an answer that would steer the robot. Every request is recorded for the scenario's expectations.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from engine.errors import HttpError

__all__ = ["BLOCK_HEADER", "HTTP", "ScriptedWeb", "WebRequest"]

HTTP = "http"
"""The services' name for the far side of every HttpRequest (a transport key, as a vendor's name is)."""
BLOCK_HEADER = "x-diagrama-block"


@dataclass(frozen=True, slots=True)
class WebRequest:
    """One request an HttpRequest block sent offline, as the scenario checks it."""

    block: str
    method: str
    url: str
    headers: dict[str, str]
    body: Any
    """The JSON sent, read back; else the text; None without a body."""


def _body(request: httpx.Request) -> Any:
    raw = request.content
    if not raw:
        return None
    if "json" in request.headers.get("content-type", ""):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return raw.decode("utf-8", "replace")


@dataclass
class ScriptedWeb:
    """The scripted far side of HttpRequest blocks: `scripts` is the simulator's, per block id, used in order."""

    scripts: dict[str, list[dict[str, Any]]]
    exhausted: list[str]
    requests: list[WebRequest] = field(default_factory=list)

    def transport(self) -> httpx.AsyncBaseTransport:
        return httpx.MockTransport(self.answer)

    async def answer(self, request: httpx.Request) -> httpx.Response:
        block = request.headers.get(BLOCK_HEADER, "")
        headers = {k: v for k, v in request.headers.items() if k != BLOCK_HEADER}
        self.requests.append(WebRequest(block, request.method, str(request.url), headers, _body(request)))
        script = self.scripts.get(block)
        if script is None:
            raise HttpError(f"HttpRequest '{block}' does not reach the network in an offline run; a scenario scripts "
                            f"its answers (replies: {{{block}: [{{status: 200, json: ...}}]}})", type="http_offline",
                            block=block)
        if not script:
            self.exhausted.append(block)
            raise HttpError(f"the scenario scripted no more replies for block '{block}'", type="http_offline",
                            block=block)
        reply = script.pop(0)
        delay = float(reply.get("delay") or 0)
        if delay > 0:
            await asyncio.sleep(delay)
        error = reply.get("error")
        if error == "timeout":
            raise httpx.ReadTimeout("the scenario scripted a timeout", request=request)
        if error == "connection":
            raise httpx.ConnectError("the scenario scripted a dropped connection", request=request)
        return _response(reply)


def _response(reply: dict[str, Any]) -> httpx.Response:
    headers = {str(k).lower(): str(v) for k, v in (reply.get("headers") or {}).items()}
    status = int(reply.get("status", 200))
    if "json" in reply:
        headers.setdefault("content-type", "application/json")
        return httpx.Response(status, headers=headers, content=orjson.dumps(reply["json"]))
    text = reply.get("text")
    if text is not None:
        headers.setdefault("content-type", "text/plain; charset=utf-8")
        return httpx.Response(status, headers=headers, content=str(text).encode())
    return httpx.Response(status, headers=headers)
