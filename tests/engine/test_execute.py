"""The executor: links, set, step cap, error levels, message levels, the trace."""

from __future__ import annotations

import errno
import functools
import gc
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from blocks.set import Set
from blocks.start import Start
from engine import Block, BlockRegistry, Event, MessageLevel, RunContext, Services
from tests.conftest import Runner


def events_named(events, name):
    return [e for e in events if e["event"] == name]


def test_first_matching_when_link_is_taken(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {n: 5}
            next:
              - {to: small, when: "{{ n < 3 }}"}
              - {to: big, when: "{{ n >= 3 }}"}
              - {to: small}
          - {id: small, type: Set, set: {size: small}}
          - {id: big, type: Set, set: {size: big}}
    """)
    assert runner.run(path).path == ["start", "big"]
    assert runner.run(path, {"n": 1}).variables["size"] == "small"


def test_fallback_link_and_no_link_ends_the_run(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: [{to: a, when: "{{ false }}"}]
          - {id: a, type: Set}
    """)
    result = runner.run(path)
    assert result.status == "succeeded" and result.path == ["start"]


def test_set_sees_outputs_and_when_sees_updated_variables(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {total: 0}
            next: echo
          - id: echo
            type: Echo
            with: {value: [1, 2], count: 2}
            set: {items: "{{ result }}", total: "{{ total + count }}"}
            next: [{to: echo, when: "{{ total < 6 }}"}, {to: done}]
          - {id: done, type: Set, set: {summary: "{{ items | length }} items, total {{ total }}"}}
    """)
    result = runner.run(path)
    assert result.path == ["start", "echo", "echo", "echo", "done"]
    assert result.variables["summary"] == "2 items, total 6"


def test_counter_cycle_and_step_cap(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            max_steps: 20
            variables: {i: 0}
            next: count
          - id: count
            type: Set
            set: {i: "{{ i + 1 }}"}
            next: [{to: count, when: "{{ i < 1000 }}"}]
    """)
    result = runner.run(path)
    assert result.status == "failed"
    assert result.steps == 20
    assert result.errors[-1]["type"] == "step_limit_reached"
    assert "max_steps (20)" in result.errors[-1]["message"]
    finished = events_named(runner.events(result), Event.RUN_FINISHED)
    assert finished[0]["status"] == "failed"


LEVELS = """
    diagram: d
    blocks:
      - id: start
        type: Start
        error_level: {start_level}
        next: fail
      - id: fail
        type: Fail
        error_level: {block_level}
        next: [{{to: after, when: "{{{{ count == 0 and result is none }}}}"}}]
        on_error: handler
      - {{id: after, type: Set, set: {{went: after}}}}
      - {{id: handler, type: Set, set: {{went: handler, why: "{{{{ error.type }}}}: {{{{ error.message }}}}"}}}}
"""


def test_ignore_continues_along_next_with_empty_outputs(write, runner) -> None:
    result = runner.run(write(LEVELS.format(start_level="Handle", block_level="Ignore")))
    assert result.status == "succeeded"
    assert result.path == ["start", "fail", "after"]
    assert result.errors == [{"block": "fail", "type": "test_failure", "message": "it broke", "ignored": True}]


def test_handle_goes_to_on_error_with_error_in_scope(write, runner) -> None:
    result = runner.run(write(LEVELS.format(start_level="Handle", block_level="Handle")))
    assert result.status == "succeeded"
    assert result.path == ["start", "fail", "handler"]
    assert result.variables["why"] == "test_failure: it broke"
    assert result.errors[0]["handled_by"] == "handler"


def test_default_inherits_the_start_level(write, runner) -> None:
    ignored = runner.run(write(LEVELS.format(start_level="Ignore", block_level="Default")))
    assert ignored.path == ["start", "fail", "after"]
    handled = runner.run(write(LEVELS.format(start_level="Handle", block_level="Default"), "h.yaml"))
    assert handled.path == ["start", "fail", "handler"]


def test_handle_without_on_error_fails_the_run(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: fail}
          - {id: fail, type: Fail, with: {message: "no handler here"}, next: after}
          - {id: after, type: Set}
    """)
    result = runner.run(path)
    assert result.status == "failed" and result.path == ["start", "fail"]
    assert result.errors == [{"block": "fail", "type": "test_failure", "message": "no handler here"}]


def test_a_raising_block_still_leaves_the_whole_trace(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, message_level: Debug, next: a}
          - {id: a, type: Echo, with: {value: first}, next: boom}
          - {id: boom, type: Fail, with: {crash: true, message: "bug in a plug-in"}}
    """)
    result = runner.run(path)
    assert result.status == "failed"
    assert result.errors[0]["type"] == "block_raised" and "ValueError: bug in a plug-in" in result.errors[0]["message"]
    events = runner.events(result)
    names = [e["event"] for e in events]
    assert names[0] == Event.RUN_STARTED and names[-1] == Event.RUN_FINISHED
    assert [e["block"] for e in events_named(events, Event.BLOCK_FINISHED)] == ["start", "a", "boom"]
    assert events_named(events, Event.BLOCK_FAILED)[0]["block"] == "boom"
    assert all(e["run_id"] == result.run_id and "timestamp" in e for e in events)


