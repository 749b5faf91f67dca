"""What a production team expects around the robots API's runs, wired in one place for `create_app`: liveness and
readiness (engine.web.service.health), metrics (metrics), the runs listing (listing), Idempotency-Key (idempotency),
callbacks (callbacks) and the OpenTelemetry export of each run's spans (`--otel`, engine.runs.otel).

The routes and RobotsApi reach them through `AroundRuns`; the backends tell run ends through their `endings`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message

from engine.errors import UsageError
from engine.runs.service_logs import log
from engine.web.http import read_body
from engine.web.service.callbacks import Callbacks
from engine.web.service.durable import Refused
from engine.web.service.health import HEALTH_OPERATIONS, Check, Health, broker_check, checkpoint_check, store_check
from engine.web.service.idempotency import HEADER, Idempotency
from engine.web.service.listing import LIST_OPERATION, RunListing, TenantScope, celery_live, local_live
from engine.web.service.metrics import METRICS_OPERATION, Metrics
from engine.web.service.models import ResumeRequest, RunAnswer, RunRequest
from engine.web.service.openapi import Operation

if TYPE_CHECKING:
    from engine.runs.otel import OtelExport
    from engine.runtime.context import Services
    from engine.web.service.celery import CeleryBackend
    from engine.web.service.runs import LocalBackend

__all__ = ["AROUND_OPERATIONS", "AroundRuns", "otel_export"]

_Request = TypeVar("_Request", bound=BaseModel)

Handler = Callable[[Request], Awaitable[Response]]
AnswerRun = Callable[..., Awaitable[Response]]
"""RobotsApi._answer_run(request, run_id, wait=…): a started run's answer."""
Rendered = Callable[[RunAnswer], Response]
"""A run as `GET /v1/runs/{id}` answers it."""

AROUND_OPERATIONS: tuple[Operation, ...] = (*HEALTH_OPERATIONS, METRICS_OPERATION, LIST_OPERATION)
"""The routes of this module's parts, in the API's OPERATIONS table."""


def otel_export(wanted: bool, services: Services, *, celery: bool) -> OtelExport | None:
    """`--otel` (or DIAGRAMA_OTEL=1): each run of this process exported as spans, the export made a run observer of
    `services` (before the backend adds its relay, which then sends the trace id the export adds). On Celery the
    workers run the runs: `diagrama worker --otel` exports them, and this process makes none."""
    from engine.runs.otel import otel_wanted

    if not otel_wanted(wanted):
        return None
    if celery:
        log("diagrama.api").info("otel_on_workers", note="on Celery the workers export the runs' spans: start them "
                                                          "with `diagrama worker --otel`")
        return None
    try:
        from engine.runs.otel import otlp_export

        export = otlp_export()
    except ImportError:
        raise UsageError("--otel needs the otel extra: pip install 'diagrama[otel]'") from None
    services.run_observers.append(export)
    return export


