"""A run's events as a relay carries them to `diagrama api`'s clients: each event numbered in the order the run's
trace records it, rendered and scrubbed as the trace file's line is; and, for runs on Celery workers, a Redis
stream per run that the worker writes and any API process reads.

Numbers: event N is the trace's Nth line, so a client that reconnects after the relay dropped a run's events (a
bounded buffer, an expired stream) is answered from the trace file without gaps. Redis streams rather than pub/sub:
a stream keeps what was sent before a reader came (a client that subscribes after the run began, one that
reconnects with Last-Event-ID), is bounded (MAXLEN) and expires, and a stream id `0-N` is the event's number.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from engine.format.jsonout import plain
from engine.format.redact import Redactor
from engine.format.values import dumps, json_default
from engine.runs.outages import outage
from engine.runtime.context import RunObserver
from engine.runtime.result import RunResult

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram

__all__ = ["END_FIELD", "EVENT_FIELD", "EventSink", "RedisEventReader", "RedisEventWriter", "event_name",
           "relay_observer", "render_event", "result_fields", "run_key", "stream_key"]

EVENT_FIELD = b"e"
"""A stream entry's field holding one event's JSON."""
END_FIELD = b"end"
"""The field of the entry a worker adds after the run is recorded: the run's result as JSON (the wait is over)."""
STREAM_MAXLEN = 10_000
"""Events a run's stream keeps; a client further behind is answered from the trace file (if it can read it)."""
READ_BLOCK_MS = 5_000
"""How long one XREAD waits for a run's next event before it asks again (a shutdown cancels it sooner)."""
STREAM_TTL_S = 3600
"""How long a finished run's stream stays in Redis: reconnects and `GET /v1/runs/{id}` within the hour."""
STREAM_CONNECTIONS = int(os.environ.get("DIAGRAMA_REDIS_CONNECTIONS") or 4096)
"""Connections to the broker an API process may open (one per event stream waiting, a few for the rest)."""

EventSink = Callable[[int, str, bytes], None]
"""sink(number, event name, the event's JSON): hears each event of one run, in order."""


def stream_key(run_id: str) -> str:
    return f"diagrama:api:events:{run_id}"


def run_key(run_id: str) -> str:
    """A hash the API writes when it enqueues a run (robot, level): the run exists before any worker takes it."""
    return f"diagrama:api:run:{run_id}"


def render_event(fields: dict[str, Any], redactor: Redactor) -> bytes:
    """The event as the trace file's line has it (no newline): rendered the same way, scrubbed by the run's
    redactor (an observer sees the fields before the trace's sink scrubs the rendered line)."""
    try:
        line = orjson.dumps(fields, json_default)
    except TypeError:  # a value orjson refuses (2 ** 70): the writer that never refuses, as the trace does
        line = dumps(fields)
    return bytes(redactor.encoded(line))


def result_fields(result: RunResult) -> dict[str, Any]:
    """A finished run as the API answers it: `diagrama run --output json`'s object less the server's trace path,
    with its duration and steps, and what it waits for when it stopped at a Wait (the result is already scrubbed)."""
    return {"run_id": result.run_id, "status": result.status, "variables": plain(result.variables),
            "path": list(result.path), "errors": plain(result.errors), "steps": result.steps,
            "duration_ms": round(result.duration * 1000, 3), "cost": dict(result.cost), "usage": dict(result.usage),
            **({"waiting": plain(result.waiting)} if result.waiting is not None else {})}


def event_name(data: bytes) -> str:
    found = orjson.loads(data).get("event")
    return found if isinstance(found, str) else "message"


def relay_observer(sink: EventSink, first: int = 1) -> Callable[[Diagram, Redactor], RunObserver]:
    """A run observer factory (Services.run_observers; put it last, after any observer that adds fields) that numbers
    each event from `first` and hands it to `sink` rendered and scrubbed."""

    def factory(_diagram: Diagram, redactor: Redactor) -> RunObserver:
        number = first - 1

        def observe(fields: dict[str, Any]) -> None:
            nonlocal number
            number += 1
            sink(number, str(fields.get("event", "")), render_event(fields, redactor))

        return observe

    return factory


