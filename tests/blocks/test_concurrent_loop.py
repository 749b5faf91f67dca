"""Loop with `concurrency`: passes side by side, each in its own scope, `collected` in input order, load checks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from blocks.registry import BUILTIN_BLOCKS
from engine import Block, BlockRegistry, DiagramInvalid, RunContext
from engine.runs.trace_steps import run_path, steps
from tests.conftest import TEST_BLOCKS, Runner


class GaugeInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 0.02


class Gauge(Block):
    """Test block: counts the passes in flight at once (the most is kept on the class), then waits."""

    Inputs = GaugeInputs
    in_flight = 0
    most = 0

    async def run(self, inputs: GaugeInputs, context: RunContext) -> dict[str, Any]:
        Gauge.in_flight += 1
        Gauge.most = max(Gauge.most, Gauge.in_flight)
        try:
            await asyncio.sleep(inputs.seconds)
        finally:
            Gauge.in_flight -= 1
        return {}


@pytest.fixture
def runner(tmp_path) -> Runner:
    return Runner(BlockRegistry((*BUILTIN_BLOCKS, *TEST_BLOCKS, Gauge)), tmp_path)


def loop(with_: str, body: str, *, start: str = "{}", after: str = "", loop_extra: str = "") -> str:
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {start}
            next: each
          - id: each
            type: Loop
            with: {with_}
            body: first
            set: {{got: "{{{{ collected }}}}", passes: "{{{{ iterations }}}}"}}{loop_extra}
            next: done
{body}
          - id: done
            type: Set
            {after}
    """


def test_passes_run_side_by_side_up_to_the_concurrency(runner, write) -> None:
    Gauge.most = 0
    text = loop('{for_each: [1, 2, 3, 4, 5, 6, 7], concurrency: 3, collect: "{{ item }}"}',
                "          - {id: first, type: Gauge, next: each}")
    result = runner.run(write(text))
    assert result.status == "succeeded", result.errors
    assert Gauge.most == 3
    assert result.variables["got"] == [1, 2, 3, 4, 5, 6, 7] and result.variables["passes"] == 7


def test_collected_keeps_input_order_when_passes_end_out_of_order(runner, write) -> None:
    text = loop('{for_each: [0.06, 0.0, 0.03], concurrency: 3, collect: "{{ mine }}"}', """
          - {id: first, type: Sleep, with: {seconds: "{{ item }}"}, next: second}
          - {id: second, type: Set, set: {mine: "{{ index }}:{{ item }}"}, next: each}""")
    result = runner.run(write(text))
    assert result.variables["got"] == ["0:0.06", "1:0.0", "2:0.03"]
    # The path as passes one at a time make it, each followed by the loop it links back to.
    assert result.path == ["start", "each", "first", "second", "each", "first", "second", "each",
                           "first", "second", "each", "done"]
    assert result.steps == len(result.path)
    # Neither the passes' own names nor item/index flow out.
    assert "mine" not in result.variables and "item" not in result.variables


def test_each_pass_has_its_own_copy_of_the_scope(runner, write) -> None:
    text = loop('{for_each: [a, b, c], concurrency: 3, collect: "{{ seen }}"}', """
          - {id: first, type: Set, set: {seen: "{{ seen + [item] }}"}, next: nap}
          - {id: nap, type: Sleep, with: {seconds: 0.01}, next: each}""", start="{seen: [start]}")
    result = runner.run(write(text))
    assert result.variables["got"] == [["start", "a"], ["start", "b"], ["start", "c"]]
    assert result.variables["seen"] == ["start"]


def test_an_ignored_error_in_a_pass_goes_on_and_is_listed_in_input_order(runner, write) -> None:
    text = loop('{for_each: [1, 2, 3], concurrency: 3, collect: "{{ result_ok }}"}', """
          - id: first
            type: Fail
            error_level: Ignore
            with: {message: "pass {{ index }}"}
            next: note
          - {id: note, type: Set, set: {result_ok: "{{ index }}"}, next: each}""")
    result = runner.run(write(text))
    assert result.status == "succeeded" and result.variables["got"] == [0, 1, 2]
    assert [e["message"] for e in result.errors] == ["pass 0", "pass 1", "pass 2"]
    assert all(e.get("ignored") for e in result.errors)


def test_a_handler_in_the_body_handles_a_passes_error(runner, write) -> None:
    text = loop('{for_each: [1, 0, 2], concurrency: 2, collect: "{{ outcome }}"}', """
          - id: first
            type: Fail
            with: {message: "zero"}
            next: fine
            on_error: rescue
          - {id: fine, type: Set, set: {outcome: ok}, next: each}
          - {id: rescue, type: Set, set: {outcome: "rescued {{ item }}"}, next: each}""")
    result = runner.run(write(text))
    assert result.variables["got"] == ["rescued 1", "rescued 0", "rescued 2"]
    assert [e["handled_by"] for e in result.errors] == ["rescue", "rescue", "rescue"]


def test_an_unhandled_error_stops_the_passes_and_is_the_loops_error(runner, write) -> None:
    text = loop('{for_each: [0.0, 5, 5, 5], concurrency: 2, collect: "{{ item }}"}', """
          - {id: first, type: Sleep, with: {seconds: "{{ item }}"}, next: check}
          - id: check
            type: Fail
            with: {message: "bad {{ item }}"}
            next: each""", loop_extra="\n            on_error: rescue", after="""
          - {id: rescue, type: Set, set: {why: "{{ error.type }}: {{ error.message }}"}}""")
    result = runner.run(write(text))
    assert result.status == "succeeded"  # the loop's own on_error handled it; the sleeping pass was cancelled
    assert [(e["block"], e["type"]) for e in result.errors] == [("check", "test_failure"), ("each", "loop_pass_failed")]
    assert result.variables["why"].startswith("loop_pass_failed: pass 0 (item 0.0, index 0) failed at 'check'")
    assert result.path == ["start", "each", "first", "check", "first", "rescue"]


