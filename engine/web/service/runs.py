"""Runs in the API's own process (the local backend): each request's run is a task on the server's event loop, its
events kept in a bounded buffer that SSE clients read as they arrive, its result recorded in the run store.

A run's events are numbered as its trace's lines (engine.runs.event_relay); a client further behind than the buffer,
or asking about a run this process no longer holds, is answered from the trace file. The run belongs to no request:
a client that goes away (a wait, an event stream) leaves it running; the server's shutdown interrupts it.

Runs are durable where the checkpoint store is (engine.web.service.durable): one may stop at a Wait and be resumed
(its events go on after its trace's lines), and a run of a session holds it for its turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import re
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from engine.compile.diagram import Diagram
from engine.errors import TurnRefused
from engine.format.levels import MessageLevel
from engine.format.redact import Redactor
from engine.format.spec import Budget
from engine.runs.api_durable import trace_lines
from engine.runs.event_relay import event_name, render_event, result_fields
from engine.runs.published import robot_folder
from engine.runs.service_logs import log
from engine.runs.turn import Turn, new_turn, run_turn
from engine.runtime.context import RunObserver, Services
from engine.runtime.execute import RunResult
from engine.runtime.trace import Event
from engine.web.service.durable import Durable, Refused, live_answer
from engine.web.service.ended import RunEnded, RunEndings
from engine.web.service.models import RunAnswer, RunStatus
from engine.web.service.recorded import recorded_answer

__all__ = ["LocalBackend", "RunEvent", "run_id_shape", "trace_events"]

RunEvent = tuple[int, str, bytes]
"""(number, event name, the event's JSON): one event of a run's stream."""

_RUN_ID = re.compile(r"^[0-9A-Za-z_-]{1,80}$")
_BUFFER = 4096
"""Events a run keeps in memory for its clients; an older one is read back from the trace file."""
_RECORD_AFTER_S = 0.05
"""Runs that end within this long of each other are written to the store in one transaction, off the loop: a commit
and a thread's turn for each run cost more CPU than the run itself (a three-block one)."""
_ENDED: frozenset[RunStatus] = frozenset({"succeeded", "failed", "waiting", "interrupted", "cancelled"})
_KEPT_FINISHED = 256
"""Finished runs kept in memory with their buffers (reconnects, GET); older ones are read from the store or trace."""


def run_id_shape(run_id: str) -> bool:
    """Whether `run_id` can be a run's id (a request's never reaches a path or a query otherwise)."""
    return _RUN_ID.match(run_id) is not None


class RunRecord:
    """One run this process started: its events so far, and its result once it ends."""

    def __init__(self, run_id: str, robot: str, trace: Path | None, first: int = 1) -> None:
        self.run_id = run_id
        self.robot = robot
        self.trace = trace
        self.status: RunStatus = "running"
        self.result: dict[str, Any] | None = None
        self.events: deque[RunEvent] = deque(maxlen=_BUFFER)
        self.started = time.time()
        self.session: str | None = None
        self.first = first
        """Its first event's number: 1, or a resumed run's next trace line (the lines before are its first part's)."""
        self.last = first - 1
        self.listeners = 0
        self.durable = False
        """Whether its diagram checkpoints: a drain stops it at its next step rather than waiting for its end."""
        self._changed = asyncio.Event()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def add(self, number: int, name: str, data: bytes) -> None:
        """The relay's sink: called from inside the run, on the loop's thread, for each event it records."""
        self.events.append((number, name, data))
        self.last = number
        if self.listeners:  # nobody to wake for most runs: not even an Event's allocation
            self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def finish(self, result: dict[str, Any] | None, status: RunStatus) -> None:
        self.result = result
        self.status = status
        self._wake()
        if not self.done.done():
            self.done.set_result(None)

    def answer(self) -> RunAnswer:
        if self.result is None:
            return RunAnswer(run_id=self.run_id, robot=self.robot, status=self.status)
        return RunAnswer(robot=self.robot, **{**self.result, "status": self.status})

    async def follow(self, after: int) -> AsyncIterator[RunEvent]:
        """The run's events after number `after`, as they come, up to `run_finished`."""
        self.listeners += 1
        try:
            while True:
                changed = self._changed  # taken before reading: an event added after the read sets this one
                first = self.events[0][0] if self.events else self.last + 1
                if after + 1 < first and self.trace is not None:  # fell behind the buffer: the file has them
                    for event in trace_events(self.trace, after, until=first - 1):
                        yield event
                        after = event[0]
                start = max(0, after + 1 - first)
                for event in list(itertools.islice(self.events, start, None)):
                    yield event
                    after = event[0]
                    if event[1] == Event.RUN_FINISHED:
                        await asyncio.shield(self.done)  # closed once the result is set: a GET then reads it
                        return
                if self.done.done() and after >= self.last:
                    return  # ended without a run_finished event it could send (its trace could not be written)
                await changed.wait()
        finally:
            self.listeners -= 1


def trace_events(trace: Path, after: int, until: int | None = None) -> Iterator[RunEvent]:
    """A trace file's events numbered by line, after `after` (and up to `until`); none when it cannot be read."""
    try:
        with trace.open("rb") as file:
            for number, line in enumerate(file, 1):
                if number <= after:
                    continue
                if (until is not None and number > until) or not line.endswith(b"\n"):
                    return  # a line still being written is not yet an event
                data = line.rstrip(b"\n")
                try:
                    yield number, event_name(data), data
                except orjson.JSONDecodeError:
                    return
    except OSError:
        return


def run_from_trace(trace: Path, run_id: str) -> RunAnswer | None:
    """What a trace alone tells of a finished run (no variables: the store keeps those)."""
    events = [orjson.loads(data) for _, _, data in trace_events(trace, 0)]
    if not events:
        return None
    finished = next((e for e in reversed(events) if e.get("event") == Event.RUN_FINISHED), None)
    robot = Path(str(events[0].get("path", ""))).stem
    if finished is None or events[-1].get("event") != Event.RUN_FINISHED:
        return RunAnswer(run_id=run_id, robot=robot, status="interrupted")
    status = finished.get("status")
    return RunAnswer(run_id=run_id, robot=robot, status=status if status in ("succeeded", "waiting") else "failed",
                     path=list(finished.get("path") or []), errors=list(finished.get("errors") or []),
                     steps=finished.get("steps"), duration_ms=finished.get("duration_ms"))


class LocalBackend:
    """Runs as tasks of this server; the newest finished ones stay in memory."""

    takes_over = True

    def __init__(self, folder: Path, runs_dir: Path, services: Services, *, store: Any = None,
                 durable: Durable) -> None:
        self.folder = folder.resolve()
        self.runs_dir = runs_dir
        # One Services for every run, as a batch shares one: one client pool, one simulator. The relay is its last
        # observer, after any that adds fields the trace's line then has (--otel's).
        self.services = services
        services.run_observers = [*services.run_observers, self._relay]
        self.store = store
        """A RunStore each run is recorded in (off the loop, after its answer), or None without the batch extra."""
        self.durable = durable
        services.checkpoints = durable.store  # each run of a durable diagram checkpoints (Start `durable`)
        self._writes = getattr(durable.store, "off_loop", None)
        if self._writes is not None:  # every run here shares this server's one loop: PostgreSQL's writes go on it
            # (DIAGRAMA_STORE_WRITES=thread: on a writer thread instead, as measured by benchmarks.faults)
            self._writes.on_loop = services.environ.get("DIAGRAMA_STORE_WRITES", "loop") != "thread"
        self._to_record: list[tuple[RunResult, Diagram, dict[str, Any]]] = []
        self._known_to_record: dict[str, dict[str, Any]] = {}
        """Run id → what the store keeps that its result does not say (when it started, its session)."""
        self.endings = RunEndings()
        """Told when each run (or a resumed part) ends here: the metrics."""
        self.runs: OrderedDict[str, RunRecord] = OrderedDict()
        self.tasks: set[asyncio.Task[Any]] = set()
        self._recording: set[asyncio.Task[Any]] = set()
        """The tasks among `tasks` that write finished runs to the store."""
        self._log = log("diagrama.api")
        self.draining = False
        """Set when the server drains (SIGTERM): new runs and resumes are refused (503), `ready` answers 503."""

    def active(self) -> int:
        return sum(1 for record in self.runs.values() if not record.done.done())

    def _relay(self, _diagram: Diagram, redactor: Redactor) -> RunObserver:
        """The run observer that hands each event to its run's record, numbered as the trace's lines."""
        record: RunRecord | None = None
        number = 0

        def observe(fields: dict[str, Any]) -> None:
            nonlocal record, number
            if record is None:
                record = self.runs.get(str(fields.get("run_id")))
                if record is None:
                    return  # not a run of this backend's (cannot happen: its record is made before it starts)
                number = record.first - 1
            number += 1
            record.add(number, str(fields.get("event", "")), render_event(fields, redactor))

        return observe

    def _open(self) -> None:
        if self.draining:
            raise Refused(503, "this server is stopping (draining its runs): send the run to another, or again "
                               "once it is back")

    async def start(self, robot: str, diagram: Diagram, inputs: dict[str, Any], level: MessageLevel | None,
                    key_id: str | None, secrets: list[str], session: str | None = None,
                    budget: Budget | None = None, *, stream: bool = False, trigger: str | None = None) -> str:
        self._open()
        turn = new_turn(diagram, inputs, store=self.durable.store, session=session)
        if trigger is not None:
            turn.record["trigger"] = trigger
        services = dataclasses.replace(self.services, stream=True) if stream else self.services  # the same shared parts
        turn.budget = budget
        if session is not None:
            await self.durable.hold(turn)

        async def run() -> RunResult:
            return await run_turn(turn, services=services, runs_dir=self.runs_dir, message_level=level,
                                  secrets=secrets, access=self.durable.access)

        self._launch(RunRecord(turn.run_id, robot, self.runs_dir / turn.run_id / "trace.jsonl"), diagram, inputs, run,
                     key_id, session, trigger)
        return turn.run_id

    async def resume(self, robot: str, turn: Turn, key_id: str | None, secrets: list[str]) -> str:
        """Go on with a run's turn, checked and taken (engine.web.service.durable): under its own id, its events after
        its trace's lines."""
        self._open()
        run_id = turn.run_id
        trace = self.runs_dir / run_id / "trace.jsonl"
        first = await asyncio.to_thread(trace_lines, trace) + 1

        async def run() -> RunResult:
            return await run_turn(turn, services=self.services, runs_dir=self.runs_dir, secrets=secrets,
                                  access=self.durable.access)

        self.runs.pop(run_id, None)  # its first part's record: the new one follows on from its trace
        self._launch(RunRecord(run_id, robot, trace, first), turn.diagram, turn.inputs, run, key_id, turn.session)
        return run_id

    def _launch(self, record: RunRecord, diagram: Diagram, inputs: dict[str, Any],
                run: Callable[[], Awaitable[RunResult]], key_id: str | None, session: str | None,
                trigger: str | None = None) -> None:
        run_id = record.run_id
        record.session = session
        record.durable = diagram.settings.durable
        self.runs[run_id] = record
        self._forget_old()
        began = time.perf_counter()

        async def go() -> None:
            status: RunStatus = "interrupted"
            result: RunResult | None = None
            try:
                result = await run()
                status = result.status if result.status in _ENDED else "failed"
                record.finish(result_fields(result), status)
                if self.store is not None and status != "interrupted":  # it goes on: recorded when it ends
                    self._to_record.append((result, diagram, inputs))
                    self._known_to_record[run_id] = {"started": record.started, "session": session,
                                                     **({"trigger": trigger} if trigger else {})}
                    if len(self._to_record) == 1:  # the first of a batch: the rest join it for one commit
                        asyncio.get_running_loop().call_later(_RECORD_AFTER_S, self._record_now)
            except TurnRefused as refused:  # its session's last turn stopped unfinished while this one waited
                status = "failed"
                record.finish({"run_id": run_id, "status": "failed",
                               "errors": [{"block": None, "type": refused.reason, "message": refused.message}]},
                              status)
            finally:
                if not record.done.done():
                    record.finish(None, status)  # cancelled (the server stops): the trace says interrupted
                took = time.perf_counter() - began
                self._log.info("run", run_id=run_id, robot=record.robot, key_id=key_id, status=status,
                               duration_ms=round(took * 1000, 3), backend="local",
                               **({"session": session} if session is not None else {}))
                self.endings.tell(RunEnded(run_id, record.robot, status, took, result.steps if result else None,
                                           result.tokens if result else None))

        self._spawn(go())

    def _record_now(self) -> None:
        batch, self._to_record = self._to_record, []
        known, self._known_to_record = self._known_to_record, {}
        if batch:
            task = self._spawn(asyncio.to_thread(self._record, batch, known))
            self._recording.add(task)
            task.add_done_callback(self._recording.discard)

    def _record(self, batch: list[tuple[RunResult, Diagram, dict[str, Any]]],
                known: dict[str, dict[str, Any]]) -> None:
        try:
            self.store.record_runs(batch, known)
        except Exception as exc:  # a store that cannot be written (locked, full): the traces still hold the runs
            self._log.warning("runs_not_recorded", run_ids=[result.run_id for result, _, _ in batch],
                              error=type(exc).__name__)

    async def recorded(self) -> None:
        """Every finished run written to the store (at shutdown; tests)."""
        self._record_now()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def _spawn(self, work: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _forget_old(self) -> None:
        """Drop the oldest finished runs past _KEPT_FINISHED; a look at the oldest few, not a pass over all."""
        extra = len(self.runs) - _KEPT_FINISHED
        if extra <= 0:
            return
        for run_id in [run_id for run_id, _ in zip(self.runs, range(extra + 8), strict=False)]:
            if extra <= 0:
                break
            if self.runs[run_id].done.done():  # one still running stays, however old
                del self.runs[run_id]
                extra -= 1

    async def result(self, run_id: str) -> RunAnswer:
        """The run's answer once it ends; a caller that goes away leaves it running (shielded)."""
        record = self.runs[run_id]
        await asyncio.shield(record.done)
        return record.answer()

    async def get(self, run_id: str) -> RunAnswer | None:
        record = self.runs.get(run_id)
        if record is not None:
            found = record.answer()
            # A run that stopped here at a Wait may since have been cancelled or resumed elsewhere: its record says.
            return live_answer(found, await self.durable.row(run_id)) if found.status == "waiting" else found
        if not _RUN_ID.match(run_id):
            return None
        durable = await self.durable.row(run_id)
        return live_answer(await self._finished(run_id), durable)

    async def _finished(self, run_id: str) -> RunAnswer | None:
        if self.store is not None:
            row = await asyncio.to_thread(self.store.run, run_id)
            if row is not None:
                return self._recorded(row)
        trace = self.runs_dir / run_id / "trace.jsonl"
        found = await asyncio.to_thread(run_from_trace, trace, run_id) if trace.is_file() else None
        return found if found is not None and self._ours(found.robot) else None

    def _ours(self, robot: str) -> bool:
        return (self.folder / f"{robot}.yaml").is_file()

    def _recorded(self, row: dict[str, Any]) -> RunAnswer | None:
        diagram = Path(str(row["diagram"]))
        if robot_folder(diagram) != self.folder:
            return None  # a run of another diagram, recorded in the same store
        return recorded_answer(row)

    async def events(self, run_id: str, after: int) -> AsyncIterator[RunEvent] | None:
        """The run's events after `after`, following it while it runs; None for a run this server does not know."""
        record = self.runs.get(run_id)
        if record is not None:
            return record.follow(after)
        found = await self.get(run_id)
        if found is None:
            return None
        return _replay(self.runs_dir / run_id / "trace.jsonl", after)

    async def cancel(self, run_id: str) -> bool:
        """Ask a run this process runs to stop at its next step, `cancelled`; False when it runs elsewhere or ended."""
        record = self.runs.get(run_id)
        if record is None or record.done.done():
            return False
        self.services.stops[run_id] = "cancelled"
        record.done.add_done_callback(functools.partial(self._stopped, run_id))
        return True

    def _stopped(self, run_id: str, _done: object) -> None:
        self.services.stops.pop(run_id, None)

    # Long: the drain's three phases in order, each a few lines.
    async def drain(self, timeout_s: float) -> None:
        """Stop taking runs; each durable run stops at its next step (its last checkpoint is where it goes on:
        `interrupted`, resumable by any process), the others have `timeout_s` to end; what is left then is
        interrupted (cancelled here, as a shutdown does)."""
        self.draining = True
        going = {run_id: record for run_id, record in self.runs.items() if not record.done.done()}
        for run_id, record in going.items():
            if record.durable:
                self.services.stops.setdefault(run_id, "interrupted")
                record.done.add_done_callback(functools.partial(self._stopped, run_id))
        self._log.info("draining", runs=len(going), timeout_s=timeout_s)
        waits = [asyncio.shield(record.done) for record in going.values()]
        if waits:
            _done, late = await asyncio.wait(waits, timeout=timeout_s)
            if late:
                self._log.warning("drain_timeout", runs=[run_id for run_id, record in going.items()
                                                         if not record.done.done()])
                for task in [task for task in self.tasks if task not in self._recording]:
                    task.cancel()
                await asyncio.wait(late, timeout=5)
        await self.recorded()

    async def close(self) -> None:
        # Runs still going are interrupted (their traces say so); the store's writes are let finish, not cancelled
        # (a cancelled thread's write goes on anyway, past the store's closing), and the runs that ended before the
        # shutdown are written with them.
        running = [task for task in self.tasks if task not in self._recording]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.recorded()
        if self._writes is not None:
            await self._writes.close()
        self.durable.close()


async def _replay(trace: Path, after: int) -> AsyncIterator[RunEvent]:
    for event in await asyncio.to_thread(lambda: list(trace_events(trace, after))):
        yield event
