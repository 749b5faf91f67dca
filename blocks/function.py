"""Function: one plain Python call as a step (`module:function` or `module:Class.method`).

The function is imported when the diagram loads (`Block.code_input`), as tool handlers are: from the
diagram's folder first, only from the diagram's `allowed_modules`, only what the module itself defines;
its literal arguments are checked against its signature then. A run calls it with the rendered
`arguments`, by name: a sync function on a handler thread, an async one awaited in the run's task, under
`timeout` and the run's deadline, past either of which it is stopped, never waited for
(`engine.tools.start_call`).
What it returns becomes JSON data (`engine.json_result`); what it raises is a `function_error`, to which
the executor applies the block's error level. A scenario scripts it by block id, `sub/price` in a
subdiagram (`services.scripted`).
"""

from __future__ import annotations

import difflib
import inspect
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from engine import Block, BlockError, BlockTimeout, Event, MessageLevel, Report, RunError, json_result

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio


class FunctionInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a diagram uses the block

    function: str = Field(description="module:function or module:Class.method, written in a module of the diagram's "
                                      "allowed_modules")
    # A factory keeps the schema (and the studio's form) free of a default (see blocks/tool_dispatch.py).
    arguments: dict[str, Any] = Field(default_factory=lambda: {}, description="keyword arguments, by parameter name")
    timeout: float = Field(default=30, gt=0, description="seconds the call may take")


class FunctionOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    result: Any = Field(default=None, description="what the function returned, as JSON data")


class Function(Block):
    """Calls one Python function and outputs its result."""

    Inputs = FunctionInputs
    Outputs = FunctionOutputs
    code_input = "function"
    effects: ClassVar[bool] = True  # user code may act outside the run: checkpointed after, rerun only if in flight
    _code: Callable[..., Any] | None = None
    """The function, imported when the diagram loaded (`bind_code`)."""
    _is_async = False

    def bind_code(self, code: Callable[..., Any]) -> None:
        self._code = code
        self._is_async = inspect.iscoroutinefunction(code)  # asked once, not at every call

    def check(self, constants: Mapping[str, Any], report: Report) -> None:
        """The arguments' names against the function's signature: those written literally (the values may be
        templates; only a whole `arguments` template waits for the run)."""
        if self._code is None:
            return
        arguments = constants.get("arguments")
        if not isinstance(arguments, Mapping):
            arguments = self.spec.with_.get("arguments", {})
            if not isinstance(arguments, Mapping):
                return
        try:
            signature = inspect.signature(self._code)
        except (TypeError, ValueError):  # a builtin without a signature Python can read
            return
        for field, message, hint in _signature_problems(str(self.spec.with_.get("function")), signature, arguments):
            report(field, message, hint)

    async def run(self, inputs: FunctionInputs, context: RunContext) -> dict[str, Any]:
        import asyncio  # imported where it runs: loading the block for `validate` needs no event loop

        name = inputs.function
        scripted = context.services.scripted
        # By its address from the top run (`sub/price` in a Subdiagram's child), as scenarios name it.
        reply = scripted.call(context.address, name, inputs.arguments) if scripted is not None else None
        level = context.message_level
        began = time.perf_counter()
        notes: list[str] = []
        try:
            if reply is not None:
                value = _scripted(name, reply)
            else:
                try:
                    # Most functions return without waiting (finished): then nothing is awaited here.
                    finished, value = _start_call()(self._code, inputs.arguments, timeout=inputs.timeout, name=name,
                                                    is_async=self._is_async, inline_for=_inline_for(inputs, context),
                                                    on_held=_blocking(context, name) if self._is_async else None)
                    if not finished:
                        value = await value
                except RunError:
                    raise  # raised on purpose (an engine.BlockError with a type of its own), or too many calls stuck
                except Exception as exc:
                    if isinstance(exc, _tools().HandlerTimeout) and exc.timeout < inputs.timeout:
                        # Cut at the run's deadline on the run's own thread: the deadline's own cancellation ends the
                        # step as it would have ended the awaited call (run_timeout), once the loop runs again.
                        for _ in range(3):
                            await asyncio.sleep(0)
                    raise _call_failed(exc, inputs, context) from None
            try:
                result = json_result(value, notes)
            except BlockError as exc:
                raise BlockError(f"function '{name}' returned {exc.message}", type=exc.type) from None
        except asyncio.CancelledError:
            # The run's deadline: the call is abandoned, its thread (if stuck) left running.
            if level >= MessageLevel.DEBUG:
                _called(context, inputs, reply, began, {"ok": False, "error": f"function '{name}' was still "
                                                               "running when the run was stopped; it was abandoned"})
            raise
        except RunError as exc:
            if level >= MessageLevel.DEBUG:
                _called(context, inputs, reply, began, {"ok": False, "error": exc.message,
                                                               "error_type": exc.type})
            raise
        if level >= MessageLevel.DEBUG:
            outcome: dict[str, Any] = {"ok": True}
            if notes:
                outcome["notes"] = notes
            if level >= MessageLevel.DETAILED:
                outcome["result"] = result
            _called(context, inputs, reply, began, outcome)
        return {"result": result}


