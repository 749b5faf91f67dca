"""Gemini generateContent wire format (GeminiRequest), and JSON Schema → Gemini Schema.

Also the one table from `finishReason` to `finish` (`FINISH`), and which models take which
thinking budget (`THINKING_BUDGETS`), read by the block's load check and the simulator.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import orjson
from pydantic import ConfigDict, Field

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

# finishReason → finish (DESIGN.md, Request blocks); a value not listed is `complete`. A call the
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
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment"})
"""JSON Schema keywords that say nothing about a value: not sent."""
_SAME = frozenset({"title", "description", "nullable", "required", "propertyOrdering", "minItems", "maxItems",
                   "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum",
                   "default", "example"})
"""Keywords Gemini's Schema takes under the same name with the same meaning: sent as they are."""
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
_FORMATS: dict[str | None, tuple[str, ...]] = {"STRING": ("enum", "date-time"), "NUMBER": ("float", "double"),
                                               "INTEGER": ("int32", "int64")}
"""The formats Gemini's Schema documents per type; the API answers any other STRING format with a 400."""
_DESCRIBE = "remove it and say it in the description"
_HINTS = {
    "oneOf": "use anyOf: the same when no value can match two of its members",
    "allOf": "merge the members into one schema",
    "not": "say what is excluded in the description",
    "if": "split the tool in two, or say the rule in the description",
    "then": "split the tool in two, or say the rule in the description",
    "else": "split the tool in two, or say the rule in the description",
    "exclusiveMinimum": "use minimum (for an integer, the next whole number)",
    "exclusiveMaximum": "use maximum (for an integer, the previous whole number)",
    "multipleOf": _DESCRIBE,
    "uniqueItems": _DESCRIBE,
    "contains": _DESCRIBE,
    "prefixItems": "use items: one schema for every item",
    "patternProperties": "list the properties under properties",
    "propertyNames": "list the properties under properties",
    "unevaluatedProperties": "use additionalProperties: false",
    "dependentRequired": "split the tool in two, or say the rule in the description",
    "dependentSchemas": "split the tool in two, or say the rule in the description",
    "examples": "use example (one value)",
}


class SchemaRefused(WireError):
    """A tool schema keyword Gemini's Schema cannot say exactly: where (`parameters.properties.x.oneOf`), why, what instead."""

    def __init__(self, tool: str, path: str, reason: str, hint: str | None = None) -> None:
        super().__init__(f"tool '{tool}': {path}: {reason}")
        self.tool = tool
        self.path = path
        self.reason = reason
        self.hint = hint


def gemini_schema(schema: Any, tool: str, *, strict: bool = False, notes: list[str] | None = None) -> dict[str, Any]:
    """A tool's JSON Schema `parameters` as Gemini's Schema (the table in README's Gemini section).

    Each keyword is mapped exactly or refused: SchemaRefused names the property path and a hint. Keywords
    left out while ToolDispatch still enforces them (`additionalProperties: false`), and integer enums sent
    as strings, add a Debug note to `notes`.
    """
    return _Converter(tool, strict, notes if notes is not None else []).convert(schema, "parameters", {}, (), True)


