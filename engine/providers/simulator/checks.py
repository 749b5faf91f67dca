"""What each simulated vendor rejects, with the vendor's status and error body.

Written from docs/VENDORS.md's "What the simulator refuses" lists, independently of the
adapters, so that `--offline` checks our request builders. The things shared are the
model tables docs/VENDORS.md keeps in one place (the adapters): Anthropic's versions, the Claude
models that take only the default temperature, and which models take which thinking or
reasoning_effort. Gemini bodies are read in camelCase after `camel_gemini`, as Google's
JSON parser takes snake_case too (the google-genai SDK sends `parameters_json_schema`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from engine.errors import SimulatorRejected as Rejected
from engine.providers.anthropic import SAMPLING_VERSION, VERSIONS, takes_temperature, thinking_refusal
from engine.providers.gemini import gemini_thinking_refusal
from engine.providers.groq import reasoning_refusal
from engine.providers.simulator.gemini_names import camel_gemini
from engine.providers.simulator.inputs import (
    check_anthropic_file,
    check_anthropic_output,
    check_gemini_file,
    check_gemini_output,
    check_groq_content,
    check_groq_output,
)

__all__ = ["Rejected", "camel_gemini", "check_anthropic", "check_gemini", "check_groq"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_GEMINI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,63}$")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- Anthropic -----------------------------------------------------------------------------------

def _anthropic(message: str, status: int = 400, kind: str = "invalid_request_error") -> Rejected:
    return Rejected(status, {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_sim"})


_ANTHROPIC_FIELDS = {"model", "max_tokens", "messages", "system", "stop_sequences", "tools", "tool_choice",
                     "metadata", "stream", "thinking", "service_tier", "output_config"}
_SAMPLING = {"temperature", "top_p", "top_k"}


def check_anthropic(headers: dict[str, str], body: Any) -> None:
    version = headers.get("anthropic-version")
    if not version:
        raise _anthropic("anthropic-version: header is required")
    if version not in VERSIONS:
        raise _anthropic(f"anthropic-version: unknown version {version!r}")
    if not headers.get("x-api-key") and not headers.get("authorization", "").startswith("Bearer "):
        raise _anthropic("x-api-key header is required", 401, "authentication_error")
    if not isinstance(body, dict):
        raise _anthropic("the body must be a JSON object")
    allowed = _ANTHROPIC_FIELDS | (_SAMPLING if version == SAMPLING_VERSION else set())
    for key in body:
        if key not in allowed:
            raise _anthropic(f"{key}: Extra inputs are not permitted")
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            raise _anthropic(f"{key}: Field required")
    if not isinstance(body["max_tokens"], int) or isinstance(body["max_tokens"], bool) or body["max_tokens"] < 0:
        raise _anthropic("max_tokens: Input should be a valid non-negative integer")
    if "temperature" in body:
        temperature = body["temperature"]
        if not _number(temperature) or not 0 <= temperature <= 1:
            raise _anthropic("temperature: Input should be less than or equal to 1")
        if not takes_temperature(str(body["model"])) and temperature != 1:  # 1 is their default
            raise _anthropic("`temperature` is deprecated for this model.")
    thinking_on = _anthropic_thinking(body)
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise _anthropic("messages: at least one message is required")
    images = _anthropic_messages(messages, str(body["model"]), thinking_on)
    _anthropic_tools(body.get("tools") or [])
    check_anthropic_output(body, images)


def _anthropic_thinking(body: dict[str, Any]) -> bool:
    """Whether `thinking` is on; a setting the model does not take is the vendor's 400."""
    thinking = body.get("thinking")
    if thinking is None:
        return False
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled":
        return False
    if kind not in ("enabled", "adaptive"):
        raise _anthropic("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
    value = "adaptive" if kind == "adaptive" else thinking.get("budget_tokens")
    if kind == "enabled" and (not isinstance(value, int) or isinstance(value, bool)):
        raise _anthropic("thinking.enabled.budget_tokens: Field required")
    temperature = body.get("temperature")
    refusal = thinking_refusal(str(body["model"]), value, body["max_tokens"],
                               None if temperature in (None, 1) else temperature)
    if refusal:
        raise _anthropic(f"thinking: {refusal.message}")
    return True


_CARRIED = ("thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use")


def _carried_block(block: dict[str, Any], kind: str | None) -> bool:
    """A reasoning or server-tool block an assistant message may hold as the vendor gave it."""
    if kind == "thinking":
        return isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    if kind == "redacted_thinking":
        return isinstance(block.get("data"), str)
    return kind in _CARRIED or (kind is not None and kind.endswith("_tool_result") and kind != "tool_result")


# One pass over the messages checking the refusals docs/VENDORS.md lists for Anthropic, in its order;
# split, the checks would lose the order they are documented in.
def _anthropic_messages(messages: list[Any], model: str, thinking_on: bool = False) -> int:
    """Roles, non-empty content, each tool_use answered by the next user turn, images and documents; the images."""
    previous_uses: set[str] = set()
    images = 0
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise _anthropic(f"messages.{number}.role: Input should be 'user' or 'assistant'")
        if number == 0 and message["role"] != "user":
            raise _anthropic("messages: first message must use the \"user\" role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise _anthropic(f"messages.{number}.content: Input should be a string or a list of blocks")
        if not blocks or (isinstance(content, str) and not content):
            raise _anthropic(f"messages.{number}: all messages must have non-empty content")
        uses: set[str] = set()
        answered: set[str] = set()
        seen_text = False
        for index, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                if not block.get("text"):
                    raise _anthropic(f"messages.{number}.content.{index}: text content blocks must be non-empty")
                seen_text = True
            elif message["role"] == "assistant" and _carried_block(block, kind):
                pass
            elif kind in ("image", "document") and message["role"] == "user":
                check_anthropic_file(block, f"messages.{number}.content.{index}", model)
                images += kind == "image"
            elif kind == "tool_use" and message["role"] == "assistant":
                if not isinstance(block.get("input"), dict):
                    raise _anthropic(f"messages.{number}.content.{index}.tool_use.input: Input should be an object")
                uses.add(str(block.get("id")))
            elif kind == "tool_result" and message["role"] == "user":
                if seen_text:
                    raise _anthropic(f"messages.{number}.content.{index}: tool_result blocks must come first")
                if block.get("tool_use_id") not in previous_uses:
                    raise _anthropic(f"messages.{number}.content.{index}: unexpected `tool_use_id` found in "
                                     f"`tool_result` blocks: {block.get('tool_use_id')}")
                answered.add(str(block["tool_use_id"]))
            else:
                raise _anthropic(f"messages.{number}.content.{index}: unexpected block type {kind!r}")
        missing = previous_uses - answered
        if missing:
            raise _anthropic(f"messages.{number}: `tool_use` ids were found without `tool_result` blocks "
                             f"immediately after: {', '.join(sorted(missing))}")
        previous_uses = uses
    if previous_uses:
        raise _anthropic(f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks "
                         f"immediately after: {', '.join(sorted(previous_uses))}")
    last = messages[-1]
    if last["role"] == "assistant":
        blocks = last["content"] if isinstance(last["content"], list) else []
        if not any(isinstance(b, dict) and b.get("type") == "server_tool_use" for b in blocks):  # else: a paused turn
            raise _anthropic("This model does not support assistant message prefill. The conversation must end "
                             "with a user message.")
    elif thinking_on and len(messages) >= 2 and messages[-2]["role"] == "assistant":
        # The turn the results answer must keep its thinking ("preceding the lastmost set of tool_use").
        blocks = messages[-2]["content"] if isinstance(messages[-2]["content"], list) else []
        if any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks) and \
                blocks[0].get("type") not in ("thinking", "redacted_thinking"):
            raise _anthropic(f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                             f"but found `{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` "
                             "message must start with a thinking block (preceding the lastmost set of `tool_use` and "
                             "`tool_result` blocks).")
    return images


def _anthropic_tools(tools: list[Any]) -> None:
    names: set[str] = set()
    for index, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not _NAME.match(name):
            raise _anthropic(f"tools.{index}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        if name in names:
            raise _anthropic(f"tools: Tool names must be unique ({name})")
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise _anthropic(f"tools.{index}.input_schema.type: Input should be 'object'")


# -- Groq ----------------------------------------------------------------------------------------

def _groq(message: str, status: int = 400, code: str | None = None) -> Rejected:
    error: dict[str, Any] = {"message": message, "type": "invalid_request_error"}
    if code:
        error["code"] = code
    return Rejected(status, {"error": error})


# The Groq refusals of docs/VENDORS.md, in its order: one list to compare with the document.
def check_groq(headers: dict[str, str], body: Any) -> None:
    if not headers.get("authorization", "").startswith("Bearer ") or len(headers["authorization"]) <= 7:
        raise _groq("Invalid API Key", 401, "invalid_api_key")
    if not isinstance(body, dict):
        raise _groq("the body must be a JSON object")
    for key in ("model", "messages"):
        if key not in body:
            raise _groq(f"'{key}' : property '{key}' is missing")
    if "temperature" in body and (not _number(body["temperature"]) or not 0 <= body["temperature"] <= 2):
        raise _groq("'temperature' : number must be at most 2")
    if body.get("n", 1) != 1:
        raise _groq("'n' : number must be at most 1")
    if "reasoning_effort" in body:
        refusal = reasoning_refusal(str(body["model"]), body["reasoning_effort"])
        if refusal:
            raise _groq(f"`reasoning_effort` is not supported with this model: {refusal.message}")
    stop = body.get("stop")
    if isinstance(stop, list) and len(stop) > 4:
        raise _groq("'stop' : maximum 4 items")
    if "max_completion_tokens" in body and (not isinstance(body["max_completion_tokens"], int)
                                           or body["max_completion_tokens"] < 1):
        raise _groq("'max_completion_tokens' : number must be at least 1")
    tools = body.get("tools") or []
    if len(tools) > 128:
        raise _groq("'tools' : maximum 128 items")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise _groq(f"'tools.{index}.type' : value must be 'function'")
        function = tool.get("function") or {}
        if not isinstance(function.get("name"), str) or not _NAME.match(function["name"]):
            raise _groq(f"'tools.{index}.function.name' : string does not match pattern")
        parameters = function.get("parameters")
        if parameters is not None and (not isinstance(parameters, dict) or parameters.get("type") != "object"):
            raise _groq(f"'tools.{index}.function.parameters' : must be an object schema")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise _groq("'messages' : minimum number of items is 1")
    pending: list[str] = []
    inline = 0
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            raise _groq(f"'messages.{index}.role' : discriminator property 'role' has invalid value")
        if role != "tool" and pending:
            raise _groq(f"'messages.{index}' : an assistant message with 'tool_calls' must be followed by tool "
                        f"messages responding to each 'tool_call_id' ({', '.join(pending)})")
        if role in ("system", "developer", "user") and message.get("content") in (None, "", []):
            raise _groq(f"'messages.{index}' : property 'content' is missing")
        if role == "user" and isinstance(message["content"], list):
            inline += check_groq_content(message["content"], index, str(body["model"]))
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                raise _groq(f"'messages.{index}' : property 'content' is missing")
            for number, call in enumerate(calls):
                if not isinstance((call.get("function") or {}).get("arguments"), str):
                    raise _groq(f"'messages.{index}.tool_calls.{number}.function.arguments' : value must be a string")
            pending = [str(call.get("id")) for call in calls]
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                raise _groq(f"'messages.{index}.tool_call_id' : answers no call of the preceding assistant message")
            pending.remove(message["tool_call_id"])
    if pending:
        raise _groq("an assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id' ({', '.join(pending)})")
    check_groq_output(body, inline)


# -- Gemini --------------------------------------------------------------------------------------

def _gemini(message: str, status: int = 400, kind: str = "INVALID_ARGUMENT") -> Rejected:
    return Rejected(status, {"error": {"code": status, "message": message, "status": kind}})


_GEMINI_FIELDS: dict[str, set[str]] = {
    "": {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings",
         "cachedContent"},
    "content": {"role", "parts"},
    "part": {"text", "functionCall", "functionResponse", "thoughtSignature", "thought", "inlineData", "fileData"},
    "inlineData": {"mimeType", "data"},
    "fileData": {"mimeType", "fileUri"},
    "functionCall": {"name", "args", "id"},
    "functionResponse": {"name", "response", "id"},
    "tool": {"functionDeclarations"},
    "declaration": {"name", "description", "parameters", "parametersJsonSchema", "response", "responseJsonSchema",
                    "behavior"},
    "generationConfig": {"temperature", "maxOutputTokens", "stopSequences", "candidateCount", "topP", "topK", "seed",
                         "presencePenalty", "frequencyPenalty", "responseMimeType", "responseJsonSchema",
                         "responseModalities", "thinkingConfig"},
    "thinkingConfig": {"thinkingBudget", "thinkingLevel", "includeThoughts"},
    "schema": {"type", "format", "title", "description", "nullable", "enum", "items", "minItems", "maxItems",
               "properties", "required", "minProperties", "maxProperties", "propertyOrdering", "minLength",
               "maxLength", "pattern", "minimum", "maximum", "default", "example", "anyOf"},
}
_GEMINI_TYPES = {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}


def _known(value: Any, kind: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _gemini(f"Invalid JSON payload received. Expected an object at '{where}'.")
    for key in value:
        if key not in _GEMINI_FIELDS[kind]:
            raise _gemini(f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': Cannot find field.")
    return value


def _schema(value: Any, where: str) -> None:
    schema = _known(value, "schema", where)
    if "type" in schema:
        if isinstance(schema["type"], list):
            raise _gemini(f"Invalid JSON payload received. Proto field is not repeating, cannot start list at '{where}.type'")
        if str(schema["type"]).upper() not in _GEMINI_TYPES:
            raise _gemini(f"Invalid value at '{where}.type': {schema['type']!r}")
    kind = str(schema.get("type", "")).upper()
    # The public 400s for enums and formats (docs/VENDORS.md, Gemini): enum values are strings, on a STRING only;
    # a STRING takes format enum or date-time only.
    for index, item in enumerate(schema.get("enum") or []):
        if not isinstance(item, str):
            raise _gemini(f"Invalid value at '{where}.enum[{index}]' (TYPE_STRING), {orjson.dumps(item).decode()}")
    if "enum" in schema and kind != "STRING":
        raise _gemini(f"* GenerateContentRequest.{where}.enum: only allowed for STRING type")
    if kind == "STRING" and "format" in schema and schema["format"] not in ("enum", "date-time"):
        raise _gemini(f"* GenerateContentRequest.{where}.format: only 'enum' and 'date-time' are supported for STRING type")
    for name, item in (schema.get("properties") or {}).items():
        _schema(item, f"{where}.properties[{name}]")
    if "items" in schema:
        _schema(schema["items"], f"{where}.items")
    for index, item in enumerate(schema.get("anyOf") or []):
        _schema(item, f"{where}.anyOf[{index}]")


def check_gemini(headers: dict[str, str], body: Any, model: str) -> None:
    if not headers.get("x-goog-api-key"):
        raise _gemini("Method doesn't allow unregistered callers. Please use an API key.", 403, "PERMISSION_DENIED")
    body = _known(body, "", "GenerateContentRequest")
    contents = body.get("contents")
    if not contents:
        raise _gemini("* GenerateContentRequest.contents: contents is not specified")
    config = _known(body.get("generationConfig", {}), "generationConfig", "generation_config")
    if "temperature" in config and (not _number(config["temperature"]) or not 0 <= config["temperature"] <= 2):
        raise _gemini("generation_config.temperature must be between 0 and 2")
    if len(config.get("stopSequences") or []) > 5:
        raise _gemini("generation_config.stop_sequences: at most 5")
    if "maxOutputTokens" in config and (not isinstance(config["maxOutputTokens"], int) or config["maxOutputTokens"] < 1):
        raise _gemini("generation_config.max_output_tokens must be positive")
    thinking = _known(config.get("thinkingConfig", {}), "thinkingConfig", "generation_config.thinking_config")
    if "thinkingBudget" in thinking:
        budget = thinking["thinkingBudget"]
        refusal = gemini_thinking_refusal(model, "adaptive" if budget == -1 else budget)
        if refusal:
            raise _gemini(f"generation_config.thinking_config.thinking_budget: {refusal.message}")
    _gemini_tools(body.get("tools") or [])
    check_gemini_output(config, model, bool(body.get("tools")))
    if "systemInstruction" in body:
        _known(body["systemInstruction"], "content", "system_instruction")
    last_user_text = _gemini_contents(contents)
    if re.match(r"^(models/)?gemini-([3-9]|\d\d)", model):
        for index, content in enumerate(contents):
            if index <= last_user_text or content["role"] != "model":
                continue
            first = next((p for p in content["parts"] if "functionCall" in p), None)
            if first is not None and not first.get("thoughtSignature"):
                raise _gemini(f"Function call is missing a thought_signature in functionCall parts. This is required "
                              f"for tools to work correctly, and missing thought_signature may lead to degraded model "
                              f"performance. Additional data, function call `default_api:{first['functionCall'].get('name')}`"
                              f" , position {index + 1}.")


def _gemini_tools(tools: list[Any]) -> None:
    for index, tool in enumerate(tools):
        for number, declaration in enumerate(_known(tool, "tool", f"tools[{index}]").get("functionDeclarations") or []):
            where = f"tools[{index}].function_declarations[{number}]"
            declaration = _known(declaration, "declaration", where)
            if not _GEMINI_NAME.match(str(declaration.get("name", ""))):
                raise _gemini(f"* {where}.name: Invalid function name. Must be a-z, A-Z, 0-9, or contain underscores "
                              "and dashes, with a maximum length of 63.")
            if not declaration.get("description"):
                raise _gemini(f"* {where}.description: description is required")
            if "parameters" in declaration and "parametersJsonSchema" in declaration:
                raise _gemini(f"* {where}: parameters and parameters_json_schema are mutually exclusive")
            if "parameters" in declaration:
                _schema(declaration["parameters"], f"{where}.parameters")


def _gemini_contents(contents: list[Any]) -> int:
    """Roles, parts, and each function response matching the previous turn's calls; the last user text's index."""
    previous: dict[str, Any] | None = None
    last_user_text = -1
    for index, content in enumerate(contents):
        content = _known(content, "content", f"contents[{index}]")
        if content.get("role") not in ("user", "model"):
            raise _gemini("Please use a valid role: user, model.")
        parts = content.get("parts") or []
        if not parts:
            raise _gemini(f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty")
        for number, part in enumerate(parts):
            part = _known(part, "part", f"contents[{index}].parts[{number}]")
            if not any(key in part for key in ("text", "functionCall", "functionResponse", "inlineData", "fileData")):
                raise _gemini(f"* contents[{index}].parts[{number}]: a part must hold data")
            for kind in ("inlineData", "fileData"):
                if kind in part:
                    _known(part[kind], kind, f"contents[{index}].parts[{number}].{kind}")
                    check_gemini_file(part, f"contents[{index}].parts[{number}]")
            if "functionCall" in part:
                _known(part["functionCall"], "functionCall", f"contents[{index}].parts[{number}].function_call")
            if "functionResponse" in part:
                response = _known(part["functionResponse"], "functionResponse",
                                  f"contents[{index}].parts[{number}].function_response")
                if not isinstance(response.get("response"), dict):
                    raise _gemini(f"contents[{index}].parts[{number}].function_response.response must be an object")
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if content["role"] == "user" and any("text" in p for p in parts):
            last_user_text = index
        if calls:
            after_user = previous is not None and previous["role"] == "user"
            if not after_user:
                raise _gemini("Please ensure that function call turn comes immediately after a user turn or after "
                              "a function response turn.")
        if responses:
            prior_calls = [p["functionCall"] for p in (previous or {}).get("parts", []) if "functionCall" in p]
            if len(prior_calls) != len(responses):
                raise _gemini("Please ensure that the number of function response parts is equal to the number of "
                              "function call parts of the function call turn.")
            names = {c.get("name") for c in prior_calls}
            ids = {c.get("id") for c in prior_calls if c.get("id")}
            for response in responses:
                if response.get("name") not in names or (ids and response.get("id") not in ids):
                    raise _gemini(f"function response '{response.get('name')}' matches no call of the previous turn")
        previous = content
    return last_user_text
