"""The executor: links, set, step cap, error levels, message levels, the trace."""

from __future__ import annotations

import pytest

from engine import Event, MessageLevel, Services


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
