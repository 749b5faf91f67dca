"""`diagrama api`'s runs on a Celery worker: the checkpoint store for a run store's URL, and the worker's two tasks'
bodies (a robot's run, a run's resume), each one turn (engine.runs.turn), with their events on the run's Redis
stream.

What both sides share lives here, below the web layer: the API checks and answers (engine.web.service.durable), the
worker (engine.runs.celery_backend's tasks) calls `run_on_worker` and `resume_on_worker`.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runs.outages import outage
from engine.runs.traces import INTERRUPTED

if TYPE_CHECKING:
    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram
    from engine.format.levels import MessageLevel
    from engine.runs.event_relay import RedisEventWriter
    from engine.runs.store import RunStore
    from engine.runs.turn import Turn
    from engine.runtime.context import Services
    from engine.runtime.result import RunResult

__all__ = ["HELD", "PATIENCE_S", "RESUME_TASK", "patiently", "resume_key", "resume_on_worker", "run_on_worker",
           "trace_lines"]

_T = TypeVar("_T")

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


HELD = "held"
"""What a task does not run: another worker's lease on its run is alive (engine.runs.leases); look again later."""

PATIENCE_S = 300.0
"""How long a worker keeps trying a statement while the broker or the store does not answer (a restart)."""


def patiently(work: Callable[[], _T], what: str) -> _T:
    """`work()`, tried again with a growing pause while the broker or the database is away (PATIENCE_S at most): a
    restart of either does not lose the run whose task is here (its message stays unacknowledged meanwhile)."""
    from engine.runs.service_logs import log

    gives_up = time.monotonic() + PATIENCE_S
    pause = 0.2
    while True:
        try:
            return work()
        except Exception as exc:
            if not outage(exc) or time.monotonic() + pause > gives_up:
                raise
            log("diagrama.worker").warning("waiting_for_service", what=what, error=type(exc).__name__,
                                           retry_in_s=pause)
            time.sleep(pause)
            pause = min(pause * 2, 5.0)


# Long: the three ways a delivered task meets its run (held elsewhere, to carry on, new), in order.
def run_on_worker(*, run_id: str, diagram: Diagram, inputs: dict[str, Any], store: RunStore, redis: Any,
                  runs_dir: Path, offline: bool, message_level: str | None, session: str | None,
                  budget: Mapping[str, Any] | None = None, stream: bool = False, trigger: str | None = None) -> str:
    """One API run on a worker, as a turn (engine.runs.turn): durable (its checkpoints beside the run store), in its
    session's turn when it has one. The worker holds the run's lease while it runs it (engine.runs.leases): a task
    delivered again while another worker's lease is alive is HELD (the caller looks again later); one whose run's
    lease lapsed continues the run from its last checkpoint under its id (its worker was lost)."""
    from engine.errors import TurnRefused
    from engine.format.levels import MessageLevel
    from engine.runs.leases import Lease, cancel_key
    from engine.runs.turn import carry_on, new_turn
    from engine.runtime.context import Services

    services = Services(offline=offline, stream=stream)  # `stream`: a streamed chat's run (its blocks stream)
    lease = Lease(redis, run_id, services.stops)
    if not patiently(lease.take, "the run's lease"):
        return HELD
    with lease:
        if patiently(lambda: redis.exists(cancel_key(run_id)), "the broker"):
            services.stops[run_id] = "cancelled"  # cancelled while queued: it stops before its first step
        if patiently(lambda: store.run(run_id), "the run store") is not None:
            return "already_recorded"  # delivered again after it was recorded (its worker died before the ack)
        checkpoints = _worker_checkpoints(store.url, runs_dir)
        began = patiently(lambda: checkpoints.run(run_id), "the checkpoint store")
        # The lease was free: whoever ran it before is gone (or never began), so a run left `running` is lost.
        turn = carry_on(checkpoints, diagram, began, lost=True) if began is not None else None
        if turn is None:
            if began is not None and began["status"] in ("running", "waiting"):
                return "already_running"  # its process on this host is still alive, or it waits for a person
            turn = new_turn(diagram, inputs, store=checkpoints, session=session, run_id=run_id)
            if budget:  # as the API's run request lowered it (a run carried on keeps its checkpoint's)
                from engine.format.spec import Budget

                turn.budget = Budget.model_validate(budget)
        level = MessageLevel[message_level.upper()] if message_level else None
        try:
            result, writer = _execute(turn, redis, runs_dir, level, services)
        except TurnRefused as refused:  # its session's last turn stopped unfinished while this one waited for it
            from engine.runs.event_relay import RedisEventWriter

            said = {"run_id": run_id, "status": "failed",
                    "errors": [{"block": None, "type": refused.reason, "message": refused.message}]}
            patiently(lambda: RedisEventWriter(redis, run_id).end(said), "the broker")
            return "refused"
        return _recorded(result, writer, diagram, inputs, store, redis, trigger)


