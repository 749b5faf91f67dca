"""Subdiagram: a child diagram run as one step — its outputs, its load problems, levels, budget, trace, depth."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import DiagramInvalid, MessageLevel, Services, execute
from engine.compile.loader import load_diagram
from engine.providers.simulator import Simulator
from engine.runs.trace_steps import run_path, steps
from tests.conftest import Runner

CHILD = """
    diagram: child
    blocks:
      - {id: start, type: Start, inputs: {who: nobody, n: 0}, next: greet}
      - {id: greet, type: Set, set: {greeting: "Hello, {{ who }}", twice: "{{ n * 2 }}"}}
"""


def parent(with_: str, *, start: str = "", sub: str = "", more: str = "") -> str:
    return f"""
        diagram: parent
        blocks:
          - {{id: start, type: Start, inputs: {{name: Ada}}{start}, next: sub}}
          - id: sub
            type: Subdiagram
            with: {with_}
            set: {{got: "{{{{ variables }}}}", child_status: "{{{{ status }}}}", child_run: "{{{{ run_id }}}}"}}{sub}
            next: done
          - {{id: done, type: Set}}
        {more}"""


def problems(path: Path, runner: Runner) -> list:
    with pytest.raises(DiagramInvalid) as raised:
        runner.load(path)
    return raised.value.problems


def test_a_child_runs_as_one_step_and_gives_back_its_variables_status_and_run_id(runner, write) -> None:
    write(CHILD, "child.yaml")
    result = runner.run(write(parent('{diagram: child.yaml, inputs: {who: "{{ name }}", n: 21}}')))
    assert result.status == "succeeded", result.errors
    assert result.variables["got"] == {"who": "Ada", "n": 21, "greeting": "Hello, Ada", "twice": 42}
    assert result.variables["child_status"] == "succeeded"
    assert result.variables["child_run"] == f"{result.run_id}-sub-1"
    assert result.path == ["start", "sub", "done"]
    assert result.steps == 5  # the child's two steps count in the run's


def test_the_trace_nests_the_childs_steps_under_the_calling_step(runner, write) -> None:
    write(CHILD, "child.yaml")
    result = runner.run(write(parent("{diagram: child.yaml, inputs: {who: Bo}}")))
    events = runner.events(result)
    assert {e["run_id"] for e in events} == {result.run_id}  # one file, one run
    child = [e for e in events if e.get("lane") == "sub"]
    assert [(e["event"], e["block"]) for e in child if e["event"].startswith("block_")] == [
        ("block_started", "sub/start"), ("block_finished", "sub/start"),
        ("block_started", "sub/greet"), ("block_finished", "sub/greet")]
    assert all(e["depth"] == 1 for e in child)
    assert child[1]["next"] == "sub/greet"
    started = next(e for e in events if e["event"] == "subdiagram_started")
    finished = next(e for e in events if e["event"] == "subdiagram_finished")
    assert started["block"] == "sub" and started["sub_run_id"] == f"{result.run_id}-sub-1"
    assert finished["status"] == "succeeded" and finished["path"] == ["start", "greet"]
    shown = [(s.block, s.depth, s.status) for s in steps(events)]
    assert shown == [("start", 0, "succeeded"), ("sub", 0, "succeeded"), ("sub/start", 1, "succeeded"),
                     ("sub/greet", 1, "succeeded"), ("done", 0, "succeeded")]
    assert run_path(result.trace).blocks == {"start", "sub", "done"}
    assert run_path(result.trace, "sub").blocks == {"start", "greet"}


# -- problems found at load ---------------------------------------------------------------------------------------


def test_a_missing_child_is_a_load_problem_at_the_block_that_names_it(runner, write) -> None:
    found = problems(write(parent("{diagram: missing.yaml}")), runner)
    at_block = next(p for p in found if p.code == "subdiagram_invalid")
    assert at_block.block == "sub" and at_block.field == "with.diagram" and at_block.line == 6
    assert any(p.code == "no_file" and p.file.endswith("missing.yaml") for p in found)


def test_a_childs_own_problem_is_the_parents_naming_the_childs_file_and_line(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, next: greet}
          - {id: greet, type: Sett}
    """, "child.yaml")
    found = problems(write(parent("{diagram: child.yaml}")), runner)
    own = next(p for p in found if p.code == "unknown_block_type")
    assert own.file.endswith("child.yaml") and own.line == 4 and own.block == "greet"
    assert any(p.code == "subdiagram_invalid" and p.block == "sub" for p in found)


def test_a_cycle_of_literal_paths_is_refused_at_load(runner, write) -> None:
    write(parent("{diagram: a.yaml}"), "b.yaml")
    path = write(parent("{diagram: b.yaml}"), "a.yaml")
    found = problems(path, runner)
    cycle = next(p for p in found if p.code == "subdiagram_cycle")
    assert cycle.file.endswith("b.yaml") and cycle.block == "sub" and "a.yaml → b.yaml → a.yaml" in cycle.message
    assert "template" in (cycle.hint or "")
    itself = problems(write(parent("{diagram: self.yaml}"), "self.yaml"), runner)
    assert [p.code for p in itself] == ["subdiagram_cycle"]


