"""A request block's `fallback` (issue 40, 5): when its own vendor ends in an outcome retries cannot fix, the same
request goes to the next model, in that vendor's wire format. Vendors are fake servers answering recorded bodies
(tests/vendors/, tests/blocks/vendor_errors/) or the simulator, with scripted errors."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from engine import DiagramInvalid, Services, execute
from engine.cli.run import console_printer
from engine.compile.loader import load_diagram
from engine.providers import Simulator, cost_of
from engine.runs.trace_steps import steps
from tests.blocks.files import PDF
from tests.blocks.vendors import ORDER_TOOL, FakeVendor

HERE = Path(__file__).parent
RECORDED = HERE.parent / "vendors"
OVERLOADED = orjson.loads((HERE / "vendor_errors" / "anthropic_overloaded_error.json").read_bytes())
INVALID = orjson.loads((HERE / "vendor_errors" / "anthropic_invalid_request_error.json").read_bytes())
GEMINI_TEXT = orjson.loads((RECORDED / "gemini" / "text.json").read_bytes())
GEMINI_CALLS = orjson.loads((RECORDED / "gemini" / "parallel_calls.json").read_bytes())
ANTHROPIC_TEXT = orjson.loads((RECORDED / "anthropic" / "text.json").read_bytes())
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-key-123456", "GEMINI_API_KEY": "AIzaTestKey1234567890"}
ROLE = "You are a support agent for an online shop."
ATTEMPTS = 5  # a 529 is tried again four times (engine.providers.http's MAX_RETRIES) before it is the call's outcome


def diagram(*, fallback: str = "[{type: GeminiRequest, model: gemini-2.5-flash}]", extra: str = "",
            request: Any = "Where is order 42?", history: str = "[]", block: str = "") -> str:
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            message_level: Detailed
            variables: {{history: {history}}}
            next: ask
          - id: ask
            type: ClaudeRequest
            with:
              model: claude-sonnet-4-5
              role: {ROLE}
              request: {json.dumps(request)}
              history: "{{{{ history }}}}"
              tools: {json.dumps([ORDER_TOOL])}
              {extra}
            fallback: {fallback}
            {block}
            set: {{answer: "{{{{ result }}}}", by: "{{{{ answered_by }}}}", rows: "{{{{ history }}}}",
                   calls: "{{{{ called_tools }}}}"}}
    """


def services(anthropic: FakeVendor, gemini: FakeVendor, environ: dict[str, str] | None = None) -> Services:
    async def no_sleep(seconds: float) -> None:
        anthropic.waits.append(seconds)

    return Services(environ=KEYS if environ is None else environ, sleep=no_sleep,
                    transports={"anthropic": httpx.MockTransport(anthropic.handler),
                                "gemini": httpx.MockTransport(gemini.handler)})


def run(runner, write, text: str, chosen: Services):
    loaded = load_diagram(write(text), runner.registry)
    return asyncio.run(execute(loaded, runs_dir=runner.runs_dir, services=chosen))


def events(runner, result, name: str) -> list[dict[str, Any]]:
    return [event for event in runner.events(result) if event["event"] == name]


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def overloaded() -> FakeVendor:
    vendor = FakeVendor()
    for _ in range(ATTEMPTS):
        vendor.reply(529, OVERLOADED)
    return vendor


