"""Pruning: a finished run's checkpoints are deleted once a retention has passed since it ended.

A durable run's checkpoints serve two things: going on (an interrupted or waiting run, which is never pruned) and
replaying a finished one from a block (`diagrama resume RUN --from BLOCK`), which needs them only while someone
may still look. `prune_runs` deletes the checkpoints of runs that ended (succeeded, failed, cancelled) longer ago
than the retention, and the subdiagram runs they made, through the store's `prune`; each keeps a tombstone, so a
replay says what happened instead of failing. The runs' records stay (`diagrama runs`), as do their traces
(`diagrama trace`) and every session's memory. A pruned turn of a session also loses its memory variables from
its record in the run store (the session holds its memory; the record keeps the rest of the turn's result), so
that nothing keeps a copy of the conversation per turn past the retention. `diagrama runs --prune` prunes once;
`diagrama api --prune-after` prunes periodically (engine.web.service.pruning).
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from engine.errors import UsageError

if TYPE_CHECKING:  # the retention's reading is imported by the CLI before it opens any store: kept light
    from engine.runs.checkpoints import CheckpointStore, Pruned
    from engine.runs.store import RunStore

__all__ = ["DEFAULT_RETENTION", "RETENTION_VARIABLE", "parse_retention", "prune_runs", "shown_retention"]

DEFAULT_RETENTION = "7d"
"""`diagrama runs --prune`'s retention when `--older-than` does not say."""
RETENTION_VARIABLE = "DIAGRAMA_PRUNE_AFTER"
"""The environment variable `diagrama api` reads its retention from when `--prune-after` does not say."""

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([dhms])")


def parse_retention(text: str, option: str = "--older-than") -> float:
    """`7d`, `12h`, `30m`, `45s` as seconds; UsageError naming `option` for anything else."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise UsageError(f"{option} takes a duration: a number and s, m, h or d (7d, 12h, 30m, 45s), not {text!r}")
    return float(found.group(1)) * _UNITS[found.group(2)]


def shown_retention(seconds: float) -> str:
    """Seconds as `parse_retention` reads them, in the largest unit that divides them (604800: `7d`)."""
    for unit, size in _UNITS.items():
        if seconds >= size and float(seconds / size).is_integer():
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def prune_runs(store: CheckpointStore, older_than_s: float, run_store: RunStore | None = None) -> Pruned:
    """Delete the checkpoints of the runs that ended more than `older_than_s` seconds ago (CheckpointStore.prune);
    with `run_store`, the pruned session turns' records there lose their memory variables (`records` counts them)."""
    pruned = store.prune(older_than_s)
    if run_store is None or not any(pruned.sessions.values()):
        return pruned
    names: dict[str, list[str]] = {}
    for session in {session for session in pruned.sessions.values() if session}:
        names[session] = _memory_names(store, session)
    dropped = run_store.drop_variables({run_id: names[session] for run_id, session in pruned.sessions.items()
                                        if session and names[session]})
    return dataclasses.replace(pruned, records=dropped)


def _memory_names(store: CheckpointStore, session: str) -> list[str]:
    """The variables a session keeps (its memory's names); none for a session forgotten since, or damaged."""
    from engine.format.snapshot import SnapshotDamaged, decode

    row = store.session(session)
    if row is None or not row.get("state"):
        return []
    try:
        memory: Any = decode(bytes(row["state"]))
    except SnapshotDamaged:
        return []
    return [str(name) for name in memory] if isinstance(memory, dict) else []
