"""Conversations: the variables Start's `memory` names, kept per session from one run to the next.

A run with a session (`diagrama run --session ID`, a chat turn in the studio, an API run's `session_id`, a
batch row's `session` column) is a turn of that conversation: it holds the session for its whole run,
starts with the values the session's last good turn stored (Start's own the first time; an input given by
name is used as given), and stores its own when it succeeds. Holding, storing and letting go are the turn's
(engine.runs.turn: the rule that no turn is ever lost is written there); this module reads sessions back,
lists them and forgets them.
"""

from __future__ import annotations

from typing import Any

from engine.format.snapshot import SnapshotDamaged, decode
from engine.runs.checkpoints import CheckpointStore

__all__ = ["forget_session", "list_sessions", "read_session"]


def read_session(store: CheckpointStore, session: str) -> dict[str, Any] | None:
    """A session's diagram, turns so far, memory values, when it last changed and the run holding it; None when
    there is none."""
    row = store.session(session)
    if row is None:
        return None
    found = {"session": row["session"], "diagram": row["diagram"], "turns": int(row["turn"]), "memory": {},
             "updated": row["updated"], "held_by": row["holder"]}
    try:
        found["memory"] = decode(bytes(row["state"])) if row["state"] else {}
    except SnapshotDamaged as exc:  # listed all the same, saying so: forgetting it is how to go on
        found["damaged"] = f"its stored memory is damaged: {exc}"
    return found


def list_sessions(store: CheckpointStore, limit: int = 50) -> list[dict[str, Any]]:
    return [found for name in store.session_names(limit) if (found := read_session(store, name)) is not None]


def forget_session(store: CheckpointStore, session: str) -> bool:
    """Delete a session and its memory; whether there was one."""
    return store.forget_session(session)
