"""`GET /health` and `GET /ready`, answered without a key: a load balancer's and an orchestrator's questions.

Liveness is the process answering at all. Readiness asks what a run needs, each in at most CHECK_S seconds: the run
store and the checkpoint store answer a query, and on Celery the broker a PING; a server that is draining (SIGTERM:
it takes no new runs) is not ready either. A problem names the part and the failure's kind only: a driver's
message may carry a host or a user name, and these answers are public.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response

from engine.runs.service_logs import log
from engine.web.http import answer
from engine.web.service.durable import Durable
from engine.web.service.models import ErrorAnswer
from engine.web.service.openapi import Answer, Operation

__all__ = ["CHECK_S", "HEALTH_OPERATIONS", "Health", "HealthAnswer", "ReadyAnswer", "broker_check", "checkpoint_check",
           "store_check"]

CHECK_S = 5.0
"""How long one readiness check may take before it counts as not answering."""

Check = Callable[[], Awaitable[Any]]
"""A readiness check: returns when its part answers, raises (or takes past CHECK_S) when it does not."""


class HealthAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["ok"] = "ok"


class ReadyAnswer(BaseModel):
    """Every part a run needs answered: the parts checked."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["ready"] = "ready"
    checked: list[str]


HEALTH_OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/health", "health", "Liveness: the process answers (no key needed)",
              {200: Answer("alive", HealthAnswer)}, public=True),
    Operation("GET", "/ready", "ready",
              "Readiness: the run store, the checkpoint store and (Celery) the broker answer, and the server is not "
              "draining (no key needed)",
              {200: Answer("ready to take runs", ReadyAnswer),
               503: Answer("not ready: each part that did not answer, or that the server is draining", ErrorAnswer)},
              public=True),
)


class Health:
    """The two answers; `checks`: part name → its check; `draining`: whether the server is stopping."""

    def __init__(self, checks: Mapping[str, Check], draining: Callable[[], bool]) -> None:
        self.checks = dict(checks)
        self.draining = draining
        self._log = log("diagrama.api")

    async def live(self, _request: Request) -> Response:
        return answer(HealthAnswer())

    async def ready(self, _request: Request) -> Response:
        problems = [problem for problem in await asyncio.gather(*(self._problem(name, check)
                                                                  for name, check in self.checks.items())) if problem]
        if self.draining():
            problems.insert(0, "draining: the server is stopping and takes no new runs")
        if problems:
            return answer(ErrorAnswer(error="not ready", problems=problems), 503)
        return answer(ReadyAnswer(checked=list(self.checks)))

    async def _problem(self, name: str, check: Check) -> str | None:
        try:
            await asyncio.wait_for(check(), CHECK_S)
        except TimeoutError:
            return f"{name}: no answer within {CHECK_S:g} s"
        except Exception as exc:  # any failure of the part is its problem; its text may hold a host: logged, not sent
            self._log.warning("not_ready", part=name, error=type(exc).__name__)
            return f"{name}: {type(exc).__name__}"
        return None


def store_check(store: Any) -> Check:
    """The run store answers a `SELECT 1` (off the loop, on a connection of its pool: a dead one is pre-pinged)."""
    from sqlalchemy import text

    def select_one() -> None:
        with store.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    return lambda: asyncio.to_thread(select_one)


def checkpoint_check(durable: Durable) -> Check:
    """The checkpoint store answers a read of a run by its key (one that no run has: nothing is read but the index)."""
    return lambda: durable.access(lambda store: store.run("-ready-"))


def broker_check(client: Any) -> Check:
    """The broker (Redis) answers a PING."""
    return lambda: client.ping()
