"""One step of a run: render and validate a block's inputs, run it, choose what comes next.

A step either follows the port the block chose (a Loop's body) or takes the block's route (`set`, then
the first link whose `when` holds: engine.compile.routes). Errors go to the error levels
(engine.runtime.error_levels); the executor alone decides what they do. This module does one step and
nothing around it: the step loop (engine.runtime.advance) counts steps, writes trace batches and
checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from engine.compile.block import WithFailures
from engine.errors import InputError, InternalError, RunError, RunSuspended, TemplateError
from engine.format.validation import dotted, validation_message
from engine.runtime.error_levels import step_failed
from engine.runtime.failures import block_raised, kept_failure, not_outputs
from engine.runtime.step_events import finished_fields, started_fields
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock
    from engine.runtime.run import Run

__all__ = ["step", "step_now"]

_STARTED, _FINISHED = Event.BLOCK_STARTED, Event.BLOCK_FINISHED


# The hot path of every run. A block whose `run` is a plain function (Set, Start, Loop) steps
# without a coroutine (`step_now`); one that waits (a request) steps through `step`. The two are
# twins, line for line, but for that `await` (tests/engine/test_step_twins.py holds them to it):
# at about a microsecond a step, each call to a helper was a tenth of it, so the step is written
# out whole. A block's own failures and the executor's are told apart by two `try`s (free when
# nothing is raised) rather than by wrapping calls; `failures` classifies each error.
def step_now(run: Run, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None:
    """Run one block whose `run` does not wait; the block to run next (None ends the run)."""
    ctx = run.ctx
    run.steps += 1
    run.path.append(block.id)
    ctx.current = block
    ctx.port = None
    ctx.entered_from_body = came_from is not None and came_from.id in block.body_region
    levels = ctx.message_levels
    level = block.message_level if levels is None else levels[block]
    if level:
        run.trace.record_stamped(_STARTED, started_fields(block, run.root.steps, run.step_began, ctx))
    shown: dict[str, Any] | None = None
    try:
        inputs = block.static_inputs
        if inputs is None:
            inputs, shown = _render_inputs(run, block)
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
        except (SystemExit, GeneratorExit) as exc:  # would end the process (a server's too): the block's failure
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
                following = _set_and_choose(run, block, outputs)
    except Exception as exc:
        return step_failed(run, block, exc, level, shown)
    run.outputs[block.id] = outputs
    if outputs:
        usage = outputs.get("usage")
        if usage:
            run.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    if level:
        run.trace.record_stamped(_FINISHED, finished_fields(
            block, run.step_began, following, via, shown, outputs, level, ctx.scope, run.trace))
    return following


async def step(run: Run, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None:
    """Run one block whose `run` is a coroutine: `step_now`'s twin, with an `await`."""
    ctx = run.ctx
    run.steps += 1
    run.path.append(block.id)
    ctx.current = block
    ctx.port = None
    ctx.entered_from_body = came_from is not None and came_from.id in block.body_region
    levels = ctx.message_levels
    level = block.message_level if levels is None else levels[block]
    if level:
        run.trace.record_stamped(_STARTED, started_fields(block, run.root.steps, run.step_began, ctx))
    shown: dict[str, Any] | None = None
    try:
        inputs = block.static_inputs
        if inputs is None:
            inputs, shown = _render_inputs(run, block)
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
        except (SystemExit, GeneratorExit) as exc:  # would end the process (a server's too): the block's failure
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
                following = _set_and_choose(run, block, outputs)
    except Exception as exc:
        return step_failed(run, block, exc, level, shown)
    run.outputs[block.id] = outputs
    if outputs:
        usage = outputs.get("usage")
        if usage:
            run.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    if level:
        run.trace.record_stamped(_FINISHED, finished_fields(
            block, run.step_began, following, via, shown, outputs, level, ctx.scope, run.trace))
    return following


def _render_inputs(run: Run, block: CompiledBlock) -> tuple[BaseModel, dict[str, Any]]:
    scope = run.ctx.scope
    rendered: dict[str, Any] = {}
    name = ""
    try:
        for name, evaluator in block.inputs:
            rendered[name] = evaluator.evaluate(scope)
    except TemplateError as exc:
        raise TemplateError(f"with.{name}: {exc.message}", type=exc.type) from exc
    try:
        return block.inputs_model.model_validate(rendered, context=run.base_dir), rendered
    except ValidationError as exc:
        problems = [f"with.{dotted(error['loc']) or 'with'}: {validation_message(error)}"
                    for error in exc.errors(include_url=False)]
        raise InputError("; ".join(problems)) from exc


def _set_and_choose(run: Run, block: CompiledBlock, outputs: Mapping[str, Any]) -> CompiledBlock | None:
    """Apply the block's `set`, then choose its link, with its outputs in scope."""
    scope = run.ctx.scope
    scope.overlay(outputs)
    try:
        return block.route(scope)
    finally:
        scope.clear_overlay()
