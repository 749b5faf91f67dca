"""What a failed step does: the error level decides (the executor's alone; blocks only raise).

Ignore continues along `next` with the block's empty outputs in scope (a `when` that fails counts
as false); Handle goes to `on_error` with `error` in scope; anything else, and any bug, fails the
run. Errors are kept at every message level, and come before the step's end in the trace. The
executor's run (`engine.runtime.execute`) takes these methods as a mixin.
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
    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.runtime.context import RunContext
    from engine.runtime.trace import Trace

__all__ = ["ErrorLevels"]


class ErrorLevels:
    """A run's handling of failed steps; the run itself provides these attributes."""

    diagram: Diagram
    ctx: RunContext
    trace: Trace
    errors: list[dict[str, Any]]
    step_began: float

    def _step_failed(self, block: CompiledBlock, exc: Exception, level: MessageLevel,
                     shown: dict[str, Any] | None) -> CompiledBlock | None:
        """The step of `block` raised `exc`: the block to run next, or RunFailed."""
        began = self.step_began
        if isinstance(exc, RunSuspended):
            raise exc  # not a failure: a Wait asks for an answer (the run's loop checkpoints it)
        if isinstance(exc, RunError):
            return self._failed(block, exc.at_block(block.id), began, level, shown)
        if isinstance(exc, InternalError):
            return self._failed(block, exc, began, level, shown)
        return self._failed(block, step_bug(block, exc), began, level, shown)  # the executor's own code: a bug

    def _failed(self, block: CompiledBlock, error: RunError | InternalError, began: float, level: MessageLevel,
                shown: dict[str, Any] | None) -> CompiledBlock | None:
        if isinstance(error, InternalError):
            self._record_bug(block, error, error.__cause__, began, level, shown)
            raise RunFailed(error)  # a bug fails the run whatever the error level
        self.trace.emit(Event.BLOCK_FAILED, block=block.id, block_type=block.type_name, error_type=error.type,
                        message=error.message, duration_ms=since(began))
        # Decided at compile (engine.compile.diagram.resolve_levels), or the caller's when a Subdiagram's child
        # inherits it (Diagram.inherited_levels).
        inherited = self.ctx.error_levels
        error_level = block.error_level if inherited is None else inherited[block]
        if level:
            status = "ignored" if error_level is ErrorLevel.IGNORE else "failed"
            self.trace.record_stamped(Event.BLOCK_FINISHED, failed_fields(block, began, status, shown, level, self.trace))
        return self._apply_error_level(block, error, error_level)

    def _apply_error_level(self, block: CompiledBlock, error: RunError, error_level: ErrorLevel) -> CompiledBlock | None:
        record: dict[str, Any] = dict(error.as_dict())
        self.errors.append(record)
        scope = self.ctx.scope
        if error_level is ErrorLevel.IGNORE:
            record["ignored"] = True
            scope.overlay(type(block.impl).empty_outputs())  # made here: ignored errors are rare, blocks many
            try:
                return self._first_link_that_holds(block)
            finally:
                scope.clear_overlay()
        if block.on_error is not None:
            record["handled_by"] = block.on_error.id
            scope.values["error"] = {"block": error.block, "type": error.type, "message": error.message}
            return block.on_error
        raise RunFailed(error)

    def _first_link_that_holds(self, block: CompiledBlock) -> CompiledBlock | None:
        """After an ignored error: the first link whose `when` holds, a `when` that fails counting as false."""
        scope = self.ctx.scope
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

    def _record_bug(self, block: CompiledBlock, error: InternalError, cause: BaseException | None,
                    began: float | None = None, level: MessageLevel | None = None,
                    shown: dict[str, Any] | None = None) -> None:
        """A bug ends the run failed; at Detailed the trace keeps its traceback for the report."""
        fields: dict[str, Any] = {"block": block.id, "block_type": block.type_name, "error_type": error.type,
                                  "message": error.message,
                                  "duration_ms": since(began if began is not None else self.step_began)}
        shown_level = level if level is not None else self.ctx.message_level
        if shown_level >= MessageLevel.DETAILED and cause is not None:
            fields["traceback"] = "".join(traceback.format_exception(cause))
        self.trace.emit(Event.BLOCK_FAILED, **fields)
        if began is not None and level:
            self.trace.record_stamped(Event.BLOCK_FINISHED, failed_fields(block, began, "failed", shown, level, self.trace))
        self.errors.append(error.as_dict())
