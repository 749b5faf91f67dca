"""The robots API's routes: list robots, start a run (wait for it or not, in a session or not), read a run, follow
its events (SSE), answer a run that waits (resume), read and forget sessions, and the OpenAPI document; each answers
through its model, each refusal as `{error, problems}`.

The routes are the `OPERATIONS` table (engine.web.service.openapi), mounted from it; the durable runs' ones
(`DURABLE_OPERATIONS`: resume, sessions) are part of it.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from engine.compile.diagram import Diagram
from engine.errors import DiagramaError, DiagramInvalid
from engine.format.levels import MessageLevel
from engine.format.redact import Redactor
from engine.format.spec import Budget
from engine.format.validation import dotted, validation_message
from engine.runs.turn import Turn
from engine.web.files import FolderError
from engine.web.http import JSON, answer, read_body
from engine.web.service.answers import ANSWER_OPERATIONS, AnswerDoor
from engine.web.service.around import AROUND_OPERATIONS, AroundRuns
from engine.web.service.cancelling import CANCEL_OPERATION, cancel_run
from engine.web.service.chat import ChatDoor
from engine.web.service.chat_wire import CHAT_OPERATIONS
from engine.web.service.durable import Durable, Refused
from engine.web.service.models import (
    SESSION_PATTERN,
    ErrorAnswer,
    ResumeRequest,
    RobotInfo,
    RobotList,
    RunAccepted,
    RunAnswer,
    RunRequest,
    SessionAnswer,
)
from engine.web.service.openapi import Answer, Operation, openapi_document
from engine.web.service.robots import InputProblems, Robots, can_wait, input_schema, memory, typed_inputs
from engine.web.service.runs import RunEvent, run_id_shape
from engine.web.service.shown import Shown
from engine.web.service.starting import RunForCaller, secrets_for
from engine.web.service.tenants import Tenants
from engine.web.service.terminal import ended
from engine.web.service.webhooks import HOOK_OPERATION, Webhooks

__all__ = ["DURABLE_OPERATIONS", "MAX_EVENT_DIGITS", "OPERATIONS", "Backend", "RobotsApi", "last_event_id"]

_PING_S = 15
"""A comment line this often keeps an idle event stream open through proxies."""

MAX_EVENT_DIGITS = 18
"""The longest Last-Event-ID taken: every 18-digit number fits in 63 bits (an index, a Redis stream id's part)."""
_EVENT_NUMBER = re.compile(f"[0-9]{{1,{MAX_EVENT_DIGITS}}}")


class Backend(Protocol):
    """Where runs go: this process (LocalBackend) or Celery workers (CeleryBackend)."""

    durable: Durable
    """The checkpoint store, beside the run store (waits, resumes, sessions)."""
    takes_over: bool
    """Whether a resume is marked running here when it is accepted (local), or by the worker that takes it."""

    draining: bool
    """Set while the server drains (SIGTERM): no new runs; `/ready` answers 503."""

    async def start(self, robot: str, diagram: Diagram, inputs: dict[str, Any], level: MessageLevel | None,
                    key_id: str | None, secrets: list[str], session: str | None = None,
                    budget: Budget | None = None, *, stream: bool = False, trigger: str | None = None) -> str: ...
    """`stream`: the run's request blocks stream unless their `stream` input says otherwise (a streamed chat's).
    `trigger`: what started it other than a request (`schedule:0`, `webhook`), kept in its record."""

    async def cancel(self, run_id: str) -> bool: ...

    async def resume(self, robot: str, turn: Turn, key_id: str | None, secrets: list[str]) -> str: ...

    async def result(self, run_id: str) -> RunAnswer: ...

    async def get(self, run_id: str) -> RunAnswer | None: ...

    async def events(self, run_id: str, after: int) -> AsyncIterator[RunEvent] | None: ...

    async def close(self) -> None: ...


class ApiError(Exception):
    def __init__(self, status: int, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems or []


_NOT_FOUND = Answer("no such robot or run", ErrorAnswer)
_LOCATED = {"Location": "the run's URL", "X-Run-Id": "the run's id"}
_BAD = Answer("the body is not a RunRequest, or the inputs do not fit the robot's: every problem", ErrorAnswer)
_SESSION = re.compile(SESSION_PATTERN)

DURABLE_OPERATIONS: tuple[Operation, ...] = (
    CANCEL_OPERATION,
    Operation("POST", "/v1/runs/{run_id}/resume", "resumeRun",
              "Answer the `Wait` a run stopped at (or go on with an interrupted run): it goes on under its id "
              "(`wait` as for startRun)",
              {200: Answer("the run ended, or stopped at its next Wait (the headers come at once, the body when it "
                           "does)", RunAnswer, headers=_LOCATED),
               202: Answer("the run goes on (`wait: false`)", RunAccepted, headers=_LOCATED),
               400: Answer("the body is not a ResumeRequest, or the answer does not fit the Wait's form, or its "
                           "callback_url cannot be called back: every problem (the run is still waiting)", ErrorAnswer),
               404: Answer("no such durable run", ErrorAnswer),
               409: Answer("the run is not waiting or interrupted (running, being resumed, finished)", ErrorAnswer),
               413: Answer("the body is larger than 8 MB", ErrorAnswer)},
              body=ResumeRequest),
    Operation("GET", "/v1/sessions/{session_id}", "getSession", "A conversation: its robot, turns and memory",
              {200: Answer("the session", SessionAnswer), 404: Answer("no such session", ErrorAnswer)}),
    Operation("DELETE", "/v1/sessions/{session_id}", "forgetSession",
              "Forget a conversation's memory: its next run starts from Start's values",
              {204: Answer("forgotten", media=""), 404: Answer("no such session", ErrorAnswer)}),
)
"""Durable runs' routes (issue 27): part of OPERATIONS."""

OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/v1/robots", "listRobots", "Every robot: its inputs' JSON Schema, memory, whether it can wait",
              {200: Answer("the robots", RobotList)}),
    Operation("POST", "/v1/robots/{name}/runs", "startRun",
              "Run a robot: answer its result when it ends (`wait`, the default), or its id at once",
              {200: Answer("the run ended (succeeded or failed): the headers come at once, the body when it ends "
                           "(a client that loses the connection polls Location)", RunAnswer, headers=_LOCATED),
               202: Answer("the run is started (`wait: false`)", RunAccepted, headers=_LOCATED),
               400: _BAD, 404: _NOT_FOUND, 413: Answer("the body is larger than 8 MB", ErrorAnswer),
               409: Answer("the session is a conversation with another robot, or its last run is unfinished (waiting "
                           "at a Wait, or interrupted): the error names that run, to resume or cancel first; or a "
                           "request with the same Idempotency-Key is still starting its run", ErrorAnswer),
               422: Answer("the robot's diagram has problems (it cannot run), or the Idempotency-Key came with "
                           "another body", ErrorAnswer)},
              body=RunRequest,
              headers={"Idempotency-Key": "1 to 255 printable ASCII characters: the same key (from the same API key, "
                                          "within 24 h) answers the first request's run and starts none (its answer "
                                          "then has `Idempotent-Replayed: true`)"}),
    Operation("GET", "/v1/runs/{run_id}", "getRun", "A run: its status, and its result once it ended",
              {200: Answer("the run", RunAnswer), 404: _NOT_FOUND}),
    Operation("GET", "/v1/runs/{run_id}/events", "runEvents",
              "The run's events as Server-Sent Events, as they happen, ending with `run_finished`",
              {200: Answer("`id` the event's number, `event` its name, `data` its JSON (a trace line; `text_delta` "
                           "carries a piece of a model's text)", media="text/event-stream"),
               400: Answer("Last-Event-ID is not a number of at most 18 digits", ErrorAnswer), 404: _NOT_FOUND},
              headers={"Last-Event-ID": "the last event's number the client has: the stream goes on after it"}),
    *DURABLE_OPERATIONS,
    *AROUND_OPERATIONS,
    *CHAT_OPERATIONS,
    *ANSWER_OPERATIONS,
    HOOK_OPERATION,
    Operation("GET", "/openapi.json", "openapi", "This document",
              {200: Answer("the OpenAPI document", schema={"type": "object"})}, public=True),
)