def _inline_for(inputs: FunctionInputs, context: RunContext) -> float | None:
    """How long a plain `def` may run on the run's own thread (Services.inline_calls: a one-run process, outside a
    concurrent Loop's passes): its timeout, or what is left of the run's deadline when that comes first (the
    deadline cannot cancel a call that holds the event loop); None: on a handler thread."""
    if not context.services.inline_calls or context.concurrent:
        return None
    if context.deadline is None:
        return inputs.timeout
    import asyncio

    return max(0.001, min(inputs.timeout, context.deadline - asyncio.get_running_loop().time()))


def _blocking(context: RunContext, name: str) -> Callable[[float], None]:
    """What tells the trace that an async def kept the event loop without awaiting (`blocking_call`, at any level):
    nothing else ran meanwhile, not a server's other runs, not the timer of its own timeout."""
    def held(seconds: float) -> None:
        context.emit(Event.BLOCKING_CALL, function=name, held_ms=round(seconds * 1000, 1),
                     message=f"async def '{name}' kept the event loop {seconds:.2f} s without awaiting; an async def "
                             "must await (asyncio.sleep, not time.sleep), or be a plain def, which runs where its "
                             "timeout can stop it")

    return held


def _called(context: RunContext, inputs: FunctionInputs, reply: Any, began: float, outcome: dict[str, Any]) -> None:
    """The `function_called` event (Debug and up): the function, its arguments as the level shows them, whether a
    scenario answered, the duration, and `outcome` (ok, error, notes, the whole result at Detailed)."""
    current = context.current
    fields = {"block": current.id, "block_type": current.type_name, "function": inputs.function,
              "arguments": context.shown(inputs.arguments)}
    if reply is not None:
        fields["scripted"] = True
    fields["duration_ms"] = _since(began)
    fields.update(outcome)
    context.trace.record(Event.FUNCTION_CALLED, fields)


def _call_failed(exc: Exception, inputs: FunctionInputs, context: RunContext) -> RunError:
    """A call's failure as the block's error: past its timeout a BlockTimeout, else `function_error`."""
    name = inputs.function
    if isinstance(exc, _tools().HandlerTimeout):
        if exc.timeout < inputs.timeout:  # on the run's own thread, cut at the run's deadline (`_inline_for`)
            return BlockTimeout(f"function '{name}' was stopped when the run's time ran out (Start 'timeout'), "
                                f"after {exc.timeout:g} s")
        if exc.held is not None:
            return BlockTimeout(f"function '{name}' kept the event loop {exc.held:.1f} s without awaiting, past its "
                                f"timeout of {inputs.timeout:g} s; its result came too late to be taken (an async def "
                                "must await, or be a plain def, which its timeout can stop)")
        still = ", still running" if exc.left_running else ""
        return BlockTimeout(f"function '{name}' took longer than its timeout of {inputs.timeout:g} s; "
                            f"it was abandoned{still}")
    # User code: its failure is the block's error, named by type, without a traceback.
    return BlockError(context.trace.redactor.text(f"function '{name}' raised {_tools().described(exc)}"),
                      type="function_error")


def _tools() -> Any:
    """engine.tools, imported on the first call: loading the block for `validate` needs no event loop."""
    import engine.tools

    return engine.tools


def _start_call() -> Callable[..., tuple[bool, Any]]:
    """engine.tools.start_call, imported on the first call and kept (read at every step)."""
    global _START_CALL
    if _START_CALL is None:
        _START_CALL = _tools().start_call
    return _START_CALL


_START_CALL: Callable[..., tuple[bool, Any]] | None = None


def _scripted(name: str, reply: Mapping[str, Any]) -> Any:
    """A scenario's reply for the block: its `result`, or its `error` raised as the function's."""
    if "error" in reply:
        raise BlockError(f"function '{name}' failed: {reply['error']}", type="function_error")
    return reply.get("result")


def _since(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 3)


def _signature_problems(function: str, signature: inspect.Signature,
                        arguments: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """(field, message, hint) for each argument the function cannot take by name, and each it needs and lacks."""
    parameters = signature.parameters
    by_name = {name for name, p in parameters.items()
               if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    any_name = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    shown = f"{function}{signature}"
    problems: list[tuple[str, str, str | None]] = []
    for key in arguments:
        if key in by_name or any_name:
            continue
        if key in parameters and parameters[key].kind is inspect.Parameter.POSITIONAL_ONLY:
            problems.append((f"arguments.{key}", f"{shown} takes '{key}' only by position; a Function passes "
                             "arguments by name", "make the parameter a plain one in the function"))
            continue
        close = difflib.get_close_matches(str(key), sorted(by_name), n=1, cutoff=0.6)
        problems.append((f"arguments.{key}", f"{shown} has no parameter '{key}'",
                         f"did you mean '{close[0]}'?" if close else f"its parameters: {', '.join(by_name) or 'none'}"))
    for name, parameter in parameters.items():
        if parameter.default is inspect.Parameter.empty and name not in arguments and parameter.kind in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_ONLY):
            problems.append(("arguments", f"missing argument '{name}' of {shown}", f"add {name}: … under arguments"))
    return problems
