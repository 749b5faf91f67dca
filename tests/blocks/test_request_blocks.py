"""Request blocks against fake vendor servers speaking each vendor's wire format."""

from __future__ import annotations

import asyncio
import copy
import json

import orjson
import pytest

from engine import DiagramInvalid, Services, execute
from engine.compile.loader import load_diagram
from tests.blocks.vendors import ORDER_TOOL, PARALLEL_HISTORY, FakeVendor, loopback_server
from tests.engine.test_tools import make_registry

BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "llama-3.3-70b-versatile", "gemini": "gemini-3.5-flash"}
SYSTEM = "You are a support agent for an online shop."


def diagram_text(vendor: str, *, history=None, tools=True, request: str = "", extra: str = "") -> str:
    variables = {"history": history if history is not None else [], "tools": [ORDER_TOOL] if tools else []}
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            message_level: Detailed
            variables: {json.dumps(variables)}
            next: ask
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {MODELS[vendor]}
              role: {SYSTEM}
              request: {json.dumps(request)}
              history: "{{{{ history }}}}"
              tools: "{{{{ tools }}}}"
              {extra}
            set: {{answer: "{{{{ result }}}}", calls: "{{{{ called_tools }}}}", rows: "{{{{ history }}}}",
                   usage: "{{{{ usage }}}}", stop: "{{{{ stop_reason }}}}"}}
    """


def run(runner, write, text: str, services: Services):
    diagram = load_diagram(write(text), runner.registry)
    return asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=services))


ANTHROPIC_REPLY = {
    "id": "msg_01Jq5Xw9Rb2Ye4Ds", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
    "content": [{"type": "text", "text": "Order 42 has shipped with DHL."}],
    "stop_reason": "end_turn", "stop_sequence": None, "stop_details": None,
    "usage": {"input_tokens": 771, "output_tokens": 28, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 0},
}
GROQ_REPLY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1764680402, "model": "llama-3.3-70b-versatile",
    "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "Order 42 has shipped with DHL."}}],
    "usage": {"prompt_tokens": 497, "completion_tokens": 26, "total_tokens": 523},
}
GEMINI_REPLY = {
    "candidates": [{"index": 0, "finishReason": "STOP",
                    "content": {"role": "model", "parts": [{"text": "Order 42 has shipped with DHL."}]}}],
    "usageMetadata": {"promptTokenCount": 266, "candidatesTokenCount": 24, "totalTokenCount": 290},
    "modelVersion": "gemini-3.5-flash", "responseId": "p2Xk0bR7LmQa9TsV",
}
REPLIES = {"anthropic": ANTHROPIC_REPLY, "groq": GROQ_REPLY, "gemini": GEMINI_REPLY}


def test_anthropic_request_after_parallel_tool_calls_matches_the_wire_format(runner, write) -> None:
    vendor = FakeVendor().reply(200, ANTHROPIC_REPLY)
    result = run(runner, write, diagram_text("anthropic", history=PARALLEL_HISTORY), vendor.services("anthropic"))
    assert result.status == "succeeded", result.errors
    request = vendor.seen[0]
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["anthropic-version"] == "2026-10-21"
    assert request.headers["x-api-key"] == "sk-ant-test-key-123456"
    assert vendor.bodies()[0] == {
        "model": "claude-sonnet-5-5", "max_tokens": 1024, "system": SYSTEM,
        "messages": [
            {"role": "user", "content": "Where are my orders 42 and 57?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look both orders up."},
                {"type": "tool_use", "id": "ID1", "name": "get_order_status", "input": {"order_id": 42}},
                {"type": "tool_use", "id": "ID2", "name": "get_order_status", "input": {"order_id": 57}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "ID1", "content": '{"status": "shipped", "carrier": "DHL"}'},
                {"type": "tool_result", "tool_use_id": "ID2", "content": '{"status": "packing", "ships": "2026-12-03"}'}]}],
        "tools": [{"name": "get_order_status", "description": ORDER_TOOL["description"],
                   "input_schema": ORDER_TOOL["parameters"]}],
    }
    assert result.variables["answer"] == "Order 42 has shipped with DHL."
    assert result.variables["usage"] == {"input_tokens": 776, "output_tokens": 28, "cache_write_tokens": 5}
    assert result.variables["stop"] == "end_turn"
    assert result.variables["rows"][-1] == {"role": "assistant", "content": "Order 42 has shipped with DHL.",
                                            "tool_call_id": None, "name": None}


def test_groq_request_after_parallel_tool_calls_matches_the_wire_format(runner, write) -> None:
    history = [row for row in PARALLEL_HISTORY if row["content"] != "Let me look both orders up."]
    vendor = FakeVendor().reply(200, GROQ_REPLY)
    text = diagram_text("groq", history=history, extra="temperature: 0.2\n              max_tokens: 512")
    result = run(runner, write, text, vendor.services("groq"))
    assert result.status == "succeeded", result.errors
    assert str(vendor.seen[0].url) == "https://api.groq.com/openai/v1/chat/completions"
    assert vendor.seen[0].headers["authorization"] == "Bearer gsk_testkey123456"
    assert vendor.bodies()[0] == {
        "model": "llama-3.3-70b-versatile", "temperature": 0.2, "max_completion_tokens": 512,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Where are my orders 42 and 57?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "ID1", "type": "function", "function": {"name": "get_order_status", "arguments": '{"order_id": 42}'}},
                {"id": "ID2", "type": "function", "function": {"name": "get_order_status", "arguments": '{"order_id": 57}'}}]},
            {"role": "tool", "tool_call_id": "ID1", "name": "get_order_status",
             "content": '{"status": "shipped", "carrier": "DHL"}'},
            {"role": "tool", "tool_call_id": "ID2", "name": "get_order_status",
             "content": '{"status": "packing", "ships": "2026-12-03"}'}],
        "tools": [{"type": "function", "function": ORDER_TOOL}],
    }
    assert result.variables["usage"] == {"input_tokens": 497, "output_tokens": 26}


def test_gemini_request_after_parallel_tool_calls_matches_the_wire_format(runner, write) -> None:
    history = copy.deepcopy([row for row in PARALLEL_HISTORY if row["content"] != "Let me look both orders up."])
    for row, call_id in zip((history[1], history[2], history[3], history[4]),
                            ("gemini-R-0", "gemini-R-1", "gemini-R-0", "gemini-R-1"), strict=True):
        row["tool_call_id"] = call_id
    history[1]["signature"] = "CtwBAdHtim9bT0Yx2mXq7Kc3pQ1s"
    vendor = FakeVendor().reply(200, GEMINI_REPLY)
    text = diagram_text("gemini", history=history, extra="temperature: 0.2\n              max_tokens: 512")
    result = run(runner, write, text, vendor.services("gemini"))
    assert result.status == "succeeded", result.errors
    assert str(vendor.seen[0].url) == (
        "https://generativelanguage.googleapis.com/v1/models/gemini-3.5-flash:generateContent")
    assert vendor.seen[0].headers["x-goog-api-key"] == "AIzaTestKey1234567890"
    assert vendor.bodies()[0] == {
        "contents": [
            {"role": "user", "parts": [{"text": "Where are my orders 42 and 57?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_order_status", "args": {"order_id": 42}},
                 "thoughtSignature": "CtwBAdHtim9bT0Yx2mXq7Kc3pQ1s"},
                {"functionCall": {"name": "get_order_status", "args": {"order_id": 57}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_order_status",
                                      "response": {"result": {"status": "shipped", "carrier": "DHL"}}}},
                {"functionResponse": {"name": "get_order_status",
                                      "response": {"result": {"status": "packing", "ships": "2026-12-03"}}}}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": SYSTEM}]},
        "tools": [{"functionDeclarations": [
            {"name": "get_order_status", "description": ORDER_TOOL["description"],
             "parameters": {"type": "OBJECT", "properties": {"order_id": {"type": "INTEGER"}},
                            "required": ["order_id"]}}]}],
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 512},
    }


TOOL_CALL_REPLIES = {
    "anthropic": {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
                  "content": [{"type": "text", "text": "Let me look."},
                              {"type": "tool_use", "id": "toolu_1", "name": "get_order_status", "input": {"order_id": 42}},
                              {"type": "tool_use", "id": "toolu_2", "name": "get_order_status", "input": {"order_id": 57}}],
                  "stop_reason": "tool_use", "usage": {"input_tokens": 596, "output_tokens": 97}},
    "groq": {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
             "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_order_status",
                                                                             "arguments": "{\"order_id\":42}"}},
                            {"id": "call_2", "type": "function", "function": {"name": "get_order_status",
                                                                             "arguments": "{\"order_id\":57}"}}]}}],
             "usage": {"prompt_tokens": 402, "completion_tokens": 44}},
    "gemini": {"candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
                   {"functionCall": {"name": "get_order_status", "args": {"order_id": 42}}, "thoughtSignature": "SIG"},
                   {"functionCall": {"name": "get_order_status", "args": {"order_id": 57}}}]}}],
               "usageMetadata": {"promptTokenCount": 187, "candidatesTokenCount": 30, "thoughtsTokenCount": 96},
               "responseId": "mLcuaZ3qFuSq1MkP"},
}
CALL_IDS = {"anthropic": ["toolu_1", "toolu_2"], "groq": ["call_1", "call_2"],
            "gemini": ["gemini-mLcuaZ3qFuSq1MkP-0", "gemini-mLcuaZ3qFuSq1MkP-1"]}
USAGE = {"anthropic": (596, 97), "groq": (402, 44), "gemini": (187, 126, 96)}  # Gemini counts thoughts apart too


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_parallel_tool_calls_parse_to_called_tools_and_history_rows(runner, write, vendor_name: str) -> None:
    vendor = FakeVendor().reply(200, TOOL_CALL_REPLIES[vendor_name])
    result = run(runner, write, diagram_text(vendor_name, request="Where are my orders 42 and 57?"),
                 vendor.services(vendor_name))
    assert result.status == "succeeded", result.errors
    calls = result.variables["calls"]
    assert [c["id"] for c in calls] == CALL_IDS[vendor_name]
    assert [c["arguments"] for c in calls] == [{"order_id": 42}, {"order_id": 57}]
    assert tuple(result.variables["usage"].values()) == USAGE[vendor_name]
    rows = result.variables["rows"]
    call_rows = [r for r in rows if r.get("tool_call_id")]
    assert [orjson.loads(r["content"]) for r in call_rows] == [{"order_id": 42}, {"order_id": 57}]
    assert rows[0] == {**rows[0], "role": "user", "content": "Where are my orders 42 and 57?"}
    if vendor_name == "gemini":
        assert call_rows[0]["signature"] == "SIG"


ERRORS = {
    "anthropic": (404, {"type": "error", "error": {"type": "not_found_error", "message": "model: nope"}}, "not_found_error"),
    "groq": (401, {"error": {"message": "Invalid API Key", "type": "invalid_request_error", "code": "invalid_api_key"}},
             "invalid_api_key"),
    "gemini": (400, {"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}},
               "INVALID_ARGUMENT"),
}


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_client_errors_fail_at_once_with_the_vendors_message(runner, write, vendor_name: str) -> None:
    status, body, kind = ERRORS[vendor_name]
    vendor = FakeVendor().reply(status, body)
    result = run(runner, write, diagram_text(vendor_name, request="hi"), vendor.services(vendor_name))
    assert result.status == "failed" and len(vendor.seen) == 1
    error = result.errors[0]
    assert error["type"] == "provider_error" and error["block"] == "ask"
    assert kind in error["message"] and body["error"]["message"] in error["message"]


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_429_with_retry_after_then_success(runner, write, vendor_name: str) -> None:
    vendor = FakeVendor().reply(429, {"error": {"message": "slow down"}}, {"retry-after": "2"})
    vendor.reply(200, REPLIES[vendor_name])
    services = vendor.services(vendor_name)
    result = run(runner, write, diagram_text(vendor_name, request="hi"), services)
    assert result.status == "succeeded", result.errors
    assert vendor.waits == [2.0]
    assert len(vendor.seen) == 2


def test_anthropic_529_and_retry_after_ms_are_retried(runner, write) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    vendor = FakeVendor().reply(529, overloaded).reply(529, overloaded, {"retry-after-ms": "250"})
    vendor.reply(200, ANTHROPIC_REPLY)
    services = vendor.services("anthropic")
    result = run(runner, write, diagram_text("anthropic", request="hi"), services)
    assert result.status == "succeeded"
    waits = vendor.waits
    assert 0.375 <= waits[0] <= 0.5 and waits[1] == 0.25


def test_x_should_retry_false_stops_retries(runner, write) -> None:
    vendor = FakeVendor().reply(503, {"error": {"message": "down"}}, {"x-should-retry": "false"})
    result = run(runner, write, diagram_text("groq", request="hi"), vendor.services("groq"))
    assert result.status == "failed" and len(vendor.seen) == 1


def test_5xx_beyond_retries_fails_with_the_attempt_count(runner, write) -> None:
    vendor = FakeVendor()
    for _ in range(5):
        vendor.reply(500, {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}})
    result = run(runner, write, diagram_text("gemini", request="hi"), vendor.services("gemini"))
    assert result.status == "failed" and len(vendor.seen) == 5
    assert "after 5 attempts" in result.errors[0]["message"]


def test_gemini_retry_delay_from_the_error_body(runner, write) -> None:
    body = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED",
                      "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}
    vendor = FakeVendor().reply(429, body).reply(200, GEMINI_REPLY)
    services = vendor.services("gemini")
    assert run(runner, write, diagram_text("gemini", request="hi"), services).status == "succeeded"
    assert vendor.waits == [1.5]


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_truncated_json_is_a_provider_error(runner, write, vendor_name: str) -> None:
    vendor = FakeVendor().reply(200, b'{"id": "msg_1", "content": [{"type": "te')
    result = run(runner, write, diagram_text(vendor_name, request="hi"), vendor.services(vendor_name))
    assert result.status == "failed"
    assert result.errors[0]["type"] == "provider_malformed_response"


@pytest.mark.slow
def test_slow_server_on_a_loopback_socket_hits_the_timeout(runner, write) -> None:
    async def scenario():
        async with loopback_server(5.0, orjson.dumps(ANTHROPIC_REPLY)) as base:
            text = diagram_text("anthropic", request="hi", extra=f"timeout: 0.5\n              base_url: {base}")
            diagram = load_diagram(write(text), runner.registry)
            services = Services(environ={"ANTHROPIC_API_KEY": "sk-ant-test-key-123456"})
            return await execute(diagram, runs_dir=runner.runs_dir, services=services)

    result = asyncio.run(scenario())
    assert result.status == "failed"
    error = result.errors[0]
    assert error["type"] == "block_timeout" and "'ask'" in error["message"] and "0.5 s" in error["message"]
    assert result.duration < 3


def test_retries_never_wait_past_the_timeout(runner, write) -> None:
    vendor = FakeVendor().reply(429, {"error": {"message": "later"}}, {"retry-after": "30"})
    result = run(runner, write, diagram_text("groq", request="hi", extra="timeout: 5"), vendor.services("groq"))
    assert result.errors[0]["type"] == "block_timeout" and "retrying" in result.errors[0]["message"]
    assert len(vendor.seen) == 1


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_temperature_outside_0_1_is_a_load_error(write, registry, vendor_name: str) -> None:
    path = write(diagram_text(vendor_name, request="hi", extra="temperature: 1.5"))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    assert any(p.field == "with.temperature" and "less than or equal to 1" in p.message for p in caught.value.problems)


def test_temperature_on_a_claude_model_from_4_7_on_is_a_load_error(write, registry) -> None:
    path = write(diagram_text("anthropic", request="hi", extra="temperature: 0.3"))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    problem = caught.value.problems[0]
    assert problem.field == "with.temperature" and "claude-sonnet-5-5" in problem.message
    assert "claude-sonnet-4-6" in problem.message


def test_temperature_selects_anthropic_version_2023_06_01(runner, write) -> None:
    vendor = FakeVendor().reply(200, ANTHROPIC_REPLY)
    text = diagram_text("anthropic", request="hi", extra="temperature: 0.3").replace("claude-sonnet-5-5", "claude-sonnet-4-6")
    result = run(runner, write, text, vendor.services("anthropic"))
    assert result.status == "succeeded"
    assert vendor.seen[0].headers["anthropic-version"] == "2023-06-01"
    assert vendor.bodies()[0]["temperature"] == 0.3
    called = next(e for e in runner.events(result) if e["event"] == "provider_called")
    assert called["api_version"] == "2023-06-01" and "2023-06-01" in called["notes"][0]


@pytest.mark.parametrize(("vendor_name", "limit"), [("anthropic", 64), ("groq", 64), ("gemini", 63)])
def test_tool_names_past_the_vendor_limit_are_load_errors(write, registry, vendor_name: str, limit: int) -> None:
    tool = {**ORDER_TOOL, "name": "x" * (limit + 1)}
    ok = {**ORDER_TOOL, "name": "x" * limit}
    for candidate, fails in ((tool, True), (ok, False)):
        text = diagram_text(vendor_name, request="hi").replace('"{{ tools }}"', json.dumps([candidate]))
        path = write(text, f"{vendor_name}{fails}.yaml")
        if fails:
            with pytest.raises(DiagramInvalid) as caught:
                load_diagram(path, registry)
            assert any(p.field == "with.tools" and f"at most {limit}" in p.message for p in caught.value.problems)
        else:
            load_diagram(path, registry)


def test_gemini_schema_keyword_it_cannot_express_is_an_error(write, registry) -> None:
    tool = {**ORDER_TOOL, "parameters": {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}}}
    text = diagram_text("gemini", request="hi").replace('"{{ tools }}"', json.dumps([tool]))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(text), registry)
    assert "'oneOf'" in str(caught.value)


def gemini_with_tool(parameters: dict, request: str = "hi") -> str:
    tool = {**ORDER_TOOL, "parameters": parameters}
    return diagram_text("gemini", request=request).replace('"{{ tools }}"', json.dumps([tool]))


def sent_parameters(vendor: FakeVendor) -> dict:
    return vendor.bodies()[0]["tools"][0]["functionDeclarations"][0]["parameters"]


def provider_notes(runner, result) -> list[str]:
    return next(e for e in runner.events(result) if e["event"] == "provider_called")["notes"]


def test_gemini_additional_properties_false_is_left_out_with_a_debug_note(runner, write) -> None:
    vendor = FakeVendor().reply(200, GEMINI_REPLY)
    text = gemini_with_tool({**ORDER_TOOL["parameters"], "additionalProperties": False})
    result = run(runner, write, text, vendor.services("gemini"))
    assert result.status == "succeeded", result.errors
    assert sent_parameters(vendor) == {"type": "OBJECT", "properties": {"order_id": {"type": "INTEGER"}},
                                       "required": ["order_id"]}
    [note] = provider_notes(runner, result)
    assert "parameters.additionalProperties: false is not sent" in note and "ToolDispatch" in note


def test_gemini_integer_enum_goes_as_a_string_enum_the_service_takes(runner, write) -> None:
    parameters = {"type": "object", "properties": {"size": {"type": "integer", "enum": [1, 2, 3]}}}
    vendor = FakeVendor().reply(200, GEMINI_REPLY)
    result = run(runner, write, gemini_with_tool(parameters), vendor.services("gemini"))
    assert result.status == "succeeded", result.errors
    assert sent_parameters(vendor)["properties"]["size"] == {"type": "STRING", "format": "enum", "enum": ["1", "2", "3"]}
    [note] = provider_notes(runner, result)
    assert "parameters.properties.size.enum goes to Gemini as type STRING" in note
    # the offline simulator checks the body as the service does (enum values strings, on a STRING only)
    offline = run(runner, write, gemini_with_tool(parameters), Services(environ={}, offline=True))
    assert offline.status == "succeeded", offline.errors


@pytest.mark.parametrize(("parameters", "path", "hint"), [
    ({"type": "object", "properties": {"urgent": {"type": "boolean", "const": True}}},
     "parameters.properties.urgent.const", "type: boolean"),
    ({"type": "object", "properties": {"urgent": {"type": "boolean", "enum": [True]}}},
     "parameters.properties.urgent.enum", "type: boolean"),
    ({"type": "object", "properties": {"email": {"type": "string", "format": "email"}}},
     "parameters.properties.email.format", "pattern"),
    ({"type": "object", "properties": {"size": {"type": "integer", "enum": [1, 2]}}, "required": ["size"]},
     None, None),  # accepted: ToolDispatch coerces "1" back (non-strict)
])
def test_gemini_schema_keywords_it_cannot_take_are_load_errors_with_the_path(write, registry, parameters, path,
                                                                              hint) -> None:
    file = write(gemini_with_tool(parameters))
    if path is None:
        load_diagram(file, registry)
        return
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(file, registry)
    [problem] = caught.value.problems
    assert (problem.block, problem.field) == ("ask", "with.tools")
    assert f"tool 'get_order_status': {path}:" in problem.message
    assert hint in (problem.hint or "")


def test_gemini_strict_tool_with_an_integer_enum_is_a_load_error(write, registry) -> None:
    tool = {**ORDER_TOOL, "strict": True,
            "parameters": {"type": "object", "properties": {"size": {"type": "integer", "enum": [1, 2]}}}}
    text = diagram_text("gemini", request="hi").replace('"{{ tools }}"', json.dumps([tool]))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(text), registry)
    assert "parameters.properties.size.enum" in str(caught.value) and "strict" in str(caught.value)


REGISTRY_TOOLS = """
- function: get_order_status
  handler: MODULE:status
  group: orders
  description: Returns the status of an order.
  parameters: {type: object, properties: {order_id: {type: integer}}, required: [order_id]}
