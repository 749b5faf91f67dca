"""Runs on Celery workers (`diagrama api --backend celery`): this process only enqueues, reads results from the run
store and relays events from each run's Redis stream; what API processes share is the broker and the run store.

The worker side is engine.runs.celery_backend's `diagrama.run_api` task. The run's existence (and robot) is a
Redis hash written before the task is sent, so a queued run is known to every API process; its events are the
stream the worker writes (engine.runs.event_relay); a run older than the stream's hour is read from the store, and
its events from the trace file when the runs folder is shared. Per-key limits are a token bucket in Redis, shared by
every API process.

Durable runs: the checkpoint store is the run store's SQLite file, which the API reads (a run's live status, what it
waits for, a resume's checks, sessions) and the workers write. A resume is queued as its own task after the API
checked it; a Redis key held from then until its worker recorded the run lets one resume through at a time (409 for
another), and the run's stream starts again after its trace's lines (the first part's events stay in the trace).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson

from engine.compile.diagram import Diagram
from engine.format.jsonout import plain
from engine.format.levels import MessageLevel, level_name
from engine.format.spec import Budget
from engine.runs.api_durable import PATIENCE_S, RESUME_TASK, resume_key
from engine.runs.celery_backend import API_TASK, DEFAULT_BROKER, make_app
from engine.runs.event_relay import (
    END_FIELD,
    EVENT_FIELD,
    READ_BLOCK_MS,
    RedisEventReader,
    event_name,
    run_key,
    stream_key,
)
from engine.runs.outages import outage
from engine.runs.published import robot_folder
from engine.runs.service_logs import log
from engine.runs.store import RunStore
from engine.runs.turn import Turn, new_turn
from engine.runtime.trace import Event
from engine.web.service.durable import Durable, Refused, live_answer
from engine.web.service.ended import RunEnded, RunEndings
from engine.web.service.keys import checked_limit
from engine.web.service.models import RunAnswer
from engine.web.service.recorded import recorded_answer
from engine.web.service.runs import RunEvent, trace_events

__all__ = ["CeleryBackend", "RedisRateLimits"]

_KEY_BUCKET = """
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local rate, capacity, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('EXPIRE', KEYS[1], 3600)
return tostring(wait)
"""
"""A key's bucket (KEYS[1]); ARGV rate a second, capacity, now. Seconds to wait, 0 when a token was taken: the
batch's vendor bucket (engine.runs.celery_backend), holding a minute's worth here."""


_T = TypeVar("_T")
_REQUEST_PATIENCE_S = 20.0
"""How long a request waits for a broker or run store that restarts before it answers 503."""


class RedisRateLimits:
    """LocalRateLimits' interface with each key's bucket in Redis: the limit holds across API processes."""

    def __init__(self, client: Any) -> None:
        self._script = client.register_script(_KEY_BUCKET)

    async def take(self, key_id: str, rpm: float) -> float:
        checked_limit(rpm)  # nan and inf would reach Lua's arithmetic as text: refused here, as LocalRateLimits does
        wait = await self._script(keys=[f"diagrama:api:rpm:{key_id}"], args=[rpm / 60, rpm, time.time()])
        return float(wait)


class CeleryBackend:
    takes_over = False  # the worker that takes the task marks the run running (engine.runs.api_durable)

    def __init__(self, folder: Path, runs_dir: Path, *, broker: str | None, store_url: str, offline: bool,
                 durable: Durable) -> None:
        self.folder = folder.resolve()
        self.runs_dir = runs_dir.resolve()
        self.broker = broker or os.environ.get("DIAGRAMA_BROKER") or DEFAULT_BROKER
        self.app = make_app(self.broker)
        self.reader = RedisEventReader(self.broker)
        self.store = RunStore(store_url)
        self.offline = offline
        self.limits = RedisRateLimits(self.reader.client)
        self.durable = durable
        self.draining = False
        """Set while this API process drains: it takes no new runs (its runs are the workers', and go on)."""
        self.endings = RunEndings()
        """Told when this process reads a run's end from its stream (once per end): the metrics."""
        self._log = log("diagrama.api")

    def active(self) -> int:
        return 0  # the runs are the workers'

    async def start(self, robot: str, diagram: Diagram, inputs: dict[str, Any], level: MessageLevel | None,
                    key_id: str | None, secrets: list[str], session: str | None = None,
                    budget: Budget | None = None, *, stream: bool = False, trigger: str | None = None) -> str:
        # `secrets` (the caller's key) stay here: sent with the task, they would sit in the broker. The workers scrub
        # their own environment's keys.
        turn = new_turn(diagram, inputs, store=self.durable.store, session=session)
        if session is not None:
            await self.durable.hold(turn)  # held under the run's id from now: its worker's turn finds it its own
        run_id = turn.run_id
        client = self.reader.client
        try:
            await client.hset(run_key(run_id), mapping={"robot": robot, "key_id": key_id or "",
                                                        "created": time.time(), "session": session or ""})
            await client.expire(run_key(run_id), 24 * 3600)  # a run left queued that long is forgotten
            await asyncio.to_thread(self.app.send_task, API_TASK, args=[
                run_id, str(diagram.path.resolve()), plain(inputs), self.store.url, str(self.runs_dir), self.offline,
                level_name(level) if level is not None else None],
                kwargs={"key_id": key_id, "session": session,
                        **({"budget": budget.model_dump(exclude_none=True)} if budget is not None else {}),
                        **({"stream": True} if stream else {}), **({"trigger": trigger} if trigger else {})})
        except Exception as exc:
            if not outage(exc):
                raise
            # Not accepted: the caller is told to try again, never given a run that no worker will ever see.
            if session is not None:
                await self.durable.let_go(turn)
            raise Refused(503, "the broker cannot be reached: the run was not started; send it again shortly",
                          [f"broker: {type(exc).__name__}"]) from None
        self._log.info("run_queued", run_id=run_id, robot=robot, key_id=key_id, backend="celery")
        return run_id

    async def resume(self, robot: str, turn: Turn, key_id: str | None, secrets: list[str]) -> str:
        run_id = turn.run_id
        client = self.reader.client
        if not await client.set(resume_key(run_id), "queued", nx=True, ex=24 * 3600):
            raise Refused(409, f"run '{run_id}' is already being resumed")
        # The first part's stream (its end entry) goes: waiting for this part's end reads the new one, and the
        # first part's events are the trace's.
        await client.delete(stream_key(run_id))
        await client.hset(run_key(run_id), mapping={"robot": robot, "key_id": key_id or "", "created": time.time()})
        await client.expire(run_key(run_id), 24 * 3600)
        given = turn.resumed.answer if turn.resumed is not None else None
        await asyncio.to_thread(self.app.send_task, RESUME_TASK, args=[
            run_id, plain(given.value) if given is not None else None, self.store.url, str(self.runs_dir),
            self.offline], kwargs={"key_id": key_id})
        self._log.info("resume_queued", run_id=run_id, robot=robot, key_id=key_id, backend="celery")
        return run_id

    async def _patient(self, work: Callable[[], Awaitable[_T]], wait_s: float = _REQUEST_PATIENCE_S) -> _T:
        """`work()`, tried again while the broker or the run store restarts, for `wait_s`; then a 503 (never a 500
        for a service that is away, nor a stream cut without its end while it comes back)."""
        gives_up = time.monotonic() + wait_s
        pause = 0.2
        while True:
            try:
                return await work()
            except Exception as exc:
                if not outage(exc):
                    raise
                if time.monotonic() + pause > gives_up:
                    raise Refused(503, "the broker or the run store cannot be reached now: ask again shortly",
                                  [f"service: {type(exc).__name__}"]) from None
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)

    async def result(self, run_id: str) -> RunAnswer:
        robot = await self._patient(lambda: self._robot(run_id), PATIENCE_S) or ""
        after = 0
        while True:
            for number, field, value in await self.reader.read(run_id, after, READ_BLOCK_MS):
                after = number
                if field == END_FIELD:
                    ended = RunAnswer(robot=robot, **orjson.loads(value))
                    self._tell_end(ended)
                    return ended
            found = await self._patient(lambda: self._recorded_now(run_id), PATIENCE_S)
            if found is not None:
                self._tell_end(found)
                return await self._patient(functools.partial(self._live, run_id, found), PATIENCE_S) or found

    async def _recorded_now(self, run_id: str) -> RunAnswer | None:
        """The run's record, once the store has it and no resume of it is queued (the stream expired, or never
        came: a lost task; its stream's end entry is on its way, or is gone)."""
        row = await asyncio.to_thread(self.store.run, run_id)
        if row is None or await self.reader.client.exists(resume_key(run_id)):
            return None
        return recorded_answer(row)

    async def _robot(self, run_id: str) -> str | None:
        found = await self.reader.client.hget(run_key(run_id), "robot")
        return found.decode() if found else None

    async def _live(self, run_id: str, found: RunAnswer | None) -> RunAnswer | None:
        """`found` with the run's status now: a resume queued or going, else its durable record's."""
        if await self.reader.client.exists(resume_key(run_id)):
            robot = found.robot if found is not None else await self._robot(run_id) or ""
            started = await self.reader.first_number(run_id) is not None
            return RunAnswer(run_id=run_id, robot=robot, status="running" if started else "queued")
        return live_answer(found, await self.durable.row(run_id))

    async def get(self, run_id: str) -> RunAnswer | None:
        return await self._patient(lambda: self._get(run_id))

    async def _get(self, run_id: str) -> RunAnswer | None:
        row = await asyncio.to_thread(self.store.run, run_id)
        if row is not None:
            return await self._live(run_id, recorded_answer(row)) \
                if robot_folder(Path(str(row["diagram"]))) == self.folder else None
        robot = await self._robot(run_id)
        if robot is None:
            return None
        started = await self.reader.first_number(run_id) is not None
        return RunAnswer(run_id=run_id, robot=robot, status="running" if started else "queued")

    async def events(self, run_id: str, after: int) -> AsyncIterator[RunEvent] | None:
        return await self._patient(lambda: self._events(run_id, after))

    async def _events(self, run_id: str, after: int) -> AsyncIterator[RunEvent] | None:
        row = await asyncio.to_thread(self.store.run, run_id)
        if row is None and await self._robot(run_id) is None:
            return None
        trace = Path(row["trace"]) if row is not None and row.get("trace") else self.runs_dir / run_id / "trace.jsonl"
        resuming = bool(await self.reader.client.exists(resume_key(run_id)))
        return self._follow(run_id, after, trace, recorded=row is not None and not resuming)

    # Long: a stream's two sources (the trace file, then the Redis stream) and its three ends, in order.
    async def _follow(self, run_id: str, after: int, trace: Path, *, recorded: bool) -> AsyncIterator[RunEvent]:
        patient = functools.partial(self._patient, wait_s=PATIENCE_S)  # a stream waits out a broker's restart
        first = await patient(lambda: self.reader.first_number(run_id))
        # Events are the trace's lines: what the stream lacks (older events; a resumed run's first part, before its
        # worker writes) is read from the file, and the stream followed after it, without a gap.
        if first is None or after + 1 < first:
            # Older than the stream holds: the trace file has them, where this process can read the runs folder.
            until = None if first is None else first - 1
            for event in await asyncio.to_thread(_read_trace, trace, after, until):
                yield event
                after = event[0]
            if first is None and recorded:
                return
        finished = False
        while True:
            entries = await self.reader.read(run_id, after, READ_BLOCK_MS)
            for number, field, value in entries:
                if field == END_FIELD:
                    robot = await patient(lambda: self._robot(run_id)) or ""
                    self._tell_end(RunAnswer(robot=robot, **orjson.loads(value)))
                    return
                if field != EVENT_FIELD:
                    continue
                name = event_name(value)
                yield number, name, value
                after = number
                finished = finished or name == Event.RUN_FINISHED
            if entries:
                continue
            # After run_finished the stream stays open until the worker has recorded the run (its end entry): a
            # client that reads the run as soon as its stream closes finds the result, not `running`.
            if finished and await patient(lambda: asyncio.to_thread(self.store.run, run_id)) is not None:
                return  # recorded, but the end entry never came (its worker died just after)
            if await patient(lambda: self._stopped(run_id)):
                return  # interrupted or cancelled where no end entry was written: the stream's end says which

    async def drain(self, timeout_s: float) -> None:
        """Stop taking runs; the runs go on on the workers. Event streams and waits in flight get `timeout_s` to end
        (the server waits for its connections), then close: a client reconnects to another process."""
        self.draining = True
        self._log.info("draining", timeout_s=timeout_s)

    async def _stopped(self, run_id: str) -> bool:
        """Whether the run's record says it stopped for good without its worker's end entry (interrupted and
        waiting for a resume, or cancelled) and no resume of it is queued."""
        row = await self.durable.row(run_id)
        return row is not None and row.get("stored_status") in ("interrupted", "cancelled") \
            and not await self.reader.client.exists(resume_key(run_id))

    async def cancel(self, run_id: str) -> bool:
        """Ask the run's worker to stop it at its next step (a queued run stops before its first): True once asked.
        The worker that holds the run's lease reads the request (engine.runs.leases)."""
        from engine.runs.leases import cancel_key

        await self.reader.client.set(cancel_key(run_id), "1", ex=24 * 3600)
        return True

    def _tell_end(self, ended: RunAnswer) -> None:
        """A run's end, read from its stream's end entry or its record (whichever a reader saw first: told once; a
        resumed run's next part ends with another status or more steps)."""
        took = ended.duration_ms
        self.endings.tell(RunEnded(ended.run_id, ended.robot, ended.status, took / 1000 if took is not None else None,
                                   ended.steps), once=(ended.run_id, ended.status, ended.steps))

    async def close(self) -> None:
        await self.reader.close()
        await asyncio.to_thread(self.store.close)
        self.durable.close()


def _read_trace(trace: Path, after: int, until: int | None) -> list[RunEvent]:
    return list(trace_events(trace, after, until))

