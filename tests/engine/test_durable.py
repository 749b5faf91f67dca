"""Durable runs in one process: the exact snapshot encoding, checkpoints, resume, Wait, sessions, replay."""

from __future__ import annotations

import asyncio
import math
import re
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine import BlockRegistry, DataTable, RunResult, Services, UsageError, execute
from engine.compile.loader import load_diagram
from engine.compile.templating import last_turns
from engine.format.snapshot import SnapshotError, decode, encode
from engine.runs.checkpoints import CheckpointStore, SqliteCheckpoints, open_checkpoints
from engine.runs.sessions import forget_session, read_session
from engine.runs.turn import new_turn, resume_run, run_turn
from engine.runs.turn import resume_turn as prepare_resume
from engine.runtime.durable import decode_state
from tests.engine.durable_support import Tick, interrupt_after
from tests.postgres import sql

COUNTER = """
diagram: counter
blocks:
  - id: start
    type: Start
    variables: {total: 0, seen: [], table: {columns: [a], rows: [[1]]}, huge: 0}
    next: loop
  - id: loop
    type: Loop
    with: {count: 4, collect: "{{ total }}"}
    body: tick
    set: {passes: "{{ collected }}"}
  - id: tick
    type: Tick
    with: {value: "{{ index }}"}
    set: {total: "{{ total + result }}", seen: "{{ seen + [result] }}", huge: "{{ 2 ** 70 + total }}"}
    next: loop
"""


def _run(diagram: Any, store: CheckpointStore | None, tmp_path: Path, **options: Any) -> RunResult:
    services = Services(checkpoints=store)
    return asyncio.run(execute(diagram, {}, runs_dir=tmp_path / "runs", services=services, **options))


