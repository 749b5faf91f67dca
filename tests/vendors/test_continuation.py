"""A conversation continues from the `history` output: reasoning and server-tool parts go back unchanged.

Parts ride on the assistant row's `signature` cell; the same vendor gets them back as it gave
them, another vendor does not get them (a Debug note says so), and a paused turn continues
when its history is sent back.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson

from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.providers import Simulator
from tests.blocks.vendors import ORDER_TOOL, FakeVendor

HERE = Path(__file__).parent
BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "openai/gpt-oss-120b", "gemini": "gemini-3.5-flash"}
TEXT_REPLIES = {
    "anthropic": {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Done."}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}},
    "groq": {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}]},
    "gemini": {"candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [{"text": "Done."}]}}]},
}


def fixture(name: str) -> dict[str, Any]:
    return orjson.loads((HERE / f"{name}.json").read_bytes())


def turn(runner, write, vendor: str, history: list[dict[str, Any]], request: str, services: Services,
         extra: str = ""):
    history = [dict(row) for row in history]  # a history output is a DataTable: its rows as mappings
    text = f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            message_level: Debug
            variables: {{history: {json.dumps(history)}, tools: {json.dumps([ORDER_TOOL])}}}
            next: ask
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {MODELS[vendor]}
              request: {json.dumps(request)}
              history: "{{{{ history }}}}"
              tools: "{{{{ tools }}}}"
              {extra}
            set: {{rows: "{{{{ history }}}}", finish: "{{{{ finish }}}}", calls: "{{{{ called_tools }}}}"}}
    """
    diagram = load_diagram(write(text, f"d{len(list(runner.tmp_path.glob('d*.yaml')))}.yaml"), runner.registry)
    return asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=services))


