"""Loop: each mode, limits, break_when, nesting, and body shapes refused at load."""

from __future__ import annotations

import pytest

from engine import DiagramInvalid
from engine.compile.loader import load_diagram


def loop_diagram(with_: str, *, body_set: str = "seen: \"{{ seen + [item] }}\"", level: str = "Default",
                 start_vars: str = "{seen: [], n: 0}") -> str:
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {start_vars}
            next: loop
          - id: loop
            type: Loop
            error_level: {level}
            with: {with_}
            body: step
            set: {{passes: "{{{{ iterations }}}}", got: "{{{{ collected }}}}"}}
            next: done
            on_error: handler
          - id: step
            type: Set
            set: {{{body_set}}}
            next: loop
          - {{id: done, type: Set}}
          - {{id: handler, type: Set, set: {{why: "{{{{ error.type }}}}"}}}}
    """


def test_for_each_over_a_list_binds_item_and_index(runner, write) -> None:
    result = runner.run(write(loop_diagram('{for_each: [a, b, c], collect: "{{ index }}:{{ item }}"}')))
    assert result.status == "succeeded"
    assert result.variables["seen"] == ["a", "b", "c"]
    assert result.variables["got"] == ["0:a", "1:b", "2:c"]
    assert result.variables["passes"] == 3
    assert "item" not in result.variables and "index" not in result.variables
    assert result.path == ["start", "loop", "step", "loop", "step", "loop", "step", "loop", "done"]


def test_for_each_over_a_table_gives_row_mappings(runner, write) -> None:
    text = loop_diagram('{for_each: {columns: [name, qty], rows: [[pen, 2], [ink, 5]]}, collect: "{{ item.qty }}"}',
                        body_set='seen: "{{ seen + [item.name] }}"')
    result = runner.run(write(text))
    assert result.variables["seen"] == ["pen", "ink"] and result.variables["got"] == [2, 5]


def test_while_is_checked_before_each_pass(runner, write) -> None:
    result = runner.run(write(loop_diagram('{while: "{{ n < 3 }}"}', body_set='n: "{{ n + 1 }}"')))
    assert result.variables["n"] == 3 and result.variables["passes"] == 3
    never = runner.run(write(loop_diagram('{while: "{{ n > 100 }}"}', body_set='n: "{{ n + 1 }}"'), "never.yaml"))
    assert never.variables["passes"] == 0 and never.path == ["start", "loop", "done"]


def test_count(runner, write) -> None:
    result = runner.run(write(loop_diagram("{count: 4}", body_set='n: "{{ n + index }}"')))
    assert result.variables["n"] == 0 + 1 + 2 + 3


def test_break_when_is_checked_after_each_pass(runner, write) -> None:
    result = runner.run(write(loop_diagram('{for_each: [1, 2, 3, 4], break_when: "{{ item == 2 }}"}')))
    assert result.variables["seen"] == [1, 2] and result.variables["passes"] == 2


@pytest.mark.parametrize(("level", "path_end", "status"), [("Ignore", "done", "succeeded"),
                                                            ("Handle", "handler", "succeeded")])
def test_max_iterations_is_an_error_under_each_level(runner, write, level: str, path_end: str, status: str) -> None:
    result = runner.run(write(loop_diagram('{while: "{{ true }}", max_iterations: 3}', body_set='n: "{{ n + 1 }}"',
                                           level=level)))
    assert result.status == status
    assert result.path[-1] == path_end
    assert result.errors[0]["type"] == "loop_limit_reached" and "max_iterations (3)" in result.errors[0]["message"]
    assert result.variables["n"] == 3


def test_max_iterations_without_a_handler_fails_the_run(runner, write) -> None:
    text = loop_diagram("{count: 10, max_iterations: 2}").replace("            on_error: handler\n", "")
    text = text.replace('          - {id: handler, type: Set, set: {why: "{{ error.type }}"}}\n', "")
    result = runner.run(write(text))
    assert result.status == "failed" and result.errors[0]["type"] == "loop_limit_reached"


def test_nested_loops_scope_item_to_their_own_body(runner, write) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {pairs: [], item: outside}
            next: outer
          - id: outer
            type: Loop
            with: {for_each: [a, b]}
            body: inner
            next: after
          - id: inner
            type: Loop
            with: {for_each: [1, 2], collect: "{{ item }}"}
            body: record
            next: outer
          - id: record
            type: Set
            set: {pairs: "{{ pairs + [index ~ ':' ~ item] }}"}
            next: inner
          - id: after
            type: Set
            set: {last_item: "{{ item }}"}
    """)
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    assert result.variables["pairs"] == ["0:1", "1:2", "0:1", "1:2"]
    assert result.variables["last_item"] == "outside"


