"""Claims that make a trigger start one run however many API processes share a run store: a schedule's tick and a
webhook's delivery, each a row whose primary key decides (the first insert wins, the others lose), as
Idempotency-Key claims do (engine.runs.store's `request_keys`).

`schedule_ticks` keeps (robot, schedule index, tick) with the run the tick started (or why it started none), and so
also says which ticks fired, across restarts; `hook_deliveries` keeps the deliveries (GitHub's delivery id, or a
signature) received within a webhook's tolerance. `MemoryClaims` is the same for a server without a run store.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from sqlalchemy import Column, Float, MetaData, String, Table, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

__all__ = ["KEPT_TICKS_S", "MemoryClaims", "TriggerClaims"]

KEPT_TICKS_S = 7 * 24 * 3600.0
"""How long a tick's claim is kept (a week: the last run of a weekly schedule stays known for its overlap check)."""

_metadata = MetaData()
schedule_ticks = Table(
    "schedule_ticks", _metadata,
    Column("robot", String(100), primary_key=True),
    Column("schedule", String(8), primary_key=True),
    Column("tick", Float, primary_key=True),
    Column("claimed", Float, nullable=False, index=True),
    Column("run_id", String(80)),
    Column("outcome", String(40)),
)
hook_deliveries = Table(
    "hook_deliveries", _metadata,
    Column("robot", String(100), primary_key=True),
    Column("delivery", String(200), primary_key=True),
    Column("received", Float, nullable=False, index=True),
)


class TriggerClaims:
    """The claims in a run store's database (SQLite or PostgreSQL): safe for several processes at once."""

    def __init__(self, store: Any) -> None:
        self.engine = store.engine
        for attempt in range(5):
            try:
                _metadata.create_all(self.engine)
                break
            except (OperationalError, ProgrammingError):  # another process made a table between check and create
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def claim_tick(self, robot: str, schedule: int, tick: float) -> bool:
        """Whether this process fires the tick: True for the first claim of it, False for every other."""
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(schedule_ticks).values(robot=robot, schedule=str(schedule), tick=tick,
                                                                 claimed=time.time()))
        except IntegrityError:
            return False
        return True

    def settle_tick(self, robot: str, schedule: int, tick: float, run_id: str | None, outcome: str) -> None:
        """What the claimed tick did: the run it started, or why none (`overlap`, `refused`)."""
        with self.engine.begin() as connection:
            connection.execute(update(schedule_ticks).where(_tick(robot, schedule, tick))
                               .values(run_id=run_id, outcome=outcome))

    def last_run(self, robot: str, schedule: int, before: float) -> str | None:
        """The run the schedule's latest tick before `before` started (None: none)."""
        with self.engine.connect() as connection:
            found = connection.execute(
                select(schedule_ticks.c.run_id).where(schedule_ticks.c.robot == robot,
                                                      schedule_ticks.c.schedule == str(schedule),
                                                      schedule_ticks.c.tick < before,
                                                      schedule_ticks.c.run_id.is_not(None))
                .order_by(schedule_ticks.c.tick.desc()).limit(1)).first()
        return str(found.run_id) if found is not None else None

    def forget_ticks(self, older_than_s: float = KEPT_TICKS_S) -> int:
        with self.engine.begin() as connection:
            return int(connection.execute(delete(schedule_ticks).where(
                schedule_ticks.c.claimed < time.time() - older_than_s)).rowcount)

    def claim_delivery(self, robot: str, delivery: str, kept_s: float) -> bool:
        """Whether this delivery is new: False when it was received within `kept_s` (a replay, a redelivery)."""
        now = time.time()
        try:
            with self.engine.begin() as connection:
                connection.execute(delete(hook_deliveries).where(hook_deliveries.c.received < now - kept_s,
                                                                 hook_deliveries.c.robot == robot))
                connection.execute(insert(hook_deliveries).values(robot=robot, delivery=delivery, received=now))
        except IntegrityError:
            return False
        return True


def _tick(robot: str, schedule: int, tick: float) -> Any:
    return and_(schedule_ticks.c.robot == robot, schedule_ticks.c.schedule == str(schedule),
                schedule_ticks.c.tick == tick)


class MemoryClaims:
    """The same claims in this process's memory (a server without a run store: one process fires)."""

    def __init__(self) -> None:
        self._ticks: dict[tuple[str, int, float], str | None] = {}
        self._deliveries: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def claim_tick(self, robot: str, schedule: int, tick: float) -> bool:
        with self._lock:
            if (robot, schedule, tick) in self._ticks:
                return False
            self._ticks[robot, schedule, tick] = None
            return True

    def settle_tick(self, robot: str, schedule: int, tick: float, run_id: str | None, outcome: str) -> None:
        self._ticks[robot, schedule, tick] = run_id

    def last_run(self, robot: str, schedule: int, before: float) -> str | None:
        found = [(tick, run_id) for (name, index, tick), run_id in self._ticks.items()
                 if name == robot and index == schedule and tick < before and run_id is not None]
        return max(found)[1] if found else None

    def forget_ticks(self, older_than_s: float = KEPT_TICKS_S) -> int:
        with self._lock:
            old = [key for key in self._ticks if key[2] < time.time() - older_than_s]
            for key in old:
                del self._ticks[key]
        return len(old)

    def claim_delivery(self, robot: str, delivery: str, kept_s: float) -> bool:
        now = time.time()
        with self._lock:
            seen = self._deliveries.get((robot, delivery))
            if seen is not None and seen >= now - kept_s:
                return False
            self._deliveries = {key: at for key, at in self._deliveries.items() if at >= now - kept_s}
            self._deliveries[robot, delivery] = now
            return True
