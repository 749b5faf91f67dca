"""The offline vendors: they accept what our adapters build and reject what vendors reject."""

from __future__ import annotations

import asyncio
import copy

import httpx
import orjson
import pytest

from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.format.tables import HistoryRow
from engine.providers import Anthropic, Gemini, Groq, Request, Simulator, ToolSpec
from tests.blocks.vendors import ORDER_TOOL

ADAPTERS = {"anthropic": Anthropic(), "groq": Groq(), "gemini": Gemini()}
ROWS = [
    HistoryRow("user", "Where are my orders 42 and 57?"),
    HistoryRow("assistant", '{"order_id": 42}', "c1", "get_order_status"),
    HistoryRow("assistant", '{"order_id": 57}', "c2", "get_order_status"),
    HistoryRow("tool", '{"status": "shipped"}', "c1", "get_order_status"),
    HistoryRow("tool", '{"error": "unknown order"}', "c2", "get_order_status"),
]
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "llama-3.3-70b-versatile", "gemini": "gemini-3.5-flash"}


def post(simulator: Simulator, vendor: str, path: str, headers: dict, body) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=simulator.transport(vendor), base_url="http://sim") as client:
            return await client.post(path, content=orjson.dumps(body), headers=headers)

    return asyncio.run(go())


def built(vendor: str, **changes):
    request = Request(MODELS[vendor], "Be brief.", ROWS,
                      [ToolSpec(ORDER_TOOL["name"], ORDER_TOOL["description"], ORDER_TOOL["parameters"])],
                      **changes)
    return ADAPTERS[vendor].build(request, "key-123")


@pytest.mark.parametrize("vendor", list(ADAPTERS))
def test_what_our_adapters_build_is_accepted(vendor: str) -> None:
    call = built(vendor)
    response = post(Simulator(), vendor, call.path, call.headers, call.body)
    assert response.status_code == 200, response.text
    reply = ADAPTERS[vendor].parse(response.json())
    assert "shipped" in reply.text  # the made-up answer reads the tool results


def _order_id(body: dict) -> dict:
    return body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["order_id"]


REJECTS = [
    ("anthropic", lambda b, h: h.pop("anthropic-version"), 400, "invalid_request_error"),
    ("anthropic", lambda b, h: h.pop("x-api-key"), 401, "authentication_error"),
    ("anthropic", lambda b, h: b.update(temperature=0.5), 400, "invalid_request_error"),  # on 2026-10-21
    ("anthropic", lambda b, h: b.pop("max_tokens"), 400, "invalid_request_error"),
    ("anthropic", lambda b, h: b["messages"].pop(2), 400, "invalid_request_error"),  # tool_use without result
    ("anthropic", lambda b, h: b["tools"][0].update(name="bad name!"), 400, "invalid_request_error"),
    ("groq", lambda b, h: h.pop("authorization"), 401, "invalid_api_key"),
    ("groq", lambda b, h: b.update(temperature=2.5), 400, "invalid_request_error"),
    ("groq", lambda b, h: b["messages"][2]["tool_calls"][0]["function"].update(arguments={"order_id": 42}), 400,
     "invalid_request_error"),
    ("groq", lambda b, h: b["messages"].pop(3), 400, "invalid_request_error"),
    ("gemini", lambda b, h: h.pop("x-goog-api-key"), 403, "PERMISSION_DENIED"),
    ("gemini", lambda b, h: b["generationConfig"].update(foo=1), 400, "INVALID_ARGUMENT"),
    ("gemini", lambda b, h: b["tools"][0]["functionDeclarations"][0]["parameters"].update(additionalProperties=False),
     400, "INVALID_ARGUMENT"),
    # Gemini's Schema: enum values are strings, on a STRING only; a STRING's format is enum or date-time
    ("gemini", lambda b, h: _order_id(b).update(enum=["42", "57"]), 400, "INVALID_ARGUMENT"),  # on INTEGER
    ("gemini", lambda b, h: _order_id(b).update(type="STRING", enum=[True]), 400, "INVALID_ARGUMENT"),
    ("gemini", lambda b, h: _order_id(b).update(type="STRING", format="email"), 400, "INVALID_ARGUMENT"),
    ("gemini", lambda b, h: b["contents"][2]["parts"].pop(), 400, "INVALID_ARGUMENT"),
    ("gemini", lambda b, h: b["contents"][1]["parts"][0].pop("thoughtSignature"), 400, "INVALID_ARGUMENT"),
    ("gemini", lambda b, h: b["contents"][0].update(role="assistant"), 400, "INVALID_ARGUMENT"),
]