def with_result(rows: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [*rows, {"role": "tool", "content": '{"status": "shipped"}', "tool_call_id": call_id,
                    "name": "get_order_status", "signature": None}]


def test_thinking_goes_back_to_anthropic_unchanged_before_its_tool_use(runner, write) -> None:
    body = fixture("anthropic/thinking_tool_use")
    first = FakeVendor().reply(200, body)
    rows = turn(runner, write, "anthropic", [], "Where is my order 42?", first.services("anthropic")).variables["rows"]
    second = FakeVendor().reply(200, TEXT_REPLIES["anthropic"])
    result = turn(runner, write, "anthropic", with_result(rows, "toolu_01Th1nk"), "", second.services("anthropic"))
    assert result.status == "succeeded", result.errors
    sent = second.bodies()[0]["messages"]
    assert sent[1] == {"role": "assistant", "content": body["content"]}  # thinking first, signature intact
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_01Th1nk"


def test_server_tool_parts_and_their_order_go_back_to_anthropic(runner, write) -> None:
    body = fixture("anthropic/web_search_citations")
    first = FakeVendor().reply(200, body)
    rows = turn(runner, write, "anthropic", [], "Any DHL delays?", first.services("anthropic")).variables["rows"]
    second = FakeVendor().reply(200, TEXT_REPLIES["anthropic"])
    turn(runner, write, "anthropic", rows, "Thanks. And tomorrow?", second.services("anthropic"))
    content = second.bodies()[0]["messages"][1]["content"]
    assert [block["type"] for block in content] == ["text", "server_tool_use", "web_search_tool_result"]
    assert content[1:] == body["content"][1:3]


def test_another_vendor_gets_no_anthropic_parts_and_the_trace_says_so(runner, write) -> None:
    first = FakeVendor().reply(200, fixture("anthropic/thinking_tool_use"))
    rows = turn(runner, write, "anthropic", [], "Where is my order 42?", first.services("anthropic")).variables["rows"]
    for vendor in ("groq", "gemini"):
        other = FakeVendor().reply(200, TEXT_REPLIES[vendor])
        result = turn(runner, write, vendor, with_result(rows, "toolu_01Th1nk"), "", other.services(vendor))
        assert result.status == "succeeded", result.errors
        sent = other.seen[0].content.decode()
        assert "EqQBCgIY" not in sent and "thinking" not in sent
        called = next(e for e in runner.events(result) if e["event"] == "provider_called")
        assert any(f"not sent to {vendor}" in note and "1 from anthropic" in note for note in called["notes"])
    assert json.loads(sent)["contents"][1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"


def test_a_gemini_signature_is_not_sent_to_anthropic(runner, write) -> None:
    first = FakeVendor().reply(200, fixture("gemini/parallel_calls"))
    rows = turn(runner, write, "gemini", [], "Where are 42 and 57?", first.services("gemini")).variables["rows"]
    second = FakeVendor().reply(200, TEXT_REPLIES["anthropic"])
    ids = [r["tool_call_id"] for r in rows if r.get("tool_call_id")]
    history = with_result(with_result(rows, ids[0]), ids[1])
    result = turn(runner, write, "anthropic", history, "", second.services("anthropic"))
    assert result.status == "succeeded", result.errors
    assert "CtwBAdHtim9b" not in second.seen[0].content.decode()


def test_groq_reasoning_goes_back_on_its_assistant_message(runner, write) -> None:
    first = FakeVendor().reply(200, fixture("groq/reasoning"))
    rows = turn(runner, write, "groq", [], "Where is my order 42?", first.services("groq")).variables["rows"]
    second = FakeVendor().reply(200, TEXT_REPLIES["groq"])
    turn(runner, write, "groq", rows, "And 57?", second.services("groq"))
    assistant = second.bodies()[0]["messages"][1]
    assert assistant == {"role": "assistant", "content": "Order 42 has shipped.",
                         "reasoning": "The user asks about order 42. The tool said shipped."}


def test_a_gemini_text_signature_goes_back_on_its_text_part(runner, write) -> None:
    first = FakeVendor().reply(200, fixture("gemini/thinking"))
    rows = turn(runner, write, "gemini", [], "Where is my order 42?", first.services("gemini")).variables["rows"]
    second = FakeVendor().reply(200, TEXT_REPLIES["gemini"])
    turn(runner, write, "gemini", rows, "And 57?", second.services("gemini"))
    assert second.bodies()[0]["contents"][1] == {"role": "model", "parts": [
        {"text": "Order 42 has shipped.", "thoughtSignature": "Cq4CAdHtim8xT2Fz"}]}


def test_a_paused_turn_continues_when_its_history_is_sent_back(runner, write) -> None:
    body = fixture("anthropic/pause_turn")
    first = FakeVendor().reply(200, body)
    paused = turn(runner, write, "anthropic", [], "Any DHL delays?", first.services("anthropic"))
    assert paused.variables["finish"] == "paused"
    rows = paused.variables["rows"]
    assert rows[-1]["role"] == "assistant" and rows[-1]["content"] == ""
    # Sending that history back (no new request) continues the turn: the request ends with the partial turn.
    simulator = Simulator()
    result = turn(runner, write, "anthropic", rows, "", Services(environ={}, offline=True, simulator=simulator))
    assert result.status == "succeeded", result.errors
    sent = simulator.requests[0].body["messages"]
    assert sent[-1] == {"role": "assistant", "content": body["content"]}


def test_offline_thinking_agent_turns_keep_their_thinking(runner, write) -> None:
    simulator = Simulator()
    services = Services(environ={}, offline=True, simulator=simulator)
    extra = "thinking: adaptive"
    first = turn(runner, write, "anthropic", [], "Where is my order 42?", services, extra)
    assert first.status == "succeeded", first.errors
    rows = first.variables["rows"]
    call_id = first.variables["calls"][0]["id"]
    assert simulator.requests[0].body["thinking"] == {"type": "adaptive"}
    second = turn(runner, write, "anthropic", with_result(rows, call_id), "", services, extra)
    assert second.status == "succeeded", second.errors
    # The simulator, like Anthropic, refuses a thinking tool-use turn sent back without its thinking.
    stripped = [{**row, "signature": None} for row in with_result(rows, call_id)]
    third = turn(runner, write, "anthropic", stripped, "", services, extra)
    assert third.status == "failed" and "Expected `thinking`" in third.errors[0]["message"]