def test_more_items_than_max_iterations_fails_before_any_pass(runner, write) -> None:
    text = loop('{for_each: [1, 2, 3], concurrency: 2, max_iterations: 2}', "          - {id: first, type: Set, next: each}")
    result = runner.run(write(text))
    assert result.errors[0]["type"] == "loop_limit_reached" and result.path == ["start", "each"]


def test_pass_steps_count_against_max_steps(runner, write) -> None:
    text = loop('{for_each: [1, 2, 3, 4, 5], concurrency: 5}', "          - {id: first, type: Gauge, next: each}",
                start="{}\n            max_steps: 4")
    result = runner.run(write(text))
    assert result.status == "failed" and result.errors[0]["type"] == "step_limit_reached"


def test_interleaved_pass_steps_are_told_apart_in_the_trace(runner, write) -> None:
    text = loop('{for_each: [0.03, 0.0], concurrency: 2, collect: "{{ item }}"}', """
          - {id: first, type: Sleep, with: {seconds: "{{ item }}"}, next: second}
          - {id: second, type: Set, next: each}""")
    result = runner.run(write(text))
    events = runner.events(result)
    lanes = {e.get("lane") for e in events if e.get("block") in ("first", "second")}
    assert lanes == {"each[0]", "each[1]"}
    shown = [(s.block, s.pass_index, s.status) for s in steps(events)]
    assert shown == [("start", None, "succeeded"), ("each", None, "succeeded"), ("first", 0, "succeeded"),
                     ("first", 1, "succeeded"), ("second", 1, "succeeded"), ("second", 0, "succeeded"),
                     ("done", None, "succeeded")]
    assert run_path(result.trace).passes == {"each": 2}


def test_a_subdiagram_in_each_pass_has_its_own_lane(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, inputs: {n: 0}, next: nap}
          - {id: nap, type: Sleep, with: {seconds: "{{ n / 100 }}"}, next: twice}
          - {id: twice, type: Set, set: {doubled: "{{ n * 2 }}"}}
    """, "child.yaml")
    text = loop('{for_each: [3, 1, 2], concurrency: 3, collect: "{{ out }}"}', """
          - id: first
            type: Subdiagram
            with: {diagram: child.yaml, inputs: {n: "{{ item }}"}}
            set: {out: "{{ variables.doubled }}"}
            next: each""")
    result = runner.run(write(text))
    assert result.variables["got"] == [6, 2, 4]
    lanes = {e["lane"] for e in runner.events(result) if str(e.get("block")).startswith("first/")}
    assert lanes == {"each[0]/first", "each[1]/first", "each[2]/first"}


# -- refused at load --------------------------------------------------------------------------------------------


def problems(runner: Runner, path) -> list:
    with pytest.raises(DiagramInvalid) as raised:
        runner.load(path)
    return raised.value.problems


def test_a_body_set_read_after_the_loop_is_a_load_error_with_the_collect_hint(runner, write) -> None:
    text = loop('{for_each: [1, 2], concurrency: 2}', """
          - {id: first, type: Set, set: {last: "{{ item }}"}, next: each}""",
                start="{last: 0}", after='set: {report: "{{ last }}"}')
    found = problems(runner, write(text))
    assert [(p.code, p.block, p.field) for p in found] == [("set_in_concurrent_body", "first", "set.last")]
    assert "read after the loop by 'done'" in found[0].message and "only `collect` flows out" in found[0].message
    assert 'collect: "{{ last }}"' in (found[0].hint or "")
    lines = write(text).read_text().splitlines()
    assert found[0].line == next(number for number, line in enumerate(lines, 1) if "{id: first" in line)
    # One pass at a time, the same diagram is fine: the last pass's value flows out.
    assert runner.load(write(text.replace("concurrency: 2", "concurrency: 1"), "sequential.yaml"))


def test_a_body_set_read_only_inside_the_passes_is_fine(runner, write) -> None:
    text = loop('{for_each: [1, 2], concurrency: 2, collect: "{{ last }}"}', """
          - {id: first, type: Set, set: {last: "{{ item }}"}, next: again}
          - {id: again, type: Set, set: {twice: "{{ last * 2 }}"}, next: each}""", start="{last: 0}")
    assert runner.load(write(text)).blocks["each"].awaits


@pytest.mark.parametrize(("with_", "field"), [
    ('{count: 3, concurrency: 2}', "with.concurrency"),
    ('{while: "{{ false }}", concurrency: 2}', "with.concurrency"),
    ('{for_each: [1], concurrency: 2, break_when: "{{ true }}"}', "with.break_when"),
])
def test_concurrency_needs_for_each_and_no_break_when(runner, write, with_: str, field: str) -> None:
    found = problems(runner, write(loop(with_, "          - {id: first, type: Set, next: each}")))
    assert [(p.block, p.field) for p in found] == [("each", field)]


def test_a_body_handler_that_does_not_come_back_is_refused(runner, write) -> None:
    text = loop('{for_each: [1], concurrency: 2}', """
          - {id: first, type: Fail, next: each, on_error: outside}""", after="""
          - {id: outside, type: Set}""")
    found = problems(runner, write(text))
    assert [(p.code, p.block, p.field) for p in found] == [("concurrent_body_leaves", "first", "on_error")]