@pytest.mark.parametrize(("vendor", "spoil", "status", "kind"), REJECTS)
def test_malformed_requests_get_the_vendors_error(vendor: str, spoil, status: int, kind: str) -> None:
    call = built(vendor, temperature=0.3) if vendor != "anthropic" else built(vendor)
    body, headers = copy.deepcopy(call.body), dict(call.headers)
    spoil(body, headers)
    response = post(Simulator(), vendor, call.path, headers, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert kind in (error.get("type"), error.get("code"), error.get("status"))


def test_unknown_path_is_404() -> None:
    assert post(Simulator(), "gemini", "/v2/models/x:generateContent", {"x-goog-api-key": "k"}, {}).status_code == 404


def test_a_fixed_temperature_claude_model_is_refused_offline_too() -> None:
    call = built("anthropic", temperature=0.5)
    body = {**call.body, "model": "claude-opus-4-7"}
    response = post(Simulator(), "anthropic", call.path, call.headers, body)
    assert response.status_code == 400 and "deprecated" in response.json()["error"]["message"]


SCRIPTED = """
    diagram: d
    blocks:
      - id: start
        type: Start
        next: ask
      - id: ask
        type: {block}
        with: {{model: {model}, request: "Where is my order 42?", tools: {tools}}}
        set: {{calls: "{{{{ called_tools }}}}", answer: "{{{{ result }}}}"}}
"""


@pytest.mark.parametrize(("vendor", "block"), [("anthropic", "ClaudeRequest"), ("groq", "GroqChatRequest"),
                                                ("gemini", "GeminiRequest")])
def test_offline_made_up_reply_calls_the_matching_tool(runner, write, vendor: str, block: str) -> None:
    tools = orjson.dumps([ORDER_TOOL, {"name": "cancel_subscription", "description": "Cancels a newsletter subscription",
                                       "parameters": {"type": "object", "properties": {}}}]).decode()
    diagram = load_diagram(write(SCRIPTED.format(block=block, model=MODELS[vendor], tools=tools)), runner.registry)
    result = asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=Services(environ={}, offline=True)))
    assert result.status == "succeeded", result.errors
    assert [(c["name"], c["arguments"]) for c in result.variables["calls"]] == [("get_order_status", {"order_id": 42})]


def test_scripted_replies_errors_and_exhaustion(runner, write) -> None:
    diagram = load_diagram(write(SCRIPTED.format(block="GroqChatRequest", model="m", tools="[]")), runner.registry)
    simulator = Simulator({"ask": [{"error": {"status": 429, "retry_after": 0}}, {"text": "Enviado ontem."}]})

    async def no_sleep(_: float) -> None:
        return None

    services = Services(environ={}, offline=True, sleep=no_sleep, simulator=simulator)
    result = asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=services))
    assert result.variables["answer"] == "Enviado ontem."
    assert [r.status for r in simulator.requests] == [429, 200]
    again = asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=services))
    assert again.status == "failed" and simulator.exhausted == ["ask"]
    assert "no scripted reply left for block 'ask'" in again.errors[0]["message"]


def test_offline_runs_reuse_one_transport_and_one_pooled_client(runner, write) -> None:
    diagram = load_diagram(write(SCRIPTED.format(block="GroqChatRequest", model="m", tools="[]")), runner.registry)
    simulator = Simulator()
    services = Services(environ={}, offline=True, simulator=simulator)
    assert simulator.transport("groq") is simulator.transport("groq")

    async def twice() -> None:
        for _ in range(2):
            assert (await execute(diagram, runs_dir=runner.runs_dir, services=services)).succeeded

    asyncio.run(twice())
    assert len(simulator.requests) == 2 and len(services.http_clients) == 1


def test_the_simulator_follows_the_adapters_list_of_fixed_temperature_models() -> None:
    from engine.providers.anthropic import FIXED_TEMPERATURE_FAMILIES

    for family in FIXED_TEMPERATURE_FAMILIES:
        call = built("anthropic", temperature=0.5)
        response = post(Simulator(), "anthropic", call.path, call.headers, {**call.body, "model": f"{family}-x"})
        assert response.status_code == 400, family
    call = built("anthropic", temperature=0.5)
    assert post(Simulator(), "anthropic", call.path, call.headers, {**call.body, "model": "claude-sonnet-4-6"}).status_code == 200


