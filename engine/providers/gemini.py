"""Gemini generateContent wire format (GeminiRequest), and JSON Schema → Gemini Schema."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from engine.providers.wire import HttpCall, Reply, Request, ToolCall, WireError, call_arguments, group_turns, read_model

__all__ = ["GENERATED_ID_PREFIX", "SIGNATURE_PLACEHOLDER", "Gemini", "gemini_schema"]

GENERATED_ID_PREFIX = "gemini-"
SIGNATURE_PLACEHOLDER = "skip_thought_signature_validator"
_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties",
    "required", "minProperties", "maxProperties", "propertyOrdering", "minLength", "maxLength", "pattern",
    "minimum", "maximum", "default", "example", "anyOf",
}
_ANNOTATIONS = {"$schema", "$id", "$comment"}
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}


def gemini_schema(schema: Any, tool: str, defs: dict[str, Any] | None = None, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """Convert a JSON Schema to Gemini's OpenAPI subset; what it cannot say is an error."""
    if not isinstance(schema, dict):
        raise WireError(f"tool '{tool}': a schema must be an object, got {type(schema).__name__}")
    defs = {**(defs or {}), **schema.get("$defs", {}), **schema.get("definitions", {})}
    if "$ref" in schema:
        ref = str(schema["$ref"])
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in defs:
            raise WireError(f"tool '{tool}': $ref {ref!r} does not name a local $defs entry")
        if name in seen:
            raise WireError(f"tool '{tool}': recursive $ref {ref!r} cannot be written as a Gemini schema")
        return gemini_schema(defs[name], tool, defs, (*seen, name))
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in ("$defs", "definitions"):
            continue
        if key == "additionalProperties":
            if value is False:
                continue  # ToolDispatch still enforces it when it validates the arguments
            raise WireError(f"tool '{tool}': Gemini cannot express 'additionalProperties: {value!r}'")
        if key == "const":
            result["enum"] = [str(value)]
            continue
        if key == "type":
            types = value if isinstance(value, list) else [value]
            if not all(isinstance(t, str) and t in _TYPES for t in types):
                raise WireError(f"tool '{tool}': unknown type {value!r}")
            real = [t for t in types if t != "null"]
            if len(real) > 1:
                raise WireError(f"tool '{tool}': a type list {value!r} cannot be written as a Gemini schema")
            if len(real) < len(types):
                result["nullable"] = True
            result["type"] = (real[0] if real else "null").upper()
            continue
        if key not in _KEYS:
            raise WireError(f"tool '{tool}': Gemini cannot express the JSON Schema keyword '{key}'")
        if key == "properties":
            result[key] = {name: gemini_schema(item, tool, defs, seen) for name, item in value.items()}
        elif key == "items":
            result[key] = gemini_schema(value, tool, defs, seen)
        elif key == "anyOf":
            members = [m for m in value if not (isinstance(m, dict) and m.get("type") == "null")]
            if len(members) < len(value):
                result["nullable"] = True
            if len(members) == 1:
                result.update(gemini_schema(members[0], tool, defs, seen))
            else:
                result[key] = [gemini_schema(m, tool, defs, seen) for m in members]
        elif key == "enum":
            result[key] = [str(item) for item in value]
        else:
            result[key] = value
    return result


# -- the reply, as a model: a wrong type anywhere is a WireError, not a crash further on --

class _Reading(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class _FunctionCall(_Reading):
    name: str | None = None
    args: dict[str, Any] | None = None
    id: str | None = None


class _Part(_Reading):
    text: str | None = None
    thought: bool | None = None
    function_call: _FunctionCall | None = Field(default=None, alias="functionCall")
    thought_signature: str | None = Field(default=None, alias="thoughtSignature")


class _Content(_Reading):
    parts: list[_Part] | None = None


class _Candidate(_Reading):
    content: _Content | None = None
    finish_reason: str | None = Field(default=None, alias="finishReason")


class _Feedback(_Reading):
    block_reason: str | None = Field(default=None, alias="blockReason")


class _UsageMetadata(_Reading):
    prompt: int | None = Field(default=None, alias="promptTokenCount")
    candidates: int | None = Field(default=None, alias="candidatesTokenCount")
    thoughts: int | None = Field(default=None, alias="thoughtsTokenCount")


class _Response(_Reading):
    candidates: list[_Candidate] | None = None
    prompt_feedback: _Feedback | None = Field(default=None, alias="promptFeedback")
    usage: _UsageMetadata | None = Field(default=None, alias="usageMetadata")
    response_id: str | None = Field(default=None, alias="responseId")


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
                text_part: dict[str, Any] = {"text": rows[0].content}
                if after_results:
                    contents[-1]["parts"].append(text_part)
                else:
                    contents.append({"role": "user", "parts": [text_part]})
                after_results = False
                continue
            after_results = kind == "tool"
            if kind == "assistant":
                parts: list[dict[str, Any]] = [{"text": row.content} for row in rows
                                               if not row.is_tool_call and row.content]
                calls = [row for row in rows if row.is_tool_call]
                for position, row in enumerate(calls):
                    call: dict[str, Any] = {"name": row.name, "args": call_arguments(row)}
                    if row.tool_call_id and not row.tool_call_id.startswith(GENERATED_ID_PREFIX):
                        call["id"] = row.tool_call_id
                    part: dict[str, Any] = {"functionCall": call}
                    signature = row.signature or (SIGNATURE_PLACEHOLDER if position == 0 else None)
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
        if request.tools:
            declarations = []
            for tool in request.tools:
                declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
                if tool.parameters.get("properties"):
                    declaration["parameters"] = gemini_schema(tool.parameters, tool.name)
                declarations.append(declaration)
            body["tools"] = [{"functionDeclarations": declarations}]
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if config:
            body["generationConfig"] = config
        headers = {"x-goog-api-key": key, "content-type": "application/json"}
        return HttpCall(f"/{version}/models/{model}:generateContent", headers, body, api_version=request.api_version)

    def parse(self, body: Any) -> Reply:
        response = read_model(_Response, body)
        if not response.candidates:
            reason = response.prompt_feedback.block_reason if response.prompt_feedback else None
            raise WireError(f"the prompt was blocked ({reason})" if reason else "the reply has no candidates")
        candidate = response.candidates[0]
        parts = (candidate.content.parts if candidate.content else None) or []
        texts: list[str] = []
        calls: list[ToolCall] = []
        response_id = response.response_id or "response"
        for index, part in enumerate(parts):
            if "function_call" in part.model_fields_set:
                call = part.function_call or _FunctionCall()
                call_id = call.id or f"{GENERATED_ID_PREFIX}{response_id}-{index}"
                calls.append(ToolCall(str(call_id), str(call.name), call.args or {}, part.thought_signature))
            elif "text" in part.model_fields_set and not part.thought:
                texts.append(str(part.text))
        usage = response.usage or _UsageMetadata()
        output = (usage.candidates or 0) + (usage.thoughts or 0)
        return Reply("".join(texts), calls, usage.prompt or 0, output, candidate.finish_reason)

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            return str(error.get("status") or f"http_{status}"), str(error.get("message") or "")
        return f"http_{status}", ""