class _Converter:
    """One tool's schema, keyword by keyword; `coerced` is whether ToolDispatch's coercion reaches the node."""

    def __init__(self, tool: str, strict: bool, notes: list[str]) -> None:
        self.tool = tool
        self.strict = strict
        self.notes = notes

    def refuse(self, path: str, reason: str, hint: str | None = None) -> NoReturn:
        raise SchemaRefused(self.tool, path, reason, hint)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def convert(self, schema: Any, path: str, defs: dict[str, Any], seen: tuple[str, ...],
                coerced: bool) -> dict[str, Any]:
        if not isinstance(schema, dict):
            self.refuse(path, f"a schema must be a mapping, not {orjson.dumps(schema).decode()}",
                        "write {} for any value")
        defs = {**defs, **schema.get("$defs", {}), **schema.get("definitions", {})}
        if "$ref" in schema:
            return self.reference(schema, path, defs, seen)
        result: dict[str, Any] = {}
        kind = self.kind(schema, path, result)
        if "enum" in schema or "const" in schema:
            self.enum(schema, path, kind, result, coerced)
            kind = result.get("type")
        written = schema.get("type")  # what ToolDispatch's coercion reads (engine/tools/arguments.py)
        only: dict[str, Any] | None = None  # the one member of an anyOf besides null
        for key, value in schema.items():
            where = f"{path}.{key}"
            if key in _ANNOTATIONS or key in ("$defs", "definitions", "type", "enum", "const"):
                continue
            if key in _SAME:
                result[key] = value
            elif key == "format":
                self.format(value, where, kind, result)
            elif key == "properties":
                inner = coerced and written == "object"
                result[key] = {name: self.convert(item, f"{where}.{name}", defs, seen, inner)
                               for name, item in value.items()}
            elif key == "items":
                if not isinstance(value, dict):
                    self.refuse(where, "items as a list (one schema per position) has no Gemini form",
                                "use one schema for every item")
                result[key] = self.convert(value, where, defs, seen, coerced and written == "array")
            elif key == "anyOf":
                members = [(i, m) for i, m in enumerate(value) if not (isinstance(m, dict) and m.get("type") == "null")]
                if len(members) < len(value):
                    result["nullable"] = True
                converted = [self.convert(m, f"{where}[{i}]", defs, seen, False) for i, m in members]
                if len(converted) == 1:
                    only = converted[0]
                else:
                    result[key] = converted
            elif key == "additionalProperties":
                self.additional(value, where)
            else:
                self.refuse(where, f"Gemini's Schema has no '{key}'", _HINTS.get(key, "remove it, or say it in the description"))
        return self.merge(only, result, path) if only is not None else result

    def reference(self, schema: dict[str, Any], path: str, defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
        """A local `$ref`, inlined; keywords beside it apply too (the outer annotations win)."""
        ref = str(schema["$ref"])
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in defs:
            self.refuse(f"{path}.$ref", f"{ref!r} does not name a local $defs entry", "inline the schema")
        if name in seen:
            self.refuse(f"{path}.$ref", f"recursive {ref!r} cannot be written as a Gemini schema",
                        "cut the recursion at a fixed depth")
        target = self.convert(defs[name], path, defs, (*seen, name), False)
        beside = {k: v for k, v in schema.items() if k not in ("$ref", "$defs", "definitions")}
        return self.merge(target, self.convert(beside, path, defs, seen, False), path) if beside else target

    def merge(self, inner: dict[str, Any], outer: dict[str, Any], path: str) -> dict[str, Any]:
        """One schema from two that must both hold; a keyword both set differently cannot be joined exactly."""
        merged = dict(inner)
        for key, value in outer.items():
            if key in ("title", "description") or key not in merged or merged[key] == value:
                merged[key] = value
            elif key == "nullable":
                merged[key] = bool(merged[key]) and bool(value)
            else:
                self.refuse(f"{path}.{key}", f"'{key}' is set both here and in the schema it joins "
                                             f"({merged[key]!r}, {value!r})", "keep one of them")
        return merged

    def kind(self, schema: dict[str, Any], path: str, result: dict[str, Any]) -> str | None:
        """The Gemini type (`type: [x, "null"]` is x, nullable); None when the schema has no type."""
        if "type" not in schema:
            return None
        value = schema["type"]
        types = value if isinstance(value, list) else [value]
        if not all(isinstance(t, str) and t in _TYPES for t in types):
            self.refuse(f"{path}.type", f"unknown type {value!r}")
        real = [t for t in types if t != "null"]
        if len(real) > 1:
            self.refuse(f"{path}.type", f"a type list {value!r} has no Gemini form", "use anyOf with one type in each member")
        if len(real) < len(types):
            result["nullable"] = True
        result["type"] = (real[0] if real else "null").upper()
        return str(result["type"])

    def enum(self, schema: dict[str, Any], path: str, kind: str | None, result: dict[str, Any], coerced: bool) -> None:
        """enum / const: Gemini's enum is a list of strings, on a STRING."""
        if "enum" in schema and "const" in schema:
            self.refuse(f"{path}.const", "both const and enum", "keep one of them")
        key = "const" if "const" in schema else "enum"
        where = f"{path}.{key}"
        values = [schema["const"]] if key == "const" else schema["enum"]
        if not isinstance(values, list) or not values:
            self.refuse(where, "an empty enum allows no value")
        real = [v for v in values if v is not None]
        if len(real) < len(values) and kind is None:
            result["nullable"] = True
        shown = orjson.dumps(values).decode()
        if not real:
            if kind not in (None, "NULL"):
                self.refuse(where, f"{shown} allows no {kind.lower()} value")
            result["type"] = "NULL"
        elif all(isinstance(v, bool) for v in real):
            if set(real) != {True, False} or kind not in (None, "BOOLEAN"):
                self.refuse(where, f"Gemini's enum holds strings only, so a boolean cannot be limited to {shown}",
                            "leave the property out and let the handler use the one value, or use type: boolean")
            result["type"] = "BOOLEAN"  # true and false: every boolean
        elif all(isinstance(v, str) for v in real):
            if kind not in (None, "STRING"):
                self.refuse(where, f"string values {shown} on type {kind.lower()}")
            result["type"] = "STRING"
            result["enum"] = real
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in real) and kind == "INTEGER":
            if self.strict or not coerced:
                why = ("the tool is strict, so its arguments are not coerced back" if self.strict
                       else "ToolDispatch coerces arguments only through properties and items")
                self.refuse(where, f"Gemini's enum holds strings only, and the model's \"1\" would not become 1: {why}",
                            "use minimum/maximum, or a string enum" + ("; or make the tool non-strict" if self.strict else ""))
            if "format" in schema:
                self.refuse(f"{path}.format", "an integer enum is sent as format: enum, so it takes no other format",
                            "remove the format")
            result.update(type="STRING", format="enum", enum=[str(v) for v in real])
            sent = orjson.dumps(result["enum"]).decode()
            self.note(f"tool '{self.tool}': {where} goes to Gemini as type STRING, format enum {sent} (Gemini's "
                      "enum holds strings only); ToolDispatch turns the model's string back into the integer")
        else:
            self.refuse(where, f"Gemini's enum holds strings only, not {shown}"
                        + (" (integer values need type: integer)" if kind != "INTEGER" and
                           all(isinstance(v, int) and not isinstance(v, bool) for v in real) else ""),
                        "use a string enum, or minimum/maximum")

    def format(self, value: Any, where: str, kind: str | None, result: dict[str, Any]) -> None:
        """format: only those Gemini documents for the type (an integer enum's `enum` is set by `enum`)."""
        allowed = _FORMATS.get(kind, ())
        if value not in allowed:
            takes = f"takes only {' and '.join(allowed)}" if allowed else "takes no format"
            self.refuse(where, f"Gemini {takes} on {kind or 'a schema without type'}, not {value!r}",
                        "remove it, or say it with pattern or in the description (ToolDispatch does not check formats)")
        if value == "enum" and "enum" not in result:
            self.refuse(where, "format: enum needs enum values", "add enum, or remove the format")
        result["format"] = value

    def additional(self, value: Any, where: str) -> None:
        if value is False:
            self.note(f"tool '{self.tool}': {where}: false is not sent (Gemini's Schema has no such field); "
                      "ToolDispatch still refuses other keys when it checks the arguments")
        elif value is not True and value != {}:  # true and {}: any other key, which says nothing
            self.refuse(where, "a schema for the other keys has no Gemini form", "list the properties under properties")


# -- the reply, as a model: a wrong type anywhere is a WireError, not a crash further on --

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
                         refusal=feedback.block_reason_message, stop_details=details)
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
                     thinking_tokens=usage.thoughts)

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            return str(error.get("status") or f"http_{status}"), str(error.get("message") or "")
        return f"http_{status}", ""
