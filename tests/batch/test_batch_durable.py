"""Batches of durable diagrams: a `session` column, rows that wait at a Wait, a waiting row answered later."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import BlockRegistry, Services, UsageError
from engine.compile.loader import load_diagram
from engine.runs.batch import read_rows, run_batch, write_results
from engine.runs.checkpoints import open_checkpoints
from engine.runs.sessions import read_session
from engine.runs.store import RunStore
from engine.runs.turn import resume_run
from tests.postgres import sql

CHAT = """
diagram: chat
blocks:
  - id: start
    type: Start
    memory: [history]
    inputs: {message: ""}
    variables: {history: []}
    next: think
  - id: think
    type: Sleep
    with: {seconds: 0.01}
    set: {history: "{{ history + [message] }}"}
"""

APPROVE = """
diagram: approve
blocks:
  - id: start
    type: Start
    inputs: {n: 0}
    variables: {approved: false}
    next: gate
  - id: gate
    type: Wait
    with:
      prompt: "Approve row {{ n }}?"
      form: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
    set: {approved: "{{ answer.approved }}"}
"""


def _batch(tmp_path: Path, text: str, rows_text: str, registry: BlockRegistry, name: str = "rows.csv"):
    (tmp_path / "d.yaml").write_text(text)
    (tmp_path / name).write_text(rows_text)
    diagram = load_diagram(tmp_path / "d.yaml", registry)
    return diagram, read_rows(tmp_path / name, diagram)


def test_a_session_column_makes_rows_turns_of_their_conversations_in_row_order(
        tmp_path: Path, registry: BlockRegistry, store_url: str) -> None:
    diagram, rows = _batch(tmp_path, CHAT, "session,message\na,m1\nb,x1\na,m2\na,m3\nb,x2\n,alone\n", registry)
    assert rows[0] == {"session": "a", "message": "m1"} and rows[5] == {"message": "alone"}
    store = RunStore(store_url)
    checkpoints = open_checkpoints(store_url, tmp_path / "runs")
    outcome = asyncio.run(run_batch(diagram, rows, batch_id="s1", store=store, services=Services(environ={}),
                                    runs_dir=tmp_path / "runs", concurrency=6, checkpoints=checkpoints))
    assert outcome.succeeded == 6
    a, b = read_session(checkpoints, "a"), read_session(checkpoints, "b")
    assert a is not None and b is not None
    assert a["memory"] == {"history": ["m1", "m2", "m3"]} and a["turns"] == 3 and a["held_by"] is None
    assert b["memory"] == {"history": ["x1", "x2"]} and b["turns"] == 2
    write_results(tmp_path / "out.jsonl", store, "s1", 6, ["history"])
    import orjson

    lines = [orjson.loads(line) for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    assert [line["history"] for line in lines] == [["m1"], ["x1"], ["m1", "m2"], ["m1", "m2", "m3"], ["x1", "x2"],
                                                    ["alone"]]
    # The next batch over the same sessions goes on from what the last turns stored.
    diagram, rows = _batch(tmp_path, CHAT, "session,message\na,m4\n", registry, "more.csv")
    asyncio.run(run_batch(diagram, rows, batch_id="s2", store=store, services=Services(environ={}),
                          runs_dir=tmp_path / "runs", checkpoints=checkpoints))
    assert read_session(checkpoints, "a")["memory"] == {"history": ["m1", "m2", "m3", "m4"]}  # type: ignore[index]


def test_a_session_column_is_an_input_when_the_diagram_has_one(tmp_path: Path, registry: BlockRegistry) -> None:
    text = CHAT.replace('inputs: {message: ""}', 'inputs: {message: "", session: ""}')
    diagram, rows = _batch(tmp_path, text, "session,message\na,m1\n", registry)
    store = RunStore(f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}")
    checkpoints = open_checkpoints(None, tmp_path / "runs")
    asyncio.run(run_batch(diagram, rows, batch_id="s1", store=store, services=Services(environ={}),
                          runs_dir=tmp_path / "runs", checkpoints=checkpoints))
    assert read_session(checkpoints, "a") is None
    assert store.batch_runs("s1")[1]["variables"]["session"] == "a"


def test_sessions_need_the_checkpoint_store_and_a_text(tmp_path: Path, registry: BlockRegistry) -> None:
    diagram, rows = _batch(tmp_path, CHAT, "session,message\na,m1\n", registry)
    store = RunStore(f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}")
    with pytest.raises(UsageError, match="sessions"):
        asyncio.run(run_batch(diagram, rows, batch_id="s1", store=store, services=Services(environ={}),
                              runs_dir=tmp_path / "runs"))
    (tmp_path / "rows.json").write_text('[{"session": {"a": 1}, "message": "m"}]')
    with pytest.raises(UsageError, match="row 1: the session is a dict"):
        read_rows(tmp_path / "rows.json", diagram)


def test_a_waiting_row_is_left_to_its_person_and_stays_the_batch_row_once_answered(
        tmp_path: Path, registry: BlockRegistry, store_url: str) -> None:
    diagram, rows = _batch(tmp_path, APPROVE, "n\n1\n2\n", registry)
    runs = tmp_path / "runs"
    store = RunStore(store_url)
    checkpoints = open_checkpoints(store_url, runs)

    def batch() -> object:
        return asyncio.run(run_batch(diagram, rows, batch_id="w1", store=store, services=Services(environ={}),
                                     runs_dir=runs, checkpoints=checkpoints))

    first = batch()
    assert (first.waiting, first.succeeded, first.failed, first.not_run) == (2, 0, 0, 0)  # type: ignore[attr-defined]
    recorded = store.batch_runs("w1")
    assert {row: run["status"] for row, run in recorded.items()} == {1: "waiting", 2: "waiting"}
    again = batch()  # --resume: a waiting row is not run again, nor restarted as a new attempt
    assert (again.waiting, again.succeeded, again.failed) == (2, 0, 0)  # type: ignore[attr-defined]
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == ["w1-r000001", "w1-r000002"]
    # The person answers row 1 (`diagrama resume RUN_ID --input approved=true`); it is recorded as the batch's row.
    result = asyncio.run(resume_run(checkpoints, "w1-r000001", registry=registry, answer={"approved": True},
                                    services=Services(environ={}), runs_dir=runs))
    assert result.succeeded and result.variables["approved"] is True
    store.record(result, diagram, {"n": 1})
    recorded = store.batch_runs("w1")
    assert recorded[1]["status"] == "succeeded" and recorded[1]["attempt"] == 1
    assert recorded[1]["run_id"] == "w1-r000001" and recorded[2]["status"] == "waiting"
    last = batch()
    assert (last.skipped, last.waiting, last.succeeded) == (1, 1, 0)  # type: ignore[attr-defined]


ASK = """
diagram: ask
blocks:
  - {id: start, type: Start, inputs: {n: 0}, next: ask}
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-4-5, request: "row {{ n }}", max_tokens: 20}
    set: {answer: "{{ result }}"}
    next: done
  - {id: done, type: Set, set: {finished: true}}