def test_outer_item_is_visible_after_the_inner_loop(runner, write) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, variables: {seen: []}, next: outer}
          - {id: outer, type: Loop, with: {for_each: [x, y]}, body: inner, next: end}
          - {id: inner, type: Loop, with: {count: 1}, body: noop, next: note}
          - {id: noop, type: Set, next: inner}
          - {id: note, type: Set, set: {seen: "{{ seen + [item] }}"}, next: outer}
          - {id: end, type: Set}
    """)
    assert runner.run(path).variables["seen"] == ["x", "y"]


@pytest.mark.parametrize(("body", "code"), [
    ("- {id: step, type: Set}", "loop_body_open"),
    ("- {id: step, type: Set, next: done}", "loop_body_open"),
    ("- {id: step, type: Set, next: [{to: loop, when: '{{ true }}'}, {to: away}]}\n          - {id: away, type: Set}",
     "loop_body_leaves"),
])
def test_invalid_body_shapes_are_load_errors(write, registry, body: str, code: str) -> None:
    path = write(f"""
        diagram: d
        blocks:
          - {{id: start, type: Start, next: loop}}
          - {{id: loop, type: Loop, with: {{count: 2}}, body: step, next: done}}
          {body}
          - {{id: done, type: Set}}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    assert code in {p.code for p in caught.value.problems}


def test_leaving_the_body_through_on_error_is_allowed(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: loop}
          - {id: loop, type: Loop, with: {count: 2}, body: step, next: done}
          - {id: step, type: Fail, next: loop, on_error: done}
          - {id: done, type: Set}
    """)
    load_diagram(path, registry)


def test_loop_needs_exactly_one_mode_and_a_body(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: loop}
          - {id: loop, type: Loop, with: {count: 2, while: "{{ true }}"}, body: step}
          - {id: step, type: Set, next: loop}
          - {id: other, type: Loop, with: {count: 1}}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    messages = " ".join(p.message for p in caught.value.problems)
    assert "exactly one of for_each, while, count" in messages and "needs 'body'" in messages


def test_item_outside_a_loop_body_is_a_load_error(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: a}
          - {id: a, type: Set, set: {x: "{{ item }}"}}
    """)
    with pytest.raises(DiagramInvalid, match="template names 'item'"):
        load_diagram(path, registry)


def test_a_link_from_an_inner_body_to_the_outer_loop_is_blamed_on_the_block_that_makes_it(write, registry) -> None:
    # The defect: the walk of inner's body went through `outer` (whose body port leads back to `inner`) and blamed
    # `done`, a block after the outer loop, which is in no body at all.
    path = write("""
        diagram: nested
        blocks:
          - {id: start, type: Start, variables: {rows: [[1, 2], [3]], total: 0}, next: outer}
          - {id: outer, type: Loop, with: {for_each: "{{ rows }}"}, body: inner, next: done}
          - {id: inner, type: Loop, with: {for_each: "{{ item }}"}, body: add, next: outer}
          - {id: add, type: Set, set: {total: "{{ total + item }}"}, next: outer}
          - {id: done, type: Set}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = caught.value.problems
    assert (problem.block, problem.field, problem.line, problem.code) == ("add", "next", 6, "loop_body_leaves")
    assert problem.message == "this block is in the body of 'inner' but links to 'outer', the loop around it"
    assert problem.hint is not None and "'next: inner'" in problem.hint and "break_when" in problem.hint


def test_the_hint_for_a_chain_that_leaves_its_loop_mentions_break_when(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: loop}
          - {id: loop, type: Loop, with: {count: 2}, body: step, next: done}
          - {id: step, type: Set, next: [{to: loop, when: '{{ true }}'}, {to: away}]}
          - {id: away, type: Set}
          - {id: done, type: Set}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = [p for p in caught.value.problems if p.code == "loop_body_leaves"]
    assert problem.block == "away" and "give it a break_when" in (problem.hint or "")