def _write(tmp_path: Path, text: str, name: str = "diagram.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


# -- the encoding ---------------------------------------------------------------------------------------------------
def test_snapshot_round_trips_every_kind_of_value_exactly() -> None:
    table = DataTable(["role", "content"], [("user", "hi"), ("assistant", None)], source=("h.csv", [2, 3]))
    values = {"table": table, "big": 2**70, "negative": -(2**80), "nan": float("nan"), "inf": float("-inf"),
              "pair": (1, "a"), "tags": {"x", "y"}, "frozen": frozenset({1}), "keys": {1: "one", "\x00": "tag"},
              "nested": [{"a": [1.5, None, True]}], "text": "olá"}
    back = decode(encode(values))
    assert back["table"] == table and back["table"].source == ("h.csv", (2, 3))
    assert back["big"] == 2**70 and back["negative"] == -(2**80)
    assert math.isnan(back["nan"]) and back["inf"] == float("-inf")
    assert back["pair"] == (1, "a") and type(back["pair"]) is tuple
    assert back["tags"] == {"x", "y"} and back["frozen"] == frozenset({1})
    assert back["keys"] == {1: "one", "\x00": "tag"}
    assert back["nested"] == [{"a": [1.5, None, True]}] and back["text"] == "olá"


def test_a_value_a_checkpoint_cannot_hold_is_named_by_its_path() -> None:
    with pytest.raises(SnapshotError, match=r"'history\[1\].handle' holds a lock"):
        encode({"history": [{}, {"handle": threading.Lock()}]})


# -- checkpoints and resume -----------------------------------------------------------------------------------------
def test_a_durable_run_checkpoints_after_each_block_with_effects_and_at_its_end(tmp_path: Path, blocks: BlockRegistry,
                                                                              store: CheckpointStore) -> None:
    result = _run(load_diagram(_write(tmp_path, COUNTER), blocks), store, tmp_path)
    assert result.status == "succeeded" and result.variables["seen"] == [0, 1, 2, 3]
    states = store.states(result.run_id)
    # checkpoint 0 (Start's scope), one per Tick, one at the end
    assert [seq for seq, _ in states] == [1, 2, 3, 4, 5, 6]
    headers = [decode_state(state)[0] for _, state in states]
    assert [h["next"] for h in headers] == ["start", "loop", "loop", "loop", "loop", None]
    assert sum(len(h["segment"]) for h in headers) == len(result.path)
    assert store.run(result.run_id)["status"] == "succeeded"  # type: ignore[index]


def test_durable_false_on_start_writes_no_checkpoint(tmp_path: Path, blocks: BlockRegistry,
                                                      store: CheckpointStore) -> None:
    text = COUNTER.replace("    type: Start\n", "    type: Start\n    durable: false\n")
    result = _run(load_diagram(_write(tmp_path, text), blocks), store, tmp_path)
    assert result.succeeded and store.run(result.run_id) is None and store.states(result.run_id) == []


class TraceReadingStore(SqliteCheckpoints):
    """The SQLite store, reading the run's trace file as each checkpoint is saved: how many steps the checkpoints
    cover so far, and how many of them the trace on disk shows finished."""

    def __init__(self, path: Path, runs: Path) -> None:
        super().__init__(path)
        self.runs = runs
        self.covered = 0
        self.seen: list[tuple[int, int]] = []

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        self.covered += len(decode_state(state)[0]["segment"])
        lines = (self.runs / run_id / "trace.jsonl").read_bytes().splitlines()
        finished = sum(orjson.loads(line)["event"] in ("block_finished", "block_failed") for line in lines)
        self.seen.append((self.covered, finished))
        super().save(run_id, seq, state)


def test_the_trace_on_disk_covers_every_checkpoint(tmp_path: Path, blocks: BlockRegistry) -> None:
    """A run killed (SIGKILL) right after a checkpoint shows in its trace every step the checkpoint holds: the trace's
    pending lines are written before the checkpoint is. Before, a batch resumed a row at its tool call whose trace
    had no step at all before the kill."""
    store = TraceReadingStore(tmp_path / "runs" / "diagrama.db", tmp_path / "runs")
    try:
        result = _run(load_diagram(_write(tmp_path, COUNTER), blocks), store, tmp_path)
    finally:
        store.close()
    assert result.succeeded and len(store.seen) == 6
    assert all(finished >= covered for covered, finished in store.seen), store.seen


@pytest.mark.parametrize("seq", [1, 2, 3, 4, 5])
def test_an_interrupted_run_resumes_from_its_last_checkpoint_to_the_same_end(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore, seq: int) -> None:
    diagram = load_diagram(_write(tmp_path, COUNTER), blocks)
    whole = _run(diagram, store, tmp_path)
    interrupt_after(store, whole.run_id, seq)
    assert store.run(whole.run_id)["status"] == "interrupted"  # type: ignore[index]
    Tick.log.clear()
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=blocks, runs_dir=tmp_path / "runs"))
    assert resumed.status == "succeeded" and resumed.run_id == whole.run_id
    assert resumed.variables == whole.variables and type(resumed.variables["huge"]) is int
    assert resumed.path == whole.path and resumed.steps == whole.steps
    assert Tick.log == list(range(max(0, seq - 1), 4))  # only the Ticks after the checkpoint run again


def test_a_run_stopped_before_its_first_checkpoint_says_how_to_run_it_again(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore) -> None:
    path = _write(tmp_path, COUNTER)
    whole = _run(load_diagram(path, blocks), store, tmp_path)
    interrupt_after(store, whole.run_id, 0)  # its record, and no checkpoint: killed between the two
    with pytest.raises(UsageError, match=rf"no checkpoint to resume from: it was stopped before its first, before any "
                                         rf"block ran; run the diagram again \(diagrama run {re.escape(str(path))}\)"):
        prepare_resume(store, whole.run_id, registry=blocks)


def test_only_an_interrupted_or_waiting_run_resumes(tmp_path: Path, blocks: BlockRegistry,
                                                    store: CheckpointStore) -> None:
    whole = _run(load_diagram(_write(tmp_path, COUNTER), blocks), store, tmp_path)
    with pytest.raises(UsageError, match="is succeeded: only an interrupted or waiting run resumes"):
        prepare_resume(store, whole.run_id, registry=blocks)
    with pytest.raises(UsageError, match="no durable run 'nope'"):
        prepare_resume(store, "nope", registry=blocks)


