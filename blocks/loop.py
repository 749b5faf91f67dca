"""Loop: runs its `body` chain for each item, while a condition holds, or N times.

The body's last block links back to the Loop; each entry from the body ends a
pass (then `collect` and `break_when` are read), and the Loop either starts the
next pass through its `body` port or finishes along `next`.

With `concurrency` (for_each only) the passes run side by side instead, as runs of the
body nested in the Loop's one step (engine.runtime.nested, through `run_passes`): each
in its own copy of the scope, so only `collect` flows out, in input order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from engine import Block, DataTable, Event, InputError, LoopLimitReached, Report, TableError, to_table, truthy

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio
    from engine.format.spec import BlockSpec

_MODES = ("for_each", "while", "count")


class LoopInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)  # built when used

    for_each: Any = Field(default=None, description="a list or data table; each pass binds item and index")
    while_: Any = Field(default=None, alias="while", description="condition checked before each pass")
    count: Any = Field(default=None, description="number of passes")
    max_iterations: int = Field(default=100, ge=1, description="reaching it while passes remain is an error")
    break_when: Any = Field(default=None, description="condition checked after each pass; true ends the loop")
    collect: Any = Field(default=None, description="value recorded after each pass, into `collected`")
    concurrency: int = Field(default=1, ge=1, description="for_each passes run at once, each in its own copy of the "
                                                          "scope: only `collect` flows out of the loop")


class LoopOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    iterations: int = 0
    collected: list[Any] = Field(default=[])


@dataclass
class _Pass:
    mode: str
    items: list[Any] | None
    count: int | None
    collects: bool = False
    """Whether `collect` is written; `breaks`: `break_when` (read once, as each pass asks)."""
    breaks: bool = False
    iterations: int = 0
    collected: list[Any] = field(default_factory=list)
    shadowed: dict[str, Any] = field(default_factory=dict)


_NO_OUTPUTS: dict[str, Any] = {}
_ABSENT = object()
"""A name the loop shadowed that was unbound before it, after a resume (RunContext.restore removes any such)."""


def _side_by_side(written: Mapping[str, Any]) -> bool:
    """Whether a Loop's passes run side by side: `concurrency` written as anything but 1 (a template counts)."""
    return bool(written.get("concurrency", 1) != 1)


