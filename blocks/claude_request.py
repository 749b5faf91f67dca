"""ClaudeRequest: one turn of Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from blocks._request import RequestBlock
from engine import InputError, Report
from engine.providers import Adapter, Anthropic, Request, sampling_version


class ClaudeRequest(RequestBlock):
    """Asks a Claude model (Anthropic Messages API), with history and tools."""

    adapter: ClassVar[Adapter] = Anthropic()

    def check_vendor(self, constants: Mapping[str, Any], report: Report) -> None:
        refusal = sampling_version(constants.get("model"), constants.get("temperature"), constants.get("api_version")).refusal
        if refusal:
            report(refusal.field, refusal.message, None)

    def check_request(self, request: Request) -> None:
        refusal = sampling_version(request.model, request.temperature, request.api_version).refusal
        if refusal:
            raise InputError(f"with.{refusal.field}: {refusal.message}")
