"""ToolDispatch: runs the tools a model called and appends their results to the history.

Each call is looked up in the diagram's registries, its arguments validated (strict,
or coercing "42" to 42), its handler run (sync on a thread, or async) under the
tool's timeout; a handler still running at the timeout or at the run's deadline is
abandoned, never waited for (`engine.tools.calls`). A failure becomes a tool row the
model can read, unless this block's own error level is Handle, which the executor
applies: the failures go back with the outputs (`WithFailures`). Results are keyed by
call id, so parallel calls never mix. Each result becomes JSON data (`engine.json_result`: a
Decimal a number, bytes base64 text, an unknown type an `unserializable_result` row), never a repr.
`context` holds values for the handlers that the model never sees (the user's id, a tenant): a Python handler gets
each as a keyword argument where it declares a parameter of that name (over any argument the model sent by that
name), an `http:` tool's templates read them as `context.NAME`; they are in no schema offered to the model and in no
tool row, unless a handler returns them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import orjson
from pydantic import BaseModel, ConfigDict, Field

from blocks._request import check_history
from engine import (
    Block,
    BlockError,
    DataTable,
    Event,
    HistoryRow,
    InputError,
    MessageLevel,
    Report,
    Table,
    TableError,
    ToolError,
    WithFailures,
    dumps,
    history_rows,
    history_table,
    json_result,
)

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio
    from engine.tools import ToolRegistry  # the registry, numpy and jsonschema load when a run calls a tool


class ToolDispatchInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a diagram uses the block

    # A factory keeps the schema (and the studio's form) free of a default; a lambda, not `list`, whose signature
    # pydantic would parse through tokenize (see engine.format.spec.no_values).
    calls: list[dict[str, Any]] = Field(default_factory=lambda: [], description="the called_tools of a request block")
    history: Table = Field(default_factory=lambda: DataTable(()), description="the conversation to append results to")
    registry: str | None = Field(default=None, description="only tools of this registry")
    group: str | None = Field(default=None, description="only tools of this group")
    concurrency: int = Field(default=4, ge=1, description="calls run at once")
    context: dict[str, Any] = Field(default_factory=lambda: {},
                                    description="values for the handlers the model never sees (user_id, tenant): a "
                                                "handler's parameter of that name, an http tool's context.NAME")


class ToolDispatchOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    history: Any = Field(default=None, description="the history with one tool row per call")
    results: dict[str, Any] = Field(default={}, description="call id → result")
    errors: list[dict[str, Any]] = Field(default=[], description="[{id, name, error}] for failed calls")


_DECLARED: dict[Any, frozenset[str]] = {}
"""Each handler's parameters that a keyword can fill, read once."""