"""


@pytest.mark.parametrize("taken_over", [False, True])
def test_a_row_still_running_on_another_host_is_taken_over_only_when_its_task_came_again(
        tmp_path: Path, registry: BlockRegistry, taken_over: bool, store_url: str) -> None:
    """Celery delivers a lost worker's row again (`taken_over`): its attempt, `running` on a host no one here can
    look at, continues from its checkpoint. Without that sign it is left alone and the row runs as a new attempt."""
    from engine.runs.batch_rows import run_row

    diagram, rows = _batch(tmp_path, ASK, "n\n1\n", registry)
    runs = tmp_path / "runs"
    checkpoints = open_checkpoints(store_url, runs)
    services = Services(environ={}, offline=True, checkpoints=checkpoints)
    first = asyncio.run(run_row(diagram, rows[0], 1, batch_id="h", previous=0, services=services, runs_dir=runs,
                                checkpoints=checkpoints))
    assert first is not None and first.result.succeeded and first.attempt == 1
    # As if its worker on another machine died just after `ask`'s checkpoint.
    sql(checkpoints, "DELETE FROM checkpoints WHERE run_id = 'h-r000001' AND seq > 2")
    sql(checkpoints, "UPDATE run_states SET status = 'running', host = 'another-host' WHERE run_id = 'h-r000001'")
    again = asyncio.run(run_row(diagram, rows[0], 1, batch_id="h", previous=0, services=services, runs_dir=runs,
                                checkpoints=checkpoints, taken_over=taken_over))
    assert again is not None and again.result.succeeded and again.result.variables["finished"] is True
    if taken_over:
        assert (again.resumed, again.attempt, again.result.run_id) == (True, 1, "h-r000001")
        assert again.result.path == ["start", "ask", "done"]  # the path so far, from the checkpoints
        assert again.result.steps == 3 and again.result.outputs.keys() == {"done"}  # only `done` ran this time
    else:
        assert (again.resumed, again.attempt, again.result.run_id) == (False, 2, "h-r000001-a2")
        assert again.result.outputs.keys() == {"start", "ask", "done"}
