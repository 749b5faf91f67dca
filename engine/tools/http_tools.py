"""A registry tool of kind `http:`: an HTTP call offered to the model, its arguments templated into the request.

What a registry file says of one (`HttpToolSpec`: method, url, query, headers, json or body, allowed_hosts) and
what can be checked here at load: the fields' shapes and a URL whose host is written out against the tool's own
`allowed_hosts`. Compiling its templates (with `secret()`) is the compile layer's (engine.compile.http_tools); the
call, through HttpRequest's own sending code, is ToolDispatch's. Here nothing is rendered or sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.format.hosts import literal_url_refusal
from engine.format.spec import HostEntryText

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["HTTP_TEMPLATED", "HttpToolSpec", "RenderedHttp", "literal_host_problem"]

HTTP_TEMPLATED = ("url", "query", "headers", "json", "body")
"""The fields of an `http:` tool whose values are templates over the model's arguments (and `secret('NAME')`)."""


class HttpToolSpec(BaseModel):
    """An `http:` tool's request: HttpRequest's inputs, templated over the tool's arguments, and its own hosts."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)  # `json` is the field `json_`

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = Field(
        default="GET", description="the HTTP method")
    url: str = Field(min_length=1, description="the URL, a template over the tool's arguments "
                                                "(`{{ city | urlencode }}`); its host must be in allowed_hosts")
    query: dict[str, Any] = Field(default_factory=lambda: {}, description="query parameters added to the URL's own "
                                                                          "(templates; a list repeats the name; null "
                                                                          "leaves it out)")
    headers: dict[str, Any] = Field(default_factory=lambda: {}, description="request headers (templates); one with "
                                                                            "secret('NAME') is redacted everywhere")
    json_: Any = Field(default=None, alias="json", description="a value sent as the JSON body (not with body)")
    body: str | dict[str, Any] | None = Field(default=None, description="the body as text, or a mapping sent "
                                                                        "form-encoded (not with json)")
    allowed_hosts: list[HostEntryText] = Field(description="the hosts this tool may call (the same entries as a "
                                                            "diagram's allowed_hosts); checked at load and on each call")
    retries: int = Field(default=2, ge=0, le=10, description="attempts after the first, for 408, 409, 429, 5xx and "
                                                            "dropped connections")

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_body(self) -> HttpToolSpec:
        if self.json_ is not None and self.body is not None:
            raise ValueError("json and body are both given: send one of them")
        return self

    def templated(self) -> dict[str, Any]:
        """The fields written as templates, by their YAML names (`json`, not `json_`); those not given left out."""
        written = {"url": self.url, "query": self.query, "headers": self.headers, "json": self.json_, "body": self.body}
        return {name: value for name, value in written.items() if value is not None and value != {}}


class RenderedHttp(Protocol):
    """An `http:` tool's templates, compiled at load (engine.compile.http_tools)."""

    def render(self, arguments: Mapping[str, Any], environ: Mapping[str, str], *, offline: bool,
               context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The request's fields (`url`, `query`, `headers`, `json`, `body`) for these arguments; `secret()` reads
        `environ` (offline, an unset secret reads as a stand-in), `context.NAME` ToolDispatch's `context:`. Raises
        RunError for a template that fails."""
        ...


def literal_host_problem(spec: HttpToolSpec) -> tuple[str, str] | None:
    """Load time: (message, hint) when the URL as written names a host the tool's `allowed_hosts` does not admit."""
    refusal = literal_url_refusal(spec.url, spec.allowed_hosts)
    if refusal is None:
        return None
    message = refusal[0].replace("the diagram's allowed_hosts", "the tool's allowed_hosts")
    listed = ", ".join(spec.allowed_hosts) or "none"
    hint = f"list it in the tool's http.allowed_hosts (now: {listed})" if "allowed_hosts" in message else refusal[1]
    return message, hint
