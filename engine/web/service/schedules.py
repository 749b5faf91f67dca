"""`diagrama api` runs its robots' schedules (a diagram's `schedules:`, engine.format.triggers): one task of the API
process sleeps until the next tick of any schedule and starts its run through the backend's `start`, as a request
does, marked `trigger: schedule:N` (N the schedule's index in the file).

Several API processes may share a run store: each tick is claimed there (engine.runs.trigger_claims), and the one
process whose claim wins starts the run. The policies:
- missed ticks (the server was down, or its loop stalled): the most recent one fires once if it is at most GRACE_S
  old, the others are skipped, each skip logged (`schedule_missed`);
- overlap: a tick whose schedule's last run is still running (or queued) starts nothing, logged
  (`schedule_overlap`); the next tick tries again.
The diagrams are read again every RESCAN_S (a changed file's schedules apply from then).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.format.triggers import ScheduleSpec, last_tick, next_tick
from engine.runs.service_logs import log
from engine.web.service.durable import Refused
from engine.web.service.robots import InputProblems, Robots, typed_inputs

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.web.service.app import Backend

__all__ = ["GRACE_S", "RESCAN_S", "Scheduler", "schedule_trigger"]

GRACE_S = 60.0
"""How late a tick may still fire (a server started, or its loop stalled, after it)."""
RESCAN_S = 10.0
"""How often the folder's diagrams are read again for their schedules."""
_GOING = ("running", "queued")


def schedule_trigger(index: int) -> str:
    """How a run a schedule started is marked in its record."""
    return f"schedule:{index}"


@dataclass
class _Due:
    schedule: ScheduleSpec
    tick: float
    """The next tick to fire."""


class Scheduler:
    """The schedules of the folder's robots: `run()` is the task the API's lifespan starts; `fire_due(now)` one
    round of it (tests drive it with their own clock)."""

    def __init__(self, robots: Robots, backend: Backend, claims: Any, secrets: list[str], *, grace_s: float = GRACE_S,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.robots = robots
        self.backend = backend
        self.claims = claims
        """TriggerClaims (the run store's) or MemoryClaims (engine.runs.trigger_claims)."""
        self.secrets = secrets
        self.grace_s = grace_s
        self.clock = clock
        self.sleep = sleep
        self._due: dict[tuple[str, int], _Due] = {}
        self._diagrams: dict[str, Diagram] = {}
        self._read = -RESCAN_S
        self._firing: set[asyncio.Task[Any]] = set()
        self.fired: deque[tuple[str, int, float, str, float]] = deque(maxlen=1000)
        """(robot, schedule, tick, run id, seconds after the tick it started) of each run this process started."""
        self._log = log("diagrama.api")

    async def run(self) -> None:
        while True:
            try:
                wake = await self.fire_due(self.clock())
            except Exception as exc:  # a background round must not end the server: logged, tried again
                self._log.warning("schedules_failed", error=f"{type(exc).__name__}: {exc}")
                wake = self.clock() + 1.0
            await self.sleep(max(0.0, wake - self.clock()))

    async def fire_due(self, now: float) -> float:
        """Fire every tick due at `now` (each in a task of its own); when to look again."""
        if now - self._read >= RESCAN_S:
            await self._rescan(now)
        for (robot, index), due in self._due.items():
            if due.tick > now:
                continue
            latest = last_tick(due.schedule, now)
            if latest > due.tick:  # the loop stalled past ticks (or the server was busy): only the latest may fire
                self._log.warning("schedule_missed", robot=robot, schedule=index, tick=due.tick, latest=latest)
            if now - latest <= self.grace_s:
                self._spawn(self._fire(robot, index, due.schedule, latest))
            else:
                self._log.warning("schedule_missed", robot=robot, schedule=index, tick=latest,
                                  late_s=round(now - latest, 3))
            due.tick = next_tick(due.schedule, latest)
        upcoming = min((due.tick for due in self._due.values()), default=now + RESCAN_S)
        return min(upcoming, self._read + RESCAN_S)

    async def _rescan(self, now: float) -> None:
        self._read = now
        found: dict[tuple[str, int], ScheduleSpec] = {}
        for robot, diagram in await self.robots.valid():
            self._diagrams[robot] = diagram
            for index, schedule in enumerate(diagram.spec.schedules):
                found[robot, index] = schedule
        for key in [key for key in self._due if key not in found]:
            del self._due[key]
        for key, schedule in found.items():
            known = self._due.get(key)
            if known is not None and known.schedule == schedule:
                continue
            # New (the server starts, a file gained it) or changed: its latest tick counts as missed, due now.
            latest = last_tick(schedule, now)
            self._due[key] = _Due(schedule, latest if now - latest <= self.grace_s else next_tick(schedule, now))

    async def _fire(self, robot: str, index: int, schedule: ScheduleSpec, tick: float) -> None:
        claims = self.claims
        if self.backend.draining or not await asyncio.to_thread(claims.claim_tick, robot, index, tick):
            return  # stopping, or another process fired it
        previous = await asyncio.to_thread(claims.last_run, robot, index, tick)
        found = await self.backend.get(previous) if previous is not None else None
        if found is not None and found.status in _GOING:
            self._log.info("schedule_overlap", robot=robot, schedule=index, tick=tick, running=previous)
            await asyncio.to_thread(claims.settle_tick, robot, index, tick, None, "overlap")
            return
        diagram = self._diagrams[robot]
        try:
            inputs = typed_inputs(diagram, schedule.inputs)
            # Not RunForCaller (engine.web.service.starting): a tick has no caller, key, session or owner.
            run_id = await self.backend.start(robot, diagram, inputs, None, None, self.secrets,
                                              trigger=schedule_trigger(index))
        except (Refused, InputProblems) as exc:
            self._log.warning("schedule_refused", robot=robot, schedule=index, tick=tick, error=str(exc))
            await asyncio.to_thread(claims.settle_tick, robot, index, tick, None, "refused")
            return
        lag = self.clock() - tick
        self.fired.append((robot, index, tick, run_id, lag))
        self._log.info("schedule_fired", robot=robot, schedule=index, tick=tick, run_id=run_id,
                       lag_ms=round(lag * 1000, 3))
        await asyncio.to_thread(claims.settle_tick, robot, index, tick, run_id, "started")

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._firing.add(task)
        task.add_done_callback(self._firing.discard)

    async def settled(self) -> None:
        """Every tick fired so far has started its run (or not); tests."""
        await asyncio.gather(*self._firing, return_exceptions=True)

    async def close(self) -> None:
        for task in self._firing:
            task.cancel()
        await asyncio.gather(*self._firing, return_exceptions=True)