def _with_context(handler: Any, arguments: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The model's arguments, and each context value the handler declares a parameter for (the context's wins: the
    model cannot say whose orders to read)."""
    declared = _DECLARED.get(handler)
    if declared is None:
        import inspect

        try:
            parameters = inspect.signature(handler).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature: it takes no context
            parameters = ()  # type: ignore[assignment]  # an empty view of no parameters
        declared = _DECLARED[handler] = frozenset(
            p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    return {**arguments, **{name: value for name, value in values.items() if name in declared}}


def _text(result: Any) -> str:
    return result if isinstance(result, str) else dumps(result).decode()


class ToolDispatch(Block):
    """Runs called tools from the tool registry and feeds their results back."""

    Inputs = ToolDispatchInputs
    Outputs = ToolDispatchOutputs
    effects: ClassVar[bool] = True  # tool handlers act outside the run

    def check(self, constants: Mapping[str, Any], report: Report) -> None:
        check_history(constants.get("history"), report)

    async def _one(self, call: dict[str, Any], inputs: ToolDispatchInputs, registry: ToolRegistry | None,
                   context: RunContext, notes: list[str]) -> Any:
        """The call's result as JSON data (`notes`: what the conversion says, for the Debug trace)."""
        value = await self._handled(call, inputs, registry, context)
        try:
            return json_result(value, notes)
        except BlockError as exc:
            raise ToolError(f"tool '{call.get('name')}' returned {exc.message}", type=exc.type) from None

    async def _handled(self, call: dict[str, Any], inputs: ToolDispatchInputs, registry: ToolRegistry | None,
                       context: RunContext) -> Any:
        import asyncio  # imported where it runs: loading the block for `validate` needs no event loop

        from engine.tools import HandlerTimeout, call_handler, check_arguments, described

        name = str(call.get("name"))
        known = registry.tools.get(name) if registry is not None else None
        if known is not None and not known.entry.enabled:
            # Said as it is, so the model stops calling it instead of guessing at another name.
            raise ToolError(f"tool '{name}' is disabled", type="tool_disabled")
        tool = registry.get(name) if registry is not None else None
        if tool is None or (inputs.group and tool.entry.group != inputs.group) or (
                inputs.registry and tool.registry != inputs.registry):
            raise ToolError(f"unknown tool '{name}'", type="unknown_tool")
        arguments = check_arguments(tool, call.get("arguments") or {})
        stubs = context.services.tool_stubs
        if name in stubs:
            return stubs[name]
        if tool.entry.http is not None:  # a registry's http tool: HttpRequest's call (blocks/_http_tool.py)
            from blocks._http_tool import call_http_tool

            return await call_http_tool(tool, arguments, context, inputs.context)
        if tool.entry.knowledge is not None:  # a registry's knowledge tool: Retrieve's search (blocks/_knowledge_tool.py)
            from blocks._knowledge_tool import call_knowledge_tool

            return await call_knowledge_tool(tool, arguments, context)
        handler = tool.handler()
        if inputs.context:
            arguments = _with_context(handler, arguments, inputs.context)
        try:
            return await call_handler(handler, arguments, timeout=tool.entry.timeout, name=name,
                                      on_held=lambda seconds: context.emit(
                                          Event.BLOCKING_CALL, tool=name, held_ms=round(seconds * 1000, 1),
                                          message=f"tool '{name}' kept the event loop {seconds:.2f} s without "
                                                  "awaiting; an async handler must await, or be a plain def"))
        except HandlerTimeout as exc:
            if exc.held is not None:
                raise ToolError(f"tool '{name}' kept the event loop {exc.held:.1f} s without awaiting, past its "
                                f"timeout of {tool.entry.timeout:g} s", type="tool_timeout") from exc
            raise ToolError(f"tool '{name}' timed out after {tool.entry.timeout:g} s", type="tool_timeout") from exc
        except asyncio.CancelledError:
            # The run's deadline: the call is abandoned, its thread (if stuck) left running.
            context.emit(Event.TOOL_CALLED, tool=name, call_id=str(call.get("id")), ok=False, abandoned=True,
                         error=f"tool '{name}' was still running when the run was stopped; it was abandoned")
            raise
        except ToolError:
            raise
        except Exception as exc:  # the handler is user code: its failure is data for the model
            raise ToolError(f"tool '{name}' failed: {described(exc)}", type="tool_failed") from exc

    async def run(self, inputs: ToolDispatchInputs, context: RunContext) -> dict[str, Any]:
        import asyncio

        from engine.tools import HandlerTimeout

        registry = context.diagram.tools
        try:
            rows = history_rows(inputs.history)
        except TableError as exc:
            raise InputError(exc.message) from exc
        limit = asyncio.Semaphore(inputs.concurrency)

        async def guarded(call: dict[str, Any]) -> tuple[Any, ToolError | None, float, list[str]]:
            async with limit:
                began = time.perf_counter()
                notes: list[str] = []
                try:
                    result = await self._one(call, inputs, registry, context, notes)
                    return result, None, time.perf_counter() - began, notes
                except ToolError as exc:
                    return None, exc, time.perf_counter() - began, notes

        outcomes = await asyncio.gather(*(guarded(call) for call in inputs.calls))
        results: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        failures: list[ToolError] = []
        for call, (result, error, seconds, notes) in zip(inputs.calls, outcomes, strict=True):
            call_id, name = str(call.get("id")), str(call.get("name"))
            cause = error.__cause__ if error is not None else None
            left: dict[str, Any] = {"abandoned": True} if isinstance(cause, HandlerTimeout) and cause.left_running else {}
            if error is not None:
                left["error_type"] = error.type
            if notes:
                left["notes"] = notes
            if context.message_level >= MessageLevel.DETAILED:  # contents: Detailed alone, like request bodies
                left["arguments"] = call.get("arguments")
                if error is None:
                    left["result"] = result
            context.emit(Event.TOOL_CALLED, tool=name, call_id=call_id, duration_ms=round(seconds * 1000, 3),
                         ok=error is None, error=error.message if error else None, **left)
            if error is not None:
                errors.append({"id": call_id, "name": name, "error": error.message, "type": error.type})
                failure = ToolError(f"call {call_id}: {error.message}", type=error.type)
                failure.__cause__ = error  # the executor may raise it; the handler's traceback stays behind it
                failures.append(failure)
                content = orjson.dumps({"error": error.message}).decode()
            else:
                results[call_id] = result
                content = _text(result)
            rows.append(HistoryRow("tool", content, call_id, name))
        return WithFailures({"history": history_table(rows), "results": results, "errors": errors}, failures)
