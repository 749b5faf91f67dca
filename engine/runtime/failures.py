"""What a failed step is: which block it names, whose bug it is, which kept failure counts.

The executor applies error levels; this module only classifies. A RunError is the
user's to handle; any other exception is a bug, diagrama's (`internal_error`) or, for
a block from another package, its author's (`block_raised`, handled like a RunError).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.compile.block import Block, WithFailures
from engine.errors import BlockError, InternalError, RunError, described
from engine.format.levels import ErrorLevel

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock

__all__ = ["block_raised", "bug", "kept_failure", "not_outputs", "step_bug"]

# Block classes from these packages are diagrama's own: their exceptions are our bugs.
_OUR_PACKAGES = frozenset({"blocks", "engine"})


def _is_ours(block: Block) -> bool:
    return type(block).__module__.partition(".")[0] in _OUR_PACKAGES


def bug(block: CompiledBlock, exc: BaseException) -> InternalError:
    """The error a user sees for a bug: whose it may be, and what was raised."""
    return InternalError(f"this is a bug in diagrama or in block '{block.id}' ({block.type_name}); please report "
                         f"it: {described(exc)}", block=block.id)


def step_bug(block: CompiledBlock, exc: Exception) -> InternalError:
    """The executor's own code around a block raised `exc`: a bug in diagrama, caused by it."""
    error = bug(block, exc)
    error.__cause__ = exc  # what the trace's traceback (at Detailed) shows
    return error


def block_raised(block: CompiledBlock, exc: BaseException) -> RunError | InternalError:
    """A block's `run` raised `exc`, no RunError: a bug, ours or the plug-in author's."""
    if _is_ours(block.impl):
        return bug(block, exc)
    # A plug-in's own bug: recorded like any block error, named after what it raised.
    return BlockError(described(exc), type="block_raised", block=block.id)


def not_outputs(block: CompiledBlock, value: object) -> TypeError:
    """What a block's `run` returned instead of its outputs (a mapping), as the error its author can act on."""
    close = getattr(value, "close", None)
    if inspect.iscoroutine(value) and close is not None:
        close()  # never awaited: closed here, so Python does not warn about it at exit
        return TypeError(f"{type(block.impl).__name__}.run returned a coroutine without being a coroutine function; "
                         "declare it `async def run`")
    return TypeError(f"{type(block.impl).__name__}.run returned {type(value).__name__}, not a mapping of outputs")


def kept_failure(block: CompiledBlock, outputs: Mapping[str, Any]) -> RunError | None:
    """The failure a block kept as data that its own error level makes the block's error.

    The README (Tool registries): a failed call is a row the model can read "unless the block's
    error level says otherwise"; only the block's own Handle does, not an inherited one.
    """
    if isinstance(outputs, WithFailures) and outputs.failures and block.own_error_level is ErrorLevel.HANDLE:
        return outputs.failures[0]
    return None