MESSAGE = """
    diagram: d
    blocks:
      - id: start
        type: Start
        message_level: {start}
        next: echo
      - id: echo
        type: Echo
        message_level: {block}
        with: {{value: "{{{{ 'x' * 500 }}}}"}}
        next: fail
      - {{id: fail, type: Fail, error_level: Ignore}}
"""


@pytest.mark.parametrize("level", ["Release", "Debug", "Detailed"])
def test_message_levels_decide_what_the_trace_keeps(write, runner, level: str) -> None:
    result = runner.run(write(MESSAGE.format(start=level, block="Default")))
    events = runner.events(result)
    names = {e["event"] for e in events}
    assert {Event.RUN_STARTED, Event.RUN_FINISHED, Event.BLOCK_FAILED} <= names
    finished = {e["block"]: e for e in events_named(events, Event.BLOCK_FINISHED)}
    if level == "Release":
        assert not finished and Event.BLOCK_STARTED not in names
    else:
        echo = finished["echo"]
        assert echo["next"] == "fail" and echo["duration_ms"] >= 0
        shown = echo["outputs"]["result"]
        assert len(shown) == (500 if level == "Detailed" else 160)


def test_a_block_level_overrides_the_start_level(write, runner) -> None:
    result = runner.run(write(MESSAGE.format(start="Release", block="Debug")))
    finished = events_named(runner.events(result), Event.BLOCK_FINISHED)
    assert [e["block"] for e in finished] == ["echo"]


def test_run_message_level_option_replaces_the_start_level(write, runner) -> None:
    result = runner.run(write(MESSAGE.format(start="Debug", block="Default")), message_level=MessageLevel.RELEASE)
    assert not events_named(runner.events(result), Event.BLOCK_FINISHED)


def test_keys_never_reach_the_trace(write, runner) -> None:
    key = "sk-ant-api03-fakefakefakefake"
    other = "my-private-groq-value"
    path = write(f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            message_level: Detailed
            inputs: {{note: "leaked {key} and {other}"}}
            next: echo
          - id: echo
            type: Echo
            with: {{value: "{{{{ note }}}}"}}
    """)
    services = Services(environ={"GROQ_API_KEY": other})
    result = runner.run(path, services=services)
    text = result.trace.read_text()
    assert key not in text and other not in text
    assert "[REDACTED]" in text


def test_run_timeout_cancels_the_running_block(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, timeout: 0.2, next: wait}
          - {id: wait, type: Sleep, with: {seconds: 30}}
    """)
    result = runner.run(path)
    assert result.status == "failed"
    assert result.errors[-1]["type"] == "run_timeout" and result.errors[-1]["block"] == "wait"
    assert result.duration < 5
    assert events_named(runner.events(result), Event.RUN_FINISHED)[0]["status"] == "failed"


def test_variables_are_templates_over_inputs(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {name: Ana}
            variables: {greeting: "Olá, {{ name }}!", items: []}
    """)
    result = runner.run(path, {"name": "Giulia"})
    assert result.variables["greeting"] == "Olá, Giulia!"


def test_a_template_error_at_run_time_names_block_and_field(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {n: 0}
            next: echo
          - id: echo
            type: Echo
            with: {value: "{{ n.missing_attribute }}"}
    """)
    result = runner.run(path)
    assert result.errors[0]["block"] == "echo"
    assert result.errors[0]["message"].startswith("with.value:")


def test_rendered_inputs_are_validated(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {n: "many"}
            next: echo
          - {id: echo, type: Echo, with: {count: "{{ n }}"}}
    """)
    result = runner.run(path)
    assert result.errors[0]["type"] == "invalid_input" and "with.count" in result.errors[0]["message"]


def test_two_runs_of_one_diagram_share_nothing(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, variables: {items: []}, next: add}
          - {id: add, type: Set, set: {items: "{{ items + [1] }}"}}
    """)
    diagram = runner.load(path)
    assert runner.run(diagram).variables["items"] == [1]
    assert runner.run(diagram).variables["items"] == [1]


