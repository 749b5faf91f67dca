"""`POST /v1/hooks/{name}`: a signed webhook delivery starts a run of a robot whose diagram has `webhook:`
(engine.format.triggers), answered 202 with the run's id at once while the run goes on, marked `trigger: webhook`.

No API key: the signature is the authentication (engine.web.service.signatures), so the Gate lets this one route
through (its Operation is public) and everything before the signature is checked says nothing of the robot beyond
"no such webhook". The secret is read from the environment variable the diagram names, at each delivery, and is
one of the run's secrets (redacted wherever it could show). The JSON body becomes the run's inputs through the
webhook's templates, compiled when the diagram loaded (engine.compile.validate.triggers), with `body` and `headers`
in scope; then typed as a request's inputs are. A delivery seen within the tolerance is refused (409).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from engine.errors import DiagramaError, DiagramInvalid
from engine.runs.service_logs import log
from engine.runs.trigger_claims import MemoryClaims
from engine.web.files import FolderError
from engine.web.http import answer, read_body
from engine.web.service.durable import Refused
from engine.web.service.models import ErrorAnswer, RunAccepted
from engine.web.service.openapi import Answer, Operation
from engine.web.service.robots import InputProblems, typed_inputs
from engine.web.service.signatures import SIGNATURE_HEADERS, delivery_key

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.format.triggers import WebhookSpec
    from engine.web.service.app import RobotsApi

__all__ = ["HOOK_OPERATION", "MAX_HOOK_BODY", "WEBHOOK_TRIGGER", "Webhooks"]

MAX_HOOK_BODY = 1024 * 1024
"""The largest delivery taken (1 MiB): more is refused (413) before it is read."""
WEBHOOK_TRIGGER = "webhook"
_UNSIGNED = "the request's signature does not verify"

HOOK_OPERATION = Operation(
    "POST", "/v1/hooks/{name}", "receiveHook",
    "A signed webhook delivery (GitHub, Stripe, or HMAC headers, as the robot's `webhook:` says) starts a run of the "
    "robot, its inputs made from the JSON body; no API key: the signature authenticates it",
    {202: Answer("the run is started", RunAccepted, headers={"Location": "the run's URL", "X-Run-Id": "the run's id"}),
     400: Answer("the body is not JSON, or the inputs made from it do not fit the robot's", ErrorAnswer),
     401: Answer("the signature is missing, wrong, or its timestamp is outside the tolerance", ErrorAnswer),
     404: Answer("no robot of that name takes webhooks", ErrorAnswer),
     409: Answer("this delivery was received already (the same GitHub delivery id, or signature)", ErrorAnswer),
     413: Answer("the body is larger than 1 MiB", ErrorAnswer)},
    headers=SIGNATURE_HEADERS, public=True)
"""The route, in the API's OPERATIONS table."""


class Webhooks:
    """The route over one RobotsApi (its robots, backend and secrets); `claims` remembers deliveries
    (engine.runs.trigger_claims: the run store's, else this process's), `environ` holds the secrets (os.environ)."""

    def __init__(self, api: RobotsApi, claims: Any = None, environ: Mapping[str, str] | None = None) -> None:
        self.api = api
        self.claims = claims if claims is not None else MemoryClaims()
        self.environ = environ if environ is not None else os.environ
        self._log = log("diagrama.api")

    async def receive(self, request: Request) -> Response:
        name = request.path_params["name"]
        request.scope.setdefault("state", {})["robot"] = name
        diagram, hook = await self._hook(name)
        secret = self.environ.get(hook.secret_env) or ""
        try:
            raw = await read_body(request, MAX_HOOK_BODY)
        except FolderError as exc:
            raise Refused(exc.status, "the body is larger than 1 MiB" if exc.status == 413 else exc.message) \
                from None
        headers = {key.lower(): value for key, value in request.headers.items()}
        key = delivery_key(hook.scheme, secret.encode(), raw, headers, now=time.time(),
                           tolerance=hook.tolerance) if secret else None
        if key is None:
            if not secret:
                self._log.warning("webhook_secret_unset", robot=name, variable=hook.secret_env)
            raise Refused(401, _UNSIGNED)
        inputs = self._inputs(diagram, hook, raw, headers, name)
        if not await asyncio.to_thread(self.claims.claim_delivery, name, key, float(hook.tolerance)):
            raise Refused(409, f"this delivery to '{name}' was received already",
                              ["send a new delivery (GitHub: a new delivery id; Stripe and hmac: a new signature)"])
        # Not RunForCaller (engine.web.service.starting): a delivery has no key, session or owner; its secret is scrubbed.
        run_id = await self.api.backend.start(name, diagram, inputs, None, None, [*self.api.secrets, secret],
                                              trigger=WEBHOOK_TRIGGER)
        self._log.info("webhook_received", robot=name, scheme=hook.scheme, run_id=run_id)
        request.scope["state"]["run_id"] = run_id
        url = str(request.url_for("getRun", run_id=run_id).path)
        started = RunAccepted(run_id=run_id, status="running" if self.api.backend.takes_over else "queued", run=url,
                              events=f"{url}/events")
        response = answer(started, 202)
        response.headers.update({"location": url, "x-run-id": run_id})
        return response

    async def _hook(self, name: str) -> tuple[Diagram, WebhookSpec]:
        """The robot's diagram and webhook; a 404 that says no more for one that has none or cannot load (the
        caller is not authenticated yet: a diagram's problems are not its to read)."""
        try:
            diagram = await self.api.robots.diagram(name)
        except DiagramInvalid:
            diagram = None
        if diagram is None or diagram.spec.webhook is None:
            raise Refused(404, f"no robot named '{name}' takes webhooks")
        return diagram, diagram.spec.webhook

    def _inputs(self, diagram: Diagram, hook: WebhookSpec, raw: bytes, headers: dict[str, str],
                name: str) -> dict[str, Any]:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise Refused(400, "the body is not JSON") from None
        scope = diagram.env.new_scope({"body": body, "headers": headers})
        values: dict[str, Any] = {}
        problems: list[str] = []
        for input_name, template in hook.inputs.items():
            try:
                values[input_name] = diagram.env.compile(template).evaluate(scope)  # compiled at load: a lookup
            except DiagramaError as exc:
                problems.append(f"{input_name}: {exc}")
        try:
            typed = typed_inputs(diagram, values)
        except InputProblems as exc:
            problems += exc.problems
        if problems:
            raise Refused(400, f"the inputs made from the body do not fit robot '{name}'", problems)
        return typed
