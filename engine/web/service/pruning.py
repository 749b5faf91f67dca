"""`diagrama api --prune-after`: the server prunes finished runs' checkpoints while it runs (engine.runs.prune).

Once when it starts, then every hour (every tenth of the retention where that is shorter, never more often than a
second), the checkpoints of runs that ended longer ago than the retention are deleted, with the memory variables of
pruned session turns' records in the run store. The work runs off the event loop, on the checkpoint store's own
connection for such statements (engine.web.service.durable), so requests and runs go on meanwhile. A round that
fails (the database unreachable) is logged, and the next one tries again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.runs.checkpoints import Pruned
from engine.runs.prune import prune_runs, shown_retention
from engine.runs.service_logs import log
from engine.web.service.durable import Durable

__all__ = ["Pruner", "prune_every"]


def prune_every(older_than_s: float) -> float:
    """How often a server with this retention prunes: hourly, or a tenth of the retention, at least a second."""
    return min(3600.0, max(1.0, older_than_s / 10))


class Pruner:
    """The server's pruning: `run()` is the task its lifespan starts; `prune_once()` one round of it."""

    def __init__(self, durable: Durable, older_than_s: float, run_store: Any = None) -> None:
        self.durable = durable
        self.older_than_s = older_than_s
        self.run_store = run_store
        """The run store (a RunStore), whose pruned session turns' records drop their memory; None without one."""
        self.every_s = prune_every(older_than_s)
        self.started = 0
        self.rounds = 0
        """Rounds begun, and done, so far (failed ones included)."""
        self._round = asyncio.Condition()

    async def prune_once(self) -> Pruned:
        """One round: the store's finished runs older than the retention pruned, off the loop."""
        retention, run_store = self.older_than_s, self.run_store
        return await self.durable.access(lambda store: prune_runs(store, retention, run_store))

    async def run(self) -> None:
        logger = log("diagrama.api")
        while True:
            self.started += 1
            try:
                pruned = await self.prune_once()
            except Exception as exc:  # a background round must not end the server: logged, tried again next round
                logger.warning("prune_failed", error=f"{type(exc).__name__}: {exc}",
                               retention=shown_retention(self.older_than_s))
            else:
                if pruned.runs:
                    logger.info("pruned", runs=len(pruned.runs), children=pruned.children,
                                checkpoints=pruned.checkpoints, bytes=pruned.bytes, records=pruned.records,
                                retention=shown_retention(self.older_than_s))
            async with self._round:
                self.rounds += 1
                self._round.notify_all()
            await asyncio.sleep(self.every_s)

    async def next_round(self) -> int:
        """Wait until a round that begins after this call is done; the rounds done then."""
        async with self._round:
            wanted = self.started + 1
            await self._round.wait_for(lambda: self.rounds >= wanted)
            return self.rounds
