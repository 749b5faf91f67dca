"""`stream` on the three request blocks: the same outputs as without it, each piece of text a `text_delta` event
as it comes, a stream that breaks retried before its first piece and `stream_interrupted` after, and the block's
timeout bounding the whole stream. Vendors are the simulator (streaming in each vendor's format) or fakes at the
wire (httpx transports)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.providers import Simulator
from engine.providers.simulator.streams import sse_events
from engine.runtime.trace import read_events
from tests.blocks.test_request_blocks import ANTHROPIC_REPLY
from tests.blocks.vendors import ORDER_TOOL, FakeVendor

BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "openai/gpt-oss-120b", "gemini": "gemini-3.5-flash"}
VENDORS = list(BLOCKS)
OUTPUTS = ("result", "called_tools", "history", "usage", "stop_reason", "finish", "refusal", "stop_details", "citations",
           "output")
PLAN = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
        "required": ["steps"], "additionalProperties": False}


def diagram(vendor: str, *, stream: Any = True, level: str = "Debug", extra: str = "", timeout: float = 60) -> str:
    said = ", ".join(f"{name}: \"{{{{ {name} }}}}\"" for name in OUTPUTS)
    stream_line = f"stream: {json.dumps(stream)}" if stream is not None else ""
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            error_level: Handle
            message_level: {level}
            next: ask
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {MODELS[vendor]}
              request: Where is order 42?
              timeout: {timeout}
              {stream_line}
              {extra}
            set: {{{said}}}
            on_error: failed
          - {{id: failed, type: Set, set: {{error_type: "{{{{ error.type }}}}", error_message: "{{{{ error.message }}}}"}}}}
    """


async def _no_sleep(_seconds: float) -> None:
    return None


def offline(runner, write, text: str, replies: list[dict[str, Any]] | None = None, **services: Any):
    simulator = Simulator(scripts={"ask": list(replies)} if replies is not None else {})
    chosen = Services(environ={}, offline=True, simulator=simulator, sleep=_no_sleep, **services)
    result = asyncio.run(execute(load_diagram(write(text), runner.registry), runs_dir=runner.runs_dir,
                                 services=chosen))
    return result, simulator


def events(result, name: str) -> list[dict[str, Any]]:
    return [event for event in read_events(result.trace) if event["event"] == name]


REPLIES = {
    "text": [{"text": "Order 42 has shipped with DHL."}],
    "pieces": [{"pieces": ["Order 4", "2 has", " shipped", "."]}],
    "tool calls": [{"text": "Let me look.", "tool_calls": [{"name": "get_order_status", "arguments": {"order_id": 42}},
                                                           {"name": "get_order_status", "arguments": {"order_id": 57}}]}],
    "thinking": [{"text": "Shipped.", "thinking": "The user wants order 42."}],
    "citations": [{"text": "Paris is the capital.", "citations": [{"text": "Paris is the capital", "source": "https://x"}]}],
    "max tokens": [{"text": "Order 42 has", "finish": "max_tokens"}],
    "refused after text": [{"text": "I can tell you that", "finish": "refused", "refusal": "Policy."}],
    "made up": None,
}


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("kind", list(REPLIES))
def test_streaming_and_not_streaming_give_the_same_outputs(runner, write, vendor: str, kind: str) -> None:
    tools = f"tools: [{json.dumps(ORDER_TOOL)}]" if kind == "tool calls" else ""
    plain, _ = offline(runner, write, diagram(vendor, stream=False, extra=tools), REPLIES[kind])
    streamed, simulator = offline(runner, write, diagram(vendor, extra=tools), REPLIES[kind])
    assert plain.status == streamed.status == "succeeded", (plain.errors, streamed.errors)
    assert {name: streamed.variables[name] for name in OUTPUTS} == {name: plain.variables[name] for name in OUTPUTS}
    deltas = events(streamed, "text_delta")
    assert "".join(delta["text"] for delta in deltas) == streamed.variables["result"]
    assert not events(plain, "text_delta")
    sent = simulator.requests[0]
    assert sent.path.endswith(":streamGenerateContent") if vendor == "gemini" else sent.body["stream"] is True


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_streamed_structured_answer_is_parsed_into_output_as_without_streaming(runner, write, vendor: str) -> None:
    schema = f"response_schema: {json.dumps(PLAN)}"
    replies = [{"output": {"steps": ["look up the order", "tell the user"]}}]
    plain, _ = offline(runner, write, diagram(vendor, stream=False, extra=schema), replies)
    streamed, _ = offline(runner, write, diagram(vendor, extra=schema), replies)
    assert streamed.status == "succeeded", streamed.errors
    assert streamed.variables["output"] == plain.variables["output"] == {"steps": ["look up the order", "tell the user"]}
    assert {name: streamed.variables[name] for name in OUTPUTS} == {name: plain.variables[name] for name in OUTPUTS}
    assert len(events(streamed, "text_delta")) > 1  # the JSON text came in pieces


