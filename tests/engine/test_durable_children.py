"""Durable runs with subdiagrams: a child of a durable run checkpoints as its own run (its parent recorded), a resume
with the child in flight continues the child from its last checkpoint, and a Wait in a child stops the whole run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine import BlockRegistry, RunResult, Services, UsageError, execute
from engine.compile.loader import load_diagram
from engine.runs.checkpoints import CheckpointStore
from engine.runs.turn import resume_run
from engine.runs.turn import resume_turn as prepare_resume
from engine.runtime.durable import decode_state
from tests.engine.durable_support import Tick, interrupt_after
from tests.postgres import sql

CHILD = """
diagram: child
blocks:
  - id: start
    type: Start
    inputs: {base: 0}
    variables: {total: 0}
    next: t1
  - id: t1
    type: Tick
    with: {value: "{{ base + 1 }}"}
    set: {total: "{{ total + result }}"}
    next: t2
  - id: t2
    type: Tick
    with: {value: "{{ base + 2 }}"}
    set: {total: "{{ total + result }}"}
    next: t3
  - id: t3
    type: Tick
    with: {value: "{{ base + 3 }}"}
    set: {total: "{{ total + result }}"}
"""

PARENT = """
diagram: parent
blocks:
  - id: start
    type: Start
    variables: {sums: []}
    next: each
  - id: each
    type: Loop
    with: {count: 3}
    body: sub
    next: after
  - id: sub
    type: Subdiagram
    with: {diagram: child.yaml, inputs: {base: "{{ index * 10 }}"}}
    set: {sums: "{{ sums + [variables.total] }}"}
    next: each
  - id: after
    type: Tick
    with: {value: after}
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


def _run(path: Path, blocks: BlockRegistry, store: CheckpointStore | None, tmp_path: Path) -> RunResult:
    return asyncio.run(execute(load_diagram(path, blocks), {}, runs_dir=tmp_path / "runs",
                               services=Services(checkpoints=store)))


def _children(store: CheckpointStore, parent: str) -> list[dict[str, Any]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(store.url)  # type: ignore[attr-defined]
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT run_id, status, parent FROM run_states WHERE parent = :parent "
                                           "ORDER BY run_id"), {"parent": parent}).mappings().all()
    finally:
        engine.dispose()
    return [dict(row) for row in rows]


def _seq_after(store: CheckpointStore, run_id: str, block: str, nth: int = 1) -> int:
    """Run `run_id`'s checkpoint after its nth step of `block`."""
    seen = 0
    for seq, state in store.states(run_id):
        header, _, _ = decode_state(state)
        if header["from"] == block:
            seen += 1
            if seen == nth:
                return seq
    raise AssertionError(f"no checkpoint after {block} #{nth}")


def test_a_durable_runs_children_are_runs_of_their_own_with_their_parent(tmp_path: Path, blocks: BlockRegistry,
                                                                         store: CheckpointStore) -> None:
    _write(tmp_path, "child.yaml", CHILD)
    whole = _run(_write(tmp_path, "parent.yaml", PARENT), blocks, store, tmp_path)
    assert whole.status == "succeeded" and whole.variables["sums"] == [6, 36, 66]
    children = _children(store, whole.run_id)
    assert [row["run_id"] for row in children] == [f"{whole.run_id}-sub-{n}" for n in (1, 2, 3)]
    assert {row["status"] for row in children} == {"succeeded"}
    assert [row["run_id"] for row in store.runs()] == [whole.run_id]  # a child is its parent's step, not listed
    # one after each Tick, and the last (its end)
    assert len(store.states(children[0]["run_id"])) == 4
    with pytest.raises(UsageError, match="is a subdiagram's run, a step of run"):
        prepare_resume(store, children[0]["run_id"], registry=blocks)


@pytest.mark.parametrize(("child_seq", "ran_again"), [(0, [11, 12, 13]), (1, [12, 13]), (2, [13]), (3, [])])
def test_a_resume_with_a_child_in_flight_continues_the_child_from_its_own_checkpoint(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore, child_seq: int, ran_again: list[int]) -> None:
    _write(tmp_path, "child.yaml", CHILD)
    whole = _run(_write(tmp_path, "parent.yaml", PARENT), blocks, store, tmp_path)
    second = f"{whole.run_id}-sub-2"
    # Killed during the second call: the parent had checkpointed the first call, the child `child_seq` times
    # (3: all three Ticks done, not yet its last checkpoint).
    interrupt_after(store, whole.run_id, _seq_after(store, whole.run_id, "sub", nth=1))
    interrupt_after(store, second, child_seq)
    sql(store, "DELETE FROM checkpoints WHERE run_id = :run", run=f"{whole.run_id}-sub-3")
    sql(store, "DELETE FROM run_states WHERE run_id = :run", run=f"{whole.run_id}-sub-3")
    Tick.log.clear()
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=blocks, runs_dir=tmp_path / "runs"))
    assert resumed.status == "succeeded", resumed.errors
    assert resumed.variables == whole.variables and resumed.steps == whole.steps
    assert Tick.log == [*ran_again, 21, 22, 23, "after"]  # the first child never again, the second from its checkpoint
    assert [row["status"] for row in _children(store, whole.run_id)] == ["succeeded"] * 3