def test_a_child_outside_the_folder_is_refused_unless_a_data_root_holds_it(runner, write, tmp_path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "child.yaml").write_text(CHILD.replace("\n    ", "\n"))
    path = write(parent("{diagram: ../elsewhere/child.yaml}"), "inner/parent.yaml")
    found = problems(path, runner)
    assert [(p.code, p.block, p.field) for p in found] == [("path_outside_folder", "sub", "with.diagram")]
    assert "--data-root" in (found[0].hint or "")
    loaded = load_diagram(path, runner.registry, data_roots=[tmp_path / "elsewhere"])
    assert loaded.blocks["sub"].child is not None


def test_an_input_the_child_does_not_take_is_a_load_problem_with_a_suggestion(runner, write) -> None:
    write(CHILD, "child.yaml")
    found = problems(write(parent('{diagram: child.yaml, inputs: {whom: "{{ name }}"}}')), runner)
    assert len(found) == 1
    assert (found[0].block, found[0].field, found[0].line) == ("sub", "with.inputs", 6)
    assert "takes no input 'whom'" in found[0].message and "'who'" in (found[0].hint or "")


def test_one_child_named_by_two_blocks_is_loaded_once(runner, write) -> None:
    write(CHILD, "child.yaml")
    loaded = runner.load(write(parent("{diagram: child.yaml}", more="""
          - {id: again, type: Subdiagram, with: {diagram: ./child.yaml}}""").replace("next: done", "next: again")))
    assert loaded.blocks["sub"].child is loaded.blocks["again"].child


# -- at run time ------------------------------------------------------------------------------------------------


def test_a_templated_path_is_loaded_when_the_run_renders_it(runner, write) -> None:
    write(CHILD, "child.yaml")
    path = write(parent('{diagram: "{{ which }}.yaml", inputs: {who: x}}', start=", variables: {which: child}"))
    assert runner.load(path).blocks["sub"].child is None
    result = runner.run(path)
    assert result.status == "succeeded" and result.variables["got"]["greeting"] == "Hello, x"
    refused = runner.run(write(parent('{diagram: "{{ which }}"}', start=", variables: {which: ../../etc/passwd}"),
                               "p2.yaml"))
    assert refused.errors[0]["type"] == "invalid_input" and "leaves the diagram's folder" in refused.errors[0]["message"]


def test_a_diagram_that_runs_itself_stops_at_depth_8(runner, write) -> None:
    path = write("""
        diagram: again
        blocks:
          - {id: start, type: Start, inputs: {n: 0}, variables: {me: again.yaml}, next: sub}
          - id: sub
            type: Subdiagram
            with: {diagram: "{{ me }}", inputs: {n: "{{ n + 1 }}"}}
    """, "again.yaml")
    result = runner.run(path)
    assert result.status == "failed"
    deepest = next(e for e in result.errors if e["type"] == "subdiagram_too_deep")
    assert deepest["block"] == "/".join(["sub"] * 9)
    assert result.errors[-1]["block"] == "sub" and result.errors[-1]["type"] == "subdiagram_failed"


def test_a_failed_child_is_subdiagram_failed_under_the_callers_level_with_its_errors_listed(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, error_level: Handle, next: boom}
          - {id: boom, type: Fail, with: {message: no stock}}
    """, "child.yaml")
    result = runner.run(write(parent("{diagram: child.yaml}", sub="\n            on_error: sorry",
                                     more="  - {id: sorry, type: Set, set: {why: \"{{ error.message }}\"}}")))
    assert result.status == "succeeded"
    assert [(e["block"], e["type"]) for e in result.errors] == [("sub/boom", "test_failure"), ("sub", "subdiagram_failed")]
    assert result.errors[1]["handled_by"] == "sorry"
    assert "sub/boom: test_failure: no stock" in result.variables["why"]


def test_levels_are_inherited_unless_the_child_sets_its_own(runner, write) -> None:
    failing = """
        diagram: child
        blocks:
          - {{id: start, type: Start{levels}, next: boom}}
          - {{id: boom, type: Fail, next: after}}
          - {{id: after, type: Set, set: {{reached: true}}}}
    """
    write(failing.format(levels=""), "inherits.yaml")
    write(failing.format(levels=", error_level: Handle"), "own.yaml")
    ignoring = ", error_level: Ignore, message_level: Release"
    inherited = runner.run(write(parent("{diagram: inherits.yaml}", start=ignoring), "p1.yaml"))
    assert inherited.status == "succeeded" and inherited.variables["got"]["reached"] is True
    assert [e.get("ignored") for e in inherited.errors] == [True]
    # Release inherited too: nothing of the child's steps in the trace but its error.
    assert not [e for e in runner.events(inherited) if e.get("lane") and e["event"] != "block_failed"]
    own = runner.run(write(parent("{diagram: own.yaml}", start=ignoring), "p2.yaml"))
    assert [(e["block"], e["type"], e.get("ignored")) for e in own.errors] == [
        ("sub/boom", "test_failure", None), ("sub", "subdiagram_failed", True)]
    # A run's --message-level is the caller's level, and so the child's.
    loud = runner.run(write(parent("{diagram: inherits.yaml}", start=ignoring), "p1.yaml"), message_level=MessageLevel.DEBUG)
    assert any(e.get("block") == "sub/after" and e["event"] == "block_finished" for e in runner.events(loud))


def test_a_childs_own_detailed_level_is_kept_in_a_release_run(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, message_level: Detailed, next: echo}
          - {id: echo, type: Echo, with: {value: "a long value"}}
    """, "child.yaml")
    result = runner.run(write(parent("{diagram: child.yaml}", start=", message_level: Release")))
    echoed = next(e for e in runner.events(result) if e.get("block") == "sub/echo" and e["event"] == "block_finished")
    assert echoed["outputs"]["result"] == "a long value"
    assert not [e for e in runner.events(result) if e.get("block") == "sub" and e["event"] == "block_finished"]


