"""One batch row's run, in the batch's process or on a Celery worker: its session, and its checkpoint when an
earlier attempt was left in flight.

A durable diagram's row whose last attempt was left in flight (its process killed, the batch stopped, a Celery
worker lost) continues from that attempt's last checkpoint, under the attempt's own run id and trace: only the
block that was in flight runs again. Any other unfinished row runs from Start as a new attempt; so does one whose
diagram changed since (its content hash differs: `--force`), whose checkpoint cannot be read back, or whose last
attempt ran without checkpoints. A row whose last attempt waits at a Wait is left to its person (`diagrama resume
RUN_ID --input ...`): resuming the batch does not run it again.

A `session` column (when the diagram has no input of that name) makes the row a turn of that conversation
(engine.runs.turn): the row holds the session for its run, starts from its memory, and stores the memory when
it succeeds. In one batch process, rows of one session run one at a time, in row order; across Celery workers, one
at a time, in the order they take the session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.compile.diagram import Diagram
from engine.errors import TurnRefused
from engine.runs.batch_ids import batch_run_id, claim_attempt
from engine.runs.checkpoints import CheckpointStore
from engine.runs.traces import INTERRUPTED
from engine.runs.turn import Turn, cancel_turn, carry_on, new_turn, run_turn
from engine.runtime.context import Services
from engine.runtime.execute import RunResult

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


async def run_row(diagram: Diagram, row: Mapping[str, Any], number: int, *, batch_id: str, previous: int,
                  services: Services, runs_dir: Path | None, checkpoints: CheckpointStore | None,
                  taken_over: bool = False, turns: dict[str, asyncio.Lock] | None = None) -> RowRun | None:
    """Run row `number` of batch `batch_id` as one turn (engine.runs.turn), or carry on its attempt left in flight;
    None when its last attempt waits for a person's answer. `previous` is the last attempt the run store recorded;
    `taken_over`: Celery delivered the row's task again (its worker was lost); `turns` orders a session's rows in one
    process (a lock per session, taken in row order)."""
    inputs, session = row_session(diagram, row)
    turn: Turn | None = None
    attempt = previous
    if checkpoints is not None:
        last = last_attempt(checkpoints, batch_id, number)
        if last is not None:
            if last["status"] == "waiting":
                return None
            attempt = max(attempt, int(last["attempt"]))
            turn = carry_on(checkpoints, diagram, last, lost=taken_over)
            if turn is not None:
                attempt = int(last["attempt"])
            elif last["status"] == INTERRUPTED:
                # It cannot go on (its diagram changed, nothing to resume from): given up, so that its session, if it
                # held one, goes to the attempt that starts again.
                with contextlib.suppress(TurnRefused):
                    cancel_turn(checkpoints, str(last["run_id"]))
    if turn is None:
        run_id, attempt = claim_attempt(runs_dir, batch_id, number, attempt)
        turn = new_turn(diagram, inputs, store=checkpoints, session=session, run_id=run_id)
    lock: contextlib.AbstractAsyncContextManager[Any] = contextlib.nullcontext()
    if session is not None and turns is not None:
        lock = turns.setdefault(session, asyncio.Lock())  # FIFO: the session's rows take turns in row order
    async with lock:
        result = await run_turn(turn, services=services, runs_dir=runs_dir)
    return RowRun(result, attempt, turn.resumed is not None)
