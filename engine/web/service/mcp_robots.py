"""The served folder's robots as MCP tools (`diagrama mcp DIR` over stdio, `/mcp` under `diagrama api`), on the
official SDK's low-level server: each robot a tool (its Start inputs' JSON Schema, its diagram's `description`),
called as the API's `POST /v1/robots/{name}/runs` calls it, through the same backend (`start`, `resume`, `result`:
engine.runs.turn's one turn), with the caller's key's tenancy. A robot with memory (Start `memory`) takes an optional
`session` argument (`diagrama_session` where it has an input named `session`): the API's `session`, the caller's key's.

A run's result is its final variables (Start `output`: those only) as structured content, with their JSON as text;
a failed run is a tool error naming the run's errors. A run that stops at a Wait asks the client for the answer
(MCP elicitation, the Wait's form as its schema) where the client can answer one: a server request on a connection
of the handshake era, an `InputRequiredResult` the client answers by calling again on the per-request era; other
clients get the waiting state and the `resume_run` tool. Progress: a notification per finished block, for a call
that sent a progress token. What transports the calls (stdio, streamable HTTP) is engine.web.service.mcp_http's
and the CLI's.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import TYPE_CHECKING, Any

import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from engine.errors import DiagramInvalid
from engine.format.levels import MessageLevel
from engine.format.redact import Redactor
from engine.runtime.trace import Event
from engine.web.service.durable import Refused
from engine.web.service.models import SESSION_PATTERN
from engine.web.service.robots import InputProblems, can_wait, input_schema, typed_inputs
from engine.web.service.runs import run_id_shape
from engine.web.service.starting import RunForCaller, secrets_for
from engine.web.service.tenants import Caller

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from engine.compile.diagram import Diagram
    from engine.web.service.app import RobotsApi
    from engine.web.service.models import RunAnswer

__all__ = ["RESUME_TOOL", "RobotsMcp"]

RESUME_TOOL = "resume_run"
"""The tool that answers a run waiting at a Wait, for clients that cannot answer an elicitation (a robot of that
name is not served: its tool would be this one)."""

_ANSWER_KEY = "answer"
"""The key of the one elicitation an `InputRequiredResult` asks for."""
_ASKS = 3
"""Elicitations one call makes for one Wait whose form refuses the answers before it gives the waiting state."""
_RUN_ID_META = "diagrama/run_id"
_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["run_id"],
    "properties": {"run_id": {"type": "string", "description": "the waiting run's id (its result's `run_id`)"},
                   "answer": {"type": "object", "description": "the Wait's form filled in (`waiting.form` is its "
                                                               "JSON Schema)"}}}
_SESSION = re.compile(SESSION_PATTERN)
_SESSION_ABOUT = "a conversation's id: runs of one session share the robot's memory"


def _session_argument(diagram: Diagram) -> str | None:
    """The argument that names a session, for a robot with memory: `session`, or `diagrama_session` where a Start
    input is named `session`; None for a robot without memory (it has no sessions)."""
    if not diagram.settings.memory:
        return None
    return "diagrama_session" if "session" in diagram.settings.inputs else "session"


def _tool_schema(diagram: Diagram) -> dict[str, Any]:
    """The robot's tool's input schema: its Start inputs', and its session argument where it keeps memory."""
    schema = input_schema(diagram)
    argument = _session_argument(diagram)
    if argument is not None:
        about = _SESSION_ABOUT if argument == "session" else \
            f"{_SESSION_ABOUT} (named {argument}: the robot has an input named session)"
        schema["properties"][argument] = {"type": "string", "pattern": SESSION_PATTERN, "description": about}
    return schema


class _Refusal(Exception):
    """A call the server refuses as a tool error (bad inputs, a run not found, a draining server)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []


class _Call:
    """One tool call: who asks, what its run is, and how far its progress has come."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], caller: Caller, key: str | None) -> None:
        self.ctx = ctx
        self.caller = caller
        self.key = key
        self.progress = ctx.meta is not None and "progress_token" in ctx.meta
        self.steps = 0
        self.seen = 0
        """The last event number reported (a resumed part's events follow on from it)."""

    @property
    def elicits(self) -> bool:
        capabilities = self.ctx.session.client_capabilities
        return capabilities is not None and capabilities.elicitation is not None


