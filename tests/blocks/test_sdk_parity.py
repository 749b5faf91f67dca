"""Our request JSON equals what each vendor's official Python SDK sends for the same conversation.

The SDKs are test-only dependencies; they talk to a MockTransport that records the body. Bodies
are compared as JSON (the same keys and values); Gemini's image and document parts are compared
as Google reads them, since the google-genai SDK writes their fields in snake_case with URL-safe base64.
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
from tests.blocks.files import PDF, PDF_BYTES, PNG, PNG_BYTES
from tests.blocks.test_request_blocks import ANTHROPIC_REPLY, GEMINI_REPLY, GROQ_REPLY, SYSTEM, diagram_text
from tests.blocks.vendors import ORDER_TOOL, PARALLEL_HISTORY, FakeVendor

BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}


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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- response_schema and image / document parts ---------------------------------------------------

RECEIPT = {"type": "object", "properties": {"merchant": {"type": "string"}, "total": {"type": "number"},
                                            "items": {"type": "array", "items": {"type": "string"}}},
           "required": ["merchant", "total", "items"], "additionalProperties": False}
PARTS = [{"type": "text", "text": "Read this receipt and the attached invoice."},
         {"type": "image", "media_type": "image/png", "data": PNG},
         {"type": "image", "media_type": "image/jpeg", "url": "https://example.com/receipt.jpg"},
         {"type": "document", "media_type": "application/pdf", "data": PDF}]


def _structured(vendor: str, model: str, parts: list[dict], extra: str = "") -> str:
    return f"""
        diagram: d
        blocks:
          - {{id: start, type: Start, next: ask}}
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {model}
              role: {SYSTEM}
              request: {json.dumps(parts)}
              response_schema: {json.dumps(RECEIPT)}
              {extra}
    """


@pytest.mark.slow
def test_anthropic_sdk_sends_the_same_parts_and_output_config(runner, write) -> None:
    anthropic = pytest.importorskip("anthropic")
    reply = {**ANTHROPIC_REPLY, "content": [{"type": "text", "text": '{"merchant": "M", "total": 1, "items": []}'}]}
    seen, http_client = _recorder(reply, _sdk_http(anthropic))
    client = anthropic.Anthropic(api_key="sk-ant-test-key-123456", base_url="https://api.anthropic.com",
                                 http_client=http_client, max_retries=0)
    client.messages.create(
        model="claude-sonnet-5-5", max_tokens=1024, system=SYSTEM,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": PARTS[0]["text"]},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/receipt.jpg"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}]}],
        output_config={"format": {"type": "json_schema", "schema": RECEIPT}},
    )
    ours = _ours(runner, write, "anthropic", _structured("anthropic", "claude-sonnet-5-5", PARTS), reply)
    assert ours.url.path == seen[0].url.path
    assert orjson.loads(ours.content) == json.loads(seen[0].content)
    assert ours.headers["anthropic-version"] == seen[0].headers["anthropic-version"]


def test_groq_sdk_sends_the_same_image_parts_and_response_format(runner, write) -> None:
    groq = pytest.importorskip("groq")
    reply = {**GROQ_REPLY, "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": '{"merchant": "M", "total": 1, "items": []}'}}]}
    seen, http_client = _recorder(reply, _sdk_http(groq))
    client = groq.Groq(api_key="gsk_testkey123456", base_url="https://api.groq.com", http_client=http_client,
                       max_retries=0)
    model = "meta-llama/llama-4-scout-17b-16e-instruct"
    client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": SYSTEM},
                  {"role": "user", "content": [
                      {"type": "text", "text": PARTS[0]["text"]},
                      {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                      {"type": "image_url", "image_url": {"url": "https://example.com/receipt.jpg"}}]}],
        response_format={"type": "json_schema", "json_schema": {"name": "response", "schema": RECEIPT}},
    )
    ours = _ours(runner, write, "groq", _structured("groq", model, PARTS[:3]), reply)
    assert ours.url.path == seen[0].url.path
    assert orjson.loads(ours.content) == json.loads(seen[0].content)
    # on a model that takes strict, with a schema that does, `strict: true` as the SDK's own argument sends it
    seen, http_client = _recorder(reply, _sdk_http(groq))
    client = groq.Groq(api_key="gsk_testkey123456", base_url="https://api.groq.com", http_client=http_client,
                       max_retries=0)
    client.chat.completions.create(
        model="openai/gpt-oss-120b", messages=[{"role": "system", "content": SYSTEM},
                                               {"role": "user", "content": PARTS[0]["text"]}],
        response_format={"type": "json_schema", "json_schema": {"name": "response", "schema": RECEIPT, "strict": True}},
    )
    text = _structured("groq", "openai/gpt-oss-120b", PARTS[:1]).replace(json.dumps(PARTS[:1]), json.dumps(PARTS[0]["text"]))
    ours = _ours(runner, write, "groq", text, reply)
    assert orjson.loads(ours.content) == json.loads(seen[0].content)


def _read_as_google_does(body: dict) -> dict:
    """A Gemini body as Google's JSON parser reads it: either field spelling, either base64 alphabet."""
    from engine.providers.simulator.checks import camel_gemini

    body = camel_gemini(body)
    for content in body["contents"]:
        for part in content["parts"]:
            if "inlineData" in part:
                part["inlineData"]["data"] = base64.urlsafe_b64decode(
                    part["inlineData"]["data"].replace("+", "-").replace("/", "_"))
    return body


@pytest.mark.slow
def test_gemini_sdk_sends_the_same_parts_and_response_json_schema(runner, write) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    reply = {**GEMINI_REPLY, "candidates": [{"index": 0, "finishReason": "STOP", "content": {
        "role": "model", "parts": [{"text": '{"merchant": "M", "total": 1, "items": []}'}]}}]}
    seen, http_client = _recorder(reply)
    client = genai.Client(api_key="AIzaTestKey1234567890",
                          http_options=types.HttpOptions(base_url="https://generativelanguage.googleapis.com",
                                                         httpx_client=http_client))
    client.models.generate_content(
        model="gemini-3.5-flash",
        contents=[types.Content(role="user", parts=[
            types.Part(text=PARTS[0]["text"]),
            types.Part(inline_data=types.Blob(mime_type="image/png", data=PNG_BYTES)),
            types.Part(file_data=types.FileData(file_uri="https://example.com/receipt.jpg", mime_type="image/jpeg")),
            types.Part(inline_data=types.Blob(mime_type="application/pdf", data=PDF_BYTES))])],
        config=types.GenerateContentConfig(system_instruction=SYSTEM, response_mime_type="application/json",
                                           response_json_schema=RECEIPT),
    )
    ours = _ours(runner, write, "gemini", _structured("gemini", "gemini-3.5-flash", PARTS), reply)
    assert ours.url.path == seen[0].url.path
    sdk = json.loads(seen[0].content)
    assert '"mime_type"' in json.dumps(sdk)  # the SDK writes the blob's fields in snake_case, URL-safe base64 …
    assert _read_as_google_does(orjson.loads(ours.content)) == _read_as_google_does(sdk)  # … which Google reads alike
