"""The step loop: run a diagram node by node from Start.

One step: render and validate the block's inputs, run it, then either follow the
port it chose (a Loop's body) or apply `set` and take the first link whose `when`
holds. A RunError is then the error level's to decide: Ignore continues along
`next` with empty outputs, Handle goes to `on_error` with `error` in scope, and
anything else fails the run. Every run ends with a `run_finished` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.compile.diagram import CompiledBlock, Diagram
from engine.compile.templating import truthy
from engine.errors import BlockError, InputError, RunError, RunTimeout, StepLimitReached, TemplateError
from engine.format.spec import ErrorLevel, MessageLevel
from engine.format.tables import TableError, to_table
from engine.format.values import full_value, short_value
from engine.runtime.context import RunContext, Services
from engine.runtime.trace import Console, Event, Trace, new_run_id

__all__ = ["RunResult", "execute"]


@dataclass
class RunResult:
    """What a run did: `status` is "succeeded" or "failed"."""

    run_id: str
    status: str
    variables: dict[str, Any]
    path: list[str]
    errors: list[dict[str, Any]]
    trace: Path | None
    duration: float
    steps: int
    diagram: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def as_json(self) -> dict[str, Any]:
        """The object `diagrama run --output json` prints (DESIGN.md, "Command line")."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "variables": self.variables,
            "path": self.path,
            "errors": self.errors,
            "trace": str(self.trace) if self.trace else None,
        }


class _RunFailed(Exception):
    def __init__(self, error: RunError) -> None:
        self.error = error


