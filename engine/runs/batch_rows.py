"""One batch row's run, in the batch's process or on a Celery worker: its session, and its checkpoint when an
earlier attempt was left in flight.

A durable diagram's row whose last attempt was left in flight (its process killed, the batch stopped, a Celery
worker lost) continues from that attempt's last checkpoint, under the attempt's own run id and trace: only the
block that was in flight runs again. Any other unfinished row runs from Start as a new attempt; so does one whose
diagram changed since (its content hash differs: `--force`), whose checkpoint cannot be read back, or whose last
attempt ran without checkpoints. A row whose last attempt waits at a Wait is left to its person (`diagrama resume
RUN_ID --input ...`): resuming the batch does not run it again.

A `session` column (when the diagram has no input of that name) makes the row a turn of that conversation
(engine.runs.sessions): the row holds the session for its run, starts from its memory, and stores the memory when
it succeeds. In one batch process, rows of one session run one at a time, in row order; across Celery workers, one
at a time, in the order they take the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.compile.diagram import Diagram
from engine.errors import UsageError
from engine.runs.batch_ids import batch_run_id, claim_attempt
from engine.runs.checkpoints import CheckpointStore
from engine.runs.sessions import claim_session_async, release_session
from engine.runs.traces import INTERRUPTED
from engine.runtime.context import Services
from engine.runtime.durable import Resumed, SnapshotError, resumed_from
from engine.runtime.execute import RunResult, execute

__all__ = ["SESSION_COLUMN", "RowRun", "has_session_column", "last_attempt", "row_session", "run_row"]

SESSION_COLUMN = "session"
"""The batch rows' column that names a row's conversation (unless the diagram has an input of that name)."""


def has_session_column(diagram: Diagram) -> bool:
    """Whether a `session` column names the row's session rather than an input of the diagram."""
    return SESSION_COLUMN not in diagram.settings.inputs


def row_session(diagram: Diagram, row: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A row's inputs, and its session (None: no `session` column, or an empty cell)."""
    if SESSION_COLUMN not in row or not has_session_column(diagram):
        return dict(row), None
    inputs = {name: value for name, value in row.items() if name != SESSION_COLUMN}
    session = row[SESSION_COLUMN]
    return inputs, (str(session) if session is not None and str(session).strip() else None)


@dataclass
class RowRun:
    """One attempt at a row: its result, run id and attempt number, and whether it continued from a checkpoint."""

    result: RunResult
    attempt: int
    resumed: bool


def _attempt_number(base: str, run_id: str) -> int:
    return 1 if run_id == base else int(run_id[len(base) + 2:] or 1)


def last_attempt(checkpoints: CheckpointStore, batch_id: str, row: int) -> dict[str, Any] | None:
    """The checkpoint store's record of the row's last durable attempt (with its live status), or None."""
    base = batch_run_id(batch_id, row)
    found = [run for run in checkpoints.attempts(base) if run["run_id"][len(base) + 2:].isdigit() or run["run_id"] == base]
    if not found:
        return None
    last = max(found, key=lambda run: _attempt_number(base, run["run_id"]))
    last["attempt"] = _attempt_number(base, last["run_id"])
    return last


def _in_flight(last: Mapping[str, Any], taken_over: bool) -> bool:
    """Whether the attempt was left in flight: its process is gone, or (`taken_over`: Celery delivered the row's task
    again, so the worker that had it is lost) it still says `running` on another host, where no one can look."""
    status = last["status"]
    return status == INTERRUPTED or (taken_over and status == "running" and last.get("host") != socket.gethostname())


def _resume_point(checkpoints: CheckpointStore, diagram: Diagram, last: Mapping[str, Any]) -> Resumed | None:
    """Where the attempt continues: its last checkpoint, when the diagram is the one it ran and still has the block."""
    if last.get("content_hash") != diagram.content_hash:
        return None
    states = checkpoints.states(str(last["run_id"]))
    if not states:
        return None
    try:
        resumed = resumed_from([state for _, state in states], seq=states[-1][0])
    except (SnapshotError, ValueError, KeyError):
        return None  # written by a version that encoded differently: the row starts again
    if resumed.next is not None and resumed.next not in diagram.blocks:
        return None
    return resumed


# The row, its store, its session and its resume point are one attempt's state: kept together on purpose.
async def run_row(diagram: Diagram, row: Mapping[str, Any], number: int, *, batch_id: str, previous: int,
                  services: Services, runs_dir: Path | None, checkpoints: CheckpointStore | None,
                  taken_over: bool = False, turns: dict[str, asyncio.Lock] | None = None) -> RowRun | None:
    """Run row `number` of batch `batch_id`, or continue its attempt left in flight; None when its last attempt waits
    for a person's answer. `previous` is the last attempt the run store recorded; `turns` orders a session's rows in
    one process (a lock per session, taken in row order)."""
    inputs, session = row_session(diagram, row)
    resume: Resumed | None = None
    run_id: str | None = None
    attempt = previous
    if checkpoints is not None:
        last = last_attempt(checkpoints, batch_id, number)
        if last is not None:
            if last["status"] == "waiting":
                return None
            attempt = max(attempt, int(last["attempt"]))
            if diagram.settings.durable and _in_flight(last, taken_over):
                resume = _resume_point(checkpoints, diagram, last)
                if resume is not None:
                    run_id, attempt = str(last["run_id"]), int(last["attempt"])
    if run_id is None:
        run_id, attempt = claim_attempt(runs_dir, batch_id, number, attempt)
    if session is not None and checkpoints is None:
        raise UsageError(f"row {number} names session '{session}': sessions are kept in the checkpoint store, "
                         "which this batch has not")
    record: dict[str, Any] = {"inputs": inputs}
    turn: contextlib.AbstractAsyncContextManager[Any] = contextlib.nullcontext()
    if session is not None:
        record["session"] = session
        if turns is not None:
            turn = turns.setdefault(session, asyncio.Lock())  # FIFO: the session's rows take turns in row order
    async with turn:
        remembered = None
        if session is not None and checkpoints is not None:
            stored = await claim_session_async(checkpoints, session, str(diagram.path.resolve()), run_id)
            if stored is not None and resume is None:  # a resumed run's scope holds its memory already
                remembered = {name: stored[name] for name in diagram.settings.memory if name in stored}
        result: RunResult | None = None
        try:
            result = await execute(diagram, inputs, runs_dir=runs_dir, services=services, run_id=run_id, resume=resume,
                                   remembered=remembered, record=record)
        finally:
            if session is not None and checkpoints is not None:
                kept = ({name: result.variables.get(name) for name in diagram.settings.memory}
                        if result is not None and result.succeeded else None)
                release_session(checkpoints, session, run_id, kept)
    return RowRun(result, attempt, resume is not None)
