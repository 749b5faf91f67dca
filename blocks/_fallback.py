"""A request block's `fallback`: the other models, of its vendor or another, that answer its turn when its own
call ends in an outcome retries cannot fix (README, "Fallback").

The key and its load checks (each fallback's vendor must take the request's constant parts, tools and response
schema), the neutral request translated for each fallback (vendor-only fields dropped, with a note), and the
attempts in turn under one deadline, each checked against the budgets and counted as a request. What a reply
becomes is the block's (blocks/_request.py); no adapter is asked anything but `build`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine import BlockTimeout, Event, InputError, ProviderError, Report, RunError
from engine.providers import HttpCall, Part, Request, ToolSpec, WireError, estimate

if TYPE_CHECKING:
    from blocks._request import RequestBlock  # annotations only: _request imports this module
    from engine import RunContext
    from engine.providers import Answer  # annotations only: it loads httpx and the simulator, which validate needs not

__all__ = ["Attempt", "RequestSettings", "answer_in_turn", "check_fallbacks", "fallback_blocks", "falls_back"]

_HOMES = {"ClaudeRequest": "blocks.claude_request", "GroqChatRequest": "blocks.groq_chat_request",
          "GeminiRequest": "blocks.gemini_request"}

FALLBACK_STATUSES = frozenset({408, 429})
"""The 4xx statuses a fallback is tried on (each 5xx is, Anthropic's 529 overloaded_error among them)."""
_OVERLOADED = frozenset({
    "overloaded_error", "api_error", "rate_limit_error", "timeout_error",  # Anthropic's stream `error` events
    "UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED",  # Gemini's
    "service_unavailable", "internal_server_error", "capacity_exceeded", "rate_limit_exceeded",  # Groq's
})
"""The vendor error types of a stream that broke before its first piece of text (no status) that a fallback is tried on."""
_NO_TOKENS: Mapping[str, int] = {"input_tokens": 0, "output_tokens": 0}


class RequestFallback(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["ClaudeRequest", "GroqChatRequest", "GeminiRequest"] = Field(
        description="the request block type whose vendor answers instead")
    model: str = Field(min_length=1, description="that vendor's model id")


class RequestSettings(BaseModel):
    """A request block's own keys."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    fallback: list[RequestFallback] = Field(
        default_factory=lambda: [], description="models asked in turn, the same request translated for their vendor, "
                                                "when the block's own call ends overloaded, in a 5xx, a rate limit or "
                                                "a timeout (README, Fallback): [{type, model}]")


def fallback_blocks(owner: RequestBlock, settings: BaseModel | None) -> tuple[tuple[RequestBlock, str], ...]:
    """Load time: a block of each fallback's type (over the owner's spec, without fallbacks of its own), with its model."""
    if not isinstance(settings, RequestSettings) or not settings.fallback:
        return ()
    found = []
    for entry in settings.fallback:
        cls: type[RequestBlock] = getattr(importlib.import_module(_HOMES[entry.type]), entry.type)
        found.append((cls(owner.spec), entry.model))
    return tuple(found)


def falls_back(error: RunError, left: float) -> bool:
    """Whether a fallback may answer after this error, with `left` seconds of the block's timeout still to spend."""
    if left <= 0:
        return False
    if isinstance(error, BlockTimeout):  # with time left: retrying stopped because the next wait would pass it
        return True
    if not isinstance(error, ProviderError) or error.type not in ("provider_error", "provider_connection_error"):
        return False  # refused, blocked, malformed, a truncated call, a stream cut after its first piece
    if error.type == "provider_connection_error":
        return True
    if error.status is not None:
        return error.status in FALLBACK_STATUSES or error.status >= 500
    return error.vendor_type in _OVERLOADED


def check_fallbacks(block: RequestBlock, constants: Mapping[str, Any], parts: Mapping[str, tuple[Part, ...]],
                    specs: list[ToolSpec] | None, report: Report) -> None:
    """Load time: each fallback takes what is constant of the request (its parts, tools and response schema; its
    temperature, on Claude); a vendor-only input (thinking, reasoning_effort) is dropped at run time instead."""
    own_model = constants.get("model")
    schema = constants.get("response_schema")
    schema = schema if isinstance(schema, dict) and set(schema) != {"file"} else None
    has_tools = bool(specs) if "tools" in constants else "tools" in block.spec.with_
    for index, (fallback, model) in enumerate(block.fallbacks):
        at = f"fallback.{index}"
        named = f"the {fallback.type_name} fallback '{model}'"
        if fallback.type_name == block.type_name and model == own_model:
            report(f"{at}.model", f"{named} is the block's own model", "name another model or vendor")
        found = [fallback.parts_refusal(model, parts[field], field) for field in ("request", "history")]
        if schema is not None:
            found.append(fallback.output_refusal(model, schema, has_tools))
        for refusal in found:
            if refusal is not None:
                report(f"{at}.type", f"{named} cannot take with.{refusal.field}: {refusal.message}", None)
        for spec in specs or ():
            refused = fallback.check_offered_tool(spec.name, spec.parameters, spec.strict)
            if refused is not None:
                report(f"{at}.type", f"{named} cannot take with.tools: {refused[0]}", refused[1])

        def vendor_report(field: str, message: str, hint: str | None, at: str = at, named: str = named) -> None:
            report(f"{at}.model", f"{named} cannot take with.{field}: {message}", hint)

        fallback.check_vendor({"model": model, "temperature": constants.get("temperature"),
                               "max_tokens": constants.get("max_tokens")}, vendor_report)


@dataclasses.dataclass(frozen=True, slots=True)
class Attempt:
    """One vendor call of a request block's turn: its own, or a fallback's with the request translated."""

    block: RequestBlock
    request: Request
    call: HttpCall
    own: bool = True
    notes: tuple[str, ...] = ()
    """How the request was translated for a fallback (what was dropped), for the Debug trace."""

    @property
    def shown(self) -> dict[str, str]:
        return {"type": self.block.type_name, "vendor": self.block.adapter.vendor, "model": self.request.model}


def _translated(block: RequestBlock, model: str, own: Request,
                parts: Mapping[str, tuple[Part, ...]]) -> tuple[Request, list[str]] | str:
    """The block's request as `block` sends it on `model`, and what was dropped; or why that vendor cannot take it."""
    takes = block.Inputs.model_fields
    notes: list[str] = []
    thinking = own.thinking if "thinking" in takes else None
    effort = own.reasoning_effort if "reasoning_effort" in takes else None
    for name, given, kept in (("thinking", own.thinking, thinking), ("reasoning_effort", own.reasoning_effort, effort)):
        if given is not None and kept is None:
            notes.append(f"{name} {given!r} dropped: {block.type_name} does not take it")
    if own.api_version is not None:
        notes.append(f"api_version {own.api_version!r} dropped: it is the block's own vendor's")
    request = dataclasses.replace(own, model=model, thinking=thinking, reasoning_effort=effort, api_version=None)
    found = [block.parts_refusal(model, parts[field], field) for field in ("request", "history")]
    if request.response_schema is not None:
        found.append(block.output_refusal(model, request.response_schema, bool(request.tools)))
    for refusal in found:
        if refusal is not None:
            return f"with.{refusal.field}: {refusal.message}"
    for spec in request.tools:
        refused = block.check_offered_tool(spec.name, spec.parameters, spec.strict)
        if refused is not None:
            return f"with.tools: {refused[0]}"
    try:
        block.check_request(request)
    except InputError as exc:
        if request.thinking is None and request.reasoning_effort is None:
            return exc.message
        notes.append(f"thinking and reasoning_effort dropped: {exc.message}")
        request = dataclasses.replace(request, thinking=None, reasoning_effort=None)
        try:
            block.check_request(request)
        except InputError as again:
            return again.message
    return request, notes


def _next_attempt(context: RunContext, pending: list[tuple[RequestBlock, str]], own: Request,
                  parts: Mapping[str, tuple[Part, ...]]) -> tuple[Attempt | None, list[dict[str, str]]]:
    """The next fallback that can be asked, and those skipped on the way (a missing key, a request it cannot take)."""
    skipped: list[dict[str, str]] = []
    while pending:
        block, model = pending.pop(0)
        translated = _translated(block, model, own, parts)
        reason = translated if isinstance(translated, str) else None
        if not isinstance(translated, str):
            request, notes = translated
            try:
                return Attempt(block, request, block.adapter.build(request, block.api_key(context)), False,
                               tuple(notes)), skipped
            except ProviderError as exc:  # missing_api_key (offline, the simulator takes any)
                reason = exc.message
            except WireError as exc:
                reason = str(exc)
        skipped.append({"type": block.type_name, "vendor": block.adapter.vendor, "model": model, "reason": reason or ""})
    return None, skipped


Send = Callable[[Attempt, float], Awaitable["Answer"]]
"""send(attempt, seconds left): the vendor's answer to the attempt's call, retried within those seconds."""


async def answer_in_turn(context: RunContext, first: Attempt, fallbacks: Sequence[tuple[RequestBlock, str]],
                         send: Send, *, timeout: float, parts: Mapping[str, tuple[Part, ...]],  # noqa: ASYNC109  # one deadline for all attempts
                         files: Callable[[], list[int]]) -> tuple[Answer, Attempt]:
    """The block's own call, then each fallback in order while the last one's error is one a fallback may fix:
    the answer and the attempt that got it. Each attempt is checked against the budgets first (BudgetExceeded
    stops them) and counted as a request; a failed one with no tokens and no cost."""
    clock = context.services.clock
    deadline = clock() + timeout
    pending = list(fallbacks)
    attempt = first
    while True:
        if context.budgeted:  # not sent when it could pass a budget: what it may spend, at most, is estimated
            request, body = attempt.request, attempt.call.body
            vendor = attempt.block.adapter.vendor
            at_most, at_most_usd = estimate(vendor, request.model, body, files(),
                                            request.max_tokens if request.max_tokens is not None else body.get("max_tokens"))
            context.check_budget(at_most, at_most_usd, f"{vendor} model {request.model}")
        try:
            return await send(attempt, timeout if attempt is first else deadline - clock()), attempt
        except RunError as exc:
            context.count_request(_NO_TOKENS, 0.0)  # it was sent; an error answer bills no tokens
            if not pending or not falls_back(exc, deadline - clock()):
                raise
            following, skipped = _next_attempt(context, pending, first.request, parts)
            fields: dict[str, Any] = {"failed": attempt.shown, "error": {"type": exc.type, "message": exc.message},
                                      "to": following.shown if following is not None else None}
            if skipped:
                fields["skipped"] = skipped
            if following is not None and following.notes:
                fields["notes"] = list(following.notes)
            context.emit(Event.PROVIDER_FALLBACK, **fields)
            if following is None:
                raise
            attempt = following
