"""GroqChatRequest: one turn of Groq's OpenAI-compatible chat completions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from blocks._request import RequestBlock, RequestInputs
from engine import InputError, Report
from engine.providers import (
    Adapter,
    Groq,
    Part,
    Refusal,
    Request,
    groq_output_refusal,
    groq_parts_refusal,
    reasoning_refusal,
)


class GroqInputs(RequestInputs):
    reasoning_effort: Literal["none", "default", "low", "medium", "high"] | None = Field(
        default=None, description="how hard a reasoning model thinks first; which models take which is checked at load")


class GroqChatRequest(RequestBlock):
    """Asks a model on Groq (OpenAI-compatible chat completions), with history and tools."""

    Inputs = GroqInputs
    adapter: ClassVar[Adapter] = Groq()

    @classmethod
    def parts_refusal(cls, model: str | None, parts: tuple[Part, ...], field: str) -> Refusal | None:
        return groq_parts_refusal(model, parts, field)

    @classmethod
    def output_refusal(cls, model: str | None, schema: dict[str, Any], has_tools: bool) -> Refusal | None:
        return groq_output_refusal(model, schema)

    def check_vendor(self, constants: Mapping[str, Any], report: Report) -> None:
        refusal = reasoning_refusal(constants.get("model"), constants.get("reasoning_effort"))
        if refusal:
            report(refusal.field, refusal.message, None)

    def check_request(self, request: Request) -> None:
        refusal = reasoning_refusal(request.model, request.reasoning_effort)
        if refusal:
            raise InputError(f"with.{refusal.field}: {refusal.message}")
