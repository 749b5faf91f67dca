"""How a run's event stream ends: with a terminal event a client can act on, whatever stopped the run.

A stream that ends with `run_finished` says the run ended (its status: succeeded, failed, waiting, cancelled); one
that ends with `run_interrupted` says the run was cut (its process stopped or was killed) and how to go on with it
(`resume`). A stream that ends without either was cut itself (the server stopped): the client reconnects with
Last-Event-ID, as EventSource does.

The trace on disk keeps what the run wrote (an interrupted run's last line is `run_finished` with a
`run_interrupted` error, or nothing when its process was killed); the stream says it in a client's terms.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson

from engine.runtime.trace import Event
from engine.web.service.models import RunAnswer

__all__ = ["RUN_INTERRUPTED", "TERMINAL", "ended", "resume_hint"]

RUN_INTERRUPTED = "run_interrupted"
TERMINAL = frozenset({Event.RUN_FINISHED, RUN_INTERRUPTED})
_INTERRUPTED_ERROR = b'"run_interrupted"'

RunEvent = tuple[int, str, bytes]


def resume_hint(run_id: str) -> str:
    return f"POST /v1/runs/{run_id}/resume"


def _as_sent(run_id: str, name: str, data: bytes) -> tuple[str, bytes]:
    """`run_finished` of a run that was interrupted (a cancellation, the server's stop) is sent as `run_interrupted`,
    with how to go on."""
    if name != Event.RUN_FINISHED or _INTERRUPTED_ERROR not in data:
        return name, data
    fields: dict[str, Any] = orjson.loads(data)
    if not any(isinstance(e, dict) and e.get("type") == RUN_INTERRUPTED for e in fields.get("errors") or []):
        return name, data
    fields.update(event=RUN_INTERRUPTED, status="interrupted", resume=resume_hint(run_id))
    return RUN_INTERRUPTED, orjson.dumps(fields)


def _closing(run_id: str, number: int, found: RunAnswer | None) -> RunEvent | None:
    """The terminal event a stream that ran out without one ends with, from what the run is now (None: it goes on,
    or is not known: the stream was cut, the client reconnects)."""
    if found is None or found.status in ("queued", "running"):
        return None
    if found.status == "interrupted":
        return number, RUN_INTERRUPTED, orjson.dumps({"event": RUN_INTERRUPTED, "run_id": run_id,
                                                      "status": "interrupted", "resume": resume_hint(run_id)})
    return number, Event.RUN_FINISHED, orjson.dumps({
        "event": Event.RUN_FINISHED, "run_id": run_id, "status": found.status, "steps": found.steps,
        "path": found.path, "errors": found.errors, "duration_ms": found.duration_ms})


async def ended(run_id: str, stream: AsyncIterator[RunEvent], status_of: Callable[[str], Awaitable[RunAnswer | None]],
                after: int = 0) -> AsyncIterator[RunEvent]:
    """`stream` (the run's events after number `after`) as a client gets it: its last event terminal wherever the
    run's status is known. An event made up here carries the number of the last one sent, so a reconnect after it
    misses nothing (a resumed run's events follow its trace's lines). A client that asked after every event there is
    (a reconnect past the end) gets nothing more: it has the end."""
    number = after
    held: RunEvent | None = None
    last_name = ""
    async with contextlib.aclosing(stream):  # type: ignore[type-var]  # an async generator: it has aclose
        async for number, name, data in stream:
            name, data = _as_sent(run_id, name, data)
            if name == RUN_INTERRUPTED:
                # Terminal only if nothing follows: a resumed run's trace goes on after its first part's end.
                held = (number, name, data)
                continue
            held = None
            last_name = name
            yield number, name, data  # on to the stream's end: a run that waited goes on after its run_finished
    if held is None and last_name in TERMINAL:
        return
    if held is not None:
        found = await status_of(run_id)
        if found is None or found.status == "interrupted":
            yield held
            return
        number = held[0]
    elif number == after and after > 0:
        return
    else:
        found = await status_of(run_id)
    closing = _closing(run_id, number, found)
    if closing is not None:
        yield closing
