"""A batch row's run ids: one per attempt, the same whichever backend runs it, each attempt with its own folder."""

from __future__ import annotations

from pathlib import Path

from engine.runs.traces import trace_status

__all__ = ["batch_run_id", "claim_attempt"]


def batch_run_id(batch_id: str, row: int, attempt: int = 1) -> str:
    """Deterministic per (batch, row, attempt): every backend writes the same results file.

    The first attempt is `<batch>-r000007`; a later one adds its number, `<batch>-r000007-a2`.
    """
    base = f"{batch_id}-r{row:06d}"
    return base if attempt <= 1 else f"{base}-a{attempt}"


def claim_attempt(runs_dir: Path | None, batch_id: str, row: int, previous: int = 0) -> tuple[str, int]:
    """The run id and number of this row's next attempt, after `previous` (the store's last one).

    The attempt's run folder is made here, exclusively. An attempt whose folder is taken
    was killed or stopped before the store heard of it (or another worker has just claimed
    it): it counts, and the next number is taken, so a retry never appends to the trace of
    the attempt before it. Only a run that succeeded and that this store never recorded
    (another store kept over the same runs folder) keeps its folder, as before.
    """
    attempt = max(previous, 0) + 1
    while True:
        run_id = batch_run_id(batch_id, row, attempt)
        if runs_dir is None:
            return run_id, attempt
        try:
            (runs_dir / run_id).mkdir(parents=True)
        except FileExistsError:
            if trace_status(runs_dir / run_id / "trace.jsonl") != "succeeded":
                attempt += 1
                continue
        return run_id, attempt
