"""HttpRequest: one HTTP call, to a host the diagram lists in `allowed_hosts`, as a step.

`method`, `url`, `query`, `headers`, `json` or `body`, `timeout`, `retries`, `fail_on_status` → `status`,
`headers`, `json` (None when the body is not JSON), `text`. The host is checked at load where the URL writes
it out, else when the run renders it (`host_not_allowed`). The call goes through the request blocks' own
sending code (retries on 408, 409, 429, 5xx and dropped connections, `retry-after`, never past `timeout`;
redirects on the same host only). A 4xx or 5xx left after the retries is `http_error`, which the executor
puts to the error level, unless `fail_on_status: false`. Offline, a scenario's scripted replies answer, and
nothing else does (`http_offline`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine import Block, Event, MessageLevel, Report, dumps

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio
    from engine.format.spec import DiagramSpec

Scalar = str | int | float | bool
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""A header name (RFC 9110's token)."""


def _text(value: Scalar) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


class HttpRequestInputs(BaseModel):
    # defer_build: built when a diagram uses the block; populate_by_name: `json` is the field `json_`
    model_config = ConfigDict(extra="forbid", defer_build=True, populate_by_name=True)

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = Field(
        default="GET", description="the HTTP method")
    url: str = Field(min_length=1, description="the URL; its host must be in the diagram's allowed_hosts")
    query: dict[str, Scalar | list[Scalar] | None] = Field(
        default_factory=lambda: {}, description="query parameters added to the URL's own (a list repeats the name; "
                                                "null leaves it out)")
    headers: dict[str, Scalar] = Field(default_factory=lambda: {}, description="request headers; a key with "
                                                                                "secret('NAME') is redacted everywhere")
    json_: Any = Field(default=None, alias="json", description="a value sent as the JSON body (not with body)")
    body: str | dict[str, Scalar] | None = Field(
        default=None, description="the body as text, or a mapping sent form-encoded (not with json)")
    timeout: float = Field(default=30, gt=0, description="seconds for the whole call, retries included")
    retries: int = Field(default=2, ge=0, le=10, description="attempts after the first, for 408, 409, 429, 5xx and "
                                                            "dropped connections")
    fail_on_status: bool = Field(default=True, description="a 4xx or 5xx is an http_error (false: it is an output)")

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("headers")
    @classmethod
    def _header_lines(cls, headers: dict[str, Scalar]) -> dict[str, Scalar]:
        for name, value in headers.items():
            if not _TOKEN.match(name):
                raise ValueError(f"'{name}' is not a header name (letters, digits and !#$%&'*+.^_`|~-)")
            text = _text(value)
            if any(c in text for c in "\r\n\0"):
                raise ValueError(f"the header '{name}' holds a line break")
            if not text.isascii():
                raise ValueError(f"the header '{name}' holds characters beyond ASCII, which a header cannot carry as "
                                 "text: send it in the body, or encode it (base64, percent-encoding)")
        return headers

    @model_validator(mode="after")
    def _one_body(self) -> HttpRequestInputs:
        if self.json_ is not None and self.body is not None:
            raise ValueError("json and body are both given: send one of them")
        return self


class HttpRequestOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True, populate_by_name=True)

    status: int = Field(default=0, description="the response's status code")
    headers: dict[str, str] = Field(default={}, description="response headers, names in lower case")
    json_: Any = Field(default=None, alias="json", description="the body read as JSON; null when it is not JSON")
    text: str = Field(default="", description="the body as text")


def _body(inputs: HttpRequestInputs) -> tuple[bytes | None, Any, str | None]:
    """The body's bytes, what a Detailed trace shows of it, and its default content type."""
    if inputs.json_ is not None:
        # engine's writer: a data table as its rows, an integer past 64 bits as written
        return dumps(inputs.json_), inputs.json_, "application/json"
    if isinstance(inputs.body, dict):
        form = {name: _text(value) for name, value in inputs.body.items()}
        return urlencode(form).encode(), form, "application/x-www-form-urlencoded"
    if inputs.body is not None:
        return inputs.body.encode(), inputs.body, "text/plain; charset=utf-8"
    return None, None, None


class _Traced:
    """What the sending code tells the run, as trace events: each attempt (Detailed) and each retry (Debug)."""

    __slots__ = ("context",)

    def __init__(self, context: RunContext) -> None:
        self.context = context

    def requested(self, method: str, url: str, headers: dict[str, str], body: Any, attempt: int) -> None:
        self.context.emit(Event.HTTP_REQUEST, method=method, url=url, headers=headers, body=body, attempt=attempt)

    def responded(self, status: int, headers: dict[str, str], body: Any, duration_ms: float, attempt: int) -> None:
        self.context.emit(Event.HTTP_RESPONSE, status=status, headers=headers, body=body, duration_ms=duration_ms,
                          attempt=attempt)

    def retried(self, attempt: int, wait_s: float, reason: str) -> None:
        self.context.emit(Event.HTTP_RETRIED, attempt=attempt, wait_s=wait_s, reason=reason)


class HttpRequest(Block):
    """Calls an HTTP API on a host the diagram allows (allowed_hosts), with retries."""

    Inputs = HttpRequestInputs
    Outputs = HttpRequestOutputs
    effects: ClassVar[bool] = True  # a call that may change a server's state: checkpointed after, resent only in flight

    def check_diagram(self, diagram: DiagramSpec, report: Report) -> None:
        from engine.providers import literal_url_refusal  # the standard library's parser: validate loads no httpx

        refusal = literal_url_refusal(self.spec.with_.get("url"), diagram.allowed_hosts)
        if refusal is not None:
            report("url", *refusal)

    async def run(self, inputs: HttpRequestInputs, context: RunContext) -> dict[str, Any]:
        return await send_request(inputs, context, context.diagram.spec.allowed_hosts)


async def send_request(inputs: HttpRequestInputs, context: RunContext, allowed_hosts: Sequence[str], *,
                       observed: bool = True, **called: Any) -> dict[str, Any]:
    """HttpRequest's call, for the block and for a registry's `http:` tool (blocks/_http_tool.py): the URL held to
    `allowed_hosts`, sent for the current block, traced (`called`: more fields of its `http_called` event); its
    outputs, or `http_error` for a 4xx or 5xx unless `fail_on_status: false`. `observed`: whether `--record` hears
    the answer as the block's scripted reply."""
    from engine.providers import Outgoing, checked_url, send_web, status_error, web_outputs  # httpx loads here

    url = checked_url(inputs.url, inputs.query, allowed_hosts)
    headers = {name: _text(value) for name, value in inputs.headers.items()}
    content, shown, content_type = _body(inputs)
    if content_type is not None and not any(name.lower() == "content-type" for name in headers):
        headers["content-type"] = content_type
    traced = _Traced(context)
    # Each attempt's request and response are recorded only at Detailed: copying them costs on every call.
    exchanges = traced if context.message_level >= MessageLevel.DETAILED else None
    services = context.services
    began = time.perf_counter()
    fetched = await send_web(services, Outgoing(inputs.method, url, headers, content, shown), block=context.address,
                             timeout=inputs.timeout, retries=inputs.retries, exchanges=exchanges,
                             retried=traced.retried, observed=observed)
    context.emit(Event.HTTP_CALLED, method=inputs.method, url=str(url), status=fetched.status,
                 attempts=fetched.attempts, duration_ms=round((time.perf_counter() - began) * 1000, 3),
                 offline=services.offline, **called)
    if inputs.fail_on_status and fetched.status >= 400:
        raise status_error(fetched, inputs.method)
    return web_outputs(fetched)
