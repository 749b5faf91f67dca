"""What a failed step does: the error level decides (the executor's alone; blocks only raise).

Ignore continues along `next` with the block's empty outputs in scope (a `when` that fails counts
as false); Handle goes to `on_error` with `error` in scope; anything else, and any bug, fails the
run. Errors are kept at every message level, and come before the step's end in the trace.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

from engine.compile.templating import truthy
from engine.errors import InternalError, RunError, RunFailed, RunSuspended, TemplateError
from engine.format.levels import ErrorLevel, MessageLevel
from engine.runtime.failures import step_bug
from engine.runtime.step_events import failed_fields, since
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock
    from engine.runtime.run import Run

__all__ = ["record_bug", "step_failed"]


def step_failed(run: Run, block: CompiledBlock, exc: Exception, level: MessageLevel,
                shown: dict[str, Any] | None) -> CompiledBlock | None:
    """The step of `block` raised `exc`: the block to run next, or RunFailed."""
    began = run.step_began
    if isinstance(exc, RunSuspended):
        raise exc  # not a failure: a Wait asks for an answer (the step loop checkpoints it)
    if isinstance(exc, RunError):
        return _failed(run, block, exc.at_block(block.id), began, level, shown)
    if isinstance(exc, InternalError):
        return _failed(run, block, exc, began, level, shown)
    return _failed(run, block, step_bug(block, exc), began, level, shown)  # the executor's own code: a bug


def _failed(run: Run, block: CompiledBlock, error: RunError | InternalError, began: float, level: MessageLevel,
            shown: dict[str, Any] | None) -> CompiledBlock | None:
    if isinstance(error, InternalError):
        record_bug(run, block, error, error.__cause__, began, level, shown)
        raise RunFailed(error)  # a bug fails the run whatever the error level
    run.trace.emit(Event.BLOCK_FAILED, block=block.id, block_type=block.type_name, error_type=error.type,
                   message=error.message, duration_ms=since(began))
    # Decided at compile (engine.compile.diagram.resolve_levels), or the caller's when a Subdiagram's child
    # inherits it (Diagram.inherited_levels).
    inherited = run.ctx.error_levels
    error_level = block.error_level if inherited is None else inherited[block]
    if level:
        status = "ignored" if error_level is ErrorLevel.IGNORE else "failed"
        run.trace.record_stamped(Event.BLOCK_FINISHED, failed_fields(block, began, status, shown, level, run.trace))
    return _apply_error_level(run, block, error, error_level)


def _apply_error_level(run: Run, block: CompiledBlock, error: RunError, error_level: ErrorLevel) -> CompiledBlock | None:
    record: dict[str, Any] = dict(error.as_dict())
    run.errors.append(record)
    scope = run.ctx.scope
    if error_level is ErrorLevel.IGNORE:
        record["ignored"] = True
        scope.overlay(type(block.impl).empty_outputs())  # made here: ignored errors are rare, blocks many
        try:
            return _first_link_that_holds(run, block)
        finally:
            scope.clear_overlay()
    if block.on_error is not None:
        record["handled_by"] = block.on_error.id
        scope.values["error"] = {"block": error.block, "type": error.type, "message": error.message}
        return block.on_error
    raise RunFailed(error)


def _first_link_that_holds(run: Run, block: CompiledBlock) -> CompiledBlock | None:
    """After an ignored error: the first link whose `when` holds, a `when` that fails counting as false."""
    scope = run.ctx.scope
    for link in block.links:
        when = link.when
        if when is None:
            return link.target
        try:
            if truthy(when.evaluate(scope)):
                return link.target
        except TemplateError:
            continue
    return None


def record_bug(run: Run, block: CompiledBlock, error: InternalError, cause: BaseException | None,
               began: float | None = None, level: MessageLevel | None = None,
               shown: dict[str, Any] | None = None) -> None:
    """A bug ends the run failed; at Detailed the trace keeps its traceback for the report."""
    fields: dict[str, Any] = {"block": block.id, "block_type": block.type_name, "error_type": error.type,
                              "message": error.message,
                              "duration_ms": since(began if began is not None else run.step_began)}
    shown_level = level if level is not None else run.ctx.message_level
    if shown_level >= MessageLevel.DETAILED and cause is not None:
        fields["traceback"] = "".join(traceback.format_exception(cause))
    run.trace.emit(Event.BLOCK_FAILED, **fields)
    if began is not None and level:
        run.trace.record_stamped(Event.BLOCK_FINISHED, failed_fields(block, began, "failed", shown, level, run.trace))
    run.errors.append(error.as_dict())
