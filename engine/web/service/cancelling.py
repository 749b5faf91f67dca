"""`POST /v1/runs/{run_id}/cancel`: a run that is going stops at its next step, `cancelled`; one that waits at a Wait
or was interrupted is cancelled at once (its session let go without its memory). A run that ended is a 409.

A running run is told where it runs: in this process (the local backend's step loop reads Services.stops), or on
its Celery worker (a Redis key its lease's thread reads, engine.runs.leases); a queued one stops before its first
step. So the answer to a running run is 202: it is cancelled when it reaches its next step, which its events and
`GET /v1/runs/{id}` then say (`run_finished` with status `cancelled`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from engine.errors import TurnRefused
from engine.runs.turn import cancel_turn
from engine.web.http import answer
from engine.web.service.durable import refusal
from engine.web.service.models import ErrorAnswer, RunAccepted, RunAnswer
from engine.web.service.openapi import Answer, Operation

if TYPE_CHECKING:
    from engine.web.service.app import RobotsApi

__all__ = ["CANCEL_OPERATION", "cancel_run"]

CANCEL_OPERATION = Operation(
    "POST", "/v1/runs/{run_id}/cancel", "cancelRun",
    "Cancel a run: one going stops at its next step (202), one waiting or interrupted at once (200); `cancelled`",
    {200: Answer("the run is cancelled (it was waiting or interrupted)", RunAnswer),
     202: Answer("the run stops at its next step; its events and GET then say `cancelled`", RunAccepted,
                 headers={"Location": "the run's URL"}),
     404: Answer("no such run", ErrorAnswer),
     409: Answer("the run has ended (succeeded, failed or cancelled), or runs in another process of the local "
                 "backend", ErrorAnswer)})


async def cancel_run(api: RobotsApi, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    request.scope.setdefault("state", {})["run_id"] = run_id
    found = await api.backend.get(run_id) if await api.tenants.sees(run_id, api.tenants.caller(request)) else None
    if found is None:
        raise refusal(TurnRefused(f"no run '{run_id}'", reason="not_found"))
    if found.status in ("waiting", "interrupted"):
        durable = api.backend.durable
        try:
            await durable.access(lambda store: cancel_turn(store, run_id))
        except TurnRefused as refused:
            raise refusal(refused) from None
        cancelled = await api.backend.get(run_id) or found
        return answer(cancelled.model_copy(update={"status": "cancelled", "waiting": None}))
    if found.status not in ("running", "queued") or not await api.backend.cancel(run_id):
        where = "has ended" if found.status not in ("running", "queued") else "runs in another process"
        raise refusal(TurnRefused(f"run '{run_id}' {where} ({found.status}): there is nothing to cancel here",
                                  reason="not_resumable"))
    url = str(request.url_for("getRun", run_id=run_id).path)
    response = answer(RunAccepted(run_id=run_id, status=found.status, run=url, events=f"{url}/events"), 202)
    response.headers["location"] = url
    return response