def test_a_key_in_the_scope_never_reaches_the_store(tmp_path: Path, blocks: BlockRegistry,
                                                    store: CheckpointStore) -> None:
    secret = "sk-ant-api03-" + "k" * 40
    text = COUNTER.replace("huge: 0}", f"huge: 0, key: '{secret}'}}")
    services = Services(checkpoints=store, environ={"ANTHROPIC_API_KEY": secret})
    # The key also comes as an input, which the run's record keeps (`diagrama run --input`, a batch row).
    result = asyncio.run(execute(load_diagram(_write(tmp_path, text), blocks), {"token": secret},
                                 runs_dir=tmp_path / "runs", services=services, record={"inputs": {"token": secret}}))
    assert result.succeeded
    assert store.run(result.run_id)["inputs"] == {"token": "[REDACTED]"}  # type: ignore[index]
    if isinstance(store, SqliteCheckpoints):
        sql(store, "PRAGMA wal_checkpoint(TRUNCATE)")  # everything written into the file read below
        assert secret.encode() not in (tmp_path / "runs" / "diagrama.db").read_bytes()
    assert all(secret.encode() not in state for _, state in store.states(result.run_id))


# -- Wait -----------------------------------------------------------------------------------------------------------
APPROVAL = """
diagram: approval
blocks:
  - id: start
    type: Start
    variables: {draft: "Hello!", approved: false}
    next: approve
  - id: approve
    type: Wait
    with:
      prompt: "Send this reply? {{ draft }}"
      form: {type: object, properties: {approved: {type: boolean}, note: {type: string}}, required: [approved]}
      timeout: 86400
    set: {approved: "{{ answer.approved }}"}
    on_error: late
    next: send
  - id: send
    type: Tick
    with: {value: "{{ draft }}"}
  - id: late
    type: Set
    set: {approved: "late: {{ error.type }}"}
"""


def test_a_wait_stops_the_run_waiting_and_a_good_answer_continues_it(tmp_path: Path, blocks: BlockRegistry,
                                                                       store: CheckpointStore) -> None:
    text = APPROVAL.replace("    type: Start\n", "    type: Start\n    error_level: Handle\n")
    first = _run(load_diagram(_write(tmp_path, text), blocks), store, tmp_path)
    assert first.status == "waiting"
    assert first.waiting is not None and first.waiting["prompt"] == "Send this reply? Hello!"
    assert first.waiting["form"]["required"] == ["approved"] and Tick.log == []
    assert store.run(first.run_id)["status"] == "waiting"  # type: ignore[index]
    with pytest.raises(UsageError, match='approved: "yes" is not of type "boolean"'):
        prepare_resume(store, first.run_id, registry=blocks, answer={"approved": "yes"})
    with pytest.raises(UsageError, match="is waiting at 'approve'"):
        prepare_resume(store, first.run_id, registry=blocks)
    assert store.run(first.run_id)["status"] == "waiting"  # type: ignore[index]
    done = asyncio.run(resume_run(store, first.run_id, registry=blocks, answer={"approved": True, "note": "ok"},
                                  runs_dir=tmp_path / "runs"))
    assert done.status == "succeeded" and done.variables["approved"] is True and Tick.log == ["Hello!"]
    assert done.path == ["start", "approve", "send"]


def test_a_late_answer_fails_the_wait_with_wait_timeout_under_its_error_level(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore) -> None:
    text = APPROVAL.replace("    type: Start\n", "    type: Start\n    error_level: Handle\n")
    first = _run(load_diagram(_write(tmp_path, text), blocks), store, tmp_path)
    waiting = store.run(first.run_id)["waiting"]  # type: ignore[index]
    waiting["asked_at"] -= 86401  # asked a day and a second ago
    sql(store, "UPDATE run_states SET waiting = :waiting WHERE run_id = :run", waiting=orjson.dumps(waiting).decode(),
        run=first.run_id)
    done = asyncio.run(resume_run(store, first.run_id, registry=blocks, answer={"approved": True},
                                  runs_dir=tmp_path / "runs"))
    assert done.status == "succeeded" and done.variables["approved"] == "late: wait_timeout" and Tick.log == []