# -- bugs are not user errors --------------------------------------------------------------------

class Divide(Block):
    """Stands for a block diagrama ships (see its module below) that has a bug."""

    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {"ratio": 1 / 0}


Divide.__module__ = "blocks.divide"  # where diagrama's own blocks live: its exceptions are our bugs


class PluginDivide(Block):
    """The same bug in a block from another package (this test module)."""

    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {"ratio": 1 / 0}


BUGGY = """
    diagram: d
    blocks:
      - {{id: start, type: Start, message_level: {level}, error_level: Ignore, next: divide}}
      - {{id: divide, type: {block}, next: after, on_error: after}}
      - {{id: after, type: Set, set: {{went: after}}}}
"""


class PlainHalf(Block):
    """A plug-in whose `run` is a plain function: it steps without a coroutine."""

    class Outputs(BaseModel):
        ratio: float

    def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {"ratio": context.scope.values["n"] / 2}


class Misdeclared(Block):
    """A plug-in whose plain `run` hands back a coroutine (it forgot `async`)."""

    async def _work(self) -> dict[str, Any]:
        return {}

    def run(self, inputs: Any, context: RunContext) -> Any:
        return self._work()


def small_registry() -> BlockRegistry:
    return BlockRegistry((Start, Set, Divide, PluginDivide, PlainHalf, Misdeclared))


@pytest.mark.parametrize("level", ["Release", "Debug", "Detailed"])
def test_an_exception_in_our_own_block_is_a_bug_that_fails_the_run(write, tmp_path, level: str) -> None:
    runner = Runner(small_registry(), tmp_path)
    result = runner.run(write(BUGGY.format(level=level, block="Divide")))
    assert result.status == "failed" and result.path == ["start", "divide"]  # not ignored, not handled
    assert len(result.errors) == 1
    error = result.errors[0]
    assert error["type"] == "internal_error" and error["block"] == "divide"
    assert "this is a bug in diagrama or in block 'divide'" in error["message"]
    assert "please report it" in error["message"]
    assert "ZeroDivisionError: division by zero" in error["message"]
    events = runner.events(result)
    failed = events_named(events, Event.BLOCK_FAILED)
    assert [e["error_type"] for e in failed] == ["internal_error"]
    if level == "Detailed":
        assert "ZeroDivisionError" in failed[0]["traceback"] and "1 / 0" in failed[0]["traceback"]
    else:
        assert "traceback" not in failed[0]
    assert events_named(events, Event.RUN_FINISHED)[0]["status"] == "failed"


def test_an_exception_in_a_plugin_block_is_block_raised_and_follows_the_error_level(write, tmp_path) -> None:
    runner = Runner(small_registry(), tmp_path)
    result = runner.run(write(BUGGY.format(level="Detailed", block="PluginDivide")))
    assert result.status == "succeeded" and result.path == ["start", "divide", "after"]
    assert result.errors == [{"block": "divide", "type": "block_raised", "message": "ZeroDivisionError: division by zero",
                              "ignored": True}]


def test_a_block_with_a_plain_run_steps_and_its_outputs_reach_set(write, tmp_path) -> None:
    runner = Runner(small_registry(), tmp_path)
    result = runner.run(write("""
        diagram: d
        blocks:
          - {id: start, type: Start, inputs: {n: 7}, next: half}
          - {id: half, type: PlainHalf, set: {h: "{{ ratio * 2 }}"}, next: [{to: done, when: "{{ ratio > 3 }}"}]}
          - {id: done, type: Set}
    """))
    assert result.status == "succeeded" and result.path == ["start", "half", "done"]
    assert result.variables["h"] == 7.0 and result.outputs["half"] == {"ratio": 3.5}


def test_a_plain_run_that_returns_a_coroutine_is_the_plugins_error_named_plainly(write, tmp_path) -> None:
    runner = Runner(small_registry(), tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = runner.run(write(BUGGY.format(level="Debug", block="Misdeclared").replace("error_level: Ignore, ", "")))
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]  # the coroutine was closed
    assert result.status == "succeeded" and result.path == ["start", "divide", "after"]  # on_error handles it
    assert result.errors[0]["type"] == "block_raised"
    assert "Misdeclared.run returned a coroutine" in result.errors[0]["message"]
    assert "async def run" in result.errors[0]["message"]


# -- every value a template makes can be traced ---------------------------------------------------

