"""ClaudeRequest: one turn of Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from blocks._request import RequestBlock, ThinkingInputs
from engine import InputError, Report
from engine.providers import (
    Adapter,
    Anthropic,
    Part,
    Refusal,
    Request,
    claude_output_refusal,
    claude_parts_refusal,
    sampling_version,
    thinking_refusal,
)


def _refusals(model: Any, temperature: Any, api_version: Any, thinking: Any, max_tokens: Any) -> list[Refusal]:
    found = [sampling_version(model, temperature, api_version).refusal,
             thinking_refusal(model, thinking, max_tokens, temperature)]
    return [refusal for refusal in found if refusal is not None]


class ClaudeRequest(RequestBlock):
    """Asks a Claude model (Anthropic Messages API), with history and tools."""

    Inputs = ThinkingInputs
    adapter: ClassVar[Adapter] = Anthropic()

    @classmethod
    def parts_refusal(cls, model: str | None, parts: tuple[Part, ...], field: str) -> Refusal | None:
        return claude_parts_refusal(model, parts, field)

    @classmethod
    def output_refusal(cls, model: str | None, schema: dict[str, Any], has_tools: bool) -> Refusal | None:
        return claude_output_refusal(model, schema)

    def check_vendor(self, constants: Mapping[str, Any], report: Report) -> None:
        for refusal in _refusals(constants.get("model"), constants.get("temperature"), constants.get("api_version"),
                                 constants.get("thinking"), constants.get("max_tokens")):
            report(refusal.field, refusal.message, None)

    def check_request(self, request: Request) -> None:
        for refusal in _refusals(request.model, request.temperature, request.api_version, request.thinking,
                                 request.max_tokens):
            raise InputError(f"with.{refusal.field}: {refusal.message}")
