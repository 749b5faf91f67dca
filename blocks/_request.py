"""What the three request blocks share: inputs, outputs, history and tools handling.

A request block is glue: render inputs, build a neutral request, `ask` the providers'
request path (the shared client, or the simulator with --offline), and map the reply to
outputs and rows (its `finish`, and the vendor's reasoning and server-tool parts sealed on
the assistant row's `signature`; with a `response_schema`, the answer read as `output`). It
also tells that path how this run traces each attempt (image and document data left out) and, when the
block streams, where each piece of text goes as it comes (`text_delta` events, the run's text observers).
Each block module only names its adapter, its vendor's refusals, and its own inputs and checks.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blocks._fallback import Attempt, RequestSettings, answer_in_turn, check_fallbacks, fallback_blocks
from blocks._request_trace import Traced, text_sink
from engine import (
    Block,
    DataTable,
    Event,
    HistoryRow,
    InputError,
    MessageLevel,
    ProviderError,
    Report,
    Table,
    TableError,
    history_rows,
    history_table,
    to_table,
)
from engine.providers import (
    Adapter,
    Message,
    Part,
    PartsError,
    Refusal,
    Request,
    ResponseSchema,
    ToolSpec,
    WireError,
    cost_of,
    file_parts,
    parts_of,
    read_output,
    system_text,
    valid_tool_name,
)

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio
    from engine.providers import Answer  # annotations only: it loads httpx and the simulator

__all__ = ["RequestBlock", "RequestInputs", "RequestOutputs", "ThinkingInputs", "check_history", "tool_specs"]

OFFLINE_KEY = "offline-simulator-key"


class RequestInputs(BaseModel):
    # defer_build: validators are built when a diagram uses the block, not whenever blocks load
    model_config = ConfigDict(extra="forbid", defer_build=True)

    model: str = Field(min_length=1, description="the vendor's model id, e.g. claude-sonnet-5-5")
    role: str = Field(default="", description="system text: who the model is and how it answers")
    request: Message = Field(default="", description="the new user message: text, or a list of parts "
                                                               "({type: text, text}, {type: image, media_type, data | url}, "
                                                               "{type: document, media_type: application/pdf, data | url})")
    history: Table = Field(default_factory=lambda: DataTable(()), description="chat history table, oldest row first")
    temperature: float | None = Field(default=None, ge=0, le=1, description="sampling temperature, 0 to 1")
    max_tokens: int | None = Field(default=None, gt=0, description="most tokens in the answer")
    tools: Table | None = Field(default=None, description="tools table: name, description, parameters")
    timeout: float = Field(default=60, gt=0, description="seconds for the whole call, retries included")
    base_url: str | None = Field(default=None, description="the vendor's host, e.g. https://api.anthropic.com")
    api_version: str | None = Field(default=None, description="override the vendor API version")
    response_schema: ResponseSchema | None = Field(default=None, description="a JSON Schema the answer must match "
                                                                               "(inline, or {file: schema.json}); the "
                                                                               "parsed answer is the output `output`")
    stream: bool | None = Field(default=None, description="ask the vendor for a stream: each piece of the answer's "
                                                           "text is a text_delta event as it comes, the outputs are "
                                                           "the same; unset: as the run asks (diagrama run --stream)")
    cache: bool | None = Field(default=None, description="prompt caching: mark the stable prefix (tools, role, the "
                                                          "history before this turn) for the vendor's cache "
                                                          "(Anthropic; Gemini and Groq cache on their own); unset: "
                                                          "Start's `cache`")

    @field_validator("request", "role", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("history", mode="before")
    @classmethod
    def _none_is_no_history(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _something_to_send(self) -> RequestInputs:
        if not self.request and not self.history:
            raise ValueError("request and history are both empty: give the model something to answer")
        return self


class ThinkingInputs(RequestInputs):
    """A request block whose models may think first (ClaudeRequest, GeminiRequest)."""

    thinking: int | Literal["adaptive"] | None = Field(
        default=None, description="let the model think first: a budget in tokens, or 'adaptive' (the model decides); "
                                  "which models take which is checked at load")


class RequestOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    result: str = Field(default="", description="the answer text")
    called_tools: list[dict[str, Any]] = Field(default=[], description="[{id, name, arguments}]")
    history: Any = Field(default=None, description="the input history plus this turn")
    usage: dict[str, int] = Field(default={}, description="input_tokens, output_tokens (thinking_tokens "
                                                          "where the vendor counts them; cache_write_tokens, "
                                                          "cache_read_tokens when the prompt cache was used: "
                                                          "in input_tokens too)")
    stop_reason: str | None = Field(default=None, description="the vendor's own stop reason")
    finish: str = Field(default="complete", description="how the turn ended: complete, tool_calls, max_tokens, refused, "
                                                        "blocked, paused or context_exceeded")
    refusal: str | None = Field(default=None, description="the vendor's refusal text, where it gives one")
    stop_details: dict[str, Any] | None = Field(default=None, description="what the vendor says about the stop")
    citations: list[dict[str, str]] = Field(default=[], description="[{text, source}] the answer cites")
    output: Any = Field(default=None, description="with response_schema: the answer parsed as JSON and validated "
                                                  "against it (None when the turn called tools)")
    answered_by: str = Field(default="", description="the model id that answered: `model`, or the `fallback` "
                                                     "model that answered instead")


def tool_specs(table: DataTable | None, name_limit: int) -> list[ToolSpec]:
    """Tools table rows → ToolSpecs; names and schemas are checked here."""
    if table is None or not table.rows:
        return []
    if "name" not in table.columns:
        raise TableError(f"a tools table needs a 'name' column (it has {', '.join(table.columns)})")
    specs = []
    seen: set[str] = set()
    for number, row in enumerate(table, start=1):
        name = str(row.get("name") or "")
        if not valid_tool_name(name, name_limit):
            raise table.row_error(
                number, f"tools row {number}: tool name {name!r} must be Latin letters, digits, '_' and '-', "
                f"at most {name_limit} characters"
            )
        if name in seen:
            raise table.row_error(number, f"tools row {number}: tool name '{name}' appears twice")
        seen.add(name)
        parameters: Any = row.get("parameters")
        if isinstance(parameters, str):
            try:
                parameters = orjson.loads(parameters) if parameters.strip() else None
            except orjson.JSONDecodeError:
                raise table.row_error(number, f"tools row {number} ('{name}'): parameters is not JSON text") from None
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise table.row_error(number, f"tools row {number} ('{name}'): parameters must be a JSON Schema "
                                          "with type: object")
        strict = row.get("strict")
        specs.append(ToolSpec(name, str(row.get("description") or ""), parameters,
                              strict is True or str(strict).lower() == "true"))
    return specs


def _constant_parts(field: str, value: Any) -> tuple[Part, ...]:
    """The parts a constant `request` or `history` holds (none when it has none, or when it is malformed: the
    Inputs model and `check_history` report that)."""
    try:
        if field == "request":
            return parts_of(value) if isinstance(value, list) else ()
        if value is None:
            return ()
        rows = history_rows(value if isinstance(value, DataTable) else to_table(value))
    except (PartsError, TableError):
        return ()
    return tuple(part for row in rows for part in row.parts)


def _row_field(name: str, exc: TableError) -> str:
    """The field a load problem names: `name.<index>` (0-based, as YAML paths count) for one row, so that the
    problem gets that row's line."""
    return f"{name}.{exc.row - 1}" if exc.row else name


