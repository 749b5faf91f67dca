"""The executor's two ways to step a block (engine.runtime.step): `step_now` for a plain `run`, `step` for
a coroutine. They are written out twice for speed; these tests hold them to being the same step."""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from pydantic import BaseModel

from blocks.set import Set
from blocks.start import Start
from engine import Block, BlockRegistry, RunContext
from engine.runtime import step as stepping
from tests.conftest import Runner


def test_the_two_steps_differ_only_in_their_await() -> None:
    now = inspect.getsource(stepping.step_now).splitlines()
    later = inspect.getsource(stepping.step).splitlines()
    changed = [line for line in difflib.unified_diff(now, later, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [
        "-def step_now(run: Run, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None:",
        '-    """Run one block whose `run` does not wait; the block to run next (None ends the run)."""',
        "+async def step(run: Run, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None:",
        '+    """Run one block whose `run` is a coroutine: `step_now`\'s twin, with an `await`."""',
        "-            outputs: dict[str, Any] = block.impl.run(inputs, ctx)  # type: ignore[assignment]  # `awaits` is False",
        "+            outputs: dict[str, Any] = await block.impl.run(inputs, ctx)  # type: ignore[misc]  # `awaits` is True",
    ]


class _Halves(BaseModel):
    half: float
    calls: list[dict[str, Any]] = []


class HalfNow(Block):
    Outputs = _Halves

    def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        if context.scope.values["n"] < 0:
            raise ValueError("no negative numbers")
        return {"half": context.scope.values["n"] / 2, "calls": [], "usage": {"input_tokens": 2, "output_tokens": 1}}


class HalfLater(Block):
    Outputs = _Halves

    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        if context.scope.values["n"] < 0:
            raise ValueError("no negative numbers")
        return {"half": context.scope.values["n"] / 2, "calls": [], "usage": {"input_tokens": 2, "output_tokens": 1}}


DIAGRAM = """
diagram: twins
blocks:
  - {{id: start, type: Start, message_level: Detailed, inputs: {{n: 6}}, variables: {{total: 0}}, next: half}}
  - id: half
    type: {kind}
    error_level: {level}
    set: {{total: "{{{{ total + half }}}}"}}
    next: [{{to: again, when: "{{{{ half > 1 }}}}"}}, {{to: done}}]
    on_error: done
  - {{id: again, type: Set, set: {{n: "{{{{ n - 4 }}}}"}}, next: half}}
  - {{id: done, type: Set}}
"""
_CLOCKS = {"timestamp", "duration_ms", "offset_ms", "run_id", "pid", "path"}


def _run(kind: str, level: str, n: int, tmp_path) -> tuple[Any, list[dict[str, Any]]]:
    folder = tmp_path / kind / level / str(n)
    folder.mkdir(parents=True)
    path = folder / "twins.yaml"
    path.write_text(DIAGRAM.format(kind=kind, level=level), encoding="utf-8")
    runner = Runner(BlockRegistry((Start, Set, HalfNow, HalfLater)), folder)
    result = runner.run(path, {"n": n})
    events = [{key: value for key, value in event.items() if key not in _CLOCKS} for event in runner.events(result)]
    return result, events


def test_a_plain_and_an_async_block_step_alike_in_result_and_trace(tmp_path) -> None:
    for level, n in (("Default", 6), ("Handle", -2), ("Ignore", -2)):
        now, now_events = _run("HalfNow", level, n, tmp_path)
        later, later_events = _run("HalfLater", level, n, tmp_path)
        assert (now.status, now.path, now.variables, now.errors, now.tokens) == \
               (later.status, later.path, later.variables, later.errors, later.tokens), (level, n)
        assert [{k: v for k, v in e.items() if k != "block_type"} for e in now_events] == \
               [{k: v for k, v in e.items() if k != "block_type"} for e in later_events], (level, n)
        if n < 0:  # the block raised: its error, then the error level's way on
            assert later.errors[0]["type"] == "block_raised" and later.status == "succeeded", level
