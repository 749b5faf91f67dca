"""What the durable-run tests share: a block whose effects they count, and a finished run made to look killed."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from engine import Block, RunContext
from engine.runs.checkpoints import CheckpointStore
from tests.postgres import sql


class TickInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any = None


class TickOutputs(BaseModel):
    result: Any = None


class Tick(Block):
    """An effect the test can count: each step appends its value to `Tick.log`."""

    Inputs = TickInputs
    Outputs = TickOutputs
    effects: ClassVar[bool] = True
    log: ClassVar[list[Any]] = []

    async def run(self, inputs: TickInputs, context: RunContext) -> dict[str, Any]:
        Tick.log.append(inputs.value)
        return {"result": inputs.value}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def interrupt_after(store: CheckpointStore, run_id: str, seq: int) -> None:
    """Make a finished run look killed just after its checkpoint `seq`: later checkpoints gone, its process dead."""
    sql(store, "DELETE FROM checkpoints WHERE run_id = :run AND seq > :seq", run=run_id, seq=seq)
    sql(store, "UPDATE run_states SET status = 'running', pid = :pid WHERE run_id = :run", pid=dead_pid(), run=run_id)
