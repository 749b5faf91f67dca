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
