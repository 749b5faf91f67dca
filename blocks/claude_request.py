"""ClaudeRequest: one turn of Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from blocks._request import RequestBlock
from engine import InputError, Report
from engine.providers import Adapter, Anthropic, Request, takes_temperature
from engine.providers.anthropic import CURRENT_VERSION, TEMPERATURE_MODELS, VERSIONS


def _temperature_problem(model: str | None, temperature: Any, api_version: str | None) -> tuple[str, str] | None:
    if api_version is not None and api_version not in VERSIONS:
        return "api_version", f"anthropic-version {api_version!r} is not one of {', '.join(VERSIONS)}"
    if temperature is None:
        return None
    if api_version == CURRENT_VERSION:
        return "temperature", (f"anthropic-version {CURRENT_VERSION} rejects temperature; remove it, or drop "
                               "api_version so that 2023-06-01 is sent with it")
    if model is not None and not takes_temperature(model):
        return "temperature", (f"{model} takes only its default temperature (Claude models from 4.7 on); remove "
                               f"temperature, or use a model that still takes one: {', '.join(TEMPERATURE_MODELS)}")
    return None


class ClaudeRequest(RequestBlock):
    """Asks a Claude model (Anthropic Messages API), with history and tools."""

    adapter: ClassVar[Adapter] = Anthropic()

    def check_vendor(self, constants: Mapping[str, Any], report: Report) -> None:
        problem = _temperature_problem(constants.get("model"), constants.get("temperature"), constants.get("api_version"))
        if problem:
            report(problem[0], problem[1], None)

    def check_request(self, request: Request) -> None:
        problem = _temperature_problem(request.model, request.temperature, request.api_version)
        if problem:
            raise InputError(f"with.{problem[0]}: {problem[1]}")
