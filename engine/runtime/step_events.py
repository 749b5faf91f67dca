"""What a step's trace events carry: `block_started` and `block_finished` (Debug and Detailed), and the
milliseconds every block event gives.

Plain functions that build each event whole, its stamp included (`Trace.record_stamped` renders it as
it is); the executor hands them to the trace. They run twice per Debug step, which is why each builds
one dict literal, uses no comprehension and reads names once at import (`_STARTED`, `_DETAILED`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.format.levels import MessageLevel
from engine.format.values import full_value, short_value
from engine.runtime.trace import Event, RunTrace

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock
    from engine.compile.evaluators import Scope
    from engine.runtime.context import RunContext

__all__ = ["failed_fields", "finished_fields", "milliseconds", "since", "started_fields"]

_SHOWN_AS_THEY_ARE = frozenset({int, float, bool, type(None)})
"""Values short_value and full_value return unchanged (a counter's int): no call for them."""
_STARTED, _FINISHED = Event.BLOCK_STARTED, Event.BLOCK_FINISHED
_DETAILED = MessageLevel.DETAILED
"""Read from the module: `MessageLevel.DETAILED` is a lookup through the enum's metaclass, slow on a hot path."""


def milliseconds(seconds: float) -> float:
    """Non-negative seconds as milliseconds to 0.1 µs; `round(x, 4)` gives the same and costs five times more.
    `// 1` is `int()` without the call (the same value: floor of a number below 2**53, divided exactly)."""
    return (seconds * 10_000_000 + 0.5) // 1 / 10_000


def since(began: float) -> float:
    """Milliseconds from `began` (a perf_counter reading) to now, as block events give them."""
    return milliseconds(time.perf_counter() - began)


def started_fields(block: CompiledBlock, step: int, began: float, ctx: RunContext) -> dict[str, Any]:
    """`block_started`: the block, its step number and when it began (`began`, a perf_counter reading)."""
    # milliseconds(), written out: a call is a tenth of what this function costs
    return {"block": block.id, "block_type": block.type_name, "step": step,
            "offset_ms": ((began - ctx.started) * 10_000_000 + 0.5) // 1 / 10_000,
            "run_id": ctx.run_id, "event": _STARTED, "timestamp": ctx.trace.wall_at_zero + began}


def finished_fields(
    block: CompiledBlock,
    began: float,
    following: CompiledBlock | None,
    via: str,
    inputs: Mapping[str, Any] | None,
    outputs: Mapping[str, Any],
    level: MessageLevel,
    scope: Scope,
    trace: RunTrace,
) -> dict[str, Any]:
    """`block_finished` of a block that succeeded: its duration, the link taken (and its index, `link`, where two
    go to the same block), and short (Debug) or whole (Detailed) values: the inputs as rendered, the outputs, and
    what `set` assigned (read from the run's scope)."""
    now = time.perf_counter()
    # One literal with the stamp (`Trace.record_stamped`): each key added later may copy the dict to a larger table.
    fields: dict[str, Any] = {
        "block": block.id, "block_type": block.type_name, "status": "succeeded",
        "duration_ms": ((now - began) * 10_000_000 + 0.5) // 1 / 10_000,  # milliseconds(), written out
        "next": following.id if following is not None else None, "via": via,
        "run_id": trace.run_id, "event": _FINISHED, "timestamp": trace.wall_at_zero + now,
    }
    if block.shares_target and via == "next":
        fields["link"] = scope.link if block.reads_outputs else block.links[0].index
    if inputs or outputs:
        _add_values(fields, inputs, outputs, level)
    names = block.set_names
    if names and via == "next":  # `set` is applied when the block leaves by `next`, not by a port
        values = scope.values
        assigned = fields["set"] = {}
        for name in names:  # a loop, not a comprehension (a call of its own): this runs at every Debug step
            value = values.get(name)
            assigned[name] = value if type(value) in _SHOWN_AS_THEY_ARE else _shown(value, level)
    return fields


def failed_fields(block: CompiledBlock, began: float, status: str, inputs: Mapping[str, Any] | None,
                  level: MessageLevel, trace: RunTrace) -> dict[str, Any]:
    """`block_finished` of a block that failed (`status` "failed", or "ignored" under its error level): no link
    taken, no outputs; the inputs as rendered, when they were."""
    now = time.perf_counter()
    fields: dict[str, Any] = {
        "block": block.id, "block_type": block.type_name, "status": status, "duration_ms": milliseconds(now - began),
        "run_id": trace.run_id, "event": _FINISHED, "timestamp": trace.wall_at_zero + now,
    }
    if inputs:
        _add_values(fields, inputs, {}, level)
    return fields


def _shown(value: Any, level: MessageLevel) -> Any:
    return full_value(value) if level >= _DETAILED else short_value(value)


def _add_values(fields: dict[str, Any], inputs: Mapping[str, Any] | None, outputs: Mapping[str, Any],
                level: MessageLevel) -> None:
    render = full_value if level >= _DETAILED else short_value
    if inputs:
        shown = fields["inputs"] = {}
        for name, value in inputs.items():
            shown[name] = value if type(value) in _SHOWN_AS_THEY_ARE else render(value)
    if outputs:
        fields["outputs"] = {name: render(value) for name, value in outputs.items()}