def resume_on_worker(*, run_id: str, answer: Mapping[str, Any] | None, store: RunStore, redis: Any, runs_dir: Path,
                     offline: bool, registry: BlockRegistry) -> str:
    """A resume the API checked and queued: the run goes on here (its turn taken over here, under its lease), unless
    another took it first or it changed since."""
    from engine.errors import TurnRefused
    from engine.runs.leases import Lease, cancel_key
    from engine.runs.turn import resume_turn
    from engine.runtime.context import Services

    services = Services(offline=offline)
    lease = Lease(redis, run_id, services.stops)
    if not patiently(lease.take, "the run's lease"):
        return HELD
    with lease:
        if patiently(lambda: redis.exists(cancel_key(run_id)), "the broker"):
            services.stops[run_id] = "cancelled"
        checkpoints = _worker_checkpoints(store.url, runs_dir)
        row = patiently(lambda: checkpoints.run(run_id), "the checkpoint store")
        if row is not None and row["status"] == INTERRUPTED:
            answer = None  # delivered again after its worker died: the answer is in the checkpoint after the Wait
        try:
            turn = patiently(lambda: resume_turn(checkpoints, run_id, registry=registry, answer=answer),
                             "the checkpoint store")
        except TurnRefused as refused:
            patiently(lambda: redis.delete(resume_key(run_id)), "the broker")  # the API answers it as it now is
            return "already_resumed" if refused.reason == "taken" else "not_resumable"
        result, writer = _execute(turn, redis, runs_dir, None, services)
        return _recorded(result, writer, turn.diagram, turn.inputs, store, redis)


def _execute(turn: Turn, redis: Any, runs_dir: Path, level: MessageLevel | None,
             services: Services) -> tuple[RunResult, RedisEventWriter]:
    from engine.runs.event_relay import RedisEventWriter, relay_observer
    from engine.runs.turn import run_turn

    writer = patiently(lambda: RedisEventWriter(redis, turn.run_id), "the broker")
    # Numbered as the trace's lines: a resumed run's events follow the lines its first part wrote.
    writer.last = max(writer.last, trace_lines(runs_dir / turn.run_id / "trace.jsonl"))
    writer.first = writer.last + 1
    services.run_observers.append(relay_observer(writer.sink, writer.first))  # last: it sees the written fields
    result = asyncio.run(run_turn(turn, services=services, runs_dir=runs_dir, message_level=level))
    return result, writer


def _recorded(result: RunResult, writer: RedisEventWriter, diagram: Diagram, inputs: dict[str, Any],
              store: RunStore, redis: Any, trigger: str | None = None) -> str:
    """The run in the run store, then the end of its stream (the API's wait is over), and its resume let go."""
    from engine.runs.event_relay import result_fields
    from engine.runs.leases import cancel_key

    patiently(lambda: store.record(result, diagram, inputs, trigger=trigger), "the run store")
    patiently(lambda: redis.delete(resume_key(result.run_id)), "the broker")
    patiently(lambda: writer.end(result_fields(result)), "the broker")
    if result.status in ("cancelled", "interrupted"):
        patiently(lambda: redis.delete(cancel_key(result.run_id)), "the broker")
    return result.status