class AroundRuns:
    """The parts, built for one app over one backend."""

    def __init__(self, backend: LocalBackend | CeleryBackend, health: Health, metrics: Metrics, listing: RunListing,
                 idempotency: Idempotency, callbacks: Callbacks, export: OtelExport | None = None) -> None:
        self.backend = backend
        self.health = health
        self.metrics = metrics
        self.listing = listing
        self.idempotency = idempotency
        self.callbacks = callbacks
        self.export = export

    @classmethod
    def build(cls, folder: Path, backend: LocalBackend | CeleryBackend, run_store: Any, environ: Mapping[str, str], *,
              callback_secret: str | None = None, callback_hosts: Sequence[str] | None = None,
              export: OtelExport | None = None, tenants: Any = None) -> AroundRuns:
        """UsageError for a callback secret or host that cannot serve (engine.web.service.callbacks). `tenants`: the
        API's (engine.web.service.tenants), which scope the listing to each key's own runs."""
        from engine.web.service.celery import CeleryBackend

        checks: dict[str, Check] = {}
        if run_store is not None:
            checks["run store"] = store_check(run_store)
        checks["checkpoint store"] = checkpoint_check(backend.durable)
        if isinstance(backend, CeleryBackend):
            checks["broker"] = broker_check(backend.reader.client)
            metrics = Metrics(in_flight=backend.active, queue_depth=_queue_depth(backend),
                              tokens_of=_tokens_of(backend.store))
            live = celery_live(backend)
        else:
            metrics = Metrics(in_flight=backend.active)
            live = local_live(backend)
        backend.endings.listen(metrics.run_ended)
        return cls(backend, Health(checks, lambda: backend.draining), metrics,
                   RunListing(folder, run_store, live, backend.get,
                              TenantScope(tenants) if tenants is not None else None), Idempotency(run_store),
                   Callbacks.configured(callback_secret, callback_hosts, environ), export)

    # Long: the three run doors' wrappers, each a few lines, beside the handlers they wrap.
    def wrapped(self, handlers: Mapping[str, Handler], answer_run: AnswerRun, rendered: Rendered,
                shown_for: Callable[[Request], Callable[[bytes], bytes]]) -> dict[str, Handler]:
        """RobotsApi's handlers by operation name with these parts' own added, and the run doors wrapped: a start
        with its Idempotency-Key and callback_url, a resume with its callback_url, an event stream counted.
        `shown_for(request)`: what the caller is shown of an answer (a callback's body is its run's answer)."""
        start, resume, events = handlers["startRun"], handlers["resumeRun"], handlers["runEvents"]

        async def start_run(request: Request) -> Response:
            raw = await read_body(request)
            asked = _parsed(RunRequest, raw)
            if asked is None:  # the handler words the refusal
                return await start(_replaying(request, raw))
            callback = self.callbacks.check(asked.callback_url) if asked.callback_url is not None else None
            state = request.scope.setdefault("state", {})
            claim = await self.idempotency.claim(state.get("key_id"), request.headers.get(HEADER),
                                                 request.path_params["name"], asked)
            if claim is not None and claim.run_id is not None:
                return await self._replay(request, claim.run_id, asked.wait, answer_run, rendered)
            try:
                response = await start(_replaying(request, raw))
            except BaseException:
                if claim is not None:
                    await claim.failed()  # no run started: the key may be sent again
                raise
            run_id = state.get("run_id")
            if response.status_code >= 400 or run_id is None:
                if claim is not None:
                    await claim.failed()
                return response
            if claim is not None:
                await claim.started(run_id)
            if callback is not None:
                shown = shown_for(request)
                self.callbacks.send_when_ended(run_id, callback, lambda: self._at_end(run_id, rendered, shown))
            return response

        async def resume_run(request: Request) -> Response:
            raw = await read_body(request)
            asked = _parsed(ResumeRequest, raw)
            callback = self.callbacks.check(asked.callback_url) if asked and asked.callback_url is not None else None
            response = await resume(_replaying(request, raw))
            run_id = request.path_params["run_id"]
            if callback is not None and response.status_code < 400:
                shown = shown_for(request)
                self.callbacks.send_when_ended(run_id, callback, lambda: self._at_end(run_id, rendered, shown))
            return response

        async def run_events(request: Request) -> Response:
            response = await events(request)
            stream = getattr(response, "body_iterator", None)
            if stream is not None:
                response.body_iterator = self.metrics.followed(stream)  # type: ignore[attr-defined]  # an SSE answer
            return response

        return {**handlers, "startRun": start_run, "resumeRun": resume_run, "runEvents": run_events,
                "health": self.health.live, "ready": self.health.ready, "metrics": self.metrics.answer,
                "listRuns": self.listing.answer}

    async def _replay(self, request: Request, run_id: str, wait: bool, answer_run: AnswerRun,
                      rendered: Rendered) -> Response:
        """The first request's run, as a request with its Idempotency-Key is answered now."""
        request.scope.setdefault("state", {})["run_id"] = run_id
        found = await self.backend.get(run_id)
        if found is None:
            raise Refused(409, f"the run '{run_id}' that {HEADER} started is not known here any more",
                          [f"{HEADER}: send a new key to start a new run"])
        held = getattr(self.backend, "runs", None)  # the local backend waits only on the runs it holds
        going = found.status in ("running", "queued") and (held is None or run_id in held)
        if not wait or going:
            response = await answer_run(request, run_id, wait=wait)
        else:  # ended (or going in a process that cannot be waited on from here): its answer now
            response = rendered(found)
            response.headers["location"] = str(request.url_for("getRun", run_id=run_id).path)
            response.headers["x-run-id"] = run_id
        response.headers["idempotent-replayed"] = "true"
        return response

    async def _at_end(self, run_id: str, rendered: Rendered,
                      shown: Callable[[bytes], bytes]) -> tuple[str, bytes] | None:
        """Waits for the run's end: its status and `GET /v1/runs/{id}`'s body then, as the caller is shown it."""
        ended = await self.backend.result(run_id)
        found = await self.backend.get(run_id) or ended
        return found.status, shown(bytes(rendered(found).body))

    async def close(self) -> None:
        """At shutdown, after the backend's: callbacks under way stop, the last spans go out (a moment at most)."""
        await self.callbacks.close()
        await self.metrics.close()
        if self.export is not None:
            dropped = await asyncio.to_thread(self.export.shutdown)
            if dropped:
                log("diagrama.api").warning("otel_dropped", message=dropped)


def _queue_depth(backend: CeleryBackend) -> Callable[[], Awaitable[int]]:
    """The Celery queue's length in Redis (a list named as the queue: `celery` unless configured)."""
    client, queue = backend.reader.client, backend.app.conf.task_default_queue or "celery"

    async def depth() -> int:
        return int(await client.llen(queue))

    return depth


def _tokens_of(store: Any) -> Callable[[str], Awaitable[int | None]]:
    """A run's tokens as the run store has them (a Celery run's end in its stream does not carry them)."""

    def read(run_id: str) -> int | None:
        found = store.run(run_id)
        return int(found["tokens"]) if found is not None and found.get("tokens") is not None else None

    async def tokens(run_id: str) -> int | None:
        return await asyncio.to_thread(read, run_id)

    return tokens


def _parsed(model: type[_Request], raw: bytes) -> _Request | None:
    """The body as `model`, or None when it is not one (the handler refuses it, every problem named)."""
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError:
        return None


def _replaying(request: Request, raw: bytes) -> Request:
    """The request again, its body (read already) given to the handler as the client sent it."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await request.receive()  # after the body: the client's disconnect, as the server tells it
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return Request(request.scope, receive)