@pytest.mark.parametrize("level", ["Release", "Debug", "Detailed"])
def test_integers_past_64_bits_are_traced_as_numbers(write, runner, level: str) -> None:
    path = write(f"""
        diagram: d
        blocks:
          - {{id: start, type: Start, message_level: {level}, next: big}}
          - id: big
            type: Set
            set: {{big: "{{{{ 2 ** 70 }}}}", text: "{{{{ [2 ** 70] | to_json }}}}"}}
    """)
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    assert result.variables["big"] == 2**70 and result.variables["text"] == f"[{2**70}]"
    lines = result.trace.read_bytes().splitlines()
    parsed = [json.loads(line) for line in lines]  # every line is whole JSON
    assert parsed[-1]["event"] == Event.RUN_FINISHED and parsed[-1]["status"] == "succeeded"
    if level != "Release":
        finished = [e for e in parsed if e["event"] == Event.BLOCK_FINISHED and e["block"] == "big"]
        assert finished[0]["set"]["big"] == 2**70


@pytest.mark.parametrize("level", ["Debug", "Detailed"])
def test_what_set_assigned_is_traced_short_or_whole_and_only_when_it_was_applied(write, runner, level: str) -> None:
    path = write(f"""
        diagram: d
        blocks:
          - {{id: start, type: Start, message_level: {level}, variables: {{n: 0}}, next: loop}}
          - id: loop
            type: Loop
            with: {{count: 2}}
            body: body
            set: {{after: "{{{{ n }}}}"}}
            next: done
          - {{id: body, type: Set, set: {{n: "{{{{ n + 1 }}}}", long: "{{{{ 'x' * 500 }}}}"}}, next: loop}}
          - {{id: done, type: Set}}
    """)
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    finished = events_named(runner.events(result), Event.BLOCK_FINISHED)
    body = [e for e in finished if e["block"] == "body"]
    assert [e["set"]["n"] for e in body] == [1, 2]
    assert len(body[0]["set"]["long"]) == (500 if level == "Detailed" else 160)
    loop = [e for e in finished if e["block"] == "loop"]
    assert [e["via"] for e in loop] == ["body", "body", "next"]
    assert ["set" in e for e in loop] == [False, False, True]  # a pass through the body applies no `set`
    assert loop[-1]["set"] == {"after": 2}
    assert "set" not in next(e for e in finished if e["block"] == "done")


# -- a full disk ends the run with a result, and the trace keeps whole lines -----------------------

class FillingDisk:
    """A trace file on a disk with `room` bytes free: writes past it fail with ENOSPC."""

    name = "full-disk/trace.jsonl"

    def __init__(self, room: int) -> None:
        self.room = room
        self.data = bytearray()

    def write(self, data: bytes) -> int:
        free = self.room - len(self.data)
        if free <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        taken = bytes(data[:free])  # a short write, as the kernel does when the disk fills
        self.data += taken
        return len(taken)

    def tell(self) -> int:
        return len(self.data)

    def truncate(self, size: int) -> int:
        del self.data[size:]
        return size


STEPS = """
    diagram: d
    blocks:
      - {id: start, type: Start, message_level: Debug, variables: {i: 0}, next: count}
      - id: count
        type: Set
        set: {i: "{{ i + 1 }}"}
        next: [{to: count, when: "{{ i < 50 }}"}]
"""


def test_a_disk_that_fills_mid_run_fails_the_run_and_leaves_whole_lines(write, runner) -> None:
    disk = FillingDisk(room=2000)
    result = runner.run(write(STEPS), trace_file=disk)
    assert result.status == "failed"
    error = result.errors[-1]
    assert error["type"] == "trace_write_failed"
    assert "full-disk/trace.jsonl" in error["message"] and "disk full (ENOSPC)" in error["message"]
    assert 0 < result.steps < 50  # stopped at the next step: a run that cannot be traced does not go on
    assert disk.data.endswith(b"\n")
    events = [json.loads(line) for line in bytes(disk.data).splitlines()]
    assert events[0]["event"] == Event.RUN_STARTED and len(disk.data) <= 2000


def test_dev_full_as_the_trace_file_still_gives_a_result(write, runner) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    diagram = runner.load(write(STEPS))
    run_id = "full-run"
    trace = runner.runs_dir / run_id / "trace.jsonl"
    trace.parent.mkdir(parents=True)
    trace.symlink_to("/dev/full")  # the trace's own path, on a disk with no room at all
    result = runner.run(diagram, run_id=run_id)
    assert result.status == "failed" and result.steps == 0
    assert result.errors == [{"block": "start", "type": "trace_write_failed",
                              "message": f"cannot write the trace {trace}: disk full (ENOSPC)"}]


