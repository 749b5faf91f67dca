"""Thinking and reasoning_effort inputs (checked per model family at load), the body cap, the retry message."""

from __future__ import annotations

import httpx
import pytest

from engine import DiagramInvalid
from engine.compile.loader import load_diagram
from tests.blocks.test_request_blocks import ANTHROPIC_REPLY, GEMINI_REPLY, GROQ_REPLY, diagram_text, run
from tests.blocks.vendors import FakeVendor

LOAD_ERRORS = [
    ("anthropic", "claude-sonnet-5-5", "thinking: 2048\n              max_tokens: 4096", "only thinking: adaptive"),
    ("anthropic", "claude-haiku-4-5", "thinking: adaptive", "not 'adaptive'"),
    ("anthropic", "claude-sonnet-4-5", "thinking: 512\n              max_tokens: 4096", "at least 1024"),
    ("anthropic", "claude-sonnet-4-5", "thinking: 2048", "less than max_tokens (1024, the default)"),
    ("anthropic", "claude-sonnet-4-6", "thinking: 2048\n              max_tokens: 4096\n              temperature: 0.5",
     "temperature"),
    ("anthropic", "claude-3-5-haiku-latest", "thinking: adaptive", "does not think"),
    ("gemini", "gemini-2.0-flash", "thinking: 1024", "does not think"),
    ("gemini", "gemini-2.5-pro", "thinking: 0", "from 128 to 32768"),
    ("groq", "llama-3.3-70b-versatile", "reasoning_effort: high", "does not take reasoning_effort"),
    ("groq", "qwen/qwen3-32b", "reasoning_effort: low", "takes reasoning_effort none, default"),
]


@pytest.mark.parametrize(("vendor", "model", "extra", "said"), LOAD_ERRORS)
def test_a_thinking_setting_the_model_does_not_take_is_a_load_error(write, registry, vendor, model, extra, said) -> None:
    text = diagram_text(vendor, request="hi", extra=extra)
    for default in ("claude-sonnet-5-5", "llama-3.3-70b-versatile", "gemini-3.5-flash"):
        text = text.replace(f"model: {default}", f"model: {model}")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(text), registry)
    field = "with.reasoning_effort" if vendor == "groq" else "with.thinking"
    assert any(p.field in (field, "with.temperature") and said in p.message for p in caught.value.problems), \
        caught.value.problems


def test_reasoning_effort_is_an_input_groq_alone_takes(write, registry) -> None:
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(diagram_text("anthropic", request="hi", extra="reasoning_effort: high")), registry)
    assert caught.value.problems[0].field == "with.reasoning_effort"


SENT = [
    ("anthropic", "claude-sonnet-4-5", "thinking: 2048\n              max_tokens: 4096", ANTHROPIC_REPLY,
     lambda body: body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 4096),
    ("anthropic", "claude-sonnet-5-5", "thinking: adaptive", ANTHROPIC_REPLY,
     lambda body: body["thinking"] == {"type": "adaptive"}),
    ("gemini", "gemini-2.5-flash", "thinking: 0", GEMINI_REPLY,
     lambda body: body["generationConfig"] == {"thinkingConfig": {"thinkingBudget": 0}}),
    ("gemini", "gemini-3.5-flash", "thinking: adaptive", GEMINI_REPLY,
     lambda body: body["generationConfig"] == {"thinkingConfig": {"thinkingBudget": -1}}),
    ("groq", "openai/gpt-oss-120b", "reasoning_effort: high", GROQ_REPLY, lambda body: body["reasoning_effort"] == "high"),
]


@pytest.mark.parametrize(("vendor", "model", "extra", "reply", "check"), SENT)
def test_thinking_and_reasoning_effort_reach_the_wire(runner, write, vendor, model, extra, reply, check) -> None:
    text = diagram_text(vendor, request="hi", extra=extra)
    for default in ("claude-sonnet-5-5", "llama-3.3-70b-versatile", "gemini-3.5-flash"):
        text = text.replace(f"model: {default}", f"model: {model}")
    fake = FakeVendor().reply(200, reply)
    result = run(runner, write, text, fake.services(vendor))
    assert result.status == "succeeded", result.errors
    assert check(fake.bodies()[0]), fake.bodies()[0]


def test_a_templated_thinking_budget_is_checked_before_sending(runner, write) -> None:
    fake = FakeVendor().reply(200, ANTHROPIC_REPLY)
    result = run(runner, write, diagram_text("anthropic", request="hi", extra='thinking: "{{ 2048 }}"'),
                 fake.services("anthropic"))
    assert result.errors[0]["type"] == "invalid_input" and "with.thinking" in result.errors[0]["message"]
    assert not fake.seen


def test_retries_that_stop_early_say_why_not_timed_out(runner, write) -> None:
    vendor = FakeVendor().reply(429, {"error": {"message": "later", "code": "rate_limit_exceeded"}}, {"retry-after": "30"})
    result = run(runner, write, diagram_text("groq", request="hi", extra="timeout: 8"), vendor.services("groq"))
    message = result.errors[0]["message"]
    assert result.errors[0]["type"] == "block_timeout"
    assert "stopped retrying: the next wait (30 s) would pass the 8 s timeout" in message
    assert "timed out after" not in message and "rate_limit_exceeded" in message


@pytest.mark.parametrize("declared", [True, False])
def test_a_response_body_past_32_mb_is_refused_without_reading_it_all(runner, write, declared: bool) -> None:
    sent: list[int] = []

    async def endless():
        for _ in range(64):  # up to 64 MB if nobody stopped reading
            sent.append(1)
            yield b" " * (1024 * 1024)

    fake = FakeVendor()

    def handler(request):
        fake.seen.append(request)
        headers = {"content-type": "application/json"}
        if declared:
            headers["content-length"] = str(64 * 1024 * 1024)
        return httpx.Response(200, content=endless(), headers=headers)

    services = fake.services("anthropic")
    services.transports["anthropic"] = httpx.MockTransport(handler)
    result = run(runner, write, diagram_text("anthropic", request="hi"), services)
    error = result.errors[0]
    assert error["type"] == "provider_malformed_response" and "larger than 32 MB" in error["message"]
    assert len(sent) <= 34  # stopped at the cap (a declared length past it: before reading at all)