@pytest.mark.parametrize("vendor", VENDORS)
def test_each_piece_is_a_text_delta_event_of_the_block_as_it_came(runner, write, vendor: str) -> None:
    heard: list[tuple[str, str]] = []
    result, _ = offline(runner, write, diagram(vendor), [{"pieces": ["Olá", ", ", "mundo"]}],
                        text_observers=[lambda block, piece: heard.append((block, piece))])
    assert result.status == "succeeded", result.errors
    trace = read_events(result.trace)
    deltas = [e for e in trace if e["event"] == "text_delta"]
    assert [(e["block"], e["block_type"], e["text"]) for e in deltas] == \
        [("ask", BLOCKS[vendor], piece) for piece in ("Olá", ", ", "mundo")]
    assert heard == [("ask", "Olá"), ("ask", ", "), ("ask", "mundo")]
    names = [e["event"] for e in trace]
    assert names.index("text_delta") < names.index("provider_called")  # told as they came, before the block ended


def test_below_debug_there_are_no_text_delta_events_but_text_observers_still_hear_each_piece(runner, write) -> None:
    heard: list[str] = []
    result, _ = offline(runner, write, diagram("anthropic", level="Release"), [{"pieces": ["a", "b"]}],
                        text_observers=[lambda _block, piece: heard.append(piece)])
    assert result.status == "succeeded" and heard == ["a", "b"]
    assert not events(result, "text_delta")


def test_the_run_wide_stream_switch_streams_blocks_that_do_not_say_and_stream_false_opts_out(runner, write) -> None:
    asked, simulator = offline(runner, write, diagram("groq", stream=None), [{"text": "yes"}], stream=True)
    assert asked.status == "succeeded" and simulator.requests[0].body.get("stream") is True
    refused, simulator = offline(runner, write, diagram("groq", stream=False), [{"text": "no"}], stream=True)
    assert refused.status == "succeeded" and "stream" not in simulator.requests[0].body
    default, simulator = offline(runner, write, diagram("groq", stream=None), [{"text": "no"}])
    assert default.status == "succeeded" and "stream" not in simulator.requests[0].body


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_stream_that_breaks_before_its_first_piece_is_retried_like_a_request(runner, write, vendor: str) -> None:
    result, simulator = offline(runner, write, diagram(vendor), [{"text": "lost", "break_after": 0},
                                                                 {"text": "Second time lucky."}])
    assert result.status == "succeeded", result.errors
    assert result.variables["result"] == "Second time lucky."
    retried = events(result, "provider_retried")
    assert len(retried) == 1 and "before its first piece" in retried[0]["reason"]
    assert [e["text"] for e in events(result, "text_delta")] == ["Second ", "time ", "lucky."]
    assert len(simulator.requests) == 2


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_stream_that_breaks_after_a_piece_is_stream_interrupted_under_the_error_level(runner, write,
                                                                                          vendor: str) -> None:
    result, simulator = offline(runner, write, diagram(vendor), [{"pieces": ["one ", "two ", "three"], "break_after": 2},
                                                                 {"text": "never asked for"}])
    assert result.status == "succeeded"  # Handle: the on_error path ran
    assert result.variables["error_type"] == "stream_interrupted"
    assert "after 2 piece(s)" in result.variables["error_message"]
    assert [e["text"] for e in events(result, "text_delta")] == ["one ", "two "]
    assert len(simulator.requests) == 1 and not events(result, "provider_retried")


def test_a_stream_break_after_a_piece_fails_the_run_at_the_default_error_level(runner, write) -> None:
    text = diagram("anthropic").replace("error_level: Handle", "error_level: Default").replace("on_error: failed", "")
    result, _ = offline(runner, write, text, [{"text": "cut short here", "break_after": 1}])
    assert result.status == "failed"
    assert [error["type"] for error in result.errors] == ["stream_interrupted"]


