"""HttpRequest in scenarios: the answers a scenario scripts for a block (`HttpReply`), and the requests it
expects the robot to send (`ExpectedHttpRequest`), read from what the simulator's scripted far side recorded.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.providers.simulator.web import WebRequest

__all__ = ["HTTP_BLOCK", "ExpectedHttpRequest", "HttpReply", "http_expectations"]

HTTP_BLOCK = "HttpRequest"
"""The block type whose replies are HTTP answers."""


class HttpReply(BaseModel):
    """One scripted answer to an HttpRequest block: a status with a JSON or text body, or a timeout or a dropped
    connection (which the block retries with the next reply)."""

    # An editor tells it from the other kinds as `engine.testing.replies.reply_kind` does: by its status, or its error.
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              json_schema_extra={"anyOf": [{"required": ["status"]}, {"required": ["error"]}]})
    status: int | None = Field(default=None, ge=100, le=599, description="the status code")
    json_: Any = Field(default=None, alias="json", description="the body, as JSON")
    text: str | None = Field(default=None, description="the body, as text")
    headers: dict[str, str] = Field(default_factory=dict, description="response headers")
    error: Literal["timeout", "connection"] | None = Field(default=None, description="no answer: the block times "
                                                                                    "out, or the connection drops")
    delay: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_outcome(self) -> HttpReply:
        if self.error is not None and (self.status is not None or self.json_ is not None or self.text is not None):
            raise ValueError("a reply with an error has no status or body")
        if self.json_ is not None and self.text is not None:
            raise ValueError("json and text are both given: the body is one of them")
        return self


class ExpectedHttpRequest(BaseModel):
    """An HttpRequest the robot sent: each key written must match (`json` on the keys it writes, as variables do)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    block: str | None = None
    method: str | None = None
    url: str | None = Field(default=None, description="the URL without its query")
    query: dict[str, Any] | None = Field(default=None, description="query parameters (a repeated one as a list)")
    headers: dict[str, str] | None = Field(default=None, description="headers sent (names in lower case)")
    json_: Any = Field(default=None, alias="json", description="the JSON body")
    body: Any = Field(default=None, description="the body as text, or a form as a mapping")


def _sent(request: WebRequest) -> dict[str, Any]:
    """An HttpRequest as `expect.http_requests` reads it."""
    parts = urlsplit(request.url)
    query = {name: values[0] if len(values) == 1 else values
             for name, values in parse_qs(parts.query, keep_blank_values=True).items()}
    body = request.body
    if isinstance(body, str) and "form-urlencoded" in request.headers.get("content-type", ""):
        body = {name: values[0] if len(values) == 1 else values for name, values in parse_qs(body).items()}
    sent: dict[str, Any] = {"block": request.block, "method": request.method,
                            "url": parts._replace(query="", fragment="").geturl(), "query": query,
                            "headers": request.headers}
    sent["json" if isinstance(body, (dict, list)) and "json" in request.headers.get("content-type", "") else "body"] = body
    return sent


def http_expectations(wanted: list[ExpectedHttpRequest],
                      requests: list[WebRequest]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What `expect.http_requests` wants and what was sent, in the same shape, for the scenario to compare in order."""
    expected = [w.model_dump(exclude_none=True, by_alias=True) for w in wanted]
    for each in expected:
        if "method" in each:
            each["method"] = str(each["method"]).upper()
        if "headers" in each:
            each["headers"] = {name.lower(): value for name, value in each["headers"].items()}
    return expected, [_sent(request) for request in requests]