def test_the_lifespan_is_answered_so_an_asgi_server_starts_and_stops() -> None:
    async def lifespan() -> list[str]:
        incoming = asyncio.Queue()
        for kind in ("lifespan.startup", "lifespan.shutdown"):
            incoming.put_nowait({"type": kind})
        sent: list[str] = []

        async def send(message) -> None:
            sent.append(message["type"])

        await asyncio.wait_for(Simulator().app("groq")({"type": "lifespan"}, incoming.get, send), 2)
        return sent

    assert asyncio.run(lifespan()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_gemini_takes_snake_case_field_names_as_googles_parser_does() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "Where is my order 42?"}]}],
            "system_instruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"function_declarations": [{"name": "get_order_status", "description": "Order status",
                                                  "parameters_json_schema": ORDER_TOOL["parameters"]}]}],
            "generation_config": {"max_output_tokens": 100, "thinking_config": {"thinking_budget": 512}}}
    response = post(Simulator(), "gemini", "/v1/models/gemini-3.5-flash:generateContent", {"x-goog-api-key": "k"}, body)
    assert response.status_code == 200, response.text
    call = response.json()["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call == {"name": "get_order_status", "args": {"order_id": 42}}  # made up from parametersJsonSchema
    body["generation_config"]["not_a_field"] = 1
    refused = post(Simulator(), "gemini", "/v1/models/gemini-3.5-flash:generateContent", {"x-goog-api-key": "k"}, body)
    assert refused.status_code == 400 and "notAField" in refused.json()["error"]["message"]


def test_a_made_up_gemini_call_reads_parameters_json_schema() -> None:
    call = built("gemini")
    body = copy.deepcopy(call.body)
    body["contents"] = [{"role": "user", "parts": [{"text": "Where is my order 57?"}]}]
    declaration = body["tools"][0]["functionDeclarations"][0]
    declaration["parametersJsonSchema"] = ORDER_TOOL["parameters"]
    del declaration["parameters"]
    response = post(Simulator(), "gemini", call.path, call.headers, body)
    assert response.json()["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] == {"order_id": 57}


ERROR_TYPES = [
    ("anthropic", 429, "rate_limit_error"), ("anthropic", 500, "api_error"), ("anthropic", 529, "overloaded_error"),
    ("anthropic", 504, "timeout_error"), ("groq", 429, "tokens"), ("groq", 500, "internal_server_error"),
    ("groq", 503, "service_unavailable"), ("gemini", 429, "RESOURCE_EXHAUSTED"), ("gemini", 503, "UNAVAILABLE"),
]


@pytest.mark.parametrize(("vendor", "status", "kind"), ERROR_TYPES)
def test_a_scripted_error_carries_the_vendors_own_type_for_its_status(vendor: str, status: int, kind: str) -> None:
    call = built(vendor)
    simulator = Simulator({"b": [{"error": {"status": status}}]})
    response = post(simulator, vendor, call.path, {**call.headers, "x-diagrama-block": "b"}, call.body)
    error = response.json()["error"]
    assert response.status_code == status and kind in (error.get("type"), error.get("status"))
    if (vendor, status) == ("groq", 429):
        assert error["code"] == "rate_limit_exceeded"


def test_our_groq_adapter_reads_a_simulated_429_as_a_rate_limit(runner, write) -> None:
    diagram = load_diagram(write(SCRIPTED.format(block="GroqChatRequest", model="m", tools="[]")), runner.registry)
    simulator = Simulator({"ask": [{"error": {"status": 429, "retry_after": 0}} for _ in range(5)]})

    async def no_sleep(_: float) -> None:
        return None

    result = asyncio.run(execute(diagram, runs_dir=runner.runs_dir,
                                 services=Services(environ={}, offline=True, sleep=no_sleep, simulator=simulator)))
    assert "429 rate_limit_exceeded" in result.errors[0]["message"]


THINKING_REJECTS = [
    ("anthropic", lambda b: b.update(thinking={"type": "enabled", "budget_tokens": 2048}, max_tokens=4096)),  # 4.7 on
    ("anthropic", lambda b: b.update(model="claude-haiku-4-5", thinking={"type": "adaptive"})),
    ("anthropic", lambda b: b.update(model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 512})),
    ("groq", lambda b: b.update(reasoning_effort="high")),  # llama takes none
    ("groq", lambda b: b.update(model="qwen/qwen3-32b", reasoning_effort="high")),
    ("gemini", lambda b: b["generationConfig"].update(thinkingConfig={"thinkingBudget": 1024})),
]


@pytest.mark.parametrize(("vendor", "spoil"), THINKING_REJECTS)
def test_a_thinking_setting_the_model_does_not_take_is_a_400(vendor: str, spoil) -> None:
    call = built(vendor, temperature=0.3) if vendor != "anthropic" else built(vendor)
    body = copy.deepcopy(call.body)
    spoil(body)
    path = call.path.replace("gemini-3.5-flash", "gemini-2.0-flash")
    assert post(Simulator(), vendor, path, call.headers, body).status_code == 400


OUTCOMES = [  # (script, {vendor: the block's finish, or the error type it fails with})
    ({"finish": "refused"}, {"anthropic": "provider_refused", "groq": "provider_refused", "gemini": "provider_refused"}),
    ({"finish": "refused", "refusal": "I can't help with that."},
     {"anthropic": "provider_refused", "groq": "provider_refused", "gemini": "provider_refused"}),
    ({"blocked": "SAFETY"}, {"anthropic": "provider_refused", "groq": "provider_refused", "gemini": "provider_blocked"}),
    ({"finish": "max_tokens", "text": "cut o"}, {"anthropic": "max_tokens", "groq": "max_tokens", "gemini": "max_tokens"}),
    ({"finish": "max_tokens", "tool_calls": [{"name": "get_order_status", "arguments": {"order_id": 42}}]},
     {"anthropic": "output_truncated", "groq": "output_truncated", "gemini": "output_truncated"}),
    ({"finish": "paused"}, {"anthropic": "paused", "groq": "complete", "gemini": "complete"}),
    ({"finish": "context_exceeded", "text": "so far"},
     {"anthropic": "context_exceeded", "groq": "provider_error", "gemini": "provider_error"}),
    ({"finish": "refused", "text": "Here is a partial"}, {"anthropic": "refused", "groq": "refused", "gemini": "refused"}),
    ({"text": "Thought it through.", "thinking": "Hmm."}, {"anthropic": "complete", "groq": "complete", "gemini": "complete"}),
]
SCRIPTED_OUTCOME = """
    diagram: d
    blocks:
      - id: start
        type: Start
        next: ask
      - id: ask
        type: {block}
        with: {{model: {model}, request: "Where is my order 42?"}}
        set: {{finish: "{{{{ finish }}}}", usage: "{{{{ usage }}}}", refusal: "{{{{ refusal }}}}"}}
"""


@pytest.mark.parametrize(("script", "expected"), OUTCOMES)
@pytest.mark.parametrize(("vendor", "block"), [("anthropic", "ClaudeRequest"), ("groq", "GroqChatRequest"),
                                                ("gemini", "GeminiRequest")])
def test_scripted_outcomes_come_out_as_each_vendors_wire_format_says(runner, write, vendor, block, script, expected):
    diagram = load_diagram(write(SCRIPTED_OUTCOME.format(block=block, model=MODELS[vendor])), runner.registry)
    simulator = Simulator({"ask": [copy.deepcopy(script)]})
    result = asyncio.run(execute(diagram, runs_dir=runner.runs_dir,
                                 services=Services(environ={}, offline=True, simulator=simulator)))
    wanted = expected[vendor]
    if wanted not in ("complete", "max_tokens", "paused", "context_exceeded", "refused"):
        assert result.status == "failed" and result.errors[0]["type"] == wanted, result.errors
        if script.get("refusal") and wanted == "provider_refused":
            assert script["refusal"] in result.errors[0]["message"]
        return
    assert result.status == "succeeded", result.errors
    assert result.variables["finish"] == wanted
    if script.get("thinking") and vendor != "anthropic":
        assert result.variables["usage"]["thinking_tokens"] >= 1


def test_an_outcome_error_follows_the_error_level_like_any_other(runner, write) -> None:
    from engine.errors import OutputTruncated, ProviderBlocked, ProviderError, ProviderRefused

    assert all(issubclass(kind, ProviderError) for kind in (ProviderRefused, ProviderBlocked, OutputTruncated))
    text = SCRIPTED_OUTCOME.format(block="GeminiRequest", model="gemini-3.5-flash").replace(
        "type: GeminiRequest", "type: GeminiRequest\n        error_level: Ignore")
    diagram = load_diagram(write(text), runner.registry)
    simulator = Simulator({"ask": [{"blocked": "SAFETY"}]})
    result = asyncio.run(execute(diagram, runs_dir=runner.runs_dir,
                                 services=Services(environ={}, offline=True, simulator=simulator)))
    assert result.status == "succeeded" and result.errors[0]["type"] == "provider_blocked"