class _Executor:
    def __init__(self, diagram: Diagram, ctx: RunContext, trace: Trace) -> None:
        self.diagram = diagram
        self.ctx = ctx
        self.trace = trace
        self.path: list[str] = []
        self.errors: list[dict[str, Any]] = []
        self.steps = 0
        self.outputs: dict[str, Any] = {}
        self.tokens = 0
        self._base_dir = {"base_dir": diagram.directory}

    def _render_inputs(self, block: CompiledBlock) -> tuple[BaseModel, dict[str, Any]]:
        scope = self.ctx.scope
        rendered: dict[str, Any] = {}
        name = ""
        try:
            for name, evaluator in block.inputs:
                rendered[name] = evaluator.evaluate(scope)
        except TemplateError as exc:
            raise TemplateError(f"with.{name}: {exc.message}", type=exc.type) from None
        try:
            return block.inputs_model.model_validate(rendered, context=self._base_dir), rendered
        except ValidationError as exc:
            problems = []
            for error in exc.errors(include_url=False):
                where = ".".join(str(part) for part in error["loc"]) or "with"
                shown = short_value(error.get("input"))
                problems.append(f"with.{where}: {error['msg']} (got {shown!r})")
            raise InputError("; ".join(problems)) from None

    def _apply_set(self, block: CompiledBlock) -> None:
        scope = self.ctx.scope
        updates = []
        name = ""
        try:
            for name, evaluator in block.set_items:
                updates.append((name, evaluator.evaluate(scope)))
        except TemplateError as exc:
            raise TemplateError(f"set.{name}: {exc.message}", type=exc.type) from None
        scope.values.update(updates)

    def _choose(self, block: CompiledBlock, *, lenient: bool = False) -> CompiledBlock | None:
        scope = self.ctx.scope
        for link in block.links:
            when = link.when
            if when is None:
                return link.target
            try:
                if truthy(when.evaluate(scope)):
                    return link.target
            except TemplateError as exc:
                if lenient:
                    continue
                raise TemplateError(f"next[{link.index}].when: {exc.message}", type=exc.type) from None
        return None

    def _fail(self, block: CompiledBlock, error: RunError) -> tuple[CompiledBlock | None, str]:
        record: dict[str, Any] = dict(error.as_dict())
        self.errors.append(record)
        level = block.error_level if block.error_level is not None else self.diagram.error_level
        scope = self.ctx.scope
        if level is ErrorLevel.IGNORE:
            record["ignored"] = True
            scope.overlay(block.empty_outputs)
            try:
                return self._choose(block, lenient=True), "next"
            finally:
                scope.clear_overlay()
        if block.on_error is not None:
            record["handled_by"] = block.on_error.id
            scope.values["error"] = {"block": error.block, "type": error.type, "message": error.message}
            return block.on_error, "error"
        raise _RunFailed(error)

    async def steps_from_start(self) -> None:
        ctx = self.ctx
        scope = ctx.scope
        trace = self.trace
        default_level = ctx.default_message_level
        max_steps = self.diagram.settings.max_steps
        block: CompiledBlock | None = self.diagram.start
        came_from: CompiledBlock | None = None
        started = ctx.started
        path = self.path
        outputs_of = self.outputs
        while block is not None:
            if self.steps >= max_steps:
                raise _RunFailed(
                    StepLimitReached(
                        f"the run reached max_steps ({max_steps}) at block '{block.id}'; a cycle may never end "
                        "(raise max_steps on the Start block if the run is meant to be this long)",
                        block=block.id,
                    )
                )
            self.steps += 1
            path.append(block.id)
            ctx.current = block
            ctx.port = None
            ctx.entered_from_body = came_from is not None and came_from.id in block.body_region
            level = block.message_level if block.message_level is not None else default_level
            shown: dict[str, Any] | None = None
            if level:
                began = time.perf_counter()
                trace.emit(Event.BLOCK_STARTED, block=block.id, block_type=block.type_name, step=self.steps,
                           offset_ms=round((began - started) * 1000, 3))
            try:
                inputs = block.static_inputs
                if inputs is None:
                    inputs, shown = self._render_inputs(block)
                elif level:
                    shown = {name: evaluator.source for name, evaluator in block.inputs}
                outputs = await block.impl.run(inputs, ctx)
                if ctx.port is not None:
                    following: CompiledBlock | None = block.ports[ctx.port]
                    via = ctx.port
                else:
                    via = "next"
                    if block.reads_outputs:
                        scope.overlay(outputs)
                        try:
                            if block.set_items:
                                self._apply_set(block)
                            following = self._choose(block)
                        finally:
                            scope.clear_overlay()
                    else:
                        following = block.links[0].target if block.links else None
            except Exception as exc:  # a plug-in's own bug is recorded like any block error
                error = exc if isinstance(exc, RunError) else BlockError(
                    f"{type(exc).__name__}: {exc}", type="block_raised", block=block.id
                )
                error.block = error.block or block.id
                # Errors are kept at every message level, and come before the step's end.
                trace.emit(Event.BLOCK_FAILED, block=block.id, block_type=block.type_name, error_type=error.type,
                           message=error.message)
                if level:
                    ignored = (block.error_level if block.error_level is not None
                               else self.diagram.error_level) is ErrorLevel.IGNORE
                    self._emit_finished(block, began, None, "ignored" if ignored else "failed", shown, {},
                                        level, error)
                following, via = self._fail(block, error)
                came_from, block = block, following
                continue
            outputs_of[block.id] = outputs
            usage = outputs.get("usage") if outputs else None
            if usage:
                self.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
            if level:
                self._emit_finished(block, began, following, "succeeded", shown, outputs, level, None, via)
            came_from, block = block, following

    def _emit_finished(
        self,
        block: CompiledBlock,
        began: float,
        following: CompiledBlock | None,
        status: str,
        inputs: dict[str, Any] | None,
        outputs: Mapping[str, Any],
        level: MessageLevel,
        error: RunError | None,
        via: str | None = None,
    ) -> None:
        fields: dict[str, Any] = {
            "block": block.id,
            "block_type": block.type_name,
            "status": status,
            "duration_ms": round((time.perf_counter() - began) * 1000, 4),
        }
        if error is None:
            fields["next"] = following.id if following is not None else None
            fields["via"] = via
        render = full_value if level >= MessageLevel.DETAILED else short_value
        if inputs:
            fields["inputs"] = {name: render(value) for name, value in inputs.items()}
        if outputs:
            fields["outputs"] = {name: render(value) for name, value in outputs.items()}
        if block.set_items and error is None and via == "next":
            values = self.ctx.scope.values
            fields["set"] = {name: render(values.get(name)) for name, _ in block.set_items}
        self.trace.emit(Event.BLOCK_FINISHED, **fields)


def _fresh(value: Any, diagram: Diagram) -> Any:
    """A run's own copy of a written value; `{csv: path}` becomes the table it names."""
    if isinstance(value, dict) and set(value) == {"csv"}:
        try:
            return to_table(value, diagram.directory)
        except TableError as exc:
            raise _RunFailed(TableError(exc.message, block=diagram.start.id)) from None
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value