def test_when_only_the_last_line_does_not_fit_the_run_still_fails(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, message_level: Release}
    """)
    disk = FillingDisk(room=len(b"x") * 10_000)
    first = runner.run(path, trace_file=disk)
    assert first.status == "succeeded"
    # run_started fits, run_finished does not; the slack covers a timestamp with more digits this time
    room = len(disk.data.split(b"\n")[0]) + 1 + 16
    disk = FillingDisk(room=room)
    result = runner.run(path, trace_file=disk)
    assert result.status == "failed" and result.errors[-1]["type"] == "trace_write_failed"
    assert disk.data.count(b"\n") == 1 and json.loads(disk.data)["event"] == Event.RUN_STARTED


# -- a block's route: `set` all at once, then the first link that holds ---------------------------

def test_set_values_are_all_evaluated_before_any_is_assigned(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, variables: {a: 1, b: 2}, next: swap}
          - {id: swap, type: Set, set: {a: "{{ b }}", b: "{{ a }}", c: "{{ a * 10 + b }}"}}
    """)
    variables = runner.run(path).variables
    assert (variables["a"], variables["b"], variables["c"]) == (2, 1, 12)


def test_a_failing_set_value_and_a_failing_when_name_their_field(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, inputs: {n: 0, in_when: false}, next: [{to: when, when: "{{ in_when }}"}, {to: set}]}
          - {id: set, type: Set, set: {ok: 1, q: "{{ 1 // n }}"}}
          - {id: when, type: Set, next: [{to: set, when: "{{ false }}"}, {to: set, when: "{{ 1 // n > 0 }}"}]}
    """)
    failed = runner.run(path)
    assert failed.errors == [{"block": "set", "type": "template_error",
                              "message": "set.q: ZeroDivisionError: integer division or modulo by zero"}]
    assert "ok" not in failed.variables  # nothing of a failed `set` is assigned
    failed = runner.run(path, {"in_when": True})
    assert failed.errors == [{"block": "when", "type": "template_error",
                              "message": "next[1].when: ZeroDivisionError: integer division or modulo by zero"}]


def test_an_ignored_error_takes_the_first_link_that_holds_a_failing_when_counting_as_false(write, runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, inputs: {n: 0}, next: s}
          - id: s
            type: Set
            error_level: Ignore
            set: {q: "{{ 1 // n }}"}
            next: [{to: a, when: "{{ 1 // n > 0 }}"}, {to: b, when: "{{ n == 0 }}"}, {to: a}]
          - {id: a, type: Set}
          - {id: b, type: Set}
    """)
    result = runner.run(path)
    assert result.status == "succeeded" and result.path == ["start", "s", "b"]
    assert result.errors[0]["message"].startswith("set.q: ZeroDivisionError") and result.errors[0]["ignored"]


@pytest.mark.parametrize(("template", "message", "kind"), [
    ("{{ d.missing }}", "set.x: 'dict object' has no attribute 'missing' (its keys: a)", "template_undefined"),
    ("{{ d.a ~ 'x' * 10**8 }}", "set.x: the template would build a repeated value of about 100,000,000 characters; "
                                "the limit is 10,000,000", "template_too_large"),
    ("{{ d.__class__ }}", "set.x: not allowed in a template: access to attribute '__class__' of 'dict' object is unsafe. "
                          "(its keys: a)", "template_forbidden"),
    ("{{ d | tojson | length // n }}", "set.x: ZeroDivisionError: integer division or modulo by zero", "template_error"),
])
def test_a_set_value_fails_with_its_templates_own_error_type(write, runner, template: str, message: str,
                                                              kind: str) -> None:
    path = write(f"""
        diagram: d
        blocks:
          - {{id: start, type: Start, inputs: {{n: 0}}, variables: {{d: {{a: 1}}}}, next: s}}
          - {{id: s, type: Set, set: {{x: "{template}"}}}}
    """)
    assert runner.run(path).errors == [{"block": "s", "type": kind, "message": message}]


def _logged(run: Any) -> Any:
    """A decorator as plug-ins write them: a plain wrapper, `functools.wraps` naming what it wraps."""

    @functools.wraps(run)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs)

    return wrapper


class DecoratedHalf(Block):
    class Outputs(BaseModel):
        ratio: float

    @_logged
    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {"ratio": context.scope.values["n"] / 2}


def test_a_decorated_async_run_is_awaited(write, tmp_path) -> None:
    runner = Runner(BlockRegistry((Start, Set, DecoratedHalf)), tmp_path)
    result = runner.run(write("""
        diagram: d
        blocks:
          - {id: start, type: Start, inputs: {n: 3}, next: half}
          - {id: half, type: DecoratedHalf, set: {h: "{{ ratio }}"}}
    """))
    assert result.status == "succeeded" and result.variables["h"] == 1.5