def test_a_child_that_had_ended_before_the_interruption_is_not_run_again(tmp_path: Path, blocks: BlockRegistry,
                                                                         store: CheckpointStore) -> None:
    _write(tmp_path, "child.yaml", CHILD)
    whole = _run(_write(tmp_path, "parent.yaml", PARENT), blocks, store, tmp_path)
    # Killed between the third child's end and its caller's checkpoint after the Subdiagram step.
    interrupt_after(store, whole.run_id, _seq_after(store, whole.run_id, "sub", nth=2))
    Tick.log.clear()
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=blocks, runs_dir=tmp_path / "runs"))
    assert resumed.status == "succeeded" and resumed.variables == whole.variables
    assert Tick.log == ["after"]


REVIEW = """
diagram: review
blocks:
  - id: start
    type: Start
    error_level: Handle
    inputs: {draft: ""}
    variables: {approved: false}
    next: approve
  - id: approve
    type: Wait
    with:
      prompt: "Send this reply? {{ draft }}"
      form: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
      timeout: 3600
    set: {approved: "{{ answer.approved }}"}
    next: send
  - id: send
    type: Tick
    with: {value: "{{ draft }}"}
"""

CALLS_REVIEW = """
diagram: support
blocks:
  - id: start
    type: Start
    next: draft
  - id: draft
    type: Tick
    with: {value: drafted}
    next: review
  - id: review
    type: Subdiagram
    with: {diagram: review.yaml, inputs: {draft: "Hello!"}}
    set: {approved: "{{ variables.approved }}"}
"""


def test_a_wait_in_a_child_stops_the_whole_run_waiting_and_the_answer_reaches_it(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore) -> None:
    _write(tmp_path, "review.yaml", REVIEW)
    first = _run(_write(tmp_path, "support.yaml", CALLS_REVIEW), blocks, store, tmp_path)
    assert first.status == "waiting", first.errors
    assert first.waiting is not None and first.waiting["block"] == "review/approve"
    assert first.waiting["prompt"] == "Send this reply? Hello!" and Tick.log == ["drafted"]
    assert store.run(first.run_id)["status"] == "waiting"  # type: ignore[index]
    assert [row["status"] for row in _children(store, first.run_id)] == ["waiting"]
    with pytest.raises(UsageError, match='approved: "yes" is not of type "boolean"'):
        prepare_resume(store, first.run_id, registry=blocks, answer={"approved": "yes"})
    done = asyncio.run(resume_run(store, first.run_id, registry=blocks, answer={"approved": True},
                                  runs_dir=tmp_path / "runs"))
    assert done.status == "succeeded", done.errors
    assert done.variables["approved"] is True
    assert done.steps == 6  # start, draft, review, and the child's start, approve, send: each once
    assert Tick.log == ["drafted", "Hello!"]  # the step before the Subdiagram never again
    assert [row["status"] for row in _children(store, first.run_id)] == ["succeeded"]


def test_a_wait_in_a_child_of_a_run_that_is_not_durable_fails_clearly(tmp_path: Path, blocks: BlockRegistry) -> None:
    _write(tmp_path, "review.yaml", REVIEW)
    result = _run(_write(tmp_path, "support.yaml", CALLS_REVIEW), blocks, None, tmp_path)
    assert result.status == "failed"
    refused = [error for error in result.errors if error["type"] == "wait_not_durable"]
    assert refused and "needs a durable run" in refused[0]["message"]


def test_a_wait_in_a_concurrent_loops_pass_is_refused_saying_why(tmp_path: Path, blocks: BlockRegistry,
                                                                  store: CheckpointStore) -> None:
    text = """
diagram: passes
blocks:
  - id: start
    type: Start
    next: each
  - id: each
    type: Loop
    with: {for_each: [1, 2], concurrency: 2}
    body: ask
  - id: ask
    type: Wait
    with: {prompt: "ok?"}
    next: each
"""
    result = _run(_write(tmp_path, "passes.yaml", text), blocks, store, tmp_path)
    assert result.status == "failed"
    refused = [error for error in result.errors if error["type"] == "wait_not_durable"]
    assert refused and "concurrent loop's pass" in refused[0]["message"]


def test_a_scenario_answers_a_wait_in_a_child_by_its_address(tmp_path: Path) -> None:
    from blocks.registry import registry
    from engine.testing.scenarios import load_scenarios, run_scenario

    _write(tmp_path, "review.yaml", REVIEW.replace("type: Tick\n    with: {value: \"{{ draft }}\"}", "type: Set"))
    _write(tmp_path, "support.yaml", CALLS_REVIEW.replace("type: Tick\n    with: {value: drafted}", "type: Set"))
    path = _write(tmp_path, "s.scenario.yaml", f"""
diagram: {tmp_path / 'support.yaml'}
scenario: the reviewer approves
replies:
  review/approve: [{{answer: {{approved: true}}, waited: 30}}]
expect:
  variables: {{approved: true}}
""")
    verdict = run_scenario(load_scenarios(path)[0], registry(), tmp_path / "runs")
    assert verdict.passed, verdict.report()
