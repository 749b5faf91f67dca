"""Gemini generateContent wire format (GeminiRequest); tool schemas go through gemini_schema.

Also the one table from `finishReason` to `finish` (`FINISH`), and which models take which
thinking budget (`THINKING_BUDGETS`), read by the block's load check and the simulator.
What Gemini takes of images, documents and response schemas is in `gemini_inputs`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import orjson
from pydantic import ConfigDict, Field

from engine.format.parts import TextPart
from engine.format.tables import HistoryRow
from engine.providers.gemini_inputs import file_part
from engine.providers.gemini_stream import GeminiStream
from engine.providers.gemini_tool_schema import SchemaRefused, gemini_schema
from engine.providers.wire import (
    HttpCall,
    Refusal,
    Reply,
    Request,
    ToolCall,
    WireError,
    WireModel,
    call_arguments,
    foreign_parts_note,
    group_turns,
    read_model,
    signature_vendor,
)

__all__ = ["FINISH", "GENERATED_ID_PREFIX", "SIGNATURE_PLACEHOLDER", "THINKING_BUDGETS", "Gemini", "SchemaRefused",
           "gemini_schema", "gemini_thinking_refusal"]

# finishReason → finish (docs/VENDORS.md, Gemini); a value not listed is `complete`. A call the
# model could not make (MALFORMED_FUNCTION_CALL, ...) is `tool_calls` with no call: an error when
# nothing else came. No candidates with promptFeedback.blockReason is `blocked`.
FINISH = {
    "STOP": "complete",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refused",
    "RECITATION": "refused",
    "BLOCKLIST": "refused",
    "PROHIBITED_CONTENT": "refused",
    "SPII": "refused",
    "LANGUAGE": "refused",
    "IMAGE_SAFETY": "refused",
    "IMAGE_PROHIBITED_CONTENT": "refused",
    "IMAGE_RECITATION": "refused",
    "MALFORMED_FUNCTION_CALL": "tool_calls",
    "UNEXPECTED_TOOL_CALL": "tool_calls",
    "TOO_MANY_TOOL_CALLS": "tool_calls",
    "MISSING_THOUGHT_SIGNATURE": "tool_calls",
}

# generationConfig.thinkingConfig.thinkingBudget per model family (Gemini thinking docs; Gemini 3
# takes the budget for compatibility): (id pattern, lowest, highest, 0 turns thinking off).
# "adaptive" is -1, the model's own choice. Models before 2.5 do not think.
THINKING_BUDGETS: tuple[tuple[str, int, int, bool], ...] = (
    (r"gemini-2\.5-pro", 128, 32768, False),
    (r"gemini-2\.5-flash-lite", 512, 24576, True),
    (r"gemini-2\.5-flash", 1, 24576, True),
    (r"gemini-([3-9]|\d\d)", 128, 32768, False),
)
_NO_THINKING = re.compile(r"^(models/)?gemini-(1\.|2\.0)")


def gemini_thinking_refusal(model: str | None, thinking: int | str | None) -> Refusal | None:
    """Why Gemini would refuse this thinking budget on this model, if it would; `model` None while unknown."""
    if thinking is None or model is None:
        return None
    bare = model.removeprefix("models/")
    if _NO_THINKING.match(bare):
        return Refusal("thinking", f"{model} does not think; remove thinking, or use a Gemini 2.5 model or later")
    if thinking == "adaptive":
        return None
    if not isinstance(thinking, int) or isinstance(thinking, bool):
        return Refusal("thinking", f"thinking must be a budget in tokens or 'adaptive', not {thinking!r}")
    for pattern, lowest, highest, can_stop in THINKING_BUDGETS:
        if re.match(pattern, bare):
            if thinking == 0 and can_stop:
                return None
            if not lowest <= thinking <= highest:
                off = " or 0 (off)" if can_stop else ""
                return Refusal("thinking", f"{model} takes a thinking budget from {lowest} to {highest}{off}, not {thinking}")
            return None
    return None

GENERATED_ID_PREFIX = "gemini-"
SIGNATURE_PLACEHOLDER = "skip_thought_signature_validator"
class _Reading(WireModel):
    model_config = ConfigDict(populate_by_name=True)


class _FunctionCall(_Reading):
    name: str | None = None
    args: dict[str, Any] | None = None
    id: str | None = None


class _Part(_Reading):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    text: str | None = None
    thought: bool | None = None
    function_call: _FunctionCall | None = Field(default=None, alias="functionCall")
    thought_signature: str | None = Field(default=None, alias="thoughtSignature")


class _Content(_Reading):
    parts: list[_Part] | None = None


class _CitationSource(_Reading):
    start: int | None = Field(default=None, alias="startIndex")
    end: int | None = Field(default=None, alias="endIndex")
    uri: str | None = None


class _CitationMetadata(_Reading):
    sources: list[_CitationSource] | None = Field(default=None, alias="citationSources")


class _Web(_Reading):
    uri: str | None = None
    title: str | None = None


class _Chunk(_Reading):
    web: _Web | None = None


class _Segment(_Reading):
    text: str | None = None


class _Support(_Reading):
    segment: _Segment | None = None
    chunks: list[int] | None = Field(default=None, alias="groundingChunkIndices")


class _Grounding(_Reading):
    chunks: list[_Chunk] | None = Field(default=None, alias="groundingChunks")
    supports: list[_Support] | None = Field(default=None, alias="groundingSupports")


class _Candidate(_Reading):
    content: _Content | None = None
    finish_reason: str | None = Field(default=None, alias="finishReason")
    finish_message: str | None = Field(default=None, alias="finishMessage")
    citation_metadata: _CitationMetadata | None = Field(default=None, alias="citationMetadata")
    grounding: _Grounding | None = Field(default=None, alias="groundingMetadata")


class _Feedback(_Reading):
    block_reason: str | None = Field(default=None, alias="blockReason")
    block_reason_message: str | None = Field(default=None, alias="blockReasonMessage")


class _UsageMetadata(_Reading):
    prompt: int | None = Field(default=None, alias="promptTokenCount")
    candidates: int | None = Field(default=None, alias="candidatesTokenCount")
    thoughts: int | None = Field(default=None, alias="thoughtsTokenCount")
    cached: int | None = Field(default=None, alias="cachedContentTokenCount")


class _Response(_Reading):
    candidates: list[_Candidate] | None = None
    prompt_feedback: _Feedback | None = Field(default=None, alias="promptFeedback")
    usage: _UsageMetadata | None = Field(default=None, alias="usageMetadata")
    response_id: str | None = Field(default=None, alias="responseId")


def _citations(candidate: _Candidate, text: str) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for source in (candidate.citation_metadata.sources or []) if candidate.citation_metadata else []:
        found.append({"text": text[source.start or 0:source.end or 0] if source.end else "", "source": source.uri or ""})
    grounding = candidate.grounding
    chunks = (grounding.chunks or []) if grounding else []
    for support in (grounding.supports or []) if grounding else []:
        for index in support.chunks or []:
            web = chunks[index].web if 0 <= index < len(chunks) else None
            if web is not None:
                found.append({"text": (support.segment.text if support.segment else None) or "",
                              "source": web.uri or web.title or ""})
    return found


def _own(signature: str | None) -> str | None:
    """A row's thought signature if it is Gemini's own (not another vendor's envelope)."""
    return signature if signature_vendor(signature) == "gemini" else None


def _user_parts(row: HistoryRow) -> list[dict[str, Any]]:
    """A user row's parts in Gemini's form: its text, or each of its parts in order."""
    if not row.parts:
        return [{"text": row.content}]
    return [{"text": part.text} if isinstance(part, TextPart) else file_part(part) for part in row.parts]


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


class Gemini:
    vendor = "gemini"
    key_variables: tuple[str, ...] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    base_variable = "GEMINI_BASE_URL"
    default_base = "https://generativelanguage.googleapis.com"
    name_limit: int = 63

    def contents(self, request: Request) -> list[dict[str, Any]]:
        contents: list[dict[str, Any]] = []
        after_results = False
        for kind, rows in group_turns(request.rows):
            if kind == "user":
                if after_results:
                    contents[-1]["parts"] += _user_parts(rows[0])
                else:
                    contents.append({"role": "user", "parts": _user_parts(rows[0])})
                after_results = False
                continue
            after_results = kind == "tool"
            if kind == "assistant":
                parts: list[dict[str, Any]] = []
                for row in rows:
                    if not row.is_tool_call and row.content:
                        text: dict[str, Any] = {"text": row.content}
                        if _own(row.signature):
                            text["thoughtSignature"] = row.signature
                        parts.append(text)
                calls = [row for row in rows if row.is_tool_call]
                for position, row in enumerate(calls):
                    call: dict[str, Any] = {"name": row.name, "args": call_arguments(row)}
                    if row.tool_call_id and not row.tool_call_id.startswith(GENERATED_ID_PREFIX):
                        call["id"] = row.tool_call_id
                    part: dict[str, Any] = {"functionCall": call}
                    signature = _own(row.signature) or (SIGNATURE_PLACEHOLDER if position == 0 else None)
                    if signature:
                        part["thoughtSignature"] = signature
                    parts.append(part)
                if not parts:
                    continue
                contents.append({"role": "model", "parts": parts})
            else:
                responses = []
                for row in rows:
                    value = _json(row.content)
                    response = {"error": value["error"]} if isinstance(value, dict) and "error" in value \
                        else {"result": value}
                    function: dict[str, Any] = {"name": row.name, "response": response}
                    if row.tool_call_id and not row.tool_call_id.startswith(GENERATED_ID_PREFIX):
                        function["id"] = row.tool_call_id
                    responses.append({"functionResponse": function})
                contents.append({"role": "user", "parts": responses})
        return contents

    def build(self, request: Request, key: str) -> HttpCall:
        version = request.api_version or "v1"
        model = request.model.removeprefix("models/")
        body: dict[str, Any] = {"contents": self.contents(request)}
        if request.system:
            body["systemInstruction"] = {"role": "user", "parts": [{"text": request.system}]}
        schema_notes: list[str] = []
        if request.tools:
            declarations = []
            for tool in request.tools:
                declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
                if tool.parameters.get("properties"):
                    declaration["parameters"] = gemini_schema(tool.parameters, tool.name, strict=tool.strict,
                                                              notes=schema_notes)
                declarations.append(declaration)
            body["tools"] = [{"functionDeclarations": declarations}]
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.thinking is not None:
            config["thinkingConfig"] = {"thinkingBudget": -1 if request.thinking == "adaptive" else request.thinking}
        if request.response_schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = request.response_schema
        if config:
            body["generationConfig"] = config
        headers = {"x-goog-api-key": key, "content-type": "application/json"}
        notes = (*foreign_parts_note(request.rows, self.vendor), *schema_notes)
        return HttpCall(f"/{version}/models/{model}:generateContent", headers, body, notes, api_version=request.api_version)

    def parse(self, body: Any) -> Reply:
        response = read_model(_Response, body)
        usage = response.usage or _UsageMetadata()
        output = (usage.candidates or 0) + (usage.thoughts or 0)
        if not response.candidates:
            feedback = response.prompt_feedback
            if feedback is None or not feedback.block_reason:
                raise WireError("the reply has no candidates")
            details = {"block_reason": feedback.block_reason}
            if feedback.block_reason_message:
                details["block_reason_message"] = feedback.block_reason_message
            return Reply("", [], usage.prompt or 0, output, feedback.block_reason, finish="blocked",
                         refusal=feedback.block_reason_message, stop_details=details,
                         cache_read_tokens=usage.cached or 0)
        candidate = response.candidates[0]
        parts = (candidate.content.parts if candidate.content else None) or []
        texts: list[str] = []
        calls: list[ToolCall] = []
        text_signature: str | None = None
        response_id = response.response_id or "response"
        for index, part in enumerate(parts):
            if "function_call" in part.model_fields_set:
                call = part.function_call or _FunctionCall()
                call_id = call.id or f"{GENERATED_ID_PREFIX}{response_id}-{index}"
                calls.append(ToolCall(str(call_id), str(call.name), call.args or {}, part.thought_signature))
            elif "text" in part.model_fields_set and not part.thought:
                texts.append(str(part.text))
                text_signature = text_signature or part.thought_signature
        text = "".join(texts)
        finish = FINISH.get(candidate.finish_reason or "", "complete")
        if calls and finish == "complete":
            finish = "tool_calls"
        message = candidate.finish_message
        return Reply(text, calls, usage.prompt or 0, output, candidate.finish_reason, finish=finish,
                     refusal=message if finish == "refused" else None,
                     stop_details={"finish_message": message} if message else None,
                     citations=_citations(candidate, text), signature=text_signature if text else None,
                     thinking_tokens=usage.thoughts, cache_read_tokens=usage.cached or 0)

    def streamed(self, call: HttpCall) -> HttpCall:
        path = call.path.replace(":generateContent", ":streamGenerateContent") + "?alt=sse"
        return replace(call, path=path, headers={**call.headers, "accept": "text/event-stream"})

    def assembler(self) -> GeminiStream:
        return GeminiStream()

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            return str(error.get("status") or f"http_{status}"), str(error.get("message") or "")
        return f"http_{status}", ""
