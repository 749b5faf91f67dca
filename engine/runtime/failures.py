"""What a failed step is: which block it names, whose bug it is, which kept failure counts.

The executor applies error levels; this module only classifies. A RunError is the
user's to handle; any other exception is a bug, diagrama's (`internal_error`) or, for
a block from another package, its author's (`block_raised`, handled like a RunError).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.compile.block import Block, WithFailures
from engine.errors import BlockError, InternalError, RunError
from engine.format.spec import ErrorLevel

if TYPE_CHECKING:
    from pydantic import BaseModel

    from engine.compile.diagram import CompiledBlock
    from engine.runtime.context import RunContext

__all__ = ["bug", "call_block", "kept_failure", "step_context"]

# Block classes from these packages are diagrama's own: their exceptions are our bugs.
_OUR_PACKAGES = frozenset({"blocks", "engine"})


def _is_ours(block: Block) -> bool:
    return type(block).__module__.partition(".")[0] in _OUR_PACKAGES


def bug(block: CompiledBlock, exc: BaseException) -> InternalError:
    """The error a user sees for a bug: whose it may be, and what was raised."""
    return InternalError(f"this is a bug in diagrama or in block '{block.id}' ({block.type_name}); please report "
                         f"it: {type(exc).__name__}: {exc}", block=block.id)


class step_context:  # used as `with step_context(block):`, like a function
    """Every error raised in a block's step names the block, attached here once (httpx's request_context).

    A class, not a @contextmanager generator: it is entered once per step, and the generator's
    machinery cost a fifth of a Release step.
    """

    __slots__ = ("block",)

    def __init__(self, block: CompiledBlock) -> None:
        self.block = block

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: Any) -> None:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, InternalError):
            return  # cancellation and the like pass through, as do bugs already named
        if isinstance(exc, RunError):
            exc.at_block(self.block.id)
            return
        # The executor's own code around the block: a bug in diagrama
        raise bug(self.block, exc) from exc


async def call_block(block: CompiledBlock, inputs: BaseModel, ctx: RunContext) -> dict[str, Any]:
    """Run the block; an exception that is no RunError is a bug, ours or the plug-in author's."""
    try:
        return await block.impl.run(inputs, ctx)
    except (RunError, InternalError):
        raise
    except Exception as exc:
        if _is_ours(block.impl):
            raise bug(block, exc) from exc
        # A plug-in's own bug: recorded like any block error, named after what it raised.
        raise BlockError(f"{type(exc).__name__}: {exc}", type="block_raised", block=block.id) from exc


def kept_failure(block: CompiledBlock, outputs: Mapping[str, Any]) -> RunError | None:
    """The failure a block kept as data that its own error level makes the block's error.

    DESIGN.md (Tools): a failed call is a row the model can read "unless the block's
    error level says otherwise"; only the block's own Handle does, not an inherited one.
    """
    if isinstance(outputs, WithFailures) and outputs.failures and block.error_level is ErrorLevel.HANDLE:
        return outputs.failures[0]
    return None
