"""One run of a diagram: what it holds, how it begins (from Start or from a checkpoint) and how it ends.

A top run, a Subdiagram's child and a concurrent Loop's pass are each a Run, as LangGraph's loop is one
class with `is_nested`: one way to begin (`begin`), one step loop (engine.runtime.advance), one way to end
(`finish`). What differs is data: a nested run has a `root` (the top run, where the step budget, the
Subdiagram calls and the trace file are kept), a child has a limit of its own, and a durable run has a
Checkpointer (`durable`). A run is not built by blocks: they see its RunContext.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from engine.errors import BlockError, RunError, RunFailed, RunSuspended, TableError, TemplateError, TraceWriteFailed
from engine.format.tables import to_table
from engine.runtime.advance import RunStopped, advance, within_deadline
from engine.runtime.error_levels import record_bug
from engine.runtime.failures import bug
from engine.runtime.result import RunResult, SubdiagramRun
from engine.runtime.step_events import since
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.compile.templating import Scope
    from engine.runtime.checkpointing import Checkpointer
    from engine.runtime.context import RunContext
    from engine.runtime.durable import Resumed
    from engine.runtime.trace import RunTrace

__all__ = ["Run"]

_WAIT_NOT_DURABLE = ("a Wait needs a durable run: run it with `diagrama run` (a run store), or give execute a "
                     "checkpoint store (Services.checkpoints)")


class Run:
    """One run: its context, the path so far, the errors, the step count; nested runs name the top run as `root`."""

    def __init__(self, diagram: Diagram, ctx: RunContext, trace: RunTrace, *, root: Run | None = None, depth: int = 0,
                 lane: str = "", own_limit: int | None = None) -> None:
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
        self.base_dir = {"base_dir": diagram.directory}
        """What a block's inputs model is validated with (a path relative to the diagram)."""
        self.durable: Checkpointer | None = None
        """Where this run checkpoints when it is durable (Services.checkpoints, Start's `durable`); None: it is not."""
        self.remembered: dict[str, Any] = {}
        """A session's memory values, set over Start's variables (`diagrama run --session`)."""
        self.waiting: dict[str, Any] | None = None
        """What the Wait this run stopped at asks (block, prompt, form, timeout, asked_at); None unless waiting."""
        self.root: Run = root or self
        self.nested = root is not None
        """Whether this run is nested in another's step (a Subdiagram's child, a concurrent Loop's pass)."""
        self.depth = depth
        """How many Subdiagram calls deep this run is (0: the top run, and its passes)."""
        self.lane = lane
        """The trace lane of its steps ("" for the top run's own; engine.runtime.trace_lane)."""
        self.own_limit = own_limit
        """A child's own Start `max_steps`, checked beside the top run's budget; None for the top run and passes."""
        self.calls: dict[str, int] = {}
        """The top run's: Subdiagram calls so far per block address (a child's run id counts them)."""
        self.loaded: dict[Path, Diagram] = {}
        """The top run's: the diagrams templated Subdiagram paths named, loaded once a run."""
        ctx.nesting = self

    # -- runs inside a step (engine.runtime.nested): the context's Nesting face ------------------------------------
    async def subdiagram(self, context: RunContext, diagram: str, inputs: Mapping[str, Any]) -> SubdiagramRun:
        from engine.runtime.nested import run_child  # loads with the first Subdiagram a run calls

        return await run_child(self, context, diagram, inputs)

    async def passes(self, context: RunContext, bindings: Sequence[Mapping[str, Any]], concurrency: int) -> list[Scope]:
        from engine.runtime.nested import run_passes

        return await run_passes(self, context, bindings, concurrency)

    # -- the run as a whole ------------------------------------------------------------------------------------------
    async def whole(self, inputs: Mapping[str, Any], resumed: Resumed | None = None) -> str:
        """Run from Start (or from `resumed`, a checkpoint) to the end; the status. In a durable child a Wait's
        RunSuspended goes on up once the child is checkpointed and recorded waiting (its caller stops there too);
        otherwise only an interruption (Ctrl-C, a cancellation) escapes, the run recorded as interrupted."""
        status = "failed"
        try:
            block, came_from = self.begin(inputs, resumed)
            if resumed is None and self.durable is not None and not self.nested:
                await self.durable.save_now(self.diagram.start, None)  # checkpoint 0: Start's scope (replays begin there)
            await within_deadline(self, advance(self, block, came_from))
            status = "succeeded"
        except RunFailed:
            pass  # recorded where it happened
        except RunSuspended:
            if self.durable is None:
                message = _WAIT_NOT_DURABLE + ("; the subdiagram and its caller must not say `durable: false`"
                                               if self.nested else "")
                self.errors.append(BlockError(message, type="wait_not_durable", block=self.ctx.current.id).as_dict())
            else:
                status = "waiting"
                if self.nested:
                    self.finish(status)
                    raise
        except Exception as exc:  # a bug outside any block's step
            record_bug(self, self.ctx.current, bug(self.ctx.current, exc), exc)
        except RunStopped as stop:
            if self.nested:  # the top run's `whole` ends it; each child on the way stops where it was
                self.finish("interrupted")
                raise
            status = stop.status
            kind, said = ("run_cancelled", "the run was cancelled") if status == "cancelled" else \
                ("run_interrupted", "the run was stopped by its server (draining); it goes on from its last "
                 "checkpoint when resumed")
            self.errors.append({"block": self.ctx.current.id, "type": kind, "message": said})
        except BaseException as exc:
            if not self.nested:
                self.errors.append({"block": self.ctx.current.id, "type": "run_interrupted",
                                    "message": f"the run was interrupted ({type(exc).__name__})"})
            self.finish("interrupted")
            raise
        return await self._finish_off_loop(status)

    async def _finish_off_loop(self, status: str) -> str:
        """`finish` for a top run whose store is across a network: its last checkpoint and record written on a
        thread (taken here first), after its trace's end."""
        durable = self.durable
        if durable is None or self.nested or not durable.remote:
            return self.finish(status)
        last = durable.last_state() if status in ("succeeded", "failed") else None
        status = self._finish_trace(status)
        await durable.end_off_loop(status, last)
        return status

    def begin(self, inputs: Mapping[str, Any],
              resumed: Resumed | None) -> tuple[CompiledBlock | None, CompiledBlock | None]:
        """Where this run's steps begin (the block, and the block it came from): Start, with the scope Start makes of
        `inputs`; or `resumed`'s block, with the state that checkpoint holds taken back (the Loops' positions too)."""
        if resumed is None:
            self.prepare_scope(inputs)  # checkpoint 0, the scope Start made, is `whole`'s to write
            return self.diagram.start, None
        assert self.durable is not None, "only a durable run resumes"
        self.durable.restore(resumed)
        blocks = self.diagram.blocks
        return (blocks[resumed.next] if resumed.next is not None else None,
                blocks.get(resumed.came_from) if resumed.came_from is not None else None)

    def prepare_scope(self, inputs: Mapping[str, Any]) -> None:
        """Start's scope: its inputs' defaults, the run's inputs, its variables, then a session's memory (where no
        input of that name was given: an explicit input is used as it is)."""
        diagram = self.diagram
        values = self.ctx.scope.values
        start = diagram.start.id
        try:
            for name, default in diagram.settings.inputs.items():
                values[name] = _fresh(default, diagram)
            values.update(inputs)
            for name, evaluator in diagram.variables:
                values[name] = _fresh(evaluator.evaluate(self.ctx.scope), diagram)
            for name, value in self.remembered.items():
                if name not in inputs:
                    values[name] = value
        except TemplateError as exc:
            self.end(TemplateError(f"variables: {exc.message}", type=exc.type, block=start), announce=True)
        except TableError as exc:
            self.end(exc.at_block(start), announce=False)
        except RunError as exc:  # an error a template function raised (tools() with an unknown group)
            self.end(exc.at_block(start), announce=True)

    def end(self, error: RunError, *, announce: bool) -> NoReturn:
        """Fail the run with `error`, which no error level handles."""
        self.errors.append(error.as_dict())
        if announce:
            self.trace.emit(Event.BLOCK_FAILED, block=error.block, error_type=error.type, message=error.message,
                            duration_ms=since(self.step_began))
        raise RunFailed(error)

    def finish(self, status: str) -> str:
        """The run has stopped with `status` (`interrupted`: from outside, Ctrl-C or a cancellation). A durable run
        writes its last checkpoint when it ended (a child only when it succeeded: a resumed caller reads its result
        from it) and its record; a top run writes `run_finished` and closes its trace. The status as recorded."""
        durable = self.durable
        if durable is not None and (status == "succeeded" or (status == "failed" and not self.nested)):
            durable.last()  # a failed top run's too: a replay can reach the block that failed
        if not self.nested:
            status = self._finish_trace(status)
        if durable is not None:
            durable.end(status)
        return status

    def _finish_trace(self, status: str) -> str:
        shown = "failed" if status == "interrupted" else status  # its error says why: run_interrupted
        self.trace.emit(Event.RUN_FINISHED, status=shown, steps=self.steps, path=self.path, errors=self.errors,
                        duration_ms=round((time.perf_counter() - self.started) * 1000, 3),
                        cost=self.ctx.spend.as_json())
        file = self.trace.file
        file.close()
        if file.failure is not None and not any(e["type"] == TraceWriteFailed.type for e in self.errors):
            # The last lines (run_finished itself) did not fit: the run cannot claim success.
            self.errors.append(TraceWriteFailed(file.failure_message(), block=self.ctx.current.id).as_dict())
            return "failed"
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
                         waiting=self.waiting, cost=self.ctx.spend.as_json(), usage=dict(self.ctx.spend.usage),
                         usage_by_block=self.ctx.spend.by_block())


def _fresh(value: Any, diagram: Diagram) -> Any:
    """A run's own copy of a written value; `{csv: path}` becomes the table it names."""
    if isinstance(value, dict) and set(value) == {"csv"}:
        return to_table(value, diagram.directory)
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value