def test_a_wait_outside_a_durable_run_fails_clearly(tmp_path: Path, blocks: BlockRegistry) -> None:
    result = _run(load_diagram(_write(tmp_path, APPROVAL), blocks), None, tmp_path)
    assert result.status == "failed" and result.errors[-1]["type"] == "wait_not_durable"


# -- replay ---------------------------------------------------------------------------------------------------------
def test_replay_from_a_block_starts_a_linked_run_with_the_scope_the_old_run_had_there(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore) -> None:
    path = _write(tmp_path, COUNTER)
    whole = _run(load_diagram(path, blocks), store, tmp_path)
    Tick.log.clear()
    replay = prepare_resume(store, whole.run_id, registry=blocks, from_block="tick")
    assert replay.run_id != whole.run_id and replay.record["replay_of"] == whole.run_id
    again = asyncio.run(run_turn(replay, services=Services(), runs_dir=tmp_path / "runs"))
    assert again.variables == whole.variables and Tick.log == [0, 1, 2, 3]
    assert store.run(again.run_id)["replay_of"] == whole.run_id  # type: ignore[index]
    # A fixed diagram: the replay runs the new version of the second half.
    path.write_text(path.read_text().replace("total + result", "total + result * 10"))
    fixed = asyncio.run(resume_run(store, whole.run_id, registry=blocks, from_block="tick", runs_dir=tmp_path / "runs"))
    assert fixed.variables["total"] == 60
    with pytest.raises(UsageError, match="never reached block 'nowhere'"):
        prepare_resume(store, whole.run_id, registry=blocks, from_block="nowhere")


# -- sessions -------------------------------------------------------------------------------------------------------
def _turn(diagram: Any, store: CheckpointStore, session: str, message: str, tmp_path: Path) -> RunResult:
    turn = new_turn(diagram, {"message": message}, store=store, session=session)
    return asyncio.run(run_turn(turn, services=Services(), runs_dir=tmp_path / "runs"))


def test_a_session_keeps_its_memory_between_turns_and_forgets_it(tmp_path: Path, blocks: BlockRegistry,
                                                                  store: CheckpointStore) -> None:
    chat = load_diagram(_write(tmp_path, CHAT), blocks)
    assert _turn(chat, store, "s1", "hi", tmp_path).succeeded
    second = _turn(chat, store, "s1", "again", tmp_path)
    assert [row["content"] for row in second.variables["history"]] == ["hi", "again"]
    failing = load_diagram(_write(tmp_path, CHAT + "    next: broken\n  - {id: broken, type: Set, set: "
                                  "{history: \"{{ 1 / 0 }}\"}}\n", name="failing.yaml"), blocks)
    sql(store, "UPDATE sessions SET diagram = :path WHERE session = 's1'", path=str(failing.path.resolve()))
    assert _turn(failing, store, "s1", "lost", tmp_path).status == "failed"  # a failed turn stores nothing
    found = read_session(store, "s1")
    assert found is not None and found["turns"] == 2 and found["held_by"] is None
    assert [row["content"] for row in found["memory"]["history"]] == ["hi", "again"]
    assert forget_session(store, "s1") and read_session(store, "s1") is None