class RedisEventWriter:
    """A worker's side of one run's stream: events are sent in batches, when the run next waits (as the trace writes
    its lines), so that a Debug run's steps cost a pipeline each wait rather than a round trip each."""

    def __init__(self, client: Any, run_id: str) -> None:
        self._client = client
        self.run_id = run_id
        self.key = stream_key(run_id)
        self._pending: list[tuple[int, bytes]] = []
        self._scheduled = False
        last = client.xrevrange(self.key, count=1)
        # A task delivered again (its worker died): the new attempt's events follow the old ones' numbers.
        self.first = int(last[0][0].split(b"-")[1]) + 1 if last else 1
        self.last = self.first - 1

    def sink(self, number: int, _name: str, data: bytes) -> None:
        self.last = number
        self._pending.append((number, data))
        if not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._scheduled = True
            loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        pipe = self._client.pipeline(transaction=False)
        for number, data in pending:
            pipe.xadd(self.key, {EVENT_FIELD: data}, id=f"0-{number}", maxlen=STREAM_MAXLEN, approximate=True)
        try:
            pipe.execute()
        except Exception as exc:
            if not outage(exc):
                raise
            # The broker restarts: the events wait here (the trace has them too) and go with the next flush — the
            # end's, which waits for the broker (engine.runs.api_durable.patiently).
            self._pending = (pending + self._pending)[-STREAM_MAXLEN:]

    def end(self, result: dict[str, Any]) -> None:
        """After the run is recorded: the entry that ends the stream, with the run's result; the stream then expires."""
        self.flush()
        if self._pending:
            raise ConnectionError("the broker did not take the run's last events")  # tried again, with them
        pipe = self._client.pipeline(transaction=False)
        pipe.xadd(self.key, {END_FIELD: orjson.dumps(result)}, id=f"0-{self.last + 1}")
        pipe.expire(self.key, STREAM_TTL_S)
        pipe.expire(run_key(self.run_id), STREAM_TTL_S)
        pipe.execute()


_AWAY_PAUSE_S = 1.0


class RedisEventReader:
    """An API process's side: reads a run's stream after an event number, waiting for more (XREAD BLOCK)."""

    def __init__(self, url: str) -> None:
        import redis.asyncio

        # Any: redis's own types say str or bytes by option. The socket waits longer than a blocking read may
        # (redis-py's default, 5 s, would end a read that blocks its full length).
        # Each event stream holds a connection in its blocking read: a pool of redis-py's default 100 refused new
        # runs past a hundred streams (MaxConnectionsError). Sized for thousands, and waiting, never refusing, when
        # every one is taken.
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url, max_connections=STREAM_CONNECTIONS, timeout=30, socket_timeout=READ_BLOCK_MS / 1000 + 10)
        self.client: Any = redis.asyncio.Redis(connection_pool=pool)

    async def read(self, run_id: str, after: int, block_ms: int | None) -> list[tuple[int, bytes, bytes]]:
        """Entries after event `after`: (number, field, value), field EVENT_FIELD or END_FIELD; waits up to
        `block_ms` for the first (None: does not wait)."""
        try:
            found = await self.client.xread({stream_key(run_id): f"0-{after}"}, count=500, block=block_ms)
        except Exception as exc:  # redis-py's ConnectionError is its own class, not the built-in one
            if not outage(exc):
                raise
            # The broker restarts: the stream's reader waits for it (its client reconnects) rather than end the
            # stream without its terminal event.
            await asyncio.sleep(_AWAY_PAUSE_S)
            return []
        entries: list[tuple[int, bytes, bytes]] = []
        for _key, items in found or []:
            for entry_id, values in items:
                number = int(entry_id.split(b"-")[1])
                for field_name, value in values.items():
                    entries.append((number, field_name, value))
        return entries

    async def first_number(self, run_id: str) -> int | None:
        """The number of the oldest event the stream still holds (None: no stream)."""
        found = await self.client.xrange(stream_key(run_id), count=1)
        return int(found[0][0].split(b"-")[1]) if found else None

    async def close(self) -> None:
        await self.client.aclose()
