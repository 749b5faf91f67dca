"""Prompt caching (issue 40, 4): `cache: true` marks the stable prefix with Anthropic's breakpoints, Start's
setting is inherited, the simulator reports a cache write and then reads (Gemini and Groq on their own), and a
cached chat costs less."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest

from engine import Services
from engine.format.tables import HistoryRow
from engine.providers.anthropic import Anthropic
from engine.providers.anthropic_inputs import CACHE_BREAKPOINTS
from engine.providers.simulator import Simulator
from engine.providers.simulator.prompt_cache import PromptCache
from engine.providers.wire import Request, ToolSpec
from tests.blocks.vendors import ORDER_TOOL, FakeVendor

KEY = "sk-ant-test-key-123456"
EPHEMERAL = {"type": "ephemeral"}
# A system text well past Anthropic's 1,024-token minimum, as the simulator counts tokens (4 bytes each).
HANDBOOK = "You are a support agent for an online shop. " + "Orders leave the warehouse on working days. " * 120
ANTHROPIC_REPLY = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "It has shipped."}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1800},
}


def conversation(cache: bool, tools: bool = True) -> Request:
    rows = [HistoryRow("user", "Where is order 42?"), HistoryRow("assistant", "Let me look."),
            HistoryRow("assistant", '{"order_id": 42}', "toolu_1", "get_order_status"),
            HistoryRow("tool", '{"status": "shipped"}', "toolu_1", "get_order_status"),
            HistoryRow("assistant", "It has shipped with DHL."), HistoryRow("user", "And order 57?")]
    specs = [ToolSpec("find_order", "Finds an order.", {"type": "object", "properties": {}}),
             ToolSpec("get_order_status", "Status of an order.", {"type": "object", "properties": {}})] if tools else []
    return Request("claude-sonnet-4-5", HANDBOOK, rows, specs, cache=cache)


def marks(value: Any, where: str = "") -> list[str]:
    """Where each cache_control sits in a request body."""
    found: list[str] = []
    if isinstance(value, dict):
        if "cache_control" in value:
            assert value["cache_control"] == EPHEMERAL
            found.append(where)
        for key, item in value.items():
            found += marks(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += marks(item, f"{where}.{index}")
    return found


def test_breakpoints_on_the_last_tool_the_system_text_and_the_history_before_the_new_turn() -> None:
    body = Anthropic().build(conversation(cache=True), KEY).body
    assert marks(body) == ["system.0", "messages.3.content.0", "tools.1"]
    assert len(marks(body)) <= CACHE_BREAKPOINTS
    assert body["system"] == [{"type": "text", "text": HANDBOOK, "cache_control": EPHEMERAL}]
    assert body["messages"][3] == {"role": "assistant", "content": [
        {"type": "text", "text": "It has shipped with DHL.", "cache_control": EPHEMERAL}]}
    assert body["messages"][-1] == {"role": "user", "content": "And order 57?"}  # the new turn is not marked


def test_after_tool_results_the_calling_turn_is_the_last_one_marked() -> None:
    request = conversation(cache=True, tools=False)
    body = Anthropic().build(Request(request.model, request.system, request.rows[:4], cache=True), KEY).body
    assert marks(body) == ["system.0", "messages.1.content.1"]  # the tool_use block; the results are the new turn
    assert body["messages"][1]["content"][1]["type"] == "tool_use"


def test_a_first_turn_marks_only_the_system_text() -> None:
    body = Anthropic().build(Request("claude-sonnet-4-5", HANDBOOK, [HistoryRow("user", "Hi")], cache=True), KEY).body
    assert marks(body) == ["system.0"]


def test_without_cache_the_body_is_unchanged_byte_for_byte() -> None:
    plain = Anthropic().build(conversation(cache=False), KEY)
    assert marks(plain.body) == []
    assert isinstance(plain.body["system"], str)
    before = orjson.dumps(plain.body)
    Anthropic().build(conversation(cache=True), KEY)  # marking one request leaves nothing behind for another
    assert orjson.dumps(Anthropic().build(conversation(cache=False), KEY).body) == before


def chat_diagram(start_cache: str = "", block_cache: str = "", model: str = "claude-sonnet-4-5",
                 block: str = "ClaudeRequest") -> str:
    return f"""
        diagram: chat
        blocks:
          - id: start
            type: Start
            message_level: Detailed
            {start_cache}
            inputs: {{message: "Where is order 42?"}}
            variables: {{history: [], tools: {json.dumps([ORDER_TOOL])}}}
            next: ask
          - id: ask
            type: {block}
            with:
              model: {model}
              role: {json.dumps(HANDBOOK)}
              history: "{{{{ history }}}}"
              request: "{{{{ message }}}}"
              {block_cache}
            set: {{history: "{{{{ history }}}}", usage: "{{{{ usage }}}}"}}
    """


@pytest.mark.parametrize(("start_cache", "block_cache", "marked"), [
    ("cache: true", "", True),
    ("cache: true", "cache: false", False),
    ("", "cache: true", True),
    ("", "", False),
])
def test_start_cache_is_inherited_and_a_blocks_own_setting_wins(runner, write, start_cache, block_cache,
                                                                 marked) -> None:
    vendor = FakeVendor().reply(200, ANTHROPIC_REPLY)
    result = runner.run(write(chat_diagram(start_cache, block_cache)), services=vendor.services("anthropic"))
    assert result.succeeded, result.errors
    assert bool(marks(vendor.bodies()[0])) is marked
    if marked:  # and the vendor's cache fields are read back into the block's usage
        assert result.variables["usage"] == {"input_tokens": 12 + 1800, "output_tokens": 5, "cache_read_tokens": 1800}


def called(runner, result) -> dict[str, Any]:
    return next(e for e in runner.events(result) if e["event"] == "provider_called")


def chat_turns(runner, write, text: str, turns: int) -> list[dict[str, Any]]:
    """`turns` runs on one set of services (one simulator), each with the last one's history: their provider_called."""
    diagram = runner.load(write(text))
    services = Services(offline=True)
    history: list[Any] = []
    told = []
    for turn in range(turns):
        result = runner.run(diagram, {"message": f"Question {turn}: where is order {40 + turn}?"}, services=services,
                            remembered={"history": history})
        assert result.succeeded, result.errors
        history = result.variables["history"]
        told.append(called(runner, result))
    return told


