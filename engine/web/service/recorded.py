"""A run store row as `diagrama api` answers it: what a finished run said live, read back (a run asked for after it
ended, or by another API process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.web.service.models import RunAnswer, RunCost


def recorded_answer(row: dict[str, Any]) -> RunAnswer:
    """A run store row as the API answers it."""
    status = row["status"]
    return RunAnswer(run_id=row["run_id"], robot=Path(str(row["diagram"])).stem,
                     status=status if status in ("succeeded", "failed", "waiting", "cancelled") else "failed",
                     variables=row.get("variables") or {}, path=row.get("path") or [], errors=row.get("errors") or [],
                     steps=row.get("steps"), duration_ms=row.get("duration_ms"), cost=_recorded_cost(row.get("cost")),
                     usage=_recorded_usage(row.get("usage")))


def _recorded_cost(cost: Any) -> RunCost | None:
    """A store row's cost, when it has one that reads (None: recorded before costs, or damaged)."""
    try:
        return RunCost.model_validate(cost) if isinstance(cost, dict) else None
    except ValueError:
        return None


def _recorded_usage(usage: Any) -> dict[str, int] | None:
    """A store row's tokens per kind (None: recorded before they were kept, or damaged)."""
    if not isinstance(usage, dict):
        return None
    return {str(kind): int(count) for kind, count in usage.items()
            if isinstance(count, int) and not isinstance(count, bool)}
