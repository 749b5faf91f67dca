"""The simulator under uvicorn's default settings, driven by the vendors' official Python SDKs.

Each vendor's app is served on a loopback port exactly as `uvicorn.Config(app)` leaves it
(lifespan "auto"), and the official client parses every answer: text, two parallel tool
calls, a 429 then a 200, a 400, and each scripted outcome.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import jsonschema
import pytest

from engine.providers import Simulator

pytestmark = pytest.mark.slow  # the official SDKs' own imports and clients: seconds, not milliseconds

uvicorn = pytest.importorskip("uvicorn")

BLOCK = {"x-diagrama-block": "sdk"}
ORDER_TOOL = {"name": "get_order_status", "description": "Returns the status and the carrier of an order.",
              "parameters": {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}}
SCRIPT = [
    {"text": "Order 42 has shipped."},
    {"tool_calls": [{"name": "get_order_status", "arguments": {"order_id": 42}},
                    {"name": "get_order_status", "arguments": {"order_id": 57}}]},
    {"error": {"status": 429, "retry_after": 0.01}},
    {"text": "after the retry"},
    {"error": {"status": 400, "message": "simulated bad request"}},
]
OUTCOMES = [
    {"finish": "refused", "refusal": "I can't help with that."},
    {"blocked": "SAFETY"},
    {"finish": "max_tokens", "text": "a text cut o"},
    {"finish": "paused"},
    {"text": "thought first", "thinking": "Let me think."},
    {"text": "Paris is the capital.", "citations": [{"text": "Paris is the capital", "source": "https://example.com"}]},
]


@pytest.fixture
def serve() -> Iterator:
    servers: list = []

    def start(app) -> str:
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))  # defaults otherwise
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread))
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn never started: the app did not answer lifespan.startup"
            assert thread.is_alive(), "uvicorn stopped while starting"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(10)
        assert not thread.is_alive(), "uvicorn did not shut down: the app did not answer lifespan.shutdown"


def test_anthropic_sdk_parses_every_answer(serve) -> None:
    anthropic = pytest.importorskip("anthropic")
    simulator = Simulator({"sdk": [dict(r) for r in SCRIPT + OUTCOMES]})
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=serve(simulator.app("anthropic")),
                                 default_headers=BLOCK, max_retries=2)
    ask = {"model": "claude-sonnet-5-5", "max_tokens": 256, "messages": [{"role": "user", "content": "Where is 42?"}],
           "tools": [{"name": ORDER_TOOL["name"], "description": ORDER_TOOL["description"],
                      "input_schema": ORDER_TOOL["parameters"]}]}
    assert client.messages.create(**ask).content[0].text == "Order 42 has shipped."
    calls = client.messages.create(**ask)
    assert calls.stop_reason == "tool_use"
    assert [(b.name, b.input) for b in calls.content] == [("get_order_status", {"order_id": 42}),
                                                          ("get_order_status", {"order_id": 57})]
    assert client.messages.create(**ask).content[0].text == "after the retry"
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(**ask)
    assert caught.value.status_code == 400 and caught.value.body["error"]["type"] == "invalid_request_error"
    refused = client.messages.create(**ask)
    assert refused.stop_reason == "refusal" and refused.stop_details.explanation == "I can't help with that."
    assert client.messages.create(**ask).stop_reason == "refusal"  # Anthropic has no prompt block: its refusal
    assert client.messages.create(**ask).stop_reason == "max_tokens"
    paused = client.messages.create(**ask)
    assert paused.stop_reason == "pause_turn" and [b.type for b in paused.content] == ["server_tool_use",
                                                                                        "web_search_tool_result"]
    thought = client.messages.create(**ask)
    assert thought.content[0].type == "thinking" and thought.content[0].signature
    cited = client.messages.create(**ask)
    assert cited.content[0].citations[0].url == "https://example.com"


def test_groq_sdk_parses_every_answer(serve) -> None:
    groq = pytest.importorskip("groq")
    simulator = Simulator({"sdk": [dict(r) for r in SCRIPT + OUTCOMES]})
    client = groq.Groq(api_key="gsk_test", base_url=serve(simulator.app("groq")), default_headers=BLOCK, max_retries=2)
    ask = {"model": "llama-3.3-70b-versatile", "messages": [{"role": "user", "content": "Where is 42?"}],
           "tools": [{"type": "function", "function": ORDER_TOOL}]}
    assert client.chat.completions.create(**ask).choices[0].message.content == "Order 42 has shipped."
    calls = client.chat.completions.create(**ask).choices[0]
    assert calls.finish_reason == "tool_calls"
    assert [(c.function.name, c.function.arguments) for c in calls.message.tool_calls] == [
        ("get_order_status", '{"order_id":42}'), ("get_order_status", '{"order_id":57}')]
    assert client.chat.completions.create(**ask).choices[0].message.content == "after the retry"
    with pytest.raises(groq.BadRequestError) as caught:
        client.chat.completions.create(**ask)
    assert caught.value.status_code == 400 and caught.value.body["error"]["type"] == "invalid_request_error"
    refused = client.chat.completions.create(**ask).choices[0]
    assert refused.message.to_dict()["refusal"] == "I can't help with that."  # OpenAI's field; Groq's SDK keeps it
    assert client.chat.completions.create(**ask).choices[0].finish_reason == "content_filter"
    assert client.chat.completions.create(**ask).choices[0].finish_reason == "length"
    assert client.chat.completions.create(**ask).choices[0].finish_reason == "stop"  # Groq does not pause
    assert client.chat.completions.create(**ask).choices[0].message.reasoning == "Let me think."
    assert client.chat.completions.create(**ask).choices[0].message.content == "Paris is the capital."


def test_groq_sdk_sees_the_real_429_code(serve) -> None:
    groq = pytest.importorskip("groq")
    simulator = Simulator({"sdk": [{"error": {"status": 429, "retry_after": 30}}]})
    client = groq.Groq(api_key="gsk_test", base_url=serve(simulator.app("groq")), default_headers=BLOCK, max_retries=0)
    with pytest.raises(groq.RateLimitError) as caught:
        client.chat.completions.create(model="llama-3.3-70b-versatile", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["error"]["code"] == "rate_limit_exceeded"


def test_gemini_sdk_parses_every_answer_and_its_snake_case_requests_are_taken(serve) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import errors, types

    simulator = Simulator({"sdk": [dict(r) for r in SCRIPT + OUTCOMES]})
    retry = types.HttpRetryOptions(attempts=2, initial_delay=0.01, max_delay=0.05, http_status_codes=[429])
    client = genai.Client(api_key="AIzaTest", http_options=types.HttpOptions(
        base_url=serve(simulator.app("gemini")), headers=BLOCK, retry_options=retry))

    def get_order_status(order_id: int) -> str:
        """Returns the status and the carrier of an order."""
        return "shipped"

    # A Python callable as a tool, and a thinking budget: the SDK sends parameters_json_schema and thinking_budget.
    config = types.GenerateContentConfig(tools=[get_order_status], thinking_config=types.ThinkingConfig(thinking_budget=512),
                                         automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))

    def ask():
        return client.models.generate_content(model="gemini-3.5-flash", contents="Where is 42?", config=config)

    assert ask().text == "Order 42 has shipped."
    calls = ask()
    assert [(c.name, c.args) for c in calls.function_calls] == [("get_order_status", {"order_id": 42}),
                                                                ("get_order_status", {"order_id": 57})]
    assert ask().text == "after the retry"
    with pytest.raises(errors.ClientError) as caught:
        ask()
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
    assert ask().candidates[0].finish_reason == types.FinishReason.SAFETY
    blocked = ask()
    assert not blocked.candidates and blocked.prompt_feedback.block_reason == types.BlockedReason.SAFETY
    assert ask().candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert ask().candidates[0].finish_reason == types.FinishReason.STOP  # Gemini does not pause
    assert ask().usage_metadata.thoughts_token_count
    cited = ask()
    assert cited.candidates[0].citation_metadata.citations[0].uri == "https://example.com"
    assert all(r.status == (429 if i == 2 else 400 if i == 4 else 200) for i, r in enumerate(simulator.requests))


RECEIPT = {"type": "object", "properties": {"merchant": {"type": "string"}, "total": {"type": "number"}},
           "required": ["merchant", "total"], "additionalProperties": False}


@pytest.mark.slow
def test_each_sdk_sends_an_image_with_a_schema_and_reads_a_matching_answer(serve) -> None:
    """Images and a response schema as each official client sends them: the made-up answer, then a scripted one."""
    anthropic, groq, genai = (pytest.importorskip(name) for name in ("anthropic", "groq", "google.genai"))
    from google.genai import types

    from tests.blocks.files import PNG, PNG_BYTES

    scripted = {"merchant": "Padaria Lisboa", "total": 4.5}
    answers = []
    simulator = Simulator({"sdk": [{"match": "second", "output": scripted}] * 3})
    claude = anthropic.Anthropic(api_key="sk-ant-test", base_url=serve(simulator.app("anthropic")),
                                 default_headers=BLOCK, max_retries=0)
    for text in ("first", "second"):
        answers.append(claude.messages.create(
            model="claude-sonnet-5-5", max_tokens=256, output_config={"format": {"type": "json_schema", "schema": RECEIPT}},
            messages=[{"role": "user", "content": [{"type": "text", "text": text}, {"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": PNG}}]}]).content[0].text)
    chat = groq.Groq(api_key="gsk_test", base_url=serve(simulator.app("groq")), default_headers=BLOCK, max_retries=0)
    for text in ("first", "second"):
        answers.append(chat.chat.completions.create(
            model="meta-llama/llama-4-scout-17b-16e-instruct",
            response_format={"type": "json_schema", "json_schema": {"name": "receipt", "schema": RECEIPT}},
            messages=[{"role": "user", "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {
                "url": f"data:image/png;base64,{PNG}"}}]}]).choices[0].message.content)
    gemini = genai.Client(api_key="AIzaTest", http_options=types.HttpOptions(base_url=serve(simulator.app("gemini")),
                                                                            headers=BLOCK))
    for text in ("first", "second"):
        answers.append(gemini.models.generate_content(
            model="gemini-3.5-flash", contents=[types.Part(text=text), types.Part.from_bytes(data=PNG_BYTES,
                                                                                             mime_type="image/png")],
            config=types.GenerateContentConfig(response_mime_type="application/json", response_json_schema=RECEIPT)).text)
    assert [r.status for r in simulator.requests] == [200] * 6
    for made, given in zip(answers[::2], answers[1::2], strict=True):
        jsonschema.validate(json.loads(made), RECEIPT)
        assert json.loads(given) == scripted