- function: ship_order
  handler: MODULE:status
  group: orders
  description: Ships an order to an address.
  parameters:
    type: object
    properties:
      order_id: {type: integer}
      address: {oneOf: [{type: string}, {type: object, properties: {street: {type: string}}}]}
- function: refund_payment
  handler: MODULE:refund
  group: billing
  description: Refunds a payment.
  parameters: {type: object, properties: {amount: {type: number, exclusiveMinimum: 0}}}
"""


def registry_diagram(write, tmp_path, vendor: str, tools: str) -> object:
    path, _ = make_registry(tmp_path, REGISTRY_TOOLS)
    return write(f"""
        diagram: d
        tools: {path.name}
        blocks:
          - id: start
            type: Start
            variables: {{question: Ship order 42 to Rua Augusta 1}}
            next: ask
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {MODELS[vendor]}
              request: "{{{{ question }}}}"
              tools: "{tools}"
    """)


def test_gemini_registry_tool_it_cannot_take_is_a_load_error_at_the_registry_entry(write, registry, tmp_path) -> None:
    diagram = registry_diagram(write, tmp_path, "gemini", "{{ tools('orders', query=question) }}")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(diagram, registry)
    [problem] = caught.value.problems  # billing's refund_payment is never offered to this block
    assert problem.file == str(tmp_path / "registry.yaml")
    lines = (tmp_path / "registry.yaml").read_text().splitlines()
    assert lines[problem.line - 1].strip() == "- function: ship_order"
    assert (problem.block, problem.field) == ("ask", "with.tools")
    assert "tool 'ship_order': parameters.properties.address.oneOf:" in problem.message
    assert "tools('orders')" in problem.message and "anyOf" in (problem.hint or "")


def test_every_registry_tool_is_checked_when_no_group_is_written(write, registry, tmp_path) -> None:
    diagram = registry_diagram(write, tmp_path, "gemini", "{{ tools(query=question) + tools('orders') }}")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(diagram, registry)
    found = sorted((p.line, p.message.split(":")[0]) for p in caught.value.problems)
    assert [tool for _, tool in found] == ["tool 'ship_order'", "tool 'refund_payment'"]
    assert "parameters.properties.amount.exclusiveMinimum" in caught.value.problems[-1].message


def test_other_vendors_take_the_registry_tools_gemini_cannot(write, registry, tmp_path) -> None:
    load_diagram(registry_diagram(write, tmp_path, "anthropic", "{{ tools() }}"), registry)


def test_missing_key_names_the_variable_before_any_request(runner, write) -> None:
    vendor = FakeVendor()
    result = run(runner, write, diagram_text("gemini", request="hi"), vendor.services("gemini", environ={}))
    assert result.errors[0]["type"] == "missing_api_key"
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in result.errors[0]["message"]
    assert not vendor.seen


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_the_key_never_reaches_a_detailed_trace(runner, write, vendor_name: str) -> None:
    vendor = FakeVendor().reply(200, REPLIES[vendor_name])
    services = vendor.services(vendor_name)
    result = run(runner, write, diagram_text(vendor_name, request="hi"), services)
    text = result.trace.read_text()
    assert "http_request" in text and "http_response" in text
    for key in ("sk-ant-test-key-123456", "gsk_testkey123456", "AIzaTestKey1234567890"):
        assert key not in text
    assert "[REDACTED]" in text


def test_base_url_env_and_groq_suffix(runner, write) -> None:
    vendor = FakeVendor().reply(200, GROQ_REPLY)
    services = vendor.services("groq", environ={"GROQ_API_KEY": "gsk_x1234567", "GROQ_BASE_URL": "https://proxy.test/openai/v1"})
    assert run(runner, write, diagram_text("groq", request="hi"), services).status == "succeeded"
    assert str(vendor.seen[0].url) == "https://proxy.test/openai/v1/chat/completions"


def test_one_validate_pass_reports_type_errors_and_vendor_checks_together(write, registry) -> None:
    path = write(diagram_text("anthropic", request="hi", extra="temperature: 0.5\n              max_tokens: -1")
                 .replace("claude-sonnet-5-5", "claude-opus-5"))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    fields = {p.field for p in caught.value.problems}
    assert {"with.temperature", "with.max_tokens"} <= fields


WRONG_TYPES = {
    "anthropic": [{**ANTHROPIC_REPLY, "usage": "lots"}, {**ANTHROPIC_REPLY, "content": 5},
                  {**ANTHROPIC_REPLY, "content": [{"type": "text", "text": 5}]},
                  {**ANTHROPIC_REPLY, "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": "{}"}]},
                  {**ANTHROPIC_REPLY, "content": ["text"]}, [ANTHROPIC_REPLY]],
    "groq": [{**GROQ_REPLY, "usage": "lots"}, {**GROQ_REPLY, "choices": {}}, {**GROQ_REPLY, "choices": []},
             {**GROQ_REPLY, "choices": [{"message": "hello"}]},
             {**GROQ_REPLY, "choices": [{"message": {"content": 5}}]},
             {**GROQ_REPLY, "choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": {}}}]}}]}],
    "gemini": [{**GEMINI_REPLY, "usageMetadata": "lots"}, {**GEMINI_REPLY, "candidates": 5},
               {**GEMINI_REPLY, "candidates": [{"content": {"parts": "text"}}]},
               {**GEMINI_REPLY, "candidates": [{"content": {"parts": [{"functionCall": {"name": "x", "args": []}}]}}]},
               {**GEMINI_REPLY, "candidates": [{"content": {"parts": [{"text": 5}]}}]}, "a string"],
}


@pytest.mark.parametrize(("vendor_name", "body"), [(v, b) for v, bodies in WRONG_TYPES.items() for b in bodies])
def test_a_200_with_wrongly_typed_fields_is_a_malformed_response(runner, write, vendor_name: str, body) -> None:
    vendor = FakeVendor().reply(200, body)
    result = run(runner, write, diagram_text(vendor_name, request="hi"), vendor.services(vendor_name))
    assert result.status == "failed"
    error = result.errors[0]
    assert error["type"] == "provider_malformed_response" and error["block"] == "ask", error
    assert "cannot read" in error["message"]


def test_a_transport_given_after_a_client_is_pooled_is_used(runner, write) -> None:
    first, second = FakeVendor().reply(200, GROQ_REPLY), FakeVendor().reply(200, GROQ_REPLY)
    services = first.services("groq")
    diagram = load_diagram(write(diagram_text("groq", request="hi")), runner.registry)

    async def twice() -> None:  # one event loop, so the pooled client would be reused
        await execute(diagram, runs_dir=runner.runs_dir, services=services)
        services.transports["groq"] = second.services("groq").transports["groq"]
        await execute(diagram, runs_dir=runner.runs_dir, services=services)

    asyncio.run(twice())
    assert len(first.seen) == 1 and len(second.seen) == 1


@pytest.mark.parametrize("vendor_name", list(BLOCKS))
def test_reply_observers_hear_each_reply_with_the_block_id(runner, write, vendor_name: str) -> None:
    vendor = FakeVendor().reply(200, REPLIES[vendor_name])
    services = vendor.services(vendor_name)
    heard: list[tuple[str, dict]] = []
    services.reply_observers.append(lambda block, reply: heard.append((block, reply)))
    assert run(runner, write, diagram_text(vendor_name, request="hi"), services).status == "succeeded"
    assert heard == [("ask", {"text": "Order 42 has shipped with DHL.", "calls": []})]


def test_a_templated_temperature_on_a_fixed_temperature_model_fails_before_sending(runner, write) -> None:
    vendor = FakeVendor().reply(200, ANTHROPIC_REPLY)
    text = diagram_text("anthropic", request="hi", extra='temperature: "{{ tools | length / 4 }}"')
    result = run(runner, write, text, vendor.services("anthropic"))
    assert result.status == "failed" and not vendor.seen
    error = result.errors[0]
    assert error["type"] == "invalid_input" and "with.temperature" in error["message"]
    assert "claude-sonnet-4-6" in error["message"]


def test_below_detailed_no_http_exchange_is_traced_but_retries_are(runner, write) -> None:
    vendor = FakeVendor().reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0"}).reply(200, GROQ_REPLY)
    text = diagram_text("groq", request="hi").replace("message_level: Detailed", "message_level: Debug")
    result = run(runner, write, text, vendor.services("groq"))
    assert result.status == "succeeded"
    kinds = [e["event"] for e in runner.events(result)]
    assert "http_request" not in kinds and "http_response" not in kinds
    assert kinds.count("provider_retried") == 1
