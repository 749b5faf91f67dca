"""`diagrama api`'s OpenAI-compatible door: `GET /v1/models` (each robot a model) and `POST /v1/chat/completions`
(a robot's run as a chat answer, whole or as a chunk stream), in OpenAI's wire format (engine.web.service.chat_wire).

A chat call is one run through the API's backend (`start`, `result`, its event stream), as `POST
/v1/robots/{name}/runs` makes one: no run loop or turn of its own. What is chat-specific lives here: which input the
message fills and which variable answers (Start `chat`, else the README's convention), which session a robot with
memory takes its turn in, and the chunks built from the answering blocks' `text_delta` events.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from engine.compile.diagram import Diagram
from engine.errors import DiagramInvalid
from engine.format.levels import MessageLevel
from engine.format.redact import Redactor
from engine.format.validation import dotted, validation_message
from engine.runtime.trace import Event
from engine.web.files import FolderError
from engine.web.http import read_body
from engine.web.service.chat_wire import ChatRequest, chunk, error_body, usage_of
from engine.web.service.durable import Refused
from engine.web.service.models import SESSION_PATTERN, RunAnswer
from engine.web.service.robots import InputProblems, typed_inputs
from engine.web.service.starting import RunForCaller
from engine.web.service.terminal import TERMINAL

if TYPE_CHECKING:
    from engine.web.service.app import RobotsApi

__all__ = ["INPUT_NAMES", "OUTPUT_NAMES", "SESSION_HEADER", "ChatDoor", "ChatMapping", "chat_mapping"]

INPUT_NAMES = ("message", "question", "prompt", "input", "query")
"""Without Start `chat`: the first of these Start inputs takes the message (else a robot's only input)."""
OUTPUT_NAMES = ("answer", "reply", "result", "output", "response")
"""Without Start `chat`: the first of these variables the robot sets is the answer."""
SESSION_HEADER = "x-diagrama-session"
_SESSION = re.compile(SESSION_PATTERN)
_KEPT_CONVERSATIONS = 10_000
"""Conversations whose session this process remembers (by their messages so far), oldest forgotten first."""


class ChatRefused(Exception):
    """A chat call answered with an OpenAI error: status, message, code."""

    def __init__(self, status: int, message: str, code: str | None = None, *, retry: bool = True) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.retry = status, message, code, retry


@dataclass(frozen=True)
class ChatMapping:
    """How a robot chats: the input its message fills, the variable that answers, and the blocks that set it (their
    `text_delta`s are the answer's stream)."""

    input: str
    output: str
    answering: frozenset[str]


def chat_mapping(diagram: Diagram) -> ChatMapping | str:
    """The robot's chat mapping, or why it has none (a sentence)."""
    settings = diagram.settings
    sets = {name for block in diagram.blocks.values() for name in block.impl.spec.set}
    given: str | None
    if settings.chat is not None:
        given, output = settings.chat.input, settings.chat.output
    else:
        given = next((name for name in INPUT_NAMES if name in settings.inputs), None)
        if given is None and len(settings.inputs) == 1:
            given = next(iter(settings.inputs))
        output = next((name for name in OUTPUT_NAMES if name in sets or name in settings.variables), "")
        if given is None or not output:
            missing = "input (message, question, prompt, input or query)" if given is None else \
                "output (a variable answer, reply, result, output or response)"
            return f"it has no chat {missing}: give its Start block `chat: {{input: …, output: …}}`"
    answering = frozenset(block_id for block_id, block in diagram.blocks.items() if output in block.impl.spec.set)
    return ChatMapping(given, output, answering)


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    kinds = {str(part.get("type")) for part in content} - {"text"}
    if kinds:
        raise ChatRefused(400, f"a robot reads text: the message's {', '.join(sorted(kinds))} parts cannot be read",
                          "unsupported_content", retry=False)
    return "\n".join(str(part.get("text", "")) for part in content)


def _conversation(key_id: str | None, robot: str, turns: list[tuple[str, str]]) -> str:
    """The digest that names a conversation's messages so far (user and assistant turns, as sent)."""
    return hashlib.sha256(orjson.dumps([key_id, robot, turns])).hexdigest()


class ChatDoor:
    """The two routes over one RobotsApi (its robots, backend, tenants and secrets)."""

    def __init__(self, api: RobotsApi) -> None:
        self.api = api
        self._redactor = Redactor(api.secrets)
        self._conversations: OrderedDict[str, str] = OrderedDict()
        """The digest of a conversation's messages up to its last answer → its session (a new turn continues it)."""

    async def list_models(self, _request: Request) -> Response:
        models = []
        for name, _diagram in await self.api.robots.valid():
            path = self.api.robots.path(name)
            created = int(path.stat().st_mtime) if path is not None else 0
            models.append({"id": name, "object": "model", "created": created, "owned_by": "diagrama"})
        return Response(orjson.dumps({"object": "list", "data": models}), media_type="application/json")

    async def chat_completion(self, request: Request) -> Response:
        try:
            return await self._chat(request)
        except ChatRefused as exc:
            return self._refusal(exc.status, exc.message, exc.code, retry=exc.retry)
        except FolderError as exc:  # the body reader's refusals (413, 400)
            return self._refusal(exc.status, exc.message, "invalid_body")

    def _refusal(self, status: int, message: str, code: str | None, *, retry: bool = True,
                 run_id: str | None = None) -> Response:
        headers = {} if retry else {"x-should-retry": "false"}  # the OpenAI SDKs' own header: no second run
        if run_id is not None:
            headers["x-run-id"] = run_id
        return Response(error_body(status, self._redactor.text(message), code), status, headers,
                        media_type="application/json")

    # Long: the request read, the robot, its input, its session and its start, in the order a call needs them.
    async def _chat(self, request: Request) -> Response:
        try:
            asked = ChatRequest.model_validate_json(await read_body(request) or b"{}")
        except ValidationError as exc:
            problems = "; ".join(f"{dotted(error['loc']) or 'body'}: {validation_message(error)}"
                                 for error in exc.errors(include_url=False))
            raise ChatRefused(400, f"the body is not a chat request: {problems}", "invalid_body", retry=False) \
                from None
        name = asked.model
        state = request.scope.setdefault("state", {})
        state["robot"] = name
        diagram = await self._diagram(name)
        mapping = chat_mapping(diagram)
        if isinstance(mapping, str):
            raise ChatRefused(400, f"robot '{name}' cannot chat: {mapping}", "model_not_chat", retry=False)
        turns = [(m.role, _text(m.content).strip()) for m in asked.messages if m.role in ("user", "assistant")]
        last = next((i for i in range(len(turns) - 1, -1, -1) if turns[i][0] == "user"), None)
        if last is None:
            raise ChatRefused(400, "the messages have no user message: the last one is the robot's input",
                              "no_user_message", retry=False)
        try:
            inputs = typed_inputs(diagram, {mapping.input: turns[last][1]})
        except InputProblems as exc:
            raise ChatRefused(400, f"the message does not fit robot '{name}': {'; '.join(exc.problems)}",
                              "invalid_input", retry=False) from None
        caller = self.api.tenants.caller(request)
        named, conversation = self._session(request, asked, name, caller.key_id, turns[:last]) \
            if diagram.settings.memory else (None, False)
        try:
            run = RunForCaller(self.api, caller, state, named)
        except Refused as exc:  # a name too long once scoped to the caller's key: said in OpenAI's error shape
            raise ChatRefused(exc.status, "; ".join([exc.message, *exc.problems]), "invalid_session",
                              retry=False) from None
        level = max(diagram.message_level, MessageLevel.DEBUG) if asked.stream else None  # text_delta: Debug
        try:
            run_id = await run.start(name, diagram, inputs, level, stream=asked.stream)
        except Refused as exc:
            raise ChatRefused(exc.status, exc.message, "session_busy" if exc.status == 409 else "not_started",
                              retry=exc.status == 503) from None
        state["run_id"] = run_id
        remember = (lambda answer: self._remember(caller.key_id, name, turns, answer, named)) \
            if conversation and named is not None else None
        headers = {"x-run-id": run_id, **({"x-diagrama-session": named} if named is not None else {})}
        head = {"id": f"chatcmpl-{run_id}", "created": int(time.time()), "model": name}
        if asked.stream:
            include_usage = asked.stream_options is not None and asked.stream_options.include_usage
            shown = self.api.shown_for(request)
            return StreamingResponse(self._chunks(run_id, head, mapping, include_usage, shown, remember),
                                     media_type="text/event-stream",
                                     headers={**headers, "cache-control": "no-store", "x-accel-buffering": "no"})
        found = await self.api.backend.result(run_id)
        if found.status != "succeeded":
            status, message, code = _failure(found)
            return self._refusal(status, message, code, retry=False, run_id=run_id)
        content = _answer_text(found.variables.get(mapping.output))
        if remember is not None:
            remember(content)
        body = {**head, "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": usage_of(found.usage)}
        return Response(orjson.dumps(body), media_type="application/json", headers=headers)

    async def _diagram(self, name: str) -> Diagram:
        try:
            diagram = await self.api.robots.diagram(name)
        except DiagramInvalid:
            raise ChatRefused(422, f"robot '{name}' has problems in its diagram; it cannot run (GET "
                                   f"/v1/robots/{name}/runs names them, as `diagrama validate` does)",
                              "model_invalid", retry=False) from None
        if diagram is None:
            raise ChatRefused(404, f"no robot named '{name}' (GET /v1/models lists them)", "model_not_found",
                              retry=False)
        return diagram

    def _session(self, request: Request, asked: ChatRequest, robot: str, key_id: str | None,
                 earlier: list[tuple[str, str]]) -> tuple[str, bool]:
        """The session a memory robot's run takes its turn in, as the caller names it, and whether the conversation
        picked it: X-Diagrama-Session, else `user`, else the earlier messages' (a new one for a new conversation)."""
        given = request.headers.get(SESSION_HEADER)
        if given is not None:
            if not _is_session(given):
                raise ChatRefused(400, f"{SESSION_HEADER}: 1 to 100 letters, digits and _.:@- (not {given[:40]!r})",
                                  "invalid_session", retry=False)
            return given, False
        if asked.user:
            user = asked.user if _is_session(asked.user) else \
                f"user-{hashlib.sha256(asked.user.encode()).hexdigest()[:32]}"
            return user, False
        found = self._conversations.get(_conversation(key_id, robot, earlier)) if earlier else None
        return found or f"chat-{secrets.token_hex(12)}", True

    def _remember(self, key_id: str | None, robot: str, turns: list[tuple[str, str]], answer: str,
                  session: str) -> None:
        """The conversation with this answer → its session: the client's next turn sends these messages first."""
        self._conversations[_conversation(key_id, robot, [*turns, ("assistant", answer.strip())])] = session
        if len(self._conversations) > _KEPT_CONVERSATIONS:
            self._conversations.popitem(last=False)

    # Long: one loop over the run's events, then the end its result calls for (the rest, the error, usage, [DONE]).
    async def _chunks(self, run_id: str, head: dict[str, Any], mapping: ChatMapping, include_usage: bool,
                      shown: Callable[[bytes], bytes], remember: Callable[[str], None] | None) -> AsyncIterator[bytes]:
        """The run as chat.completion.chunk events: the answering blocks' text as it comes, then what of the answer
        no block streamed, a last chunk, usage when asked, `[DONE]`; an error event when the run does not succeed."""
        backend = self.api.backend
        head = {**head, "object": "chat.completion.chunk"}
        yield chunk(head, {"role": "assistant", "content": ""})
        streamed: list[str] = []
        events = await backend.events(run_id, 0)
        if events is not None:
            async with contextlib.aclosing(events):  # type: ignore[type-var]  # an async generator: it has aclose
                async for _number, name, data in events:
                    if name == Event.TEXT_DELTA:
                        fields = orjson.loads(data)
                        text = fields.get("text")
                        if fields.get("block") in mapping.answering and isinstance(text, str) and text:
                            streamed.append(text)
                            yield shown(chunk(head, {"content": text}))
                    elif name in TERMINAL:
                        break
        found = await backend.result(run_id)
        if found.status != "succeeded":
            status, message, code = _failure(found)
            yield b"data: " + shown(error_body(status, self._redactor.text(message), code)) + b"\n\n"
            yield b"data: [DONE]\n\n"
            return
        answer, said = _answer_text(found.variables.get(mapping.output)), "".join(streamed)
        # Not streamed by a request block (a Set's answer, a block that did not stream): all of it, at the end.
        rest = answer if not said else answer[len(said):] if answer.startswith(said) else ""
        if rest:
            yield shown(chunk(head, {"content": rest}))
        if remember is not None:
            remember(answer)
        yield chunk(head, {}, "stop")
        if include_usage:
            yield chunk(head, {}, usage=usage_of(found.usage))
        yield b"data: [DONE]\n\n"


def _is_session(name: str) -> bool:
    return _SESSION.match(name) is not None


def _answer_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _failure(found: RunAnswer) -> tuple[int, str, str]:
    """A run that did not succeed, as an OpenAI error: status, message (with the run's id), code."""
    run_id = found.run_id
    if found.status == "waiting":
        waiting = found.waiting
        where = f" at its Wait '{waiting.block}' ({waiting.prompt!r})" if waiting is not None else " at a Wait"
        return 409, (f"robot '{found.robot}' stopped{where} for a person's answer, which a chat call cannot give: "
                     f"answer it with POST /v1/runs/{run_id}/resume (run {run_id}), or cancel it with POST "
                     f"/v1/runs/{run_id}/cancel"), "run_waiting"
    if found.status == "failed":
        error = found.errors[-1] if found.errors else {}
        kind = str(error.get("type") or "run_failed")
        status = 502 if kind.startswith("provider_") else 500
        return status, f"run {run_id} of robot '{found.robot}' failed: {kind}: {error.get('message', '')}", kind
    return 500, f"run {run_id} of robot '{found.robot}' ended {found.status}: resume it with POST " \
                f"/v1/runs/{run_id}/resume", f"run_{found.status}"


