"""What a conversation costs the checkpoint store (issue 37, 6): a session's memory is kept once, not once per turn
and checkpoint; resume and replay still get exactly the state a turn had; finished runs' checkpoints are pruned
after a retention (never an unfinished run's, nor a session's), and a replay of a pruned run is a clear refusal."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from blocks.registry import BUILTIN_BLOCKS
from engine import BlockRegistry, RunResult, Services
from engine.compile.loader import load_diagram
from engine.errors import TurnRefused
from engine.runs.checkpoints import CheckpointStore
from engine.runs.sessions import forget_session, read_session
from engine.runs.turn import cancel_turn, new_turn, resume_run, resume_turn, run_turn
from tests.conftest import Fail
from tests.engine.durable_support import Tick, interrupt_after
from tests.postgres import sql

CHAT = """
diagram: chat
blocks:
  - id: start
    type: Start
    memory: [history, turns]
    inputs: {message: hi, size: 5000, ask: false, again: false}
    variables: {history: [], turns: 0}
    next: hear
  - id: hear
    type: Tick
    with: {value: "{{ message ~ ':' ~ ('x' * size) }}"}
    set: {history: "{{ history + [result] }}", turns: "{{ turns + 1 }}"}
    next: [{to: confirm, when: "{{ ask }}"}, {to: echo, when: "{{ again }}"}]
  - id: confirm
    type: Wait
    with:
      prompt: "Keep {{ message }}?"
      form: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
      timeout: 3600
    set: {history: "{{ history + ['confirmed'] }}"}
  - id: echo
    type: Tick
    with: {value: "{{ history | length }}"}
    set: {echoed: "{{ result }}"}
"""
"""A conversation whose memory grows by about `size` bytes a turn; `ask` stops it at a Wait, `again` adds a second
block with effects (a checkpoint after the memory changed, before the turn ends)."""

WEEK = 7 * 86400.0


@pytest.fixture
def registry() -> BlockRegistry:
    Tick.log.clear()
    return BlockRegistry((*BUILTIN_BLOCKS, Tick, Fail))


def _write(folder: Path, name: str, text_: str) -> Path:
    path = folder / name
    path.write_text(text_.lstrip("\n"), encoding="utf-8")
    return path


def _turn(path: Path, registry: BlockRegistry, store: CheckpointStore, tmp_path: Path, session: str | None = "s",
          **inputs: Any) -> RunResult:
    turn = new_turn(load_diagram(path, registry), inputs, store=store, session=session)
    return asyncio.run(run_turn(turn, services=Services(), runs_dir=tmp_path / "runs"))


def _held(store: CheckpointStore, table: str, where: str = "", **params: Any) -> int:
    """The bytes of text and binary values a table's rows (those `where` picks) hold."""
    engine = create_engine(store.url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(f"SELECT * FROM {table} {where}"), params).all()
    finally:
        engine.dispose()
    return sum(len(value.encode()) if isinstance(value, str) else len(bytes(value))
               for row in rows for value in row if isinstance(value, str | bytes | memoryview))


def _memory_size(store: CheckpointStore) -> int:
    found = store.session("s")
    assert found is not None and found["state"]
    return len(bytes(found["state"]))


@pytest.mark.slow
def test_forty_turns_keep_the_memory_once_and_an_old_turn_replays_with_the_memory_it_had(
        tmp_path: Path, registry: BlockRegistry, store: CheckpointStore) -> None:
    path = _write(tmp_path, "chat.yaml", CHAT)
    results = [_turn(path, registry, store, tmp_path, message=f"m{n}") for n in range(40)]
    assert all(result.succeeded for result in results)
    memory = read_session(store, "s")
    assert memory is not None and memory["turns"] == 40 and len(memory["memory"]["history"]) == 40
    final = _memory_size(store)
    assert final > 40 * 5000
    # Written as they were, the turns' checkpoints would hold the memory about 3 × 40 / 2 times over.
    per_turns = _held(store, "checkpoints") + _held(store, "run_states")
    assert per_turns < 3 * final, (per_turns, final)
    assert _held(store, "session_memory") < 1.5 * final  # the session's log: each turn's change once
    # Turn 5's checkpoints were written against the memory of turn 4, long since overwritten in the session's row.
    replay = resume_turn(store, results[5].run_id, registry=registry, from_block="hear")
    assert replay.resumed is not None and replay.resumed.values["history"] == results[4].variables["history"]
    replayed = asyncio.run(run_turn(replay, services=Services(), runs_dir=tmp_path / "runs"))
    assert replayed.succeeded and replayed.variables["history"] == results[5].variables["history"]
    assert replayed.variables["turns"] == 6
    assert read_session(store, "s")["turns"] == 40  # type: ignore[index]  # a replay is no turn of the session


