"""A registry's `http:` tool as ToolDispatch calls it: its templates (compiled at load) rendered over the model's
arguments, then HttpRequest's own call (blocks/http_request.py: the same input checks, hosts, secrets, retries,
same-host redirects, body caps and trace), held to the tool's `allowed_hosts` and timeout.

Every failure is a ToolError, which the model reads as it reads a failing Python tool's; the result is HttpRequest's
outputs (`status`, `headers`, `json`, `text`), scrubbed of the run's secrets. Offline, the call goes to the
simulator's scripted web side, which answers nothing a scenario did not script: a scenario stubs the tool
(`tools: {name: result}`), as it stubs any tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from blocks.http_request import HttpRequestInputs, send_request
from engine import RunError, ToolError

if TYPE_CHECKING:
    from engine import RunContext
    from engine.tools import Tool

__all__ = ["call_http_tool"]

_TYPES = {"block_timeout": "tool_timeout"}
"""Error types said as a tool's, as a Python tool's are (its timeout is the tool's, not a block's)."""


async def call_http_tool(tool: Tool, arguments: Mapping[str, Any], context: RunContext,
                         values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The tool's HTTP call with these (checked) arguments: HttpRequest's outputs, or a ToolError. `values`:
    ToolDispatch's `context`, which the templates read as `context.NAME` (the model never sees them)."""
    spec, templates = tool.entry.http, tool.http_templates
    if spec is None or templates is None:  # pragma: no cover - the loader compiles every http tool or refuses it
        raise ToolError(f"tool '{tool.name}' is not an http tool", type="tool_failed")
    services = context.services
    try:
        rendered = templates.render(arguments, services.environ, offline=services.offline, context=values)
        inputs = HttpRequestInputs.model_validate({"method": spec.method, **rendered, "timeout": tool.entry.timeout,
                                                   "retries": spec.retries})
        outputs = await send_request(inputs, context, spec.allowed_hosts, observed=False, tool=tool.name)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ToolError(f"tool '{tool.name}': the request's {where or 'fields'}: {first['msg']}",
                        type="invalid_input") from None
    except RunError as exc:
        said = context.trace.redactor.text(_said(exc, tool.name))  # an error answer's body may echo a key back
        raise ToolError(f"tool '{tool.name}': {said}", type=_TYPES.get(exc.type, exc.type)) from exc
    scrubbed: dict[str, Any] = context.trace.redactor.value(outputs)  # a server may echo a key back
    return scrubbed


def _said(exc: RunError, name: str) -> str:
    """The error's message as the tool's: its hosts and its offline answers are the tool's, not the diagram's."""
    if exc.type == "http_offline":
        return (f"an http tool does not reach the network in an offline run; a scenario stubs it "
                f"(tools: {{{name}: {{status: 200, json: ...}}}})")
    return exc.message.replace("the diagram's top-level allowed_hosts", "the tool's http.allowed_hosts").replace(
        "the diagram's allowed_hosts", "the tool's allowed_hosts")
