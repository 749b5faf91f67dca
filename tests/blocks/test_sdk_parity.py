"""Our request JSON equals what each vendor's official Python SDK sends for the same conversation.

The SDKs are test-only dependencies; they talk to a MockTransport that records the body.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json

import httpx
import orjson
import pytest

from engine import execute
from engine.compile.loader import load_diagram
from tests.blocks.test_request_blocks import ANTHROPIC_REPLY, GEMINI_REPLY, GROQ_REPLY, SYSTEM, diagram_text
from tests.blocks.vendors import ORDER_TOOL, PARALLEL_HISTORY, FakeVendor


def _recorder(reply: dict, http=httpx) -> tuple[list, object]:
    """A client of the SDK's own httpx flavour that records each request."""
    seen: list = []

    def handler(request):  # httpx or httpx2 request
        seen.append(request)
        return http.Response(200, json=reply)

    return seen, http.Client(transport=http.MockTransport(handler))


def _sdk_http(module: object):
    """The httpx module an SDK was built on (anthropic's newer releases use httpx2)."""
    base_client = __import__(f"{module.__name__}._base_client", fromlist=["x"])
    return getattr(base_client, "httpx2", None) or getattr(base_client, "httpx", httpx)


def _ours(runner, write, vendor_name: str, text: str, reply: dict) -> httpx.Request:
    vendor = FakeVendor().reply(200, reply)
    result = asyncio.run(execute(load_diagram(write(text), runner.registry), runs_dir=runner.runs_dir,
                                 services=vendor.services(vendor_name)))
    assert result.status == "succeeded", result.errors
    return vendor.seen[0]


def test_anthropic_sdk_sends_the_same_body_path_and_version(runner, write) -> None:
    anthropic = pytest.importorskip("anthropic")
    seen, http_client = _recorder(ANTHROPIC_REPLY, _sdk_http(anthropic))
    client = anthropic.Anthropic(api_key="sk-ant-test-key-123456", base_url="https://api.anthropic.com",
                                 http_client=http_client, max_retries=0)
    client.messages.create(
        model="claude-sonnet-5-5", max_tokens=1024, system=SYSTEM,
        messages=[
            {"role": "user", "content": "Where are my orders 42 and 57?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look both orders up."},
                {"type": "tool_use", "id": "ID1", "name": "get_order_status", "input": {"order_id": 42}},
                {"type": "tool_use", "id": "ID2", "name": "get_order_status", "input": {"order_id": 57}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "ID1", "content": '{"status": "shipped", "carrier": "DHL"}'},
                {"type": "tool_result", "tool_use_id": "ID2", "content": '{"status": "packing", "ships": "2026-12-03"}'}]}],
        tools=[{"name": ORDER_TOOL["name"], "description": ORDER_TOOL["description"],
                "input_schema": ORDER_TOOL["parameters"]}],
    )
    ours = _ours(runner, write, "anthropic", diagram_text("anthropic", history=PARALLEL_HISTORY), ANTHROPIC_REPLY)
    sdk = seen[0]
    assert ours.url.path == sdk.url.path
    assert orjson.loads(ours.content) == json.loads(sdk.content)
    assert ours.headers["anthropic-version"] == sdk.headers["anthropic-version"]


def test_groq_sdk_sends_the_same_body_and_path(runner, write) -> None:
    groq = pytest.importorskip("groq")
    history = [row for row in PARALLEL_HISTORY if row["content"] != "Let me look both orders up."]
    seen, http_client = _recorder(GROQ_REPLY, _sdk_http(groq))
    client = groq.Groq(api_key="gsk_testkey123456", base_url="https://api.groq.com", http_client=http_client,
                       max_retries=0)
    client.chat.completions.create(
        model="llama-3.3-70b-versatile", temperature=0.2, max_completion_tokens=512,
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Where are my orders 42 and 57?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "ID1", "type": "function", "function": {"name": "get_order_status", "arguments": '{"order_id": 42}'}},
                {"id": "ID2", "type": "function", "function": {"name": "get_order_status", "arguments": '{"order_id": 57}'}}]},
            {"role": "tool", "tool_call_id": "ID1", "name": "get_order_status",
             "content": '{"status": "shipped", "carrier": "DHL"}'},
            {"role": "tool", "tool_call_id": "ID2", "name": "get_order_status",
             "content": '{"status": "packing", "ships": "2026-12-03"}'}],
        tools=[{"type": "function", "function": ORDER_TOOL}],
    )
    text = diagram_text("groq", history=history, extra="temperature: 0.2\n              max_tokens: 512")
    ours = _ours(runner, write, "groq", text, GROQ_REPLY)
    assert ours.url.path == seen[0].url.path
    assert orjson.loads(ours.content) == json.loads(seen[0].content)


def test_gemini_sdk_sends_the_same_body_and_path(runner, write) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    signature = "CtwBAdHtim9bT0Yx2mXq7Kc3pQ1s"
    seen, http_client = _recorder(GEMINI_REPLY)
    client = genai.Client(api_key="AIzaTestKey1234567890",
                          http_options=types.HttpOptions(base_url="https://generativelanguage.googleapis.com",
                                                         httpx_client=http_client))
    client.models.generate_content(
        model="gemini-3.5-flash",
        contents=[
            types.Content(role="user", parts=[types.Part(text="Where are my orders 42 and 57?")]),
            types.Content(role="model", parts=[
                types.Part(function_call=types.FunctionCall(name="get_order_status", args={"order_id": 42}),
                           thought_signature=base64.b64decode(signature)),
                types.Part(function_call=types.FunctionCall(name="get_order_status", args={"order_id": 57}))]),
            types.Content(role="user", parts=[
                types.Part(function_response=types.FunctionResponse(
                    name="get_order_status", response={"result": {"status": "shipped", "carrier": "DHL"}})),
                types.Part(function_response=types.FunctionResponse(
                    name="get_order_status", response={"result": {"status": "packing", "ships": "2026-12-03"}}))]),
        ],
        config=types.GenerateContentConfig(
            system_instruction=SYSTEM, temperature=0.2, max_output_tokens=512,
            tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
                name="get_order_status", description=ORDER_TOOL["description"],
                parameters=types.Schema(type="OBJECT", properties={"order_id": types.Schema(type="INTEGER")},
                                        required=["order_id"]))])],
        ),
    )
    history = copy.deepcopy([row for row in PARALLEL_HISTORY if row["content"] != "Let me look both orders up."])
    for row, call_id in zip(history[1:5], ("gemini-R-0", "gemini-R-1", "gemini-R-0", "gemini-R-1"), strict=True):
        row["tool_call_id"] = call_id
    history[1]["signature"] = signature
    text = diagram_text("gemini", history=history, extra="temperature: 0.2\n              max_tokens: 512")
    ours = _ours(runner, write, "gemini", text, GEMINI_REPLY)
    assert ours.url.path == seen[0].url.path
    assert orjson.loads(ours.content) == json.loads(seen[0].content)