def test_claude_overloaded_after_its_retries_is_answered_by_its_gemini_fallback(runner, write) -> None:
    anthropic, gemini = overloaded(), FakeVendor().reply(200, GEMINI_TEXT)
    result = run(runner, write, diagram(), services(anthropic, gemini))
    assert result.status == "succeeded", result.errors
    assert len(anthropic.seen) == ATTEMPTS and len(gemini.seen) == 1
    assert result.variables["answer"] == "Order 42 has shipped with DHL."
    assert result.variables["by"] == "gemini-2.5-flash"
    # The same request, in Gemini's wire format: the role, the user's message, the tools.
    assert str(gemini.seen[0].url).endswith("/models/gemini-2.5-flash:generateContent")
    assert gemini.seen[0].headers["x-goog-api-key"] == KEYS["GEMINI_API_KEY"]
    body = gemini.bodies()[0]
    assert body["systemInstruction"]["parts"] == [{"text": ROLE}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Where is order 42?"}]}]
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "get_order_status"
    # Cost and budget count both attempts: the failed one as a request with no tokens and no cost.
    answered = cost_of("gemini", "gemini-2.5-flash", {"input_tokens": 187, "output_tokens": 30})
    assert answered is not None
    assert result.cost == {"usd": round(answered.usd, 9), "requests": 2, "unknown_steps": 0}
    [switch] = events(runner, result, "provider_fallback")
    assert switch["failed"] == {"type": "ClaudeRequest", "vendor": "anthropic", "model": "claude-sonnet-4-5"}
    assert switch["to"] == {"type": "GeminiRequest", "vendor": "gemini", "model": "gemini-2.5-flash"}
    assert switch["error"]["type"] == "provider_error" and "529 overloaded_error" in switch["error"]["message"]
    [called] = events(runner, result, "provider_called")
    assert called["vendor"] == "gemini" and called["requested_model"] == "claude-sonnet-4-5"
    assert called["answered_by"] == switch["to"]
    shown = [step.model for step in steps(runner.events(result)) if step.block == "ask"]
    assert shown == ["gemini-2.5-flash (fallback for claude-sonnet-4-5)"]  # as diagrama trace and the studio say


def test_the_console_tells_the_switch_and_who_answered(runner, write) -> None:
    anthropic, gemini = overloaded(), FakeVendor().reply(200, GEMINI_TEXT)
    shown = io.StringIO()
    loaded = load_diagram(write(diagram()), runner.registry)
    result = asyncio.run(execute(loaded, runs_dir=runner.runs_dir, services=services(anthropic, gemini),
                                 console=console_printer(shown)))
    assert result.status == "succeeded", result.errors
    lines = shown.getvalue().splitlines()
    assert "    anthropic claude-sonnet-4-5 failed (provider_error): asking gemini gemini-2.5-flash" in lines
    assert any(line.startswith("    gemini-2.5-flash: 187 in / 30 out, STOP, $") and
               line.endswith(" (fallback for claude-sonnet-4-5)") for line in lines), lines


def test_a_fallback_adds_no_request_when_the_first_vendor_answers(runner, write) -> None:
    anthropic, gemini = FakeVendor().reply(200, ANTHROPIC_TEXT), FakeVendor()
    result = run(runner, write, diagram(), services(anthropic, gemini))
    assert result.status == "succeeded", result.errors
    assert len(anthropic.seen) == 1 and gemini.seen == []
    assert result.variables["by"] == "claude-sonnet-4-5" and result.cost["requests"] == 1
    [called] = events(runner, result, "provider_called")
    assert "requested_model" not in called and "answered_by" not in called
    assert not events(runner, result, "provider_fallback")


def test_an_invalid_request_is_not_fallen_back_on(runner, write) -> None:
    anthropic, gemini = FakeVendor().reply(400, INVALID), FakeVendor()
    result = run(runner, write, diagram(), services(anthropic, gemini))
    assert result.status == "failed" and gemini.seen == []
    assert result.errors[0]["type"] == "provider_error" and "invalid_request_error" in result.errors[0]["message"]
    assert not events(runner, result, "provider_fallback")
    assert result.cost["requests"] == 1  # sent, and answered: a request, of no tokens


def test_a_missing_key_of_the_blocks_own_vendor_is_not_fallen_back_on(runner, write) -> None:
    anthropic, gemini = FakeVendor(), FakeVendor()
    result = run(runner, write, diagram(), services(anthropic, gemini, {"GEMINI_API_KEY": KEYS["GEMINI_API_KEY"]}))
    assert result.errors[0]["type"] == "missing_api_key" and anthropic.seen == [] and gemini.seen == []


def test_a_fallback_without_its_key_is_skipped_and_the_next_one_answers(runner, write) -> None:
    anthropic, gemini = overloaded(), FakeVendor().reply(200, GEMINI_TEXT)
    fallback = "[{type: GroqChatRequest, model: llama-3.3-70b-versatile}, {type: GeminiRequest, model: gemini-2.5-flash}]"
    result = run(runner, write, diagram(fallback=fallback), services(anthropic, gemini))
    assert result.status == "succeeded", result.errors
    assert result.variables["by"] == "gemini-2.5-flash"
    [switch] = events(runner, result, "provider_fallback")
    [skipped] = switch["skipped"]
    assert skipped["type"] == "GroqChatRequest" and "GROQ_API_KEY" in skipped["reason"]


def test_budget_exceeded_before_the_fallback_attempt_stops_it(runner, write) -> None:
    anthropic, gemini = overloaded(), FakeVendor()
    result = run(runner, write, diagram(block="budget: {requests: 1}"), services(anthropic, gemini))
    assert result.status == "failed" and gemini.seen == []
    assert result.errors[0]["type"] == "budget_exceeded" and "gemini model gemini-2.5-flash" in result.errors[0]["message"]
    assert len(events(runner, result, "provider_fallback")) == 1


def test_the_timeout_bounds_all_attempts_together(runner, write) -> None:
    # The vendor asks for a wait past the block's timeout: retrying stops with time left, which the fallback gets.
    anthropic = FakeVendor().reply(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "later"}},
                                   {"retry-after": "60"})
    gemini = FakeVendor().reply(200, GEMINI_TEXT)
    result = run(runner, write, diagram(extra="timeout: 20"), services(anthropic, gemini))
    assert result.status == "succeeded", result.errors
    [switch] = events(runner, result, "provider_fallback")
    assert switch["error"]["type"] == "block_timeout" and "retrying" in switch["error"]["message"]
    assert float(gemini.seen[0].extensions["timeout"]["read"]) < 20