def test_max_steps_is_shared_with_the_child(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, variables: {i: 0}, next: count}
          - id: count
            type: Set
            set: {i: "{{ i + 1 }}"}
            next: [{to: count, when: "{{ i < 100 }}"}]
    """, "child.yaml")
    result = runner.run(write(parent("{diagram: child.yaml}", start=", max_steps: 20")))
    assert result.status == "failed"
    assert result.errors[0]["type"] == "step_limit_reached" and result.errors[0]["block"] == "sub/count"
    assert "max_steps (20)" in result.errors[0]["message"] and result.steps == 20


def test_the_run_deadline_reaches_into_the_child(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, next: nap}
          - {id: nap, type: Sleep, with: {seconds: 30}}
    """, "child.yaml")
    result = runner.run(write(parent("{diagram: child.yaml}", start=", timeout: 0.2")))
    assert result.status == "failed" and result.errors[-1]["type"] == "run_timeout"
    assert result.errors[-1]["block"] == "sub"


def test_a_childs_own_timeout_fails_the_child(runner, write) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, timeout: 0.1, next: nap}
          - {id: nap, type: Sleep, with: {seconds: 30}}
    """, "child.yaml")
    result = runner.run(write(parent("{diagram: child.yaml}")))
    assert [(e["block"], e["type"]) for e in result.errors] == [("sub/nap", "run_timeout"), ("sub", "subdiagram_failed")]


def test_replies_for_a_childs_request_are_addressed_through_the_subdiagram(runner, write, tmp_path) -> None:
    write("""
        diagram: child
        blocks:
          - {id: start, type: Start, inputs: {q: ""}, next: ask}
          - id: ask
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: "{{ q }}"}
            set: {answer: "{{ result }}"}
    """, "child.yaml")
    diagram = runner.load(write(parent('{diagram: child.yaml, inputs: {q: "{{ name }}"}}')))
    simulator = Simulator({"sub/ask": [{"text": "Hi Ada"}]})
    services = Services(environ={}, offline=True, simulator=simulator)
    result = asyncio.run(execute(diagram, runs_dir=tmp_path / "runs", services=services))
    assert result.variables["got"]["answer"] == "Hi Ada"
    assert [request.block for request in simulator.requests] == ["sub/ask"]


SECRET_CHILD = """
    diagram: child
    secrets: [SHOP_LOGIN]
    blocks:
      - {id: start, type: Start, next: read}
      - {id: read, type: Set, set: {token: "{{ secret('SHOP_LOGIN') }}", size: "{{ secret('SHOP_LOGIN') | length }}"}}
"""


def test_a_childs_secrets_are_read_from_the_run_environment_and_redacted_in_the_trace(runner, write) -> None:
    write(SECRET_CHILD, "child.yaml")
    services = Services(environ={"SHOP_LOGIN": "lg-Zq81x"}, offline=False)
    result = runner.run(write(parent("{diagram: child.yaml}")), services=services, message_level=MessageLevel.DEBUG)
    assert result.status == "succeeded", result.errors
    assert result.variables["got"]["size"] == 8
    assert result.trace is not None and b"lg-Zq81x" not in result.trace.read_bytes()


def test_a_templated_child_may_list_only_secrets_the_run_redacts(runner, write) -> None:
    write(SECRET_CHILD, "child.yaml")
    services = Services(environ={"SHOP_LOGIN": "lg-Zq81x"}, offline=False)
    path = write(parent('{diagram: "{{ which }}.yaml"}', start=", variables: {which: child}"))
    result = runner.run(path, services=services)
    assert result.status == "failed"
    assert result.errors[-1]["type"] == "subdiagram_invalid"
    assert "lists secrets the calling run does not redact: SHOP_LOGIN" in result.errors[-1]["message"]
    # Listed by the top diagram as well, it runs (and is redacted).
    listed = write(parent('{diagram: "{{ which }}.yaml"}', start=", variables: {which: child}")
                   .replace("diagram: parent\n", "diagram: parent\n        secrets: [SHOP_LOGIN]\n"), "listed.yaml")
    result = runner.run(listed, services=services)
    assert result.status == "succeeded", result.errors
    assert result.trace is not None and b"lg-Zq81x" not in result.trace.read_bytes()
