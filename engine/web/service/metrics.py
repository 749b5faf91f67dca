"""`GET /metrics`: the robots API's counters in Prometheus' text format (prometheus_client, one registry per app).

What is counted, and where, so that nothing is paid per event: a run when this process learns it ended (the
backend's RunEndings: the local backend's task, a Celery run's stream end), an event stream when it opens and
closes; runs in flight and the Celery queue's depth are read when the page is asked for. On Celery a run's tokens
are not in its stream's end: they are read from the run store, once per run, off the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest
from starlette.requests import Request
from starlette.responses import Response

from engine.runs.service_logs import log
from engine.web.service.ended import RunEnded
from engine.web.service.openapi import Answer, Operation

__all__ = ["METRICS_OPERATION", "Metrics"]

_DURATIONS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
"""A run takes milliseconds (Sets) to many minutes (a model, a tool, a person's Wait is a run's end, not its time)."""

_TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
"""What generate_latest writes (no UTF-8 metric names): the format every Prometheus reads."""

METRICS_OPERATION = Operation(
    "GET", "/metrics", "metrics",
    "This process's counters in Prometheus' text format: runs by robot and status, their durations, steps and "
    "tokens, open event streams, runs in flight, and on Celery the queue's depth",
    {200: Answer("the metrics (text/plain; version=0.0.4)", media="text/plain", schema={"type": "string"})})


class Metrics:
    """The app's metrics. `in_flight`: the runs going in this process now; `queue_depth`: the Celery queue's length
    (None on the local backend); `tokens_of`: a run's tokens from the run store, for ends that do not carry them."""

    def __init__(self, *, in_flight: Callable[[], int], queue_depth: Callable[[], Awaitable[int]] | None = None,
                 tokens_of: Callable[[str], Awaitable[int | None]] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.runs = Counter("diagrama_runs", "Runs that ended, by robot and status (a Wait ends a part: waiting)",
                            ["robot", "status"], registry=self.registry)
        self.durations = Histogram("diagrama_run_duration_seconds", "How long runs took, by robot", ["robot"],
                                   buckets=_DURATIONS_S, registry=self.registry)
        self.steps = Counter("diagrama_run_steps", "Block steps of the runs that ended, by robot", ["robot"],
                             registry=self.registry)
        self.tokens = Counter("diagrama_run_tokens", "Model tokens of the runs that ended, by robot", ["robot"],
                              registry=self.registry)
        self.streams = Gauge("diagrama_event_streams_open", "Event streams (SSE) open now", registry=self.registry)
        running = Gauge("diagrama_runs_in_flight", "Runs going in this process now (on Celery: none, the workers')",
                        registry=self.registry)
        running.set_function(in_flight)
        self.queue = Gauge("diagrama_queue_depth", "Runs waiting in the Celery queue for a worker",
                           registry=self.registry) if queue_depth is not None else None
        self._queue_depth = queue_depth
        self._tokens_of = tokens_of
        self._pending: set[asyncio.Task[None]] = set()
        self._log = log("diagrama.api")

    def run_ended(self, ended: RunEnded) -> None:
        """A backend's RunEndings listener."""
        robot = ended.robot or "unknown"
        self.runs.labels(robot, ended.status).inc()
        if ended.duration_s is not None:
            self.durations.labels(robot).observe(ended.duration_s)
        if ended.steps:
            self.steps.labels(robot).inc(ended.steps)
        if ended.tokens:
            self.tokens.labels(robot).inc(ended.tokens)
        elif ended.tokens is None and self._tokens_of is not None:
            task = asyncio.get_running_loop().create_task(self._count_tokens(robot, ended.run_id))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _count_tokens(self, robot: str, run_id: str) -> None:
        assert self._tokens_of is not None
        try:
            tokens = await self._tokens_of(run_id)
        except Exception as exc:  # a store that does not answer now: the run is counted, its tokens are not
            self._log.warning("tokens_not_counted", run_id=run_id, error=type(exc).__name__)
            return
        if tokens:
            self.tokens.labels(robot).inc(tokens)

    async def followed(self, stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """`stream`, counted among the open event streams while a client reads it."""
        self.streams.inc()
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]  # an async generator: it has aclose
                async for item in stream:
                    yield item
        finally:
            self.streams.dec()

    async def answer(self, _request: Request) -> Response:
        if self.queue is not None and self._queue_depth is not None:
            try:
                self.queue.set(await self._queue_depth())
            except Exception as exc:  # the broker does not answer: the page still comes, without a stale depth
                self.queue.set(float("nan"))
                self._log.warning("queue_depth_unread", error=type(exc).__name__)
        return Response(generate_latest(self.registry), media_type=_TEXT_FORMAT)

    async def close(self) -> None:
        for task in self._pending:
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
