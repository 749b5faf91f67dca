"""The step loop: run a diagram node by node from Start.

A run is an object advanced one step at a time (`_Run.step_now`, or `_Run.step` for a block
that waits). One step: render and validate the block's inputs, run it, then either follow
the port it chose (a Loop's body) or take the block's route (`set`, then the first link
whose `when` holds: engine.compile.routes). The executor alone decides what an error does
(engine.runtime.error_levels). An exception that is no RunError is a bug (`internal_error`,
or `block_raised` for a plug-in's block) and fails the run. Every run ends with a
`run_finished` event and a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from pydantic import BaseModel, ValidationError

from engine.compile.block import WithFailures
from engine.compile.diagram import CompiledBlock, Diagram
from engine.compile.secrets import run_environ
from engine.compile.templating import Scope
from engine.errors import (
    BlockError,
    InputError,
    InternalError,
    RunError,
    RunFailed,
    RunSuspended,
    RunTimeout,
    StepLimitReached,
    TableError,
    TemplateError,
    TraceWriteFailed,
)
from engine.format.levels import MessageLevel, level_name
from engine.format.tables import to_table
from engine.format.validation import dotted, validation_message
from engine.format.values import short_value
from engine.runtime.context import RunContext, Services
from engine.runtime.durable import Checkpoints, Resumed, host_name, run_record
from engine.runtime.durable_steps import DurableSteps
from engine.runtime.error_levels import ErrorLevels
from engine.runtime.failures import block_raised, bug, kept_failure, not_outputs
from engine.runtime.result import RunResult, SubdiagramRun
from engine.runtime.step_events import finished_fields, since, started_fields
from engine.runtime.trace import SLOW_STEP_S, Console, Event, Trace, new_run_id

__all__ = ["RunResult", "execute"]


def _fresh(value: Any, diagram: Diagram) -> Any:
    """A run's own copy of a written value; `{csv: path}` becomes the table it names."""
    if isinstance(value, dict) and set(value) == {"csv"}:
        return to_table(value, diagram.directory)
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value


