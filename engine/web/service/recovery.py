"""`diagrama api --resume-interrupted`: at start, the folder's interrupted durable runs go on here.

A drained server stops each durable run at its next step and records it `interrupted` (engine.web.serving); a
killed one leaves its runs `running` under a process that is gone, which reads as interrupted on the same host.
Each is resumed from its last checkpoint through the one turn (engine.runs.turn), taken over by a compare-and-set:
of two processes started with the option, one takes each run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.runs.service_logs import log
from engine.web.service.durable import Refused

if TYPE_CHECKING:
    from engine.web.service.app import RobotsApi

__all__ = ["resume_left"]


async def resume_left(api: RobotsApi) -> list[str]:
    """Resume every interrupted run of `api`'s folder; the ids resumed here."""
    backend = api.backend
    durable = backend.durable
    resumed: list[str] = []
    logger = log("diagrama.api")
    for run_id in await durable.interrupted():
        try:
            turn = await durable.resume(run_id, None, api.robots.registry, take=backend.takes_over)
            await backend.resume(turn.diagram.path.stem, turn, None, list(api.secrets))
        except Refused as refused:  # taken by another process, its diagram changed or gone: said, and left
            logger.warning("not_resumed", run_id=run_id, reason=refused.message)
            continue
        resumed.append(run_id)
    if resumed:
        logger.info("resumed_interrupted", run_ids=resumed)
    return resumed