def test_the_simulator_writes_the_marked_prefix_then_reads_it(runner, write) -> None:
    first, second, third = chat_turns(runner, write, chat_diagram("cache: true"), 3)
    assert first["usage"]["cache_write_tokens"] > 1024 and "cache_read_tokens" not in first["usage"]
    assert second["usage"]["cache_read_tokens"] == first["usage"]["cache_write_tokens"]  # the system text and tools
    assert third["usage"]["cache_read_tokens"] > second["usage"]["cache_read_tokens"]  # and the history before
    assert 0 < third["usage"]["cache_write_tokens"] < first["usage"]["cache_write_tokens"]  # only what is new
    assert third["cost"]["usd"] < first["cost"]["usd"]


def test_a_cached_chat_costs_less_than_the_same_chat_uncached(runner, write) -> None:
    cached = chat_turns(runner, write, chat_diagram("cache: true"), 4)
    plain = chat_turns(runner, write, chat_diagram(), 4)
    assert all("cache_write_tokens" not in told["usage"] and "cache_read_tokens" not in told["usage"] for told in plain)
    assert sum(t["cost"]["usd"] for t in cached) < 0.5 * sum(t["cost"]["usd"] for t in plain)


def test_the_shipped_chat_saves_at_least_half_over_ten_turns() -> None:
    from benchmarks.prompt_cache import DIAGRAM, chat

    text = DIAGRAM.read_text(encoding="utf-8")
    cached = asyncio.run(chat(text, 10))
    plain = asyncio.run(chat(text.replace("    cache: true", "    cache: false", 1), 10))
    assert cached["usd"] <= 0.5 * plain["usd"]


def anthropic_body(marked: int) -> dict[str, Any]:
    tools = [{"name": f"tool_{n}", "input_schema": {"type": "object"}, "cache_control": EPHEMERAL} for n in range(marked)]
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}],
            "tools": tools}


def test_the_simulated_anthropic_refuses_a_fifth_breakpoint_as_anthropic_does() -> None:
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    simulator = Simulator()
    status, _body, _extra = asyncio.run(simulator.answer("anthropic", "/v1/messages", headers,
                                                         orjson.dumps(anthropic_body(4))))
    assert status == 200
    status, body, _extra = asyncio.run(simulator.answer("anthropic", "/v1/messages", headers,
                                                        orjson.dumps(anthropic_body(5))))
    assert status == 400
    assert body["error"]["message"] == "A maximum of 4 blocks with cache_control may be provided. Found 5."


