"""Durable runs as `diagrama api` runs them, in its own process or on a Celery worker: the checkpoint store for a run
store's URL, taking over a waiting or interrupted run so that only one resume goes on, a session held around a run,
and the worker's two tasks' bodies (a robot's run, a run's resume) with their events on the run's Redis stream.

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
    from engine.runs.event_relay import RedisEventWriter
    from engine.runs.store import RunStore
    from engine.runtime.result import RunResult

__all__ = ["RESUME_TASK", "memory_of", "resume_key", "resume_on_worker", "run_on_worker",
           "take_over", "trace_lines"]

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


def take_over(store: CheckpointStore, run_id: str) -> bool:
    """Mark a waiting or interrupted run as running in this process, if it still is what it was: of two resumes of
    one run, one takes it (True), the other finds it taken (False). A compare-and-set on the row's status and pid."""
    row = store.run(run_id)
    if row is None or row["status"] not in ("waiting", INTERRUPTED):
        return False
    stored = "running" if row["status"] == INTERRUPTED else "waiting"  # live_status reads a dead `running` so
    return store.take_over(run_id, stored, row.get("pid"))


def trace_lines(trace: Path) -> int:
    """Complete lines in a run's trace: a resumed run's first event is the next line (events are numbered by line)."""
    try:
        with trace.open("rb") as file:
            return sum(1 for line in file if line.endswith(b"\n"))
    except OSError:
        return 0


def memory_of(diagram: Diagram, result: RunResult) -> dict[str, Any] | None:
    """What a turn stores in its session: Start's `memory` values when it succeeded; None (nothing) otherwise."""
    if not result.succeeded:
        return None
    return {name: result.variables.get(name) for name in diagram.settings.memory}


# -- the worker's side (engine.runs.celery_backend's tasks call these) ------------------------------------------


def run_on_worker(*, run_id: str, diagram: Diagram, inputs: dict[str, Any], store: RunStore, redis: Any,
                  runs_dir: Path, offline: bool, message_level: str | None, session: str | None) -> str:
    """One API run on a worker: durable (its checkpoints beside the run store), in its session's turn when it has
    one."""
    from engine.format.levels import MessageLevel
    from engine.runs.sessions import claim_session, release_session

    checkpoints = _worker_checkpoints(store.url, runs_dir)
    remembered = None
    if session is not None:
        stored = claim_session(checkpoints, session, str(diagram.path.resolve()), run_id)
        if stored is not None:
            remembered = {name: stored[name] for name in diagram.settings.memory if name in stored}
    ran = None
    try:
        level = MessageLevel[message_level.upper()] if message_level else None
        ran = _execute(run_id, diagram, redis, runs_dir, offline, checkpoints, {
            "inputs": inputs, "message_level": level, "remembered": remembered,
            "record": {"inputs": inputs, **({"session": session} if session else {})}})
    finally:
        if session is not None:
            release_session(checkpoints, session, run_id, memory_of(diagram, ran[0]) if ran else None)
    return _recorded(*ran, diagram, inputs, store, redis)


def resume_on_worker(*, run_id: str, answer: Mapping[str, Any] | None, store: RunStore, redis: Any, runs_dir: Path,
                     offline: bool, registry: BlockRegistry) -> str:
    """A resume the API checked and queued: the run goes on here, unless another took it first."""
    from engine.errors import UsageError
    from engine.runs.resume import prepare_resume
    from engine.runs.sessions import claim_session, release_session

    checkpoints = _worker_checkpoints(store.url, runs_dir)
    row = checkpoints.run(run_id)
    if row is not None and row["status"] == INTERRUPTED:
        answer = None  # delivered again after its worker died: the answer is in the checkpoint after the Wait
    try:
        resumption = prepare_resume(checkpoints, run_id, registry=registry, answer=answer)
    except UsageError:
        redis.delete(resume_key(run_id))  # changed since the API checked it: the API answers it as it now is
        return "not_resumable"
    if not take_over(checkpoints, run_id):
        return "already_resumed"
    session = resumption.record.get("session")
    diagram = resumption.diagram
    if session:
        claim_session(checkpoints, session, str(diagram.path.resolve()), run_id)
    ran = None
    try:
        ran = _execute(run_id, diagram, redis, runs_dir, offline, checkpoints,
                       {"resume": resumption.resumed, "record": resumption.record})
    finally:
        if session:
            release_session(checkpoints, session, run_id, memory_of(diagram, ran[0]) if ran else None)
    return _recorded(*ran, diagram, resumption.inputs, store, redis)


def _execute(run_id: str, diagram: Diagram, redis: Any, runs_dir: Path, offline: bool,
             checkpoints: CheckpointStore, options: dict[str, Any]) -> tuple[RunResult, RedisEventWriter]:
    from engine.format.redact import Redactor
    from engine.runs.event_relay import RedisEventWriter, relay_observer
    from engine.runtime.context import Services
    from engine.runtime.execute import execute

    writer = RedisEventWriter(redis, run_id)
    # Numbered as the trace's lines: a resumed run's events follow the lines its first part wrote.
    writer.last = max(writer.last, trace_lines(runs_dir / run_id / "trace.jsonl"))
    writer.first = writer.last + 1
    services = Services(offline=offline)
    services.checkpoints = checkpoints
    record = options.get("record")
    if record is not None and "inputs" in record:  # kept in the checkpoint store: scrubbed as the trace is
        options = {**options, "record": {**record, "inputs": Redactor(services.secrets()).value(record["inputs"])}}
    services.run_observers.append(relay_observer(writer.sink, writer.first))  # last: it sees the written fields
    result = asyncio.run(execute(diagram, runs_dir=runs_dir, services=services, run_id=run_id, **options))
    return result, writer


def _recorded(result: RunResult, writer: RedisEventWriter, diagram: Diagram, inputs: dict[str, Any],
              store: RunStore, redis: Any) -> str:
    """The run in the run store, then the end of its stream (the API's wait is over), and its resume let go."""
    from engine.runs.event_relay import result_fields

    store.record(result, diagram, inputs)
    redis.delete(resume_key(result.run_id))
    writer.end(result_fields(result))
    return result.status