def _initial_scope(diagram: Diagram, inputs: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, default in diagram.settings.inputs.items():
        values[name] = _fresh(default, diagram)
    values.update(inputs)
    return values


async def execute(
    diagram: Diagram,
    inputs: Mapping[str, Any] | None = None,
    *,
    runs_dir: Path | None = Path("runs"),
    message_level: MessageLevel | None = None,
    services: Services | None = None,
    run_id: str | None = None,
    console: Console | None = None,
) -> RunResult:
    """Run `diagram` once. `runs_dir=None` keeps no trace file (events are still built)."""
    services = services or Services()
    run_id = run_id or new_run_id()
    trace_path = runs_dir / run_id / "trace.jsonl" if runs_dir is not None else None
    trace = Trace(trace_path, run_id, secrets=services.secrets(), console=console)
    default_level = message_level if message_level is not None else diagram.message_level
    values: dict[str, Any] = {}
    scope = diagram.env.new_scope(values)
    ctx = RunContext(run_id, diagram, scope, trace, services, default_level)
    executor = _Executor(diagram, ctx, trace)
    started = time.perf_counter()
    start_fields: dict[str, Any] = {"diagram": diagram.name, "path": str(diagram.path), "message_level": default_level.name.title()}
    if default_level >= MessageLevel.DEBUG:
        start_fields["inputs"] = {k: short_value(v) for k, v in (inputs or {}).items()}
    trace.emit(Event.RUN_STARTED, **start_fields)
    status = "failed"
    finished = False
    try:
        values.update(_initial_scope(diagram, inputs or {}))
        try:
            for name, evaluator in diagram.variables:
                scope.values[name] = _fresh(evaluator.evaluate(scope), diagram)
        except TemplateError as exc:
            raise _RunFailed(TemplateError(f"variables: {exc.message}", type=exc.type,
                                           block=diagram.start.id)) from None
        timeout = diagram.settings.timeout
        deadline = asyncio.timeout(timeout) if timeout else contextlib.nullcontext()
        try:
            async with deadline:
                await executor.steps_from_start()
        except TimeoutError:
            if not (timeout and isinstance(deadline, asyncio.Timeout) and deadline.expired()):
                raise
            current = ctx.current
            error = RunTimeout(f"the run took longer than its timeout of {timeout:g} s (Start 'timeout'); "
                               f"block '{current.id}' was cancelled", block=current.id)
            executor.errors.append(error.as_dict())
            trace.emit(Event.BLOCK_FAILED, block=current.id, block_type=current.type_name,
                       error_type=error.type, message=error.message)
            raise _RunFailed(error) from None
        status = "succeeded"
    except _RunFailed as failure:
        if failure.error.as_dict() not in executor.errors:
            executor.errors.append(failure.error.as_dict())
            if isinstance(failure.error, (StepLimitReached, TemplateError)):
                trace.emit(Event.BLOCK_FAILED, block=failure.error.block, error_type=failure.error.type,
                           message=failure.error.message)
    except BaseException as exc:
        executor.errors.append({"block": ctx.current.id, "type": "run_interrupted",
                                "message": f"the run was interrupted ({type(exc).__name__})"})
        trace.emit(Event.RUN_FINISHED, status="failed", steps=executor.steps, path=executor.path,
                   errors=executor.errors, duration_ms=round((time.perf_counter() - started) * 1000, 3))
        finished = True
        trace.close()
        raise
    finally:
        if not finished:
            duration = time.perf_counter() - started
            trace.emit(Event.RUN_FINISHED, status=status, steps=executor.steps, path=executor.path,
                       errors=executor.errors, duration_ms=round(duration * 1000, 3))
            trace.close()
    functions = diagram.env.functions
    variables = {k: v for k, v in scope.values.items() if k not in functions}
    return RunResult(
        run_id=run_id,
        status=status,
        variables=variables,
        path=executor.path,
        errors=executor.errors,
        trace=trace_path,
        duration=time.perf_counter() - started,
        steps=executor.steps,
        diagram=diagram.name,
        outputs=executor.outputs,
        tokens=executor.tokens,
    )