def _sse(vendor: str, body: dict[str, Any], **options: Any) -> bytes:
    return b"".join(sse_events(vendor, body, **options))


def test_an_error_event_before_the_first_piece_is_retried_and_a_429_answer_to_a_stream_too(runner, write) -> None:
    overloaded = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
                  b'"role":"assistant","model":"claude-sonnet-5-5","content":[],"usage":{"input_tokens":1}}}\n\n'
                  b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n')
    vendor = (FakeVendor().reply(200, overloaded).reply(429, {"type": "error", "error": {"type": "rate_limit_error",
                                                                                         "message": "slow down"}})
              .reply(200, _sse("anthropic", ANTHROPIC_REPLY)))
    result = asyncio.run(execute(load_diagram(write(diagram("anthropic")), runner.registry), runs_dir=runner.runs_dir,
                                 services=vendor.services("anthropic")))
    assert result.status == "succeeded", result.errors
    assert result.variables["result"] == "Order 42 has shipped with DHL."
    reasons = [e["reason"] for e in events(result, "provider_retried")]
    assert len(reasons) == 2 and "overloaded_error" in reasons[0] and "429" in reasons[1]
    assert all(orjson.loads(request.content)["stream"] is True for request in vendor.seen)


class _Dropping(httpx.AsyncByteStream):
    """A body that sends `head`, then loses the connection (or hangs, to meet the block's timeout)."""

    def __init__(self, head: bytes, *, hang: bool = False) -> None:
        self.head, self.hang = head, hang

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        if self.hang:
            await asyncio.sleep(3600)
        raise httpx.ReadError("connection reset by peer")


def _dropping_services(head: bytes, *, hang: bool = False) -> Services:
    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Dropping(head, hang=hang))

    return Services(environ={"ANTHROPIC_API_KEY": "sk-ant-test-key-123456"}, sleep=_no_sleep,
                    transports={"anthropic": httpx.MockTransport(handler)})


def test_a_connection_lost_after_a_piece_is_stream_interrupted(runner, write) -> None:
    head = _sse("anthropic", ANTHROPIC_REPLY, break_after=2)
    result = asyncio.run(execute(load_diagram(write(diagram("anthropic")), runner.registry), runs_dir=runner.runs_dir,
                                 services=_dropping_services(head)))
    assert result.variables["error_type"] == "stream_interrupted"
    assert "ReadError" in result.variables["error_message"]
    assert [e["text"] for e in events(result, "text_delta")] == ["Order ", "42 "]


def test_the_blocks_timeout_bounds_the_whole_stream(runner, write) -> None:
    head = _sse("anthropic", ANTHROPIC_REPLY, break_after=1)
    result = asyncio.run(execute(load_diagram(write(diagram("anthropic", timeout=0.2)), runner.registry),
                                 runs_dir=runner.runs_dir, services=_dropping_services(head, hang=True)))
    assert result.variables["error_type"] == "block_timeout"
    assert [e["text"] for e in events(result, "text_delta")] == ["Order "]


def test_a_stream_that_cannot_be_read_is_a_malformed_response_not_a_retry(runner, write) -> None:
    vendor = FakeVendor().reply(200, b"event: message_start\ndata: {oops\n\n")
    result = asyncio.run(execute(load_diagram(write(diagram("anthropic")), runner.registry), runs_dir=runner.runs_dir,
                                 services=vendor.services("anthropic")))
    assert result.variables["error_type"] == "provider_malformed_response"
    assert len(vendor.seen) == 1


def test_the_detailed_trace_shows_the_assembled_reply_and_no_key(runner, write) -> None:
    vendor = FakeVendor().reply(200, _sse("anthropic", ANTHROPIC_REPLY))
    result = asyncio.run(execute(load_diagram(write(diagram("anthropic", level="Detailed")), runner.registry),
                                 runs_dir=runner.runs_dir, services=vendor.services("anthropic")))
    assert result.status == "succeeded", result.errors
    response = events(result, "http_response")[0]
    assert response["body"]["content"] == ANTHROPIC_REPLY["content"]
    assert b"sk-ant-test-key-123456" not in result.trace.read_bytes()