def test_the_history_after_a_gemini_answered_claude_turn_can_be_sent_to_claude_again(runner, write) -> None:
    anthropic, gemini = overloaded(), FakeVendor().reply(200, GEMINI_CALLS)
    first = run(runner, write, diagram(), services(anthropic, gemini))
    assert first.status == "succeeded", first.errors
    table = first.variables["rows"]
    assert "signature" not in table.columns  # Gemini's thought signature is not Claude's to take back
    rows = [dict(row) for row in table]
    calls = first.variables["calls"]
    rows += [{"role": "tool", "content": '{"status": "shipped"}', "tool_call_id": call["id"], "name": call["name"]}
             for call in calls]
    # The next turn to Claude, through the simulator, which checks a request as Anthropic does.
    simulator = Simulator(scripts={"ask": [{"text": "Order 42 has shipped; 57 is being packed."}]})
    text = diagram(request="", history=json.dumps(rows), fallback="[]")
    second = run(runner, write, text, Services(environ={}, offline=True, simulator=simulator))
    assert second.status == "succeeded", second.errors
    [sent] = simulator.requests
    assert sent.vendor == "anthropic" and sent.status == 200
    assistant = sent.body["messages"][1]
    assert [block["type"] for block in assistant["content"]] == ["tool_use", "tool_use"]
    assert [block["id"] for block in assistant["content"]] == [call["id"] for call in calls]
    [called] = events(runner, second, "provider_called")
    assert not any("another vendor" in note for note in called["notes"])


def test_offline_scripted_overload_falls_back_and_drops_thinking_for_groq(runner, write) -> None:
    simulator = Simulator(scripts={"ask": [{"error": {"status": 529}}] * ATTEMPTS + [{"text": "From Groq."}]})
    text = diagram(fallback="[{type: GroqChatRequest, model: llama-3.3-70b-versatile}]",
                   extra="thinking: 2048\n              max_tokens: 4096")

    async def no_sleep(seconds: float) -> None:
        pass

    result = run(runner, write, text, Services(environ={}, offline=True, simulator=simulator, sleep=no_sleep))
    assert result.status == "succeeded", result.errors
    assert result.variables == {**result.variables, "answer": "From Groq.", "by": "llama-3.3-70b-versatile"}
    assert [request.vendor for request in simulator.requests] == ["anthropic"] * ATTEMPTS + ["groq"]
    assert "reasoning_effort" not in simulator.requests[-1].body
    [switch] = events(runner, result, "provider_fallback")
    assert switch["notes"] == ["thinking 2048 dropped: GroqChatRequest does not take it"]
    [called] = events(runner, result, "provider_called")
    assert "thinking 2048 dropped: GroqChatRequest does not take it" in called["notes"]


def test_an_unknown_fallback_type_is_a_load_error_at_its_line(write, registry) -> None:
    path = write(diagram(fallback="\n              - {type: MistralRequest, model: mistral-large}"))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = caught.value.problems
    assert problem.block == "ask" and problem.field == "fallback.0.type"
    assert problem.line == line_of(path, "MistralRequest")
    assert "GeminiRequest" in problem.message


def test_a_fallback_that_cannot_take_a_pdf_is_a_load_error(write, registry) -> None:
    request = [{"type": "text", "text": "Summarise this."},
               {"type": "document", "media_type": "application/pdf", "data": PDF}]
    path = write(diagram(request=request, fallback="\n              - {type: GeminiRequest, model: gemini-2.5-flash}"
                                                   "\n              - {type: GroqChatRequest, model: llama-3.3-70b-versatile}"))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = caught.value.problems
    assert problem.block == "ask" and problem.field == "fallback.1.type"
    assert "GroqChatRequest fallback 'llama-3.3-70b-versatile' cannot take with.request" in problem.message
    assert problem.line == line_of(path, "type: GroqChatRequest")


def test_a_fallback_to_the_blocks_own_model_is_a_load_error(write, registry) -> None:
    path = write(diagram(fallback="[{type: ClaudeRequest, model: claude-sonnet-4-5}]"))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = caught.value.problems
    assert problem.field == "fallback.0.model" and "the block's own model" in problem.message