def test_an_interrupted_turn_resumes_with_the_memory_it_had_changed_and_stores_it(
        tmp_path: Path, registry: BlockRegistry, store: CheckpointStore) -> None:
    path = _write(tmp_path, "chat.yaml", CHAT)
    for n in range(6):
        assert _turn(path, registry, store, tmp_path, message=f"m{n}").succeeded
    whole = _turn(path, registry, store, tmp_path, message="m6", again=True)
    assert whole.succeeded and whole.variables["echoed"] == 7
    # Killed after the checkpoint that follows `hear` (the memory changed), before `echo`'s.
    interrupt_after(store, whole.run_id, 2)
    row = store.run(whole.run_id)
    assert row is not None and row["status"] == "interrupted"
    # Its checkpoints hold what the turn changed, not the memory it began with again.
    assert _held(store, "checkpoints", "WHERE run_id = :run", run=whole.run_id) < _memory_size(store)
    Tick.log.clear()
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=registry, runs_dir=tmp_path / "runs"))
    assert resumed.succeeded and Tick.log == [7]  # only `echo` runs again
    assert resumed.variables["history"] == whole.variables["history"] and resumed.variables["turns"] == 7
    # It had stored its memory before it was made to look killed (the session is at turn 7 now, its checkpoints were
    # written against turn 6's memory): it stores the same memory again.
    session = read_session(store, "s")
    assert session is not None and session["turns"] == 8 and session["memory"]["history"] == whole.variables["history"]


def test_a_waiting_turn_answered_later_goes_on_with_its_memory_and_its_checkpoints_hold_only_its_change(
        tmp_path: Path, registry: BlockRegistry, store: CheckpointStore) -> None:
    path = _write(tmp_path, "chat.yaml", CHAT)
    for n in range(6):
        assert _turn(path, registry, store, tmp_path, message=f"m{n}").succeeded
    waiting = _turn(path, registry, store, tmp_path, message="m6", ask=True)
    assert waiting.status == "waiting"
    assert _held(store, "checkpoints", "WHERE run_id = :run", run=waiting.run_id) < _memory_size(store)
    done = asyncio.run(resume_run(store, waiting.run_id, registry=registry, answer={"ok": True},
                                  runs_dir=tmp_path / "runs"))
    assert done.succeeded
    history = read_session(store, "s")["memory"]["history"]  # type: ignore[index]
    assert len(history) == 8 and history[-1] == "confirmed" and history[-2].startswith("m6:")
    assert history[:6] == [f"m{n}:" + "x" * 5000 for n in range(6)]


def test_forgetting_a_session_forgets_its_finished_turns_memory_and_an_unfinished_turn_still_goes_on(
        tmp_path: Path, registry: BlockRegistry, store: CheckpointStore) -> None:
    path = _write(tmp_path, "chat.yaml", CHAT)
    first = _turn(path, registry, store, tmp_path, message="m0")
    second = _turn(path, registry, store, tmp_path, message="m1", ask=True)
    assert first.succeeded and second.status == "waiting"
    assert forget_session(store, "s")
    with pytest.raises(TurnRefused, match=r"deleted .*with its session 's', which was forgotten") as refused:
        resume_turn(store, first.run_id, registry=registry, from_block="hear")
    assert refused.value.reason == "not_resumable"
    done = asyncio.run(resume_run(store, second.run_id, registry=registry, answer={"ok": True},
                                  runs_dir=tmp_path / "runs"))
    assert done.succeeded and done.variables["history"] == [first.variables["history"][0], "m1:" + "x" * 5000,
                                                            "confirmed"]


CHILD = """
diagram: child
blocks:
  - {id: start, type: Start, inputs: {value: 0}, next: tick}
  - id: tick
    type: Tick
    with: {value: "{{ value }}"}
"""
PARENT = """
diagram: parent
blocks:
  - {id: start, type: Start, next: call}
  - id: call
    type: Subdiagram
    with: {diagram: child.yaml, inputs: {value: 1}}
"""
FAILS = """
diagram: fails
blocks:
  - {id: start, type: Start, next: tick}
  - {id: tick, type: Tick, with: {value: 1}, next: boom}
  - {id: boom, type: Fail}
"""


def _age(store: CheckpointStore, runs: list[str], seconds: float) -> None:
    for run in runs:
        sql(store, "UPDATE run_states SET updated = :when WHERE run_id = :run", when=time.time() - seconds, run=run)


