"""Recorded-shape vendor bodies, replayed from a loopback server through the real request path.

Each file in tests/vendors/<vendor>/ is one response body, written from docs/VENDORS.md and the
vendors' documented shapes (the official SDKs' types). Each is answered to a request block over
a real socket, and the run must show the `finish`, outputs and error type listed here.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.providers.wire import signature_vendor
from tests.blocks.vendors import ORDER_TOOL, loopback_server

HERE = Path(__file__).parent
BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "openai/gpt-oss-120b", "gemini": "gemini-3.5-flash"}
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-key-123456", "GROQ_API_KEY": "gsk_testkey123456",
        "GEMINI_API_KEY": "AIzaTestKey1234567890"}
CALL = ["get_order_status"]
CALLS = ["get_order_status", "get_order_status"]

# vendor/fixture → what the run shows. `error`: the error type (the run fails, outputs empty); otherwise the
# outputs: finish, result, called tool names, refusal, stop_details (keys written), citations, usage (keys
# written), and `sealed`: whose parts ride on the turn's history row (None: no signature).
EXPECTED: dict[str, dict[str, Any]] = {
    "anthropic/text": {"finish": "complete", "result": "Order 42 has shipped with DHL.", "stop": "end_turn"},
    "anthropic/parallel_calls": {"finish": "tool_calls", "calls": CALLS, "result": "Let me look both orders up."},
    "anthropic/stop_sequence": {"finish": "complete", "stop": "stop_sequence"},
    "anthropic/max_tokens_text": {"finish": "max_tokens", "result": "Order 42 has shipped with"},
    "anthropic/max_tokens_tool_call": {"error": "output_truncated", "message": "get_order_status"},
    "anthropic/refusal": {"error": "provider_refused", "message": "malware development"},
    "anthropic/refusal_after_text": {"finish": "refused", "result": "Here is an overview of",
                                     "stop_details": {"type": "refusal"}},
    "anthropic/context_exceeded": {"finish": "context_exceeded", "stop": "model_context_window_exceeded"},
    "anthropic/thinking_tool_use": {"finish": "tool_calls", "calls": CALL, "sealed": "anthropic",
                                    "usage": {"thinking_tokens": 150, "output_tokens": 180}},
    "anthropic/redacted_thinking": {"finish": "complete", "result": "Order 42 has shipped.", "sealed": "anthropic"},
    "anthropic/pause_turn": {"finish": "paused", "result": "", "sealed": "anthropic"},
    "anthropic/web_search_citations": {
        "finish": "complete", "result": "I'll check DHL's status page.DHL reports no delays today.", "sealed": "anthropic",
        "citations": [{"text": "All services are operating normally.", "source": "https://www.dhl.com/status"}]},
    "anthropic/document_citations": {
        "finish": "complete", "citations": [{"text": "Returns are accepted within 30 days.", "source": "Return policy"}]},
    "anthropic/wrong_types_thinking": {"error": "provider_malformed_response", "message": "signature"},
    "anthropic/wrong_types_stop_details": {"error": "provider_malformed_response", "message": "stop_details"},
    "groq/text": {"finish": "complete", "result": "Order 42 has shipped with DHL.", "stop": "stop"},
    "groq/parallel_calls": {"finish": "tool_calls", "calls": CALLS},
    "groq/length_text": {"finish": "max_tokens", "result": "Order 42 has shipped with", "stop": "length"},
    "groq/length_tool_call": {"error": "output_truncated"},
    "groq/content_filter": {"error": "provider_refused", "message": "content_filter"},
    "groq/refusal": {"error": "provider_refused", "message": "I'm sorry, I can't help with that request."},
    "groq/reasoning": {"finish": "complete", "sealed": "groq", "usage": {"thinking_tokens": 40}},
    "groq/wrong_types_refusal": {"error": "provider_malformed_response", "message": "refusal"},
    "gemini/text": {"finish": "complete", "result": "Order 42 has shipped with DHL.", "stop": "STOP"},
    "gemini/parallel_calls": {"finish": "tool_calls", "calls": CALLS, "stop": "STOP", "sealed": "gemini",
                              "usage": {"output_tokens": 126, "thinking_tokens": 96}},
    "gemini/max_tokens_text": {"finish": "max_tokens", "result": "Order 42 has shipped with"},
    "gemini/max_tokens_tool_call": {"error": "output_truncated"},
    "gemini/safety": {"error": "provider_refused", "message": "SAFETY"},
    "gemini/recitation_after_text": {"finish": "refused", "result": "It was the best of times, it was"},
    "gemini/prompt_blocked": {"error": "provider_blocked", "message": "SAFETY"},
    "gemini/prompt_blocked_prohibited": {"error": "provider_blocked", "message": "The prompt was blocked."},
    "gemini/malformed_function_call": {"error": "provider_error", "message": "forty two"},
    "gemini/thinking": {"finish": "complete", "sealed": "gemini", "usage": {"thinking_tokens": 212, "output_tokens": 220}},
    "gemini/citations": {"finish": "complete", "citations": [
        {"text": "It was the best of times,", "source": "https://www.gutenberg.org/ebooks/98"}]},
    "gemini/grounding": {"finish": "complete", "citations": [
        {"text": "DHL reports no delays today.", "source": "https://www.dhl.com/status"}]},
    "gemini/wrong_types_finish_message": {"error": "provider_malformed_response", "message": "finishMessage"},
    "gemini/no_candidates": {"error": "provider_malformed_response", "message": "no candidates"},
}
FIXTURES = sorted(f"{path.parent.name}/{path.stem}" for path in HERE.glob("*/*.json")
                  if path.parent.name != "streams")  # streams/: what the SDKs read from streams (test_streams.py)


def diagram_text(vendor: str, base: str, *, outcome_outputs: bool = True) -> str:
    # Without the outcome outputs the diagram reads only what existed before them, so an error
    # expected here is told apart from a plain success, not from a template naming a new output.
    extra = (', finish: "{{ finish }}", refusal: "{{ refusal }}", details: "{{ stop_details }}", '
             'citations: "{{ citations }}"') if outcome_outputs else ""
    return f"""
        diagram: replay
        blocks:
          - id: start
            type: Start
            message_level: Debug
            variables: {{tools: {json.dumps([ORDER_TOOL])}}}
            next: ask
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {MODELS[vendor]}
              request: Where is my order 42?
              tools: "{{{{ tools }}}}"
              base_url: {base}
            set: {{answer: "{{{{ result }}}}", calls: "{{{{ called_tools }}}}", rows: "{{{{ history }}}}",
                   usage: "{{{{ usage }}}}", stop: "{{{{ stop_reason }}}}"{extra}}}
    """


def replay(runner, write, vendor: str, body: bytes, *, outcome_outputs: bool = True):
    async def scenario():
        async with loopback_server(0, body) as base:
            diagram = load_diagram(write(diagram_text(vendor, base, outcome_outputs=outcome_outputs)), runner.registry)
            return await execute(diagram, runs_dir=runner.runs_dir, services=Services(environ=KEYS))

    return asyncio.run(scenario())


def test_every_fixture_has_its_expectation() -> None:
    assert sorted(EXPECTED) == FIXTURES


@pytest.mark.parametrize("fixture", FIXTURES)
def test_a_recorded_body_gives_its_finish_outputs_or_error(runner, write, fixture: str) -> None:
    vendor = fixture.split("/")[0]
    expected = EXPECTED[fixture]
    result = replay(runner, write, vendor, (HERE / f"{fixture}.json").read_bytes(), outcome_outputs="error" not in expected)
    if "error" in expected:
        assert result.status == "failed", result.variables
        error = result.errors[0]
        assert (error["type"], error["block"]) == (expected["error"], "ask"), error
        assert expected.get("message", "") in error["message"], error
        return
    assert result.status == "succeeded", result.errors
    got = result.variables
    assert got["finish"] == expected["finish"]
    for key, output in (("result", "answer"), ("stop", "stop"), ("citations", "citations")):
        if key in expected:
            assert got[output] == expected[key], key
    assert [c["name"] for c in got["calls"]] == expected.get("calls", [])
    assert got["usage"] == {**got["usage"], **expected.get("usage", {})}
    assert (got["details"] or {}) == {**(got["details"] or {}), **expected.get("stop_details", {})}
    turn = [row for row in got["rows"] if row["role"] == "assistant"]
    sealed = {signature_vendor(row.get("signature")) for row in turn} - {None}
    assert sealed == ({expected["sealed"]} if "sealed" in expected else set()), turn


def test_an_anthropic_refusal_keeps_its_category_and_explanation_in_the_error(runner, write) -> None:
    result = replay(runner, write, "anthropic", (HERE / "anthropic/refusal.json").read_bytes(), outcome_outputs=False)
    message = result.errors[0]["message"]
    assert "category: cyber" in message and "This request could enable malware development." in message


def test_a_partial_refusal_outputs_the_vendors_stop_details(runner, write) -> None:
    body = orjson.loads((HERE / "anthropic/refusal_after_text.json").read_bytes())
    body["stop_details"] = {"type": "refusal", "category": "bio", "explanation": "Stopped for safety."}
    result = replay(runner, write, "anthropic", orjson.dumps(body))
    assert result.variables["refusal"] == "Stopped for safety."
    assert result.variables["details"] == {"type": "refusal", "category": "bio", "explanation": "Stopped for safety."}