class RobotsMcp:
    """The MCP server over a RobotsApi's robots, backend, tenants and secrets: one for stdio or for HTTP."""

    def __init__(self, api: RobotsApi, *, name: str = "diagrama") -> None:
        self.api = api
        self._redactor = Redactor(api.secrets)
        self.server: Server[Any] = Server(name, instructions="Each tool runs one robot (a diagrama diagram) and "
                                          "answers its final variables.",
                                          on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    async def _list_tools(self, _ctx: ServerRequestContext[Any, Any],
                          _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        robots = [(name, diagram) for name, diagram in await self.api.robots.valid() if name != RESUME_TOOL]
        tools = [types.Tool(name=name, description=diagram.spec.description or None,
                            input_schema=_tool_schema(diagram)) for name, diagram in robots]
        if any(can_wait(diagram) for _, diagram in robots):
            tools.append(types.Tool(name=RESUME_TOOL, input_schema=_RESUME_SCHEMA,
                                    description="Answer a robot's run that waits at a Wait for a person's answer; "
                                                "answers as the robot's own tool does"))
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
        call = _Call(ctx, *self._caller(ctx.request))
        try:
            if params.request_state is not None:  # a per-request era client's second call: the Wait's answer
                found = await self._answered(call, params)
            elif params.name == RESUME_TOOL:
                arguments = params.arguments or {}
                found = await self._resume(call, str(arguments.get("run_id", "")), arguments.get("answer"))
            else:
                found = await self._start(call, params.name, params.arguments or {})
            return await self._finish(call, found)
        except _Refusal as exc:
            return self._error(call, exc.message, exc.problems)

    def _caller(self, request: object) -> tuple[Caller, str | None]:
        """Who calls: the HTTP request's key (engine.web.service.gate), or stdio's one user, who sees all."""
        if not isinstance(request, Request):
            return Caller(None, sees_all=True), None
        return self.api.tenants.caller(request), request.scope.get("state", {}).get("key")

    def _secrets(self, call: _Call) -> list[str]:
        return secrets_for(self.api, call.key)

    async def _diagram(self, name: str) -> Diagram:
        try:
            diagram = await self.api.robots.diagram(name) if name != RESUME_TOOL else None
        except DiagramInvalid as exc:
            where = f"{self.api.folder}/"
            raise _Refusal(f"robot '{name}' has problems in its diagram; it cannot run",
                           [str(problem).replace(where, "") for problem in exc.problems]) from None
        if diagram is None:
            raise MCPError(types.INVALID_PARAMS, f"no tool named '{name}'")
        return diagram

    async def _start(self, call: _Call, name: str, arguments: dict[str, Any]) -> RunAnswer:
        diagram = await self._diagram(name)
        run = self._run(call, name, diagram, arguments)
        try:
            inputs = typed_inputs(diagram, {key: value for key, value in arguments.items()
                                            if key != _session_argument(diagram)})
        except InputProblems as exc:
            raise _Refusal(f"the arguments do not fit robot '{name}'", exc.problems) from None
        # Progress is told per finished block, which the trace writes at Debug: a run asked for it writes at least that.
        level = MessageLevel.DEBUG if call.progress and diagram.message_level < MessageLevel.DEBUG else None
        try:
            run_id = await run.start(name, diagram, inputs, level)
        except Refused as exc:
            raise _Refusal(exc.message, exc.problems) from None
        return await self._result(call, run_id)

    def _run(self, call: _Call, name: str, diagram: Diagram, arguments: dict[str, Any]) -> RunForCaller:
        """The caller's run, in the session the call names (if any), kept as the API's `start_run` keeps it: a name
        that is no session's, or too long with the caller's key, is refused before the arguments are looked at."""
        argument = _session_argument(diagram)
        asked = arguments.get(argument) if argument is not None else None
        if asked is not None and (not isinstance(asked, str) or not _SESSION.match(asked)):
            raise _Refusal(f"the arguments do not fit robot '{name}'",
                           [f"{argument}: a session's id is 1 to 100 letters, digits and _.:@-"])
        state = call.ctx.request.scope.get("state", {}) if isinstance(call.ctx.request, Request) else {}
        try:
            return RunForCaller(self.api, call.caller, state, asked)
        except Refused as exc:
            raise _Refusal(exc.message, exc.problems) from None

    async def _resume(self, call: _Call, run_id: str, answer: object) -> RunAnswer:
        """The run answered through the backend's resume (a turn), as `POST /v1/runs/{id}/resume` does."""
        if not isinstance(answer, dict | None):
            raise _Refusal("the answer is the Wait's form filled in: an object", ["answer: not an object"])
        if not run_id_shape(run_id) or not await self.api.tenants.sees(run_id, call.caller):
            raise _Refusal(f"no waiting run '{run_id}'")  # another key's run is no run of the caller's
        try:
            turn = await self.api.backend.durable.resume(run_id, answer, self.api.robots.registry,
                                                         take=self.api.backend.takes_over)
            state = call.ctx.request.scope.get("state", {}) if isinstance(call.ctx.request, Request) else {}
            await self.api.backend.resume(turn.diagram.path.stem, turn, state.get("key_id"), self._secrets(call))
        except Refused as exc:
            raise _Refusal(f"no waiting run '{run_id}'" if exc.status == 404 else exc.message, exc.problems) from None
        return await self._result(call, run_id)

    async def _answered(self, call: _Call, params: types.CallToolRequestParams) -> RunAnswer:
        """The run an `InputRequiredResult` asked about, resumed with the elicitation's answer (or left waiting)."""
        run_id = str(params.request_state)
        response = (params.input_responses or {}).get(_ANSWER_KEY)
        if isinstance(response, types.ElicitResult) and response.action == "accept":
            with contextlib.suppress(_Refusal):  # one the form refuses leaves the run waiting: it is asked again
                return await self._resume(call, run_id, dict(response.content or {}))
        found = await self.api.backend.get(run_id) if run_id_shape(run_id) and \
            await self.api.tenants.sees(run_id, call.caller) else None
        if found is None:
            raise _Refusal(f"no waiting run '{run_id}'")
        return found

    async def _result(self, call: _Call, run_id: str) -> RunAnswer:
        """The run's answer once it ends or waits, its blocks told as progress meanwhile; a waiting one with its
        question (the live record has it)."""
        following = asyncio.ensure_future(self._follow(call, run_id)) if call.progress else None
        try:
            found = await self.api.backend.result(run_id)
            if following is not None:  # its last events are told before the result goes
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(following), 1.0)
        finally:
            if following is not None and not following.done():
                following.cancel()
                await asyncio.gather(following, return_exceptions=True)
        if found.status == "waiting" and found.waiting is None:
            found = await self.api.backend.get(run_id) or found
        return found

    async def _follow(self, call: _Call, run_id: str) -> None:
        stream = await self.api.backend.events(run_id, call.seen)
        if stream is None:
            return
        async with contextlib.aclosing(stream):  # type: ignore[type-var]  # an async generator: it has aclose
            async for number, name, data in stream:
                call.seen = number
                if name == Event.BLOCK_FINISHED:
                    call.steps += 1
                    block = orjson.loads(data).get("block")
                    await call.ctx.session.report_progress(call.steps, None, f"{block} finished")

    async def _finish(self, call: _Call, found: RunAnswer) -> types.CallToolResult | types.InputRequiredResult:
        """A run's answer as the tool's result; a waiting run asks the client where it can answer."""
        for _ in range(_ASKS):
            if found.status != "waiting" or found.waiting is None or not call.elicits:
                break
            form = found.waiting.form or {"type": "object", "properties": {}}
            if not call.ctx.session.can_send_request:  # the per-request era: the client asks, then calls again
                ask = types.ElicitRequest(params=types.ElicitRequestFormParams(message=found.waiting.prompt,
                                                                               requested_schema=form))
                return types.InputRequiredResult(input_requests={_ANSWER_KEY: ask}, request_state=found.run_id)
            answered = await call.ctx.session.elicit_form(found.waiting.prompt, form, call.ctx.request_id)
            if answered.action != "accept":
                break
            try:
                found = await self._resume(call, found.run_id, dict(answered.content or {}))
            except _Refusal:  # the form refused the answer: the run still waits; asked again
                continue
        return await self._answer(call, found)

    async def _answer(self, call: _Call, found: RunAnswer) -> types.CallToolResult:
        meta = {_RUN_ID_META: found.run_id}
        if found.status == "succeeded":
            diagram: Diagram | None = None
            with contextlib.suppress(DiagramInvalid):  # changed since it ran: its variables are the answer
                diagram = await self.api.robots.diagram(found.robot)
            chosen = diagram.settings.output if diagram is not None else None
            variables = {name: found.variables[name] for name in chosen if name in found.variables} \
                if chosen else found.variables
            shown = self._shown(call, variables)
            return types.CallToolResult(content=[types.TextContent(text=orjson.dumps(shown).decode())],
                                        structured_content=shown, meta=meta)
        if found.status == "waiting" and found.waiting is not None:
            waiting = self._shown(call, {"run_id": found.run_id, "status": "waiting",
                                         "waiting": found.waiting.model_dump(exclude_none=True)})
            text = (f"Run {found.run_id} waits for an answer: {found.waiting.prompt}\nAnswer it with the "
                    f"{RESUME_TOOL} tool: {{\"run_id\": \"{found.run_id}\", \"answer\": {{...}}}} (the answer fits "
                    f"the form: {orjson.dumps(found.waiting.form).decode()})")
            shown_text = text if call.caller.sees_all else self.api.shown.text(text)
            return types.CallToolResult(content=[types.TextContent(text=shown_text)],
                                        structured_content=waiting, meta=meta)
        errors = found.errors or [{"block": None, "type": found.status, "message": f"the run is {found.status}"}]
        problems = [f"{error.get('block') or 'run'}: {error.get('type')}: {error.get('message')}" for error in errors]
        result = self._error(call, f"run {found.run_id} {found.status}", problems)
        result.structured_content = self._shown(call, {"run_id": found.run_id, "status": found.status,
                                                       "errors": errors})
        result.meta = meta
        return result

    def _error(self, call: _Call, message: str, problems: list[str]) -> types.CallToolResult:
        scrub = self._redactor.text  # an input may be a key
        text = "\n".join([scrub(message), *(f"- {scrub(problem)}" for problem in problems)])
        shown = text if call.caller.sees_all else self.api.shown.text(text)
        return types.CallToolResult(content=[types.TextContent(text=shown)], is_error=True)

    def _shown(self, call: _Call, value: dict[str, Any]) -> dict[str, Any]:
        """`value` as the caller is shown it: with no server folder in it for a key that is not an admin's."""
        if call.caller.sees_all:
            return value
        shown: dict[str, Any] = orjson.loads(self.api.shown.json(orjson.dumps(value)))
        return shown