def test_prune_deletes_only_finished_runs_checkpoints_past_the_retention_and_keeps_sessions(
        tmp_path: Path, registry: BlockRegistry, store: CheckpointStore) -> None:
    chat = _write(tmp_path, "chat.yaml", CHAT)
    _write(tmp_path, "child.yaml", CHILD)
    turn = _turn(chat, registry, store, tmp_path, message="m0")
    failed = _turn(_write(tmp_path, "fails.yaml", FAILS), registry, store, tmp_path, session=None)
    parent = _turn(_write(tmp_path, "parent.yaml", PARENT), registry, store, tmp_path, session=None)
    cancelled = _turn(chat, registry, store, tmp_path, session="c", ask=True)
    cancel_turn(store, cancelled.run_id)
    waiting = _turn(chat, registry, store, tmp_path, message="m1", ask=True)
    interrupted = _turn(chat, registry, store, tmp_path, session="i", again=True)
    interrupt_after(store, interrupted.run_id, 2)
    recent = _turn(chat, registry, store, tmp_path, session="r")
    assert [turn.status, failed.status, parent.status, waiting.status, recent.status] == \
        ["succeeded", "failed", "succeeded", "waiting", "succeeded"]
    old = [turn.run_id, failed.run_id, parent.run_id, cancelled.run_id, waiting.run_id, interrupted.run_id]
    _age(store, old, WEEK + 60)
    _age(store, [recent.run_id], WEEK - 60)
    kept = {run: store.states(run) for run in (waiting.run_id, interrupted.run_id, recent.run_id)}
    memory = read_session(store, "s")

    pruned = store.prune(WEEK)

    assert sorted(pruned.runs) == sorted([turn.run_id, failed.run_id, parent.run_id, cancelled.run_id])
    assert pruned.children == 1 and pruned.checkpoints > 0 and pruned.bytes > 0
    assert pruned.sessions[turn.run_id] == "s" and pruned.sessions[failed.run_id] is None
    for run in [*pruned.runs, f"{parent.run_id}-call-1"]:
        assert [seq for seq, _ in store.states(run)] == [0], run  # the tombstone alone
        assert store.run(run) is not None  # its record stays
    assert {run: store.states(run) for run in kept} == kept
    assert read_session(store, "s") == memory
    assert store.prune(WEEK).runs == []  # nothing twice
    # The waiting turn, old as it is, goes on with its memory.
    done = asyncio.run(resume_run(store, waiting.run_id, registry=registry, answer={"ok": True},
                                  runs_dir=tmp_path / "runs"))
    assert done.succeeded and done.variables["history"] == [*turn.variables["history"], "m1:" + "x" * 5000,
                                                            "confirmed"]


def test_a_replay_of_a_pruned_run_is_refused_saying_why_and_what_still_shows_it(
        tmp_path: Path, registry: BlockRegistry, store: CheckpointStore) -> None:
    turn = _turn(_write(tmp_path, "chat.yaml", CHAT), registry, store, tmp_path, message="m0")
    _age(store, [turn.run_id], WEEK + 60)
    assert store.prune(WEEK).runs == [turn.run_id]
    with pytest.raises(TurnRefused) as refused:
        resume_turn(store, turn.run_id, registry=registry, from_block="hear")
    message = str(refused.value)
    assert refused.value.reason == "not_resumable"
    assert f"run '{turn.run_id}' cannot be replayed: its checkpoints were pruned on " in message
    assert "a finished run's checkpoints are kept for 7d after it ends" in message
    assert f"diagrama trace {turn.run_id}" in message and "diagrama runs" in message


CLI_CHAT = """
diagram: chat
allowed_modules: [chat_words]
blocks:
  - id: start
    type: Start
    memory: [history]
    inputs: {message: hi}
    variables: {history: []}
    next: hear
  - id: hear
    type: Function
    with: {function: "chat_words:hear", arguments: {message: "{{ message }}"}}
    set: {history: "{{ history + [result] }}"}
"""


def test_diagrama_runs_prune_says_what_it_removed_and_a_replay_after_it_exits_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    runs = str(tmp_path / "runs")
    chat = _write(tmp_path, "chat.yaml", CLI_CHAT)
    (tmp_path / "chat_words.py").write_text("def hear(message):\n    return message + ':' + 'x' * 5000\n")
    cli = CliRunner()
    ran = [cli.invoke(app, ["run", str(chat), "--session", "s", "--runs-dir", runs, "--output", "json", "-q",
                            "-i", f"message=m{n}"]) for n in range(2)]
    assert [result.exit_code for result in ran] == [0, 0], [result.output for result in ran]
    first = ran[0].stdout.split('"run_id":"')[1].split('"')[0]

    kept = cli.invoke(app, ["runs", "--prune", "--runs-dir", runs])
    assert kept.exit_code == 0 and "nothing to prune: no finished run with checkpoints ended more than 7d ago" \
        in kept.stdout, kept.output
    pruned = cli.invoke(app, ["runs", "--prune", "--older-than", "0s", "--runs-dir", runs])
    assert pruned.exit_code == 0, pruned.output
    assert "pruned the checkpoints of 2 finished runs that ended more than 0s ago: 6 checkpoints, " in pruned.stdout
    assert "2 session turns' records in the run store no longer repeat the session's memory" in pruned.stdout
    assert "diagrama trace RUN" in pruned.stdout

    replay = cli.invoke(app, ["resume", first, "--from", "hear", "--runs-dir", runs])
    assert replay.exit_code == 2 and "Traceback" not in replay.output
    assert f"run '{first}' cannot be replayed: its checkpoints were pruned on " in replay.stderr
    assert cli.invoke(app, ["trace", first, "--runs-dir", runs]).exit_code == 0  # the trace is still there
    wrong = cli.invoke(app, ["runs", "--prune", "--older-than", "a week", "--runs-dir", runs])
    assert wrong.exit_code == 2 and "--older-than takes a duration" in wrong.stderr
