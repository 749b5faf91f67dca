"""Conversations: the variables Start's `memory` names, kept per session from one run to the next.

A run with a session (`diagrama run --session ID`, a batch row's `session` column) takes the
session first: it holds it for its whole turn, starts with the values the session's last turn
ended with (Start's own the first time), and stores its values when it ends, then lets go.
Turns of one session never overlap: a second run of the same session waits until the first lets
go (or its process is gone), then starts from what the first stored. So concurrent runs of one
session each get a turn, in the order they took it, and no turn is lost. A turn that fails
stores nothing: the session stays as the last good turn left it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from engine.errors import UsageError
from engine.format.snapshot import decode, encode
from engine.runs.checkpoints import CheckpointStore

__all__ = ["claim_session", "claim_session_async", "forget_session", "list_sessions", "read_session", "release_session",
           "try_claim_session"]

_POLL_S = 0.02


def try_claim_session(store: CheckpointStore, session: str, diagram: str, run_id: str) -> tuple[bool, Any]:
    """One attempt at holding `session` for run `run_id`: (True, its stored values or None for a new session), or
    (False, the run that holds it) while another live run does. A run takes back a session it held before (a
    resumed run). The store decides with one writer (SQLite) or a conditional update (other databases)."""
    claimed, state, holder = store.try_claim_session(session, diagram, run_id)
    if not claimed:
        return False, holder
    return True, (dict(decode(state)) if state else None)


def claim_session(store: CheckpointStore, session: str, diagram: str, run_id: str, *,
                  wait_s: float = 600.0) -> dict[str, Any] | None:
    """Hold `session` for run `run_id`: its stored values (None for a new session). Waits while another live run
    holds it; UsageError after `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        claimed, found = try_claim_session(store, session, diagram, run_id)
        if claimed:
            return found  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise _still_held(session, found, wait_s)
        time.sleep(_POLL_S)


async def claim_session_async(store: CheckpointStore, session: str, diagram: str, run_id: str, *,
                              wait_s: float = 600.0) -> dict[str, Any] | None:
    """`claim_session` for a run on an event loop (a batch row): it waits without holding up the loop's other
    runs, among them the one that holds the session."""
    import asyncio

    deadline = time.monotonic() + wait_s
    while True:
        claimed, found = try_claim_session(store, session, diagram, run_id)
        if claimed:
            return found  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise _still_held(session, found, wait_s)
        await asyncio.sleep(_POLL_S)


def _still_held(session: str, holder: Any, wait_s: float) -> UsageError:
    return UsageError(f"session '{session}' is held by run {holder}, still running after {wait_s:g} s")


def release_session(store: CheckpointStore, session: str, run_id: str, values: Mapping[str, Any] | None) -> None:
    """Let go of `session`; with `values` (a turn that succeeded), store them as the session's memory."""
    store.release_session(session, run_id, None if values is None else encode(dict(values)))


def read_session(store: CheckpointStore, session: str) -> dict[str, Any] | None:
    """A session's diagram, turns so far, memory values and when it last changed; None when there is none."""
    row = store.session(session)
    if row is None:
        return None
    return {"session": row["session"], "diagram": row["diagram"], "turns": int(row["turn"]),
            "memory": decode(bytes(row["state"])) if row["state"] else {}, "updated": row["updated"],
            "held_by": row["holder"]}


def list_sessions(store: CheckpointStore, limit: int = 50) -> list[dict[str, Any]]:
    return [found for name in store.session_names(limit) if (found := read_session(store, name)) is not None]


def forget_session(store: CheckpointStore, session: str) -> bool:
    """Delete a session and its memory; whether there was one."""
    return store.forget_session(session)
