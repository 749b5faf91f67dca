"""A resumed run continues exactly where it was, at every depth: the block, where it came from and the Loops'
positions are one resume point, taken by the one step loop alike for a top run and for a Subdiagram's child."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import BlockRegistry, RunResult, Services, execute
from engine.compile.loader import load_diagram
from engine.runs.checkpoints import CheckpointStore
from engine.runs.turn import resume_run
from engine.runtime.durable import decode_state
from tests.engine.durable_support import Tick, interrupt_after

LOOPING_CHILD = """
diagram: child
blocks:
  - id: start
    type: Start
    variables: {seen: []}
    next: each
  - id: each
    type: Loop
    with: {count: 3}
    body: tick
  - id: tick
    type: Tick
    with: {value: "{{ index }}"}
    set: {seen: "{{ seen + [result] }}"}
    next: each
"""

CALLS_IT = """
diagram: parent
blocks:
  - id: start
    type: Start
    next: sub
  - id: sub
    type: Subdiagram
    with: {diagram: child.yaml}
    set: {seen: "{{ variables.seen }}"}
"""

TOP_LEVEL_LOOP = LOOPING_CHILD.replace("diagram: child", "diagram: top")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


def _run(path: Path, blocks: BlockRegistry, store: CheckpointStore, tmp_path: Path) -> RunResult:
    return asyncio.run(execute(load_diagram(path, blocks), {}, runs_dir=tmp_path / "runs",
                               services=Services(checkpoints=store)))


def _seq_after_pass(store: CheckpointStore, run_id: str, index: int) -> int:
    """The checkpoint written after pass `index`'s Tick."""
    for seq, state in store.states(run_id):
        header, values, _ = decode_state(state)
        if header["from"] == "tick" and values["seen"] == list(range(index + 1)):
            return seq
    raise AssertionError(f"no checkpoint after pass {index} of {run_id}")


@pytest.mark.parametrize("killed_after_pass", [0, 1])
def test_a_loop_in_a_resumed_subdiagram_goes_on_with_its_next_pass(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore, killed_after_pass: int) -> None:
    _write(tmp_path, "child.yaml", LOOPING_CHILD)
    whole = _run(_write(tmp_path, "parent.yaml", CALLS_IT), blocks, store, tmp_path)
    assert whole.status == "succeeded" and whole.variables["seen"] == [0, 1, 2]
    child = f"{whole.run_id}-sub-1"
    # Killed as the next pass begins: the parent is at its checkpoint 0, the child just after a pass's Tick.
    interrupt_after(store, whole.run_id, 1)
    interrupt_after(store, child, _seq_after_pass(store, child, killed_after_pass))
    Tick.log.clear()
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=blocks, runs_dir=tmp_path / "runs"))
    assert resumed.status == "succeeded", resumed.errors
    assert Tick.log == list(range(killed_after_pass + 1, 3))  # no pass again: the child's Loop knows where it was
    assert resumed.variables == whole.variables and resumed.steps == whole.steps


def test_the_same_loop_at_the_top_resumes_the_same_way(tmp_path: Path, blocks: BlockRegistry,
                                                        store: CheckpointStore) -> None:
    whole = _run(_write(tmp_path, "top.yaml", TOP_LEVEL_LOOP), blocks, store, tmp_path)
    interrupt_after(store, whole.run_id, _seq_after_pass(store, whole.run_id, 0))
    Tick.log.clear()
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=blocks, runs_dir=tmp_path / "runs"))
    assert resumed.status == "succeeded" and Tick.log == [1, 2]
    assert resumed.variables == whole.variables and resumed.path == whole.path
