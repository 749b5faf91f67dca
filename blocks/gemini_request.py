"""GeminiRequest: one turn of Gemini's generateContent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from blocks._request import RequestBlock, ThinkingInputs
from engine import InputError, Report
from engine.providers import (
    Adapter,
    Gemini,
    Part,
    Refusal,
    Request,
    ToolSpec,
    WireError,
    gemini_output_refusal,
    gemini_parts_refusal,
    gemini_schema,
    gemini_thinking_refusal,
)

_VERSIONS = ("v1", "v1beta")


class GeminiRequest(RequestBlock):
    """Asks a Gemini model (generateContent), with history and tools."""

    Inputs = ThinkingInputs
    adapter: ClassVar[Adapter] = Gemini()

    @classmethod
    def parts_refusal(cls, model: str | None, parts: tuple[Part, ...], field: str) -> Refusal | None:
        return gemini_parts_refusal(model, parts, field)

    @classmethod
    def output_refusal(cls, model: str | None, schema: dict[str, Any], has_tools: bool) -> Refusal | None:
        return gemini_output_refusal(model, schema, has_tools)

    def check_vendor(self, constants: Mapping[str, Any], report: Report) -> None:
        version = constants.get("api_version")
        if version is not None and version not in _VERSIONS:
            report("api_version", f"Gemini API version {version!r} is not one of {', '.join(_VERSIONS)}", None)
        refusal = gemini_thinking_refusal(constants.get("model"), constants.get("thinking"))
        if refusal:
            report(refusal.field, refusal.message, None)

    @classmethod
    def check_tools(cls, specs: list[ToolSpec]) -> None:
        """Each schema as Gemini gets it (README, Gemini's schema mapping): SchemaRefused names the keyword."""
        for spec in specs:
            if spec.parameters.get("properties"):
                gemini_schema(spec.parameters, spec.name, strict=spec.strict)

    def check_request(self, request: Request) -> None:
        if request.api_version is not None and request.api_version not in _VERSIONS:
            raise InputError(f"with.api_version: {request.api_version!r} is not one of {', '.join(_VERSIONS)}")
        refusal = gemini_thinking_refusal(request.model, request.thinking)
        if refusal:
            raise InputError(f"with.{refusal.field}: {refusal.message}")
        try:
            self.check_tools(request.tools)
        except WireError as exc:
            raise InputError(f"with.tools: {exc}") from None