def test_a_prefix_below_the_models_minimum_is_not_cached() -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": [{"type": "text", "text": "Be brief.",
                                                                         "cache_control": EPHEMERAL}],
            "messages": [{"role": "user", "content": "Hi"}]}
    cache = PromptCache()
    assert cache.anthropic(body, 20) == cache.anthropic(body, 20)  # nothing written, nothing read: both empty
    assert cache.anthropic(body, 20).written == 0


def test_the_simulators_cache_is_bounded_and_forgets_after_five_minutes() -> None:
    now = [0.0]
    cache = PromptCache(limit=3, clock=lambda: now[0])
    bodies = [{"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "Hi"}],
               "system": [{"type": "text", "text": f"{n} {HANDBOOK}", "cache_control": EPHEMERAL}]} for n in range(5)]
    for body in bodies:
        assert cache.anthropic(body, 10_000).written > 1024
    assert len(cache._held) == 3
    assert cache.anthropic(bodies[0], 10_000).read == 0  # the oldest went first
    assert cache.anthropic(bodies[4], 10_000).read > 1024
    now[0] += 301
    assert cache.anthropic(bodies[4], 10_000).read == 0  # expired, and written again


@pytest.mark.parametrize(("block", "model", "field"), [
    ("GeminiRequest", "gemini-2.5-flash", "cachedContentTokenCount"),
    ("GroqChatRequest", "openai/gpt-oss-120b", "cached_tokens"),
])
def test_gemini_and_groq_report_a_repeated_prefix_without_marks(runner, write, block, model, field) -> None:
    first, second = chat_turns(runner, write, chat_diagram(block=block, model=model), 2)
    assert "cache_read_tokens" not in first["usage"]
    assert second["usage"]["cache_read_tokens"] > 1024
    assert second["usage"]["input_tokens"] > second["usage"]["cache_read_tokens"]  # counted within the prompt


def test_groq_models_without_prompt_caching_report_no_cached_tokens(runner, write) -> None:
    told = chat_turns(runner, write, chat_diagram(block="GroqChatRequest", model="llama-3.3-70b-versatile"), 2)
    assert all("cache_read_tokens" not in each["usage"] for each in told)


@pytest.mark.parametrize(("vendor_name", "block", "model", "reply"), [
    ("gemini", "GeminiRequest", "gemini-2.5-flash", {
        "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [{"text": "Shipped."}]}}],
        "usageMetadata": {"promptTokenCount": 2266, "cachedContentTokenCount": 2048, "candidatesTokenCount": 4,
                          "totalTokenCount": 2270},
        "modelVersion": "gemini-2.5-flash", "responseId": "r1"}),
    ("groq", "GroqChatRequest", "moonshotai/kimi-k2-instruct-0905", {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1764680402, "model": "moonshotai/kimi-k2-instruct-0905",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "Shipped."}}],
        "usage": {"prompt_tokens": 2266, "completion_tokens": 4, "total_tokens": 2270, "queue_time": 0.01,
                  "prompt_time": 0.02, "completion_time": 0.01, "total_time": 0.04,
                  "prompt_tokens_details": {"cached_tokens": 2048}},
        "system_fingerprint": "fp_1", "x_groq": {"id": "req_1"}}),
])
def test_gemini_and_groq_cache_fields_are_read_into_the_usage(runner, write, vendor_name, block, model, reply) -> None:
    vendor = FakeVendor().reply(200, reply)
    result = runner.run(write(chat_diagram("cache: true", block=block, model=model)),
                        services=vendor.services(vendor_name))
    assert result.succeeded, result.errors
    assert "cache_control" not in vendor.seen[0].content.decode()  # nothing to mark: they cache on their own
    assert called(runner, result)["usage"] == {"input_tokens": 2266, "output_tokens": 4, "cache_read_tokens": 2048}


def test_a_streamed_turn_reports_the_same_cache_use(runner, write) -> None:
    first, second = chat_turns(runner, write, chat_diagram("cache: true", "stream: true"), 2)
    assert first["usage"]["cache_write_tokens"] > 1024
    assert second["usage"]["cache_read_tokens"] == first["usage"]["cache_write_tokens"]