class _Run(DurableSteps, ErrorLevels):
    """One run of a diagram: its context, the path so far, the errors, the step count.

    A run nested in a step (a Subdiagram's child, a concurrent Loop's pass: engine.runtime.nested) is one
    too, with the top run as its `root`: the step budget and the Subdiagram calls are counted there.
    """

    def __init__(self, diagram: Diagram, ctx: RunContext, trace: Trace, *, root: _Run | None = None, depth: int = 0,
                 lane: str = "") -> None:
        self.diagram = diagram
        self.ctx = ctx
        self.trace = trace
        self.path: list[str] = []
        self.errors: list[dict[str, Any]] = []
        self.steps = 0
        self.outputs: dict[str, Any] = {}
        self.tokens = 0
        self.started = time.perf_counter()
        self.step_began = self.started
        self._base_dir = {"base_dir": diagram.directory}
        self.checkpoints: Checkpoints | None = None
        """Where this run checkpoints when it is durable (Services.checkpoints, Start's `durable`)."""
        self.resume: Resumed | None = None
        """The checkpoint this run continues from (`diagrama resume`), or None for a run from Start."""
        self.seq = 0
        """The number of the last checkpoint written."""
        self.marked = 0
        """How much of `path` the checkpoints so far cover (each holds the blocks run since the one before)."""
        self.remembered: dict[str, Any] = {}
        """A session's memory values, set over Start's variables (`diagrama run --session`)."""
        self.waiting: dict[str, Any] | None = None
        """What the Wait this run stopped at asks (block, prompt, form, timeout, asked_at); None unless waiting."""
        self.root: _Run = root or self
        self.depth = depth
        """How many Subdiagram calls deep this run is (0: the top run, and its passes)."""
        self.lane = lane
        """The trace lane of its steps ("" for the top run's own; TraceLane)."""
        self.calls: dict[str, int] = {}
        """The top run's: Subdiagram calls so far per block address (a child's run id counts them)."""
        self.loaded: dict[Path, Diagram] = {}
        """The top run's: the diagrams templated Subdiagram paths named, loaded once a run."""
        ctx.nesting = self

    # -- runs inside a step (engine.runtime.nested) ---------------------------------------------------
    async def subdiagram(self, context: RunContext, diagram: str, inputs: Mapping[str, Any]) -> SubdiagramRun:
        from engine.runtime.nested import run_child  # loads with the first Subdiagram a run calls

        return await run_child(self, context, diagram, inputs)

    async def passes(self, context: RunContext, bindings: Sequence[Mapping[str, Any]], concurrency: int) -> list[Scope]:
        from engine.runtime.nested import run_passes

        return await run_passes(self, context, bindings, concurrency)

    # -- the run as a whole ----------------------------------------------------------------
    async def run(self, inputs: Mapping[str, Any]) -> str:
        """Run from Start to the end; the status. Only an interruption (Ctrl-C, cancel) escapes."""
        status = "failed"
        try:
            if self.resume is None:
                self._prepare_scope(inputs)
                if self.checkpoints is not None:  # checkpoint 0: the scope Start made (replay may begin there)
                    self._checkpoint(self.diagram.start, None)
            else:
                self._restore(self.resume)
            await self._steps_within_deadline()
            status = "succeeded"
            self._last_checkpoint()
        except RunFailed:
            self._last_checkpoint()  # recorded where it happened; the last one lets a replay reach the failed block
        except RunSuspended as request:
            if self.checkpoints is not None:
                status = "waiting"
            else:
                error = BlockError("a Wait needs a durable run: run it with `diagrama run` (a run store), or give "
                                   "execute a checkpoint store (Services.checkpoints)", type="wait_not_durable",
                                   block=self.ctx.current.id)
                del request
                self.errors.append(error.as_dict())
        except Exception as exc:  # a bug outside any block's step
            self._record_bug(self.ctx.current, bug(self.ctx.current, exc), exc)
        except BaseException as exc:
            self.errors.append({"block": self.ctx.current.id, "type": "run_interrupted",
                                "message": f"the run was interrupted ({type(exc).__name__})"})
            self._finish("failed", stored="interrupted")
            raise
        return self._finish(status)

    def _prepare_scope(self, inputs: Mapping[str, Any]) -> None:
        diagram = self.diagram
        values = self.ctx.scope.values
        start = diagram.start.id
        try:
            for name, default in diagram.settings.inputs.items():
                values[name] = _fresh(default, diagram)
            values.update(inputs)
            for name, evaluator in diagram.variables:
                values[name] = _fresh(evaluator.evaluate(self.ctx.scope), diagram)
            values.update(self.remembered)
        except TemplateError as exc:
            self._end(TemplateError(f"variables: {exc.message}", type=exc.type, block=start), announce=True)
        except TableError as exc:
            self._end(exc.at_block(start), announce=False)
        except RunError as exc:  # an error a template function raised (tools() with an unknown group)
            self._end(exc.at_block(start), announce=True)

    async def _steps_within_deadline(self) -> None:
        timeout = self.diagram.settings.timeout
        deadline = asyncio.timeout(timeout) if timeout else contextlib.nullcontext()
        try:
            async with deadline:
                await self._steps_from_start()
        except TimeoutError:
            if not (timeout and isinstance(deadline, asyncio.Timeout) and deadline.expired()):
                raise
            current = self.ctx.current
            error = RunTimeout(f"the run took longer than its timeout of {timeout:g} s (Start 'timeout'); "
                               f"block '{current.id}' was cancelled", block=current.id)
            self.errors.append(error.as_dict())
            self.trace.emit(Event.BLOCK_FAILED, block=current.id, block_type=current.type_name,
                            error_type=error.type, message=error.message, duration_ms=since(self.step_began))
            raise RunFailed(error) from None  # the cancellation is how the deadline works, not a cause

    async def _steps_from_start(self) -> None:
        if self.checkpoints is not None:
            return await self._durable_steps()
        max_steps = self.diagram.settings.max_steps
        trace = self.trace
        block: CompiledBlock | None = self.diagram.start
        came_from: CompiledBlock | None = None
        clock, step_now = time.perf_counter, self.step_now  # read once: this loop turns once per step
        while block is not None:
            now = clock()
            # The last step's lines: written now if it was slow, or a while after the last write (trace.py).
            if trace.pending and (now >= trace.flush_due_at or now - self.step_began >= SLOW_STEP_S):
                trace.flush()
            self.step_began = now
            # Checked first, as LangGraph's loop does: a step that may not run never starts.
            if trace.failure is not None:
                self._end(TraceWriteFailed(trace.failure_message(), block=block.id), announce=False)
            if self.steps >= max_steps:
                self._end(StepLimitReached(
                    f"the run reached max_steps ({max_steps}) at block '{block.id}'; a cycle may never end "
                    "(raise max_steps on the Start block if the run is meant to be this long)",
                    block=block.id,
                ), announce=True)
            if block.awaits:
                came_from, block = block, await self.step(block, came_from)
            else:
                came_from, block = block, step_now(block, came_from)

    def _end(self, error: RunError, *, announce: bool) -> NoReturn:
        """Fail the run with `error`, which no error level handles."""
        self.errors.append(error.as_dict())
        if announce:
            self.trace.emit(Event.BLOCK_FAILED, block=error.block, error_type=error.type, message=error.message,
                            duration_ms=since(self.step_began))
        raise RunFailed(error)

    def _finish(self, status: str, *, stored: str | None = None) -> str:
        self.trace.emit(Event.RUN_FINISHED, status=status, steps=self.steps, path=self.path, errors=self.errors,
                        duration_ms=round((time.perf_counter() - self.started) * 1000, 3))  # once a run: as before
        self.trace.close()
        failure = self.trace.failure
        if failure is not None and not any(e["type"] == TraceWriteFailed.type for e in self.errors):
            # The last lines (run_finished itself) did not fit: the run cannot claim success.
            self.errors.append(TraceWriteFailed(self.trace.failure_message(), block=self.ctx.current.id).as_dict())
            status = "failed"
        if self.checkpoints is not None:
            # A store that fails here leaves the run `running`: it shows as interrupted once its process is gone.
            with contextlib.suppress(OSError):
                self.checkpoints.end(self.ctx.run_id, stored or status, self.waiting)
        return status

    def result(self, status: str) -> RunResult:
        """The run's result, scrubbed once here so that every consumer (console, JSON, store, files) gets it clean."""
        functions = self.diagram.env.functions
        redact = self.trace.redactor.value
        variables = redact({k: v for k, v in self.ctx.scope.values.items() if k not in functions})
        return RunResult(run_id=self.ctx.run_id, status=status, variables=variables, path=self.path,
                         errors=redact(self.errors), trace=self.trace.path,
                         duration=time.perf_counter() - self.started, steps=self.steps, diagram=self.diagram.name,
                         outputs=redact(self.outputs), tokens=self.tokens, redactor=self.trace.redactor,
                         waiting=self.waiting)

    # -- one step ----------------------------------------------------------------------------
    # The hot path of every run. A block whose `run` is a plain function (Set, Start, Loop) steps
    # without a coroutine (`step_now`); one that waits (a request) steps through `step`. The two are
    # twins, line for line, but for that `await` (tests/engine/test_step_twins.py holds them to it):
    # at about a microsecond a step, each call to a helper was a tenth of it, so the step is written
    # out whole. A block's own failures and the executor's are told apart by two `try`s (free when
    # nothing is raised) rather than by wrapping calls; `failures` classifies each error.
    def step_now(self, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None:
        """Run one block whose `run` does not wait; the block to run next (None ends the run)."""
        ctx = self.ctx
        self.steps += 1
        self.path.append(block.id)
        ctx.current = block
        ctx.port = None
        ctx.entered_from_body = came_from is not None and came_from.id in block.body_region
        levels = ctx.message_levels
        level = block.message_level if levels is None else levels[block]
        if level:
            self.trace.record_stamped(Event.BLOCK_STARTED,
                                      started_fields(block, self.root.steps, self.step_began, ctx))
        shown: dict[str, Any] | None = None
        try:
            inputs = block.static_inputs
            if inputs is None:
                inputs, shown = self._render_inputs(block)
            elif level:
                shown = block.written_inputs
            try:
                outputs: dict[str, Any] = block.impl.run(inputs, ctx)  # type: ignore[assignment]  # `awaits` is False
                if type(outputs) is not dict and not isinstance(outputs, Mapping):
                    raise not_outputs(block, outputs)
            except (RunError, InternalError, RunSuspended):
                raise
            except Exception as exc:
                raise block_raised(block, exc) from exc
            if type(outputs) is not dict and isinstance(outputs, WithFailures):  # a plain dict skips the call
                kept = kept_failure(block, outputs)
                if kept is not None:
                    raise kept
            via = ctx.port
            if via is not None:
                following = block.ports[via]
            else:
                via = "next"
                if not block.reads_outputs:
                    following = block.links[0].target if block.links else None
                elif not outputs:  # nothing to overlay (Set, Start): the scope is read as it is
                    following = block.route(ctx.scope)
                else:
                    following = self._set_and_choose(block, outputs)
        except Exception as exc:
            return self._step_failed(block, exc, level, shown)
        self.outputs[block.id] = outputs
        if outputs:
            usage = outputs.get("usage")
            if usage:
                self.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
        if level:
            self.trace.record_stamped(Event.BLOCK_FINISHED, finished_fields(
                block, self.step_began, following, via, shown, outputs, level, ctx.scope.values, self.trace))
        return following

    async def step(self, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None:
        """Run one block whose `run` is a coroutine: `step_now`'s twin, with an `await`."""
        ctx = self.ctx
        self.steps += 1
        self.path.append(block.id)
        ctx.current = block
        ctx.port = None
        ctx.entered_from_body = came_from is not None and came_from.id in block.body_region
        levels = ctx.message_levels
        level = block.message_level if levels is None else levels[block]
        if level:
            self.trace.record_stamped(Event.BLOCK_STARTED,
                                      started_fields(block, self.root.steps, self.step_began, ctx))
        shown: dict[str, Any] | None = None
        try:
            inputs = block.static_inputs
            if inputs is None:
                inputs, shown = self._render_inputs(block)
            elif level:
                shown = block.written_inputs
            try:
                outputs: dict[str, Any] = await block.impl.run(inputs, ctx)  # type: ignore[misc]  # `awaits` is True
                if type(outputs) is not dict and not isinstance(outputs, Mapping):
                    raise not_outputs(block, outputs)
            except (RunError, InternalError, RunSuspended):
                raise
            except Exception as exc:
                raise block_raised(block, exc) from exc
            if type(outputs) is not dict and isinstance(outputs, WithFailures):  # a plain dict skips the call
                kept = kept_failure(block, outputs)
                if kept is not None:
                    raise kept
            via = ctx.port
            if via is not None:
                following = block.ports[via]
            else:
                via = "next"
                if not block.reads_outputs:
                    following = block.links[0].target if block.links else None
                elif not outputs:  # nothing to overlay (Set, Start): the scope is read as it is
                    following = block.route(ctx.scope)
                else:
                    following = self._set_and_choose(block, outputs)
        except Exception as exc:
            return self._step_failed(block, exc, level, shown)
        self.outputs[block.id] = outputs
        if outputs:
            usage = outputs.get("usage")
            if usage:
                self.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
        if level:
            self.trace.record_stamped(Event.BLOCK_FINISHED, finished_fields(
                block, self.step_began, following, via, shown, outputs, level, ctx.scope.values, self.trace))
        return following

    def _render_inputs(self, block: CompiledBlock) -> tuple[BaseModel, dict[str, Any]]:
        scope = self.ctx.scope
        rendered: dict[str, Any] = {}
        name = ""
        try:
            for name, evaluator in block.inputs:
                rendered[name] = evaluator.evaluate(scope)
        except TemplateError as exc:
            raise TemplateError(f"with.{name}: {exc.message}", type=exc.type) from exc
        try:
            return block.inputs_model.model_validate(rendered, context=self._base_dir), rendered
        except ValidationError as exc:
            problems = [f"with.{dotted(error['loc']) or 'with'}: {validation_message(error)}"
                        for error in exc.errors(include_url=False)]
            raise InputError("; ".join(problems)) from exc

    def _set_and_choose(self, block: CompiledBlock, outputs: Mapping[str, Any]) -> CompiledBlock | None:
        """Apply the block's `set`, then choose its link, with its outputs in scope."""
        scope = self.ctx.scope
        scope.overlay(outputs)
        try:
            return block.route(scope)
        finally:
            scope.clear_overlay()

async def execute(
    diagram: Diagram,
    inputs: Mapping[str, Any] | None = None,
    *,
    runs_dir: Path | None = Path("runs"),
    message_level: MessageLevel | None = None,
    services: Services | None = None,
    run_id: str | None = None,
    console: Console | None = None,
    trace_file: IO[bytes] | None = None,
    secrets: Iterable[str] = (),
    resume: Resumed | None = None,
    remembered: Mapping[str, Any] | None = None,
    record: Mapping[str, Any] | None = None,
) -> RunResult:
    """Run `diagram` once. `runs_dir=None` keeps no trace file (events are still built).

    `trace_file` is written instead of a file under `runs_dir` (the caller closes it).
    `secrets` are scrubbed from the trace and the result besides the keys in the services'
    environment (a scenario runs with an empty environment, yet its caller's keys stay out).
    A run is durable when the services have a checkpoint store and Start does not say `durable: false`:
    `resume` continues one from a checkpoint (`run_id` is then the run's own); `remembered` are a session's
    memory values, set over Start's after its variables; `record` adds fields to the run's record in the
    store (its parent run, session, the run it replays).
    """
    services = services or Services()
    if diagram.tools is not None and diagram.tools.unlisted:
        # Loaded to be checked, not run: its MCP servers start now (off the loop), and list their tools.
        await asyncio.to_thread(diagram.tools.start_servers)
    run_id = run_id or new_run_id()
    trace_path = runs_dir / run_id / "trace.jsonl" if runs_dir is not None and trace_file is None else None
    run_level = message_level if message_level is not None else diagram.message_level
    levels = diagram.message_levels(message_level)  # None unless `message_level` changes some block's
    # The highest level any step can reach: the chain is built for it, once.
    highest = max(levels.values() if levels is not None else (b.message_level for b in diagram.blocks.values()))
    trace = Trace(trace_path, run_id, secrets=[*services.secrets(diagram.listed_secrets), *secrets], console=console,
                  file=trace_file, level=highest)
    for make_observer in services.run_observers:
        trace.observe(make_observer(diagram, trace.redactor))
    scope = diagram.env.new_scope({}, run_environ(services.environ, offline=services.offline))  # read by `secret()`
    run = _Run(diagram, RunContext(run_id, diagram, scope, trace, services, levels), trace)
    durable = services.checkpoints is not None and diagram.settings.durable
    if durable:
        run.checkpoints = services.checkpoints
        run.resume = resume
    elif resume is not None:
        raise ValueError("a run resumes only with a checkpoint store, for a diagram that is durable")
    if remembered:
        run.remembered = dict(remembered)
    # pid and host let a reader tell a run still going from one whose process died (SIGKILL, power loss).
    start_fields: dict[str, Any] = {"diagram": diagram.name, "path": str(diagram.path.resolve()),
                                    "message_level": level_name(run_level), "pid": os.getpid(), "host": host_name()}
    if run_level >= MessageLevel.DEBUG:
        start_fields["inputs"] = {k: short_value(v) for k, v in (inputs or {}).items()}
    if resume is not None:
        start_fields["resumed_at"] = resume.next
    trace.emit(Event.RUN_STARTED, **start_fields)
    if run.checkpoints is not None:
        # A store that cannot be written raises OSError here, before any block runs.
        fields = run_record(diagram, trace_path, **(record or {}))
        if fields.get("inputs"):
            fields["inputs"] = trace.redactor.value(fields["inputs"])  # a key given as an input stays out of the store
        run.checkpoints.begin(run_id, fields)
    if diagram.tools is not None and diagram.tools.mcp_servers:
        from engine.tools.mcp import run_sessions  # the MCP client loads only for a diagram whose tools use it

        async with run_sessions(services.mcp_sessions):  # opened on first use, closed at the run's end
            status = await run.run(inputs or {})
    else:
        status = await run.run(inputs or {})
    return run.result(status)