class RobotsApi:
    def __init__(self, folder: Path, robots: Robots, backend: Backend, secrets: list[str], *, secured: bool,
                 tenants: Tenants | None = None, shown: Shown | None = None) -> None:
        self.folder = folder.resolve()
        self.robots = robots
        self.backend = backend
        self.secrets = secrets
        self.tenants = tenants or Tenants(None, secured=False)
        """Whose runs and sessions a key sees (None: every caller sees all)."""
        self.shown = shown or Shown([])
        """What a key that is not an admin's is shown of the server's folders and processes."""
        self.document = openapi_document(OPERATIONS, title="diagrama robots", version="1", secured=secured)
        self._document = orjson.dumps(self.document)  # rendered once: it never changes while the server runs
        self._redactor = Redactor(secrets)
        self.hooks = Webhooks(self)
        """`POST /v1/hooks/{name}` (engine.web.service.webhooks); create_app gives it the run store's claims."""

    def routes(self, around: AroundRuns | None = None) -> list[Route]:
        """The routes of OPERATIONS; with `around`, its parts' too (health, metrics, listing, idempotency, callbacks)."""
        handlers: dict[str, Callable[[Request], Awaitable[Response]]] = {
            "listRobots": self.list_robots, "startRun": self.start_run, "getRun": self.get_run,
            "runEvents": self.run_events, "openapi": self.openapi, "resumeRun": self.resume_run,
            "getSession": self.get_session, "forgetSession": self.forget_session,
            "cancelRun": functools.partial(cancel_run, self)}
        chat = ChatDoor(self)  # the OpenAI-compatible routes (engine.web.service.chat)
        handlers.update(listModels=chat.list_models, chatCompletion=chat.chat_completion)
        answers = AnswerDoor(self)  # a Wait's signed answer link (engine.web.service.answers)
        handlers.update(answerForm=answers.form, answerWait=answers.answer)
        handlers.update(receiveHook=self.hooks.receive)  # signed webhooks (engine.web.service.webhooks)
        if around is not None:
            handlers = around.wrapped(handlers, self._answer_run, _run_answer, self.shown_for)
        return [Route(op.path, self._answering(handlers[op.name]), methods=[op.method], name=op.name)
                for op in OPERATIONS if op.name in handlers]

    def _answering(self, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """Refusals as `{error, problems}`, never a traceback; messages scrubbed (an input may be a key)."""

        async def answered(request: Request) -> Response:
            try:
                response = await handler(request)
            except (ApiError, Refused) as exc:
                response = self._refusal(exc.status, exc.message, exc.problems)
            except FolderError as exc:  # the body reader's refusals (413, 400)
                response = self._refusal(exc.status, exc.message, [])
            except DiagramaError as exc:
                response = self._refusal(400, str(exc), [])
            return response if self.tenants.caller(request).sees_all else self.shown.answer(response)

        return answered

    def _refusal(self, status: int, message: str, problems: list[str]) -> Response:
        scrub = self._redactor.text
        return answer(ErrorAnswer(error=scrub(message), problems=[scrub(p) for p in problems]), status)

    async def openapi(self, _request: Request) -> Response:
        return Response(self._document, media_type="application/json")

    async def list_robots(self, _request: Request) -> Response:
        listed = [RobotInfo(name=name, description=diagram.spec.description, inputs=input_schema(diagram),
                            memory=memory(diagram), can_wait=can_wait(diagram))
                  for name, diagram in await self.robots.valid()]
        return answer(RobotList(robots=listed))

    async def _diagram(self, name: str) -> Diagram:
        try:
            diagram = await self.robots.diagram(name)
        except DiagramInvalid as exc:
            where = f"{self.folder}/"
            raise ApiError(422, f"robot '{name}' has problems in its diagram; it cannot run",
                           [str(problem).replace(where, "") for problem in exc.problems]) from None
        if diagram is None:
            raise ApiError(404, f"no robot named '{name}'")
        return diagram

    async def start_run(self, request: Request) -> Response:
        name = request.path_params["name"]
        state = request.scope.setdefault("state", {})
        state["robot"] = name
        raw = await read_body(request)
        try:
            asked = RunRequest.model_validate_json(raw or b"{}")
        except ValidationError as exc:
            problems = [f"{dotted(error['loc']) or 'body'}: {validation_message(error)}"
                        for error in exc.errors(include_url=False)]
            raise ApiError(400, "the body is not a run request: {inputs, session?, wait?, message_level?, budget?}",
                           problems) from None
        diagram = await self._diagram(name)
        run = RunForCaller(self, self.tenants.caller(request), state, asked.session)  # a session too long: 400 first
        if asked.session is not None:
            await self._check_session(asked.session, diagram, name)
        try:
            inputs = typed_inputs(diagram, asked.inputs)
        except InputProblems as exc:
            raise ApiError(400, f"the inputs do not fit robot '{name}'", exc.problems) from None
        level = MessageLevel[asked.message_level.upper()] if asked.message_level else None
        run_id = await run.start(name, diagram, inputs, level, budget=asked.budget)  # a Refused: `_answering` answers it
        return await self._answer_run(request, run_id, wait=asked.wait)

    async def _check_session(self, session: str, diagram: Diagram, name: str) -> None:
        if not diagram.settings.memory:
            raise ApiError(400, f"robot '{name}' keeps no memory (Start's `memory`): it has no sessions",
                           ["session: the robot keeps no memory"])

    def shown_for(self, request: Request) -> Callable[[bytes], bytes]:
        """What the caller is shown of an answer's JSON that `_answering` does not see (a streamed result, a
        callback's): all of it for an admin, else with no server folder in it (engine.web.service.shown)."""
        return _as_is if self.tenants.caller(request).sees_all else self.shown.json

    async def _answer_run(self, request: Request, run_id: str, *, wait: bool) -> Response:
        """A started (or resumed) run's answer: its result when it ends (`wait`), else 202 with its URLs."""
        request.scope.setdefault("state", {})["run_id"] = run_id
        url = str(request.url_for("getRun", run_id=run_id).path)
        located = {"location": url, "x-run-id": run_id}
        if wait:  # the headers go at once, the result when the run ends: a client cut off meanwhile knows its run
            return StreamingResponse(_result(self.backend, run_id, self.shown_for(request)),
                                     media_type="application/json", headers=located)
        accepted = RunAccepted(run_id=run_id, status="running" if self.backend.takes_over else "queued", run=url,
                               events=f"{url}/events")
        try:
            found = await self.backend.get(run_id)
        except Refused:  # the run is accepted: a broker away now never makes its answer a failure to retry
            found = None
        if found is not None:
            accepted.status = found.status
        response = answer(accepted, 202)
        response.headers.update(located)
        return response

    async def resume_run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        state = request.scope.setdefault("state", {})
        state["run_id"] = run_id
        raw = await read_body(request)
        try:
            asked = ResumeRequest.model_validate_json(raw or b"{}")
        except ValidationError as exc:
            problems = [f"{dotted(error['loc']) or 'body'}: {validation_message(error)}"
                        for error in exc.errors(include_url=False)]
            raise ApiError(400, "the body is not a resume request: {answer?, wait?}", problems) from None
        durable = self.backend.durable
        if not run_id_shape(run_id) or not await self.tenants.sees(run_id, self.tenants.caller(request)):
            raise ApiError(404, f"no durable run '{run_id}'")  # another key's run is no run of the caller's
        try:
            turn = await durable.resume(run_id, asked.answer, self.robots.registry, take=self.backend.takes_over)
        except Refused as exc:
            found = await self.backend.get(run_id) if exc.status == 404 else None
            if found is not None:  # a run of ours that kept no checkpoints (Start `durable: false`)
                raise ApiError(409, f"run '{run_id}' is {found.status} and kept no checkpoints: it cannot resume") \
                    from None
            if exc.status == 404:  # the same words as for another key's run (not the store's place)
                raise ApiError(404, f"no durable run '{run_id}'") from None
            raise
        await self.backend.resume(turn.diagram.path.stem, turn, state.get("key_id"), secrets_for(self, state.get("key")))
        return await self._answer_run(request, run_id, wait=asked.wait)

    def _session_id(self, request: Request) -> tuple[Durable, str, str]:
        """The durable store, the session's name as the caller gives it, and as the store keeps it (the key's)."""
        session = request.path_params["session_id"]
        durable = self.backend.durable
        kept = self.tenants.session(self.tenants.caller(request), session) if _SESSION.match(session) else None
        if kept is None:
            raise ApiError(404, f"no session '{session}'")
        return durable, session, kept

    async def get_session(self, request: Request) -> Response:
        durable, session, kept = self._session_id(request)
        found = await durable.session(kept)
        if found is None:
            raise ApiError(404, f"no session '{session}'")
        return answer(found.model_copy(update={"session_id": session}))

    async def forget_session(self, request: Request) -> Response:
        durable, session, kept = self._session_id(request)
        if not await durable.forget(kept):
            raise ApiError(404, f"no session '{session}'")
        return Response(status_code=204)

    async def get_run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        request.scope.setdefault("state", {})["run_id"] = run_id
        found = await self.backend.get(run_id) if await self.tenants.sees(run_id, self.tenants.caller(request)) \
            else None
        if found is None:
            raise ApiError(404, f"no run '{run_id}'")
        return _run_answer(found)

    async def run_events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        request.scope.setdefault("state", {})["run_id"] = run_id
        after = last_event_id(request.headers.get("last-event-id"))
        caller = self.tenants.caller(request)
        stream = await self.backend.events(run_id, after) if await self.tenants.sees(run_id, caller) else None
        if stream is None:
            raise ApiError(404, f"no run '{run_id}'")
        events = ended(run_id, stream, self.backend.get, after)
        if not caller.sees_all:  # no pid, host or server path in what it reads (the trace keeps them)
            events = self.shown.events(events)
        return EventSourceResponse(_sent(events), ping=_PING_S,
                                   headers={"cache-control": "no-store", "x-accel-buffering": "no"})


def last_event_id(value: str | None) -> int:
    """The event number a `Last-Event-ID` header gives (0 without one), or a 400 naming what is wrong with it.

    Only ASCII digits, at most MAX_EVENT_DIGITS of them: `str.isdigit()` takes '²' and other digits `int()` refuses,
    `int()` refuses more than 4300 digits, and a number past what a backend can hold (an `islice` index, a Redis
    stream id's 64 bits) would be taken here and break the stream after its 200 was sent. Starlette reads header
    bytes as latin-1, so a value that is no ASCII (UTF-8 or any odd byte) arrives as characters the pattern refuses.
    """
    text = (value or "").strip(" \t") or "0"  # HTTP's optional whitespace; an empty header is no header
    if _EVENT_NUMBER.fullmatch(text) is None:
        shown = text if len(text) <= 40 else f"{text[:40]}… ({len(text)} characters)"
        raise ApiError(400, "Last-Event-ID is the number of the last event received", [
            f"Last-Event-ID {shown!r} is not a whole number of 1 to {MAX_EVENT_DIGITS} ASCII digits: send the `id` "
            "of the last event you received, or no Last-Event-ID to start from the first event"])
    return int(text)


async def _result(backend: Backend, run_id: str, shown: Callable[[bytes], bytes]) -> AsyncIterator[bytes]:
    """A `wait: true` answer's body: the run's answer once it ends, as the caller is shown it."""
    yield shown(bytes(_run_answer(await backend.result(run_id)).body))


def _as_is(data: bytes) -> bytes:
    return data


def _run_answer(found: RunAnswer) -> Response:
    """A run as `diagrama run --output json` prints it: `waiting` only while it waits."""
    return JSON(found.model_dump(by_alias=True, exclude={"waiting"} if found.waiting is None else None))


async def _sent(stream: AsyncIterator[RunEvent]) -> AsyncIterator[ServerSentEvent]:
    # Closed whatever ends the response (a client gone mid-stream cancels it here): the run's listener count goes
    # back down, and nothing of the run is held for a client that left.
    async with contextlib.aclosing(stream):  # type: ignore[type-var]  # an async generator: it has aclose
        async for number, name, data in stream:
            yield ServerSentEvent(data=data.decode(), event=name, id=str(number))