def test_concurrent_turns_of_one_session_take_it_in_turn_and_lose_nothing(store_url: str, tmp_path: Path,
                                                                           blocks: BlockRegistry) -> None:
    open_checkpoints(store_url, tmp_path / "runs").close()
    chat = load_diagram(_write(tmp_path, CHAT), blocks)

    def turn(message: str) -> None:
        own = open_checkpoints(store_url, tmp_path / "runs")  # a run's own store, as a process of its own has
        assert _turn(chat, own, "shared", message, tmp_path).succeeded
        own.close()

    threads = [threading.Thread(target=turn, args=(f"run-{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = read_session(open_checkpoints(store_url, tmp_path / "runs"), "shared")
    assert found is not None and found["turns"] == 8
    assert sorted(row["content"] for row in found["memory"]["history"]) == [f"run-{n}" for n in range(8)]


CHAT = """
diagram: chat
blocks:
  - id: start
    type: Start
    memory: [history]
    inputs: {message: hi}
    variables: {history: []}
    next: remember
  - id: remember
    type: Set
    set: {history: "{{ history + [{'role': 'user', 'content': message}] }}"}
"""


def test_memory_names_must_be_declared(tmp_path: Path, blocks: BlockRegistry) -> None:
    from engine import DiagramInvalid

    with pytest.raises(DiagramInvalid, match="memory names 'histroy', which is no Start input or variable"):
        load_diagram(_write(tmp_path, CHAT.replace("memory: [history]", "memory: [histroy]")), blocks)


# -- last_turns -----------------------------------------------------------------------------------------------------
def _history(*roles: str) -> list[dict[str, Any]]:
    return [{"role": role, "content": f"{n}"} for n, role in enumerate(roles)]


@pytest.mark.parametrize(("n", "kept"), [(1, 3), (2, 7), (3, 9), (5, 9), (0, 0)])
def test_last_turns_never_splits_a_tool_call_from_its_results(n: int, kept: int) -> None:
    rows = _history("user", "assistant", "user", "assistant", "tool", "assistant", "user", "assistant", "tool")
    # turns begin at rows 0, 2 and 6
    trimmed = last_turns(rows, n)
    assert len(trimmed) == min(kept, len(rows))
    assert not trimmed or trimmed[0]["role"] == "user"
    table = DataTable.from_records(rows)
    assert last_turns(table, n) == trimmed and isinstance(last_turns(table, n), DataTable)


def test_last_turns_in_a_template(tmp_path: Path, blocks: BlockRegistry) -> None:
    text = CHAT + "    next: trim\n  - id: trim\n    type: Set\n    set: {history: \"{{ history | last_turns(1) }}\"}\n"
    diagram = load_diagram(_write(tmp_path, text), blocks)
    result = asyncio.run(execute(diagram, {}, runs_dir=None, remembered={"history": _history("user", "assistant")}))
    assert [row["content"] for row in result.variables["history"]] == ["hi"]




# -- the store's URL ------------------------------------------------------------------------------------------------
def test_a_store_that_cannot_be_reached_or_lacks_its_driver_is_a_clear_oserror(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError, match=r"cannot be reached") as refused:
        open_checkpoints(f"postgresql+psycopg://ana:s3cret-pw@127.0.0.1:{port}/robots", tmp_path)
    assert "s3cret-pw" not in str(refused.value) and "postgresql+psycopg://ana:***@127.0.0.1" in str(refused.value)
    with pytest.raises(OSError, match=r"needs the mysql driver pymysql.*pip install pymysql") as missing:
        open_checkpoints("mysql+pymysql://ana:s3cret-pw@127.0.0.1/robots", tmp_path)
    assert "s3cret-pw" not in str(missing.value)
    with pytest.raises(OSError, match="is not a SQLAlchemy URL"):
        open_checkpoints("not a url", tmp_path)


def test_a_connection_the_database_closed_is_replaced_without_failing_the_checkpoint(postgres_url: str,
                                                                                    tmp_path: Path) -> None:
    store = open_checkpoints(postgres_url, tmp_path)
    store.begin("run-1", {"diagram": "d.yaml"})
    store.save("run-1", 1, b"one")
    # The database ends every other session (as a restart, or an idle timeout, does to the pool's connections).
    sql(store, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
               "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    store.save("run-1", 2, b"two")
    assert store.states("run-1") == [(1, b"one"), (2, b"two")]