def check_history(value: Any, report: Report) -> None:
    """Load time: a constant `history` input that could never be sent (a role that is no role, a tool row
    without its id), reported at its row."""
    if value is None:
        return
    try:
        history_rows(value if isinstance(value, DataTable) else to_table(value))
    except TableError as exc:
        report(_row_field("history", exc), exc.detail, None)


class RequestBlock(Block):
    """Base of ClaudeRequest, GroqChatRequest and GeminiRequest."""

    Inputs = RequestInputs
    Outputs = RequestOutputs
    Settings = RequestSettings
    adapter: ClassVar[Adapter]
    effects: ClassVar[bool] = True  # a vendor call: checkpointed after, and sent again only if in flight at a crash

    def __init__(self, spec: Any, settings: BaseModel | None = None) -> None:
        super().__init__(spec, settings)
        self.fallbacks = fallback_blocks(self, settings)
        """Each `fallback` entry: a block of its type (its vendor's adapter and checks) and its model."""

    def check(self, constants: Mapping[str, Any], report: Report) -> None:
        check_history(constants.get("history"), report)
        tools = constants.get("tools")
        specs: list[ToolSpec] | None = None
        if tools is not None:
            try:
                specs = tool_specs(to_table(tools) if not isinstance(tools, DataTable) else tools,
                                   self.adapter.name_limit)
                self.check_tools(specs)
            except TableError as exc:
                report(_row_field("tools", exc), exc.detail, None)
            except WireError as exc:
                report("tools", str(exc), getattr(exc, "hint", None))
        model = constants.get("model") if isinstance(constants.get("model"), str) else None
        parts = {field: _constant_parts(field, constants.get(field)) for field in ("request", "history")}
        refusals = [self.parts_refusal(model, parts[field], field) for field in ("request", "history")]
        schema = constants.get("response_schema")
        if isinstance(schema, dict) and set(schema) != {"file"}:  # a file is read, and its schema checked, when validated
            has_tools = bool(tools) if "tools" in constants else "tools" in self.spec.with_  # templated: offered, surely
            refusals.append(self.output_refusal(model, schema, has_tools))
        for refusal in refusals:
            if refusal is not None:
                report(refusal.field, refusal.message, None)
        self.check_vendor(constants, report)
        if self.fallbacks:
            check_fallbacks(self, constants, parts, specs, report)

    @classmethod
    def parts_refusal(cls, model: str | None, parts: tuple[Part, ...], field: str) -> Refusal | None:
        """Why the vendor would refuse these parts of input `field` on this model (None while unknown); each block's."""
        return None

    @classmethod
    def output_refusal(cls, model: str | None, schema: dict[str, Any], has_tools: bool) -> Refusal | None:
        """Why the vendor would refuse this response schema on this model (None while unknown); each block's."""
        return None

    tools_input: ClassVar[str | None] = "tools"

    @classmethod
    def check_offered_tool(cls, name: str, parameters: Mapping[str, Any], strict: bool) -> tuple[str, str | None] | None:
        """A registry tool `tools(...)` may offer: its name within the vendor's limit, and `check_tools`."""
        if not valid_tool_name(name, cls.adapter.name_limit):
            return (f"tool name '{name}' is longer than the {cls.adapter.name_limit} characters "
                    f"{cls.adapter.vendor} takes", "shorten the function name")
        try:
            cls.check_tools([ToolSpec(name, "", dict(parameters), strict)])
        except WireError as exc:
            return str(exc), getattr(exc, "hint", None)
        return None

    def check_vendor(self, constants: Mapping[str, Any], report: Report) -> None:  # optional
        """Vendor-specific load checks on constant inputs."""

    @classmethod
    def check_tools(cls, specs: list[ToolSpec]) -> None:  # optional
        """Vendor-specific checks of a tools table; raise WireError (`hint` on it, when it has one)."""

    def check_request(self, request: Request) -> None:  # optional
        """Vendor-specific checks of templated values before sending (constants were checked at load); raise InputError."""

    def _check_templated(self, request: Request, history_parts: tuple[Part, ...], request_parts: tuple[Part, ...]) -> None:
        """Before sending, what load could not check because some input is templated: the parts and the response
        schema this model takes, then the vendor's own checks."""
        found = [self.parts_refusal(request.model, request_parts, "request"),
                 self.parts_refusal(request.model, history_parts, "history")]
        if request.response_schema is not None:
            found.append(self.output_refusal(request.model, request.response_schema, bool(request.tools)))
        for refusal in found:
            if refusal is not None:
                raise InputError(f"with.{refusal.field}: {refusal.message}")
        self.check_request(request)

    def api_key(self, context: RunContext) -> str:
        """The vendor's key from the environment (any, offline); missing_api_key without one."""
        environ = context.services.environ
        for variable in self.adapter.key_variables:
            if environ.get(variable):
                return environ[variable]
        if context.services.offline:
            return OFFLINE_KEY
        names = " or ".join(self.adapter.key_variables)
        raise ProviderError(f"no API key: set {names} in the environment (or run with --offline)",
                            type="missing_api_key")

    # A request block's run in the order it happens (inputs, request, reply, outputs); each step
    # is a call into the providers' face, and splitting it would only pass the same locals around.
    async def run(self, inputs: RequestInputs, context: RunContext) -> dict[str, Any]:
        adapter = self.adapter
        key = self.api_key(context)
        try:
            rows = history_rows(inputs.history)
            tools = tool_specs(inputs.tools, adapter.name_limit)
        except TableError as exc:
            raise InputError(exc.message) from None
        history_parts = tuple(part for row in rows for part in row.parts)
        request_parts = tuple(inputs.request) if isinstance(inputs.request, list) else ()
        if inputs.request:
            rows.append(HistoryRow.user(inputs.request))
        selected = getattr(inputs.tools, "selected_tools", None)  # a ranked tools table: scores and their parts
        if selected:
            context.emit(Event.TOOLS_SELECTED, tools=selected)
        request = Request(inputs.model, system_text(inputs.role, rows), [r for r in rows if r.role != "system"],
                          tools, inputs.temperature, inputs.max_tokens, inputs.api_version,
                          getattr(inputs, "thinking", None), getattr(inputs, "reasoning_effort", None),
                          inputs.response_schema, context.diagram.settings.cache if inputs.cache is None else inputs.cache)
        if context.current.static_inputs is None:  # some input is templated: check what load could not
            self._check_templated(request, history_parts, request_parts)
        try:
            call = adapter.build(request, key)
        except WireError as exc:
            raise InputError(str(exc)) from None
        services = context.services
        files = file_parts((*history_parts, *request_parts))
        traced = Traced(context, {part.data: f"<{part.size} bytes of {part.media_type}>" for part in files
                                   if part.data is not None} or None)
        # Each attempt's request and response are recorded only at Detailed: copying them costs on every request.
        exchanges = traced if context.message_level >= MessageLevel.DETAILED else None
        began = time.perf_counter()
        from engine.providers import ask  # the request path (httpx, the simulator) loads when a run sends

        stream = inputs.stream if inputs.stream is not None else services.stream
        # Addressed from the top run (`sub/ask` in a Subdiagram's child): scripted replies, recordings and the
        # streamed pieces' listeners name the block so.
        address = context.address
        on_text = text_sink(context, address) if stream else None

        def send(attempt: Attempt, timeout: float) -> Awaitable[Answer]:  # timeout: what the block's own has left
            return ask(services, attempt.block.adapter, attempt.call, block=address, timeout=timeout,
                       explicit_base=inputs.base_url if attempt.own else None, exchanges=exchanges,
                       retried=traced.retried, stream=stream, on_text=on_text)

        answer, attempt = await answer_in_turn(
            context, Attempt(self, request, call), self.fallbacks, send, timeout=inputs.timeout,
            parts={"request": request_parts, "history": history_parts},
            files=lambda: [len(part.data or part.url or "") for part in files])
        reply, adapter, request, call = answer.reply, attempt.block.adapter, attempt.request, attempt.call
        answer_rows = list(rows)
        # The turn's sealed parts ride on its first assistant row (a row of their own when the turn has
        # neither text nor calls: a paused turn), so that the same vendor gets them back with the turn; a
        # fallback's are its vendor's, which the block's own would not take back: they are left out.
        sealed = reply.signature if attempt.own else None
        if reply.text:
            answer_rows.append(HistoryRow("assistant", reply.text, signature=sealed))
            sealed = None
        called = []
        for tool_call in reply.calls:
            answer_rows.append(HistoryRow("assistant", orjson.dumps(tool_call.arguments).decode(), tool_call.id,
                                          tool_call.name, (tool_call.signature if attempt.own else None) or sealed))
            sealed = None
            called.append({"id": tool_call.id, "name": tool_call.name, "arguments": tool_call.arguments})
        if sealed:
            answer_rows.append(HistoryRow("assistant", "", signature=sealed))
        usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
        if reply.thinking_tokens is not None:
            usage["thinking_tokens"] = reply.thinking_tokens
        if reply.cache_write_tokens:
            usage["cache_write_tokens"] = reply.cache_write_tokens
        if reply.cache_read_tokens:
            usage["cache_read_tokens"] = reply.cache_read_tokens
        extra: dict[str, Any] = {}
        if files:
            extra["parts"] = [part.shown() for part in files]
        if request.response_schema is not None:
            extra["structured"] = True
        if not attempt.own:
            extra.update(requested_model=inputs.model, answered_by=attempt.shown)
        if answer.cached:  # the vendor was not called: its usage is as it said, but nothing was spent
            extra["cached"] = True
            usd: float | None = 0.0
        else:
            cost = cost_of(adapter.vendor, request.model, usage)
            usd = None if cost is None else cost.usd
        context.count_request(usage, usd)
        context.emit(Event.PROVIDER_CALLED, vendor=adapter.vendor, model=request.model, usage=usage,
                     cost=None if usd is None else {"usd": usd},
                     stop_reason=reply.stop_reason, finish=reply.finish, called_tools=[c["name"] for c in called],
                     attempts=answer.attempts, duration_ms=round((time.perf_counter() - began) * 1000, 3),
                     offline=services.offline, notes=[*call.notes, *attempt.notes], api_version=call.api_version,
                     max_tokens=request.max_tokens, temperature=request.temperature, **extra)
        # After the call is told (its tokens were spent either way): an answer that does not match is `invalid_output`.
        output = read_output(adapter.vendor, reply, request.response_schema) if request.response_schema is not None \
            else None
        return {
            "result": reply.text,
            "called_tools": called,
            "history": history_table(answer_rows),
            "usage": usage,
            "stop_reason": reply.stop_reason,
            "finish": reply.finish,
            "refusal": reply.refusal,
            "stop_details": reply.stop_details,
            "citations": reply.citations,
            "output": output,
            "answered_by": request.model,
        }
