"""`diagrama api`'s runs on a Celery worker: the checkpoint store for a run store's URL, and the worker's two tasks'
bodies (a robot's run, a run's resume), each one turn (engine.runs.turn), with their events on the run's Redis
stream.

What both sides share lives here, below the web layer: the API checks and answers (engine.web.service.durable), the
worker (engine.runs.celery_backend's tasks) calls `run_on_worker` and `resume_on_worker`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runs.traces import INTERRUPTED

if TYPE_CHECKING:
    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram
    from engine.format.levels import MessageLevel
    from engine.runs.event_relay import RedisEventWriter
    from engine.runs.store import RunStore
    from engine.runs.turn import Turn
    from engine.runtime.result import RunResult

__all__ = ["RESUME_TASK", "resume_key", "resume_on_worker", "run_on_worker", "trace_lines"]

RESUME_TASK = "diagrama.resume_api"
"""A `POST /v1/runs/{id}/resume` on the Celery backend: the worker continues the run."""


def resume_key(run_id: str) -> str:
    """Redis key held from a resume's request until its worker has recorded the run: one resume at a time, and the
    API answers `queued` meanwhile."""
    return f"diagrama:api:resume:{run_id}"


@functools.lru_cache(maxsize=4)
def _worker_checkpoints(store_url: str, runs_dir: Path) -> CheckpointStore:
    # One connection per store per worker process, as the run store's pool.
    return open_checkpoints(store_url, runs_dir)


def trace_lines(trace: Path) -> int:
    """Complete lines in a run's trace: a resumed run's first event is the next line (events are numbered by line)."""
    try:
        with trace.open("rb") as file:
            return sum(1 for line in file if line.endswith(b"\n"))
    except OSError:
        return 0


# -- the worker's side (engine.runs.celery_backend's tasks call these) ------------------------------------------


def run_on_worker(*, run_id: str, diagram: Diagram, inputs: dict[str, Any], store: RunStore, redis: Any,
                  runs_dir: Path, offline: bool, message_level: str | None, session: str | None,
                  lost: bool = False) -> str:
    """One API run on a worker, as a turn (engine.runs.turn): durable (its checkpoints beside the run store), in its
    session's turn when it has one. A task delivered again (`lost`: the worker that had it was lost) whose run had
    begun continues from its last checkpoint under its id; one still going on another worker is left to it."""
    from engine.errors import TurnRefused
    from engine.format.levels import MessageLevel
    from engine.runs.turn import carry_on, new_turn

    checkpoints = _worker_checkpoints(store.url, runs_dir)
    began = checkpoints.run(run_id)
    turn = carry_on(checkpoints, diagram, began, lost=lost) if began is not None else None
    if turn is None:
        if began is not None and began["status"] in ("running", "waiting"):
            return "already_running"  # its worker is still on it, or it waits for a person: not this task's
        turn = new_turn(diagram, inputs, store=checkpoints, session=session, run_id=run_id)
    level = MessageLevel[message_level.upper()] if message_level else None
    try:
        result, writer = _execute(turn, redis, runs_dir, offline, level)
    except TurnRefused as refused:  # its session's last turn stopped unfinished while this one waited for it
        from engine.runs.event_relay import RedisEventWriter

        RedisEventWriter(redis, run_id).end({"run_id": run_id, "status": "failed", "errors": [
            {"block": None, "type": refused.reason, "message": refused.message}]})
        return "refused"
    return _recorded(result, writer, diagram, inputs, store, redis)


def resume_on_worker(*, run_id: str, answer: Mapping[str, Any] | None, store: RunStore, redis: Any, runs_dir: Path,
                     offline: bool, registry: BlockRegistry) -> str:
    """A resume the API checked and queued: the run goes on here (its turn taken over here), unless another took it
    first or it changed since."""
    from engine.errors import TurnRefused
    from engine.runs.turn import resume_turn

    checkpoints = _worker_checkpoints(store.url, runs_dir)
    row = checkpoints.run(run_id)
    if row is not None and row["status"] == INTERRUPTED:
        answer = None  # delivered again after its worker died: the answer is in the checkpoint after the Wait
    try:
        turn = resume_turn(checkpoints, run_id, registry=registry, answer=answer)
    except TurnRefused as refused:
        redis.delete(resume_key(run_id))  # changed since the API checked it: the API answers it as it now is
        return "already_resumed" if refused.reason == "taken" else "not_resumable"
    result, writer = _execute(turn, redis, runs_dir, offline, None)
    return _recorded(result, writer, turn.diagram, turn.inputs, store, redis)


def _execute(turn: Turn, redis: Any, runs_dir: Path, offline: bool,
             level: MessageLevel | None) -> tuple[RunResult, RedisEventWriter]:
    from engine.runs.event_relay import RedisEventWriter, relay_observer
    from engine.runs.turn import run_turn
    from engine.runtime.context import Services

    writer = RedisEventWriter(redis, turn.run_id)
    # Numbered as the trace's lines: a resumed run's events follow the lines its first part wrote.
    writer.last = max(writer.last, trace_lines(runs_dir / turn.run_id / "trace.jsonl"))
    writer.first = writer.last + 1
    services = Services(offline=offline)
    services.run_observers.append(relay_observer(writer.sink, writer.first))  # last: it sees the written fields
    result = asyncio.run(run_turn(turn, services=services, runs_dir=runs_dir, message_level=level))
    return result, writer


def _recorded(result: RunResult, writer: RedisEventWriter, diagram: Diagram, inputs: dict[str, Any],
              store: RunStore, redis: Any) -> str:
    """The run in the run store, then the end of its stream (the API's wait is over), and its resume let go."""
    from engine.runs.event_relay import result_fields

    store.record(result, diagram, inputs)
    redis.delete(resume_key(result.run_id))
    writer.end(result_fields(result))
    return result.status