class Loop(Block):
    """Repeats its body: `for_each`, `while` or `count`, never past `max_iterations`."""

    Inputs = LoopInputs
    Outputs = LoopOutputs
    body_port: ClassVar[str | None] = "body"
    body_names: ClassVar[tuple[str, ...]] = ("item", "index")
    body_exit: ClassVar[str | None] = "break_when"
    deferred_inputs: ClassVar[tuple[str, ...]] = ("for_each", "while", "count", "break_when", "collect")
    condition_inputs: ClassVar[tuple[str, ...]] = ("while", "break_when")

    def __init__(self, spec: BlockSpec, settings: BaseModel | None = None) -> None:
        super().__init__(spec, settings)
        self._concurrent = _side_by_side(spec.with_)
        """Whether `concurrency` is written: read at every pass, so decided once."""

    def check(self, constants: Mapping[str, Any], report: Report) -> None:
        written = [mode for mode in _MODES if mode in self.spec.with_]
        if len(written) != 1:
            report(
                "for_each",
                "a Loop takes exactly one of for_each, while, count"
                + (f" (it has {', '.join(written)})" if written else ""),
                "for_each: \"{{ rows }}\", while: \"{{ i < 10 }}\" or count: 3",
            )
        if _side_by_side(self.spec.with_):
            if written and written != ["for_each"]:
                report("concurrency", f"concurrency runs for_each passes side by side; a {written[0]} loop runs one "
                       "pass after another", "loop over a list with for_each, or drop concurrency")
            if "break_when" in self.spec.with_:
                report("break_when", "break_when is checked after each pass, in order; passes that run side by side "
                       "have no order to stop in", "drop break_when, or drop concurrency")

    def concurrent_body(self) -> bool:
        return self._concurrent

    @staticmethod
    def _items(context: RunContext) -> list[Any]:
        value = context.evaluate_input("for_each")
        if isinstance(value, dict):
            try:
                value = to_table(value, context.diagram.directory)
            except TableError as exc:
                raise InputError(f"with.for_each: {exc.message}") from exc
        if isinstance(value, DataTable):
            return value.records()
        if isinstance(value, (list, tuple)):
            return list(value)
        if value is None:
            return []
        raise InputError(f"with.for_each: expected a list or a data table, got {type(value).__name__}")

    def _begin(self, context: RunContext) -> _Pass:
        mode = next(m for m in _MODES if context.has_input(m))
        items = None
        count = None
        if mode == "for_each":
            items = self._items(context)
        elif mode == "count":
            value = context.evaluate_input("count")
            try:
                count = int(value) if not isinstance(value, bool) else -1
            except (TypeError, ValueError):
                count = -1
            if count < 0:
                raise InputError(f"with.count: expected a whole number of passes, got {value!r}")
        return _Pass(mode, items, count, collects=context.has_input("collect"), breaks=context.has_input("break_when"))

    def _more(self, state: _Pass, context: RunContext) -> bool:
        if state.mode == "for_each":
            assert state.items is not None
            return state.iterations < len(state.items)
        if state.mode == "count":
            assert state.count is not None
            return state.iterations < state.count
        return truthy(context.evaluate_input("while"))

    def _finish(self, state: _Pass, context: RunContext) -> dict[str, Any]:
        context.loop_states.pop(self.id, None)
        for name, previous in state.shadowed.items():
            context.restore(name, previous)
        return {"iterations": state.iterations, "collected": state.collected}

    def save_state(self, state: _Pass) -> dict[str, Any]:
        """A pass's position as plain data (a durable run's checkpoint); a name the loop shadowed that was unbound
        before it is written as absent."""
        shadowed = {name: [False, None] if type(previous) is object else [True, previous]
                    for name, previous in state.shadowed.items()}
        return {"mode": state.mode, "items": state.items, "count": state.count, "collects": state.collects,
                "breaks": state.breaks, "iterations": state.iterations, "collected": state.collected,
                "shadowed": shadowed}

    def load_state(self, data: dict[str, Any]) -> _Pass:
        shadowed = {name: previous if present else _ABSENT for name, (present, previous) in data["shadowed"].items()}
        return _Pass(data["mode"], data["items"], data["count"], collects=data["collects"], breaks=data["breaks"],
                     iterations=data["iterations"], collected=data["collected"], shadowed=shadowed)

    def run(self, inputs: LoopInputs, context: RunContext) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        if self._concurrent:
            # The executor awaits this block (`concurrent_body`): its passes run inside this one step.
            return self._passes_side_by_side(inputs, context)
        state: _Pass | None = context.loop_states.get(self.id) if context.entered_from_body else None
        if state is None:
            state = self._begin(context)
            context.loop_states[self.id] = state
        else:
            state.iterations += 1
            try:
                if state.collects:
                    state.collected.append(context.evaluate_input("collect"))
                if state.breaks and truthy(context.evaluate_input("break_when")):
                    return self._finish(state, context)
            except Exception:
                self._finish(state, context)
                raise
        try:
            more = self._more(state, context)
        except Exception:
            self._finish(state, context)
            raise
        if not more:
            return self._finish(state, context)
        if state.iterations >= inputs.max_iterations:
            self._finish(state, context)
            raise LoopLimitReached(
                f"the loop reached max_iterations ({inputs.max_iterations}) while passes remained",
                type="loop_limit_reached",
            )
        index = state.iterations
        item = state.items[index] if state.items is not None else None
        if index == 0:
            state.shadowed = {"item": context.bind("item", item), "index": context.bind("index", index)}
        else:
            values = context.scope.values
            values["item"] = item
            values["index"] = index
        if context.message_level:
            context.emit(Event.LOOP_PASS_STARTED, index=index)
        context.port = "body"
        return _NO_OUTPUTS

    async def _passes_side_by_side(self, inputs: LoopInputs, context: RunContext) -> dict[str, Any]:
        items = self._items(context)
        if len(items) > inputs.max_iterations:
            # Checked before any pass starts: passes side by side have no "so far" to stop after.
            raise LoopLimitReached(f"the loop has {len(items)} items, more than max_iterations "
                                   f"({inputs.max_iterations})", type="loop_limit_reached")
        scopes = await context.run_passes([{"item": item, "index": index} for index, item in enumerate(items)],
                                          inputs.concurrency)
        collected = [context.evaluate_input("collect", scope) for scope in scopes] if context.has_input("collect") \
            else []
        return {"iterations": len(scopes), "collected": collected}
