"""The simulator never answers past the request's token limit: a made-up answer over it is cut as the vendor cuts it.

Anthropic `max_tokens`, Groq `max_completion_tokens` (or the deprecated `max_tokens`), Gemini
`generationConfig.maxOutputTokens`: the text is cut at the simulator's 4 characters a token, the usage is the
limit, the stop reason the vendor's own, and the stream says the same. A scripted reply is told as written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import httpx
import orjson
import pytest

from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.format.tables import HistoryRow
from engine.providers import Request, Simulator
from tests.blocks.vendors import ORDER_TOOL
from tests.vendors.streams_helpers import ADAPTERS, streamed_reply

MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "openai/gpt-oss-120b", "gemini": "gemini-3.5-flash"}
BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
STOPS = {"anthropic": "max_tokens", "groq": "length", "gemini": "MAX_TOKENS"}
SAID = "Where is my order 42? It was meant to arrive on Monday and nothing has come yet."
VENDORS = list(MODELS)


def post(simulator: Simulator, vendor: str, call) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=simulator.transport(vendor), base_url="http://sim") as client:
            return await client.post(call.path, content=orjson.dumps(call.body), headers=call.headers)

    return asyncio.run(go())


def asked(vendor: str, max_tokens: int | None, **changes):
    request = Request(MODELS[vendor], None, [HistoryRow("user", SAID)], max_tokens=max_tokens, **changes)
    return ADAPTERS[vendor].build(request, "key-123")


def stop_reason(vendor: str, body: dict) -> str:
    if vendor == "anthropic":
        return body["stop_reason"]
    if vendor == "groq":
        return body["choices"][0]["finish_reason"]
    return body["candidates"][0]["finishReason"]


def echo(vendor: str, said: str = SAID) -> str:
    return f"(simulated {MODELS[vendor]}) You said: {said}"


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_made_up_answer_over_the_limit_is_cut_at_it_with_the_vendors_stop_reason(vendor: str) -> None:
    call = asked(vendor, 7)
    response = post(Simulator(), vendor, call)
    assert response.status_code == 200, response.text
    assert stop_reason(vendor, response.json()) == STOPS[vendor]
    reply = ADAPTERS[vendor].parse(response.json())
    assert reply.text == echo(vendor)[:28]  # 7 tokens of 4 characters
    assert reply.output_tokens == 7 and reply.finish == "max_tokens"
    streamed, pieces = streamed_reply(vendor, post(Simulator(), vendor, ADAPTERS[vendor].streamed(call)).content)
    assert "".join(pieces) == streamed.text == reply.text
    assert (streamed.output_tokens, streamed.finish, streamed.stop_reason) == (7, "max_tokens", reply.stop_reason)


def test_groqs_deprecated_max_tokens_is_a_limit_too() -> None:
    call = asked("groq", None)
    body = {**call.body, "max_tokens": 3}
    response = post(Simulator(), "groq", dataclasses.replace(call, body=body))
    assert response.json()["choices"][0] == {"index": 0, "logprobs": None, "finish_reason": "length",
                                             "message": {"role": "assistant", "content": echo("groq")[:12]}}
    assert response.json()["usage"]["completion_tokens"] == 3


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_made_up_answer_within_the_limit_is_unchanged(vendor: str) -> None:
    for limit in (500,) if vendor == "anthropic" else (None, 500):  # Anthropic's max_tokens is required
        response = post(Simulator(), vendor, asked(vendor, limit))
        reply = ADAPTERS[vendor].parse(response.json())
        assert reply.text == echo(vendor) and reply.finish == "complete"
        assert reply.output_tokens == len(echo(vendor)) // 4


def test_anthropics_thinking_counts_within_max_tokens() -> None:
    response = post(Simulator(), "anthropic", asked("anthropic", 10, thinking="adaptive"))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [block["type"] for block in answer["content"]] == ["thinking", "text"]
    thinking = len(answer["content"][0]["thinking"]) // 4
    assert answer["content"][1]["text"] == echo("anthropic")[: (10 - thinking) * 4]
    assert answer["usage"]["output_tokens"] == 10 and answer["stop_reason"] == "max_tokens"


TOOLS_DIAGRAM = """
    diagram: d
    blocks:
      - id: start
        type: Start
        error_level: Handle
        next: ask
      - id: ask
        type: {block}
        with: {{model: {model}, request: "Where is my order 42?", tools: {tools}, max_tokens: {limit}, {extra}}}
        set: {{calls: "{{{{ called_tools }}}}", answer: "{{{{ result }}}}", finish: "{{{{ finish }}}}",
              usage: "{{{{ usage }}}}"}}
        on_error: failed
      - {{id: failed, type: Set, set: {{error_type: "{{{{ error.type }}}}", error_message: "{{{{ error.message }}}}"}}}}
"""


def run_offline(runner, write, vendor: str, limit: int, simulator: Simulator, tools: list | None = None,
                extra: str = "stream: false"):
    text = TOOLS_DIAGRAM.format(block=BLOCKS[vendor], model=MODELS[vendor], tools=json.dumps(tools or []),
                                limit=limit, extra=extra)
    diagram = load_diagram(write(text), runner.registry)
    services = Services(environ={}, offline=True, simulator=simulator)
    return asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=services))


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_made_up_tool_call_that_does_not_fit_is_output_truncated_through_the_block(runner, write, vendor) -> None:
    simulator = Simulator()
    result = run_offline(runner, write, vendor, 5, simulator, [ORDER_TOOL])  # a call is 10 tokens to the simulator
    assert result.variables["error_type"] == "output_truncated", result.variables
    assert "get_order_status" in result.variables["error_message"]
    assert "calls" not in result.variables  # never dispatched
    fits = run_offline(runner, write, vendor, 50, Simulator(), [ORDER_TOOL])
    assert [call["name"] for call in fits.variables["calls"]] == ["get_order_status"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_made_up_structured_answer_that_does_not_fit_is_a_clear_invalid_output(runner, write, vendor) -> None:
    schema = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
              "required": ["steps"], "additionalProperties": False}
    for stream in ("false", "true"):
        result = run_offline(runner, write, vendor, 2, Simulator(),
                             extra=f"stream: {stream}, response_schema: {json.dumps(schema)}")
        assert result.variables["error_type"] == "invalid_output", result.variables
        assert "cut off at the token limit" in result.variables["error_message"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_scripted_reply_is_told_as_written_whatever_the_limit(runner, write, vendor) -> None:
    long = "Your order 42 left our warehouse on Monday and DHL expects to deliver it on Thursday."
    simulator = Simulator({"ask": [{"text": long}, {"text": long, "usage": {"input_tokens": 9, "output_tokens": 99}},
                                   {"usage": {"input_tokens": 9, "output_tokens": 99}}]})
    told = [run_offline(runner, write, vendor, 3, simulator, extra="stream: true") for _ in range(3)]
    assert [result.variables["answer"] for result in told] == [long, long, echo(vendor, "Where is my order 42?")]
    assert [result.variables["finish"] for result in told] == ["complete"] * 3
    assert [result.variables["usage"]["output_tokens"] for result in told] == [len(long) // 4, 99, 99]

