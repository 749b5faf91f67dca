"""The offline vendors check image and document parts and response schemas as the vendors do.

Each request is built by our adapter, then spoiled the way a vendor would refuse it; the
simulator answers with the vendor's status and error body (docs/VENDORS.md lists).
"""

from __future__ import annotations

import base64
import copy
import random

import jsonschema
import pytest

from engine.format.parts import parts_of
from engine.format.tables import HistoryRow
from engine.providers import Anthropic, Gemini, Groq, Request, Simulator
from engine.providers.simulator.shapes import conforming
from tests.blocks.files import GIF, JPEG, PDF, PNG
from tests.engine.test_simulator import post

ADAPTERS = {"anthropic": Anthropic(), "groq": Groq(), "gemini": Gemini()}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "meta-llama/llama-4-scout-17b-16e-instruct",
          "gemini": "gemini-3.5-flash"}
SCHEMA = {"type": "object", "properties": {"merchant": {"type": "string"}, "total": {"type": "number"}},
          "required": ["merchant", "total"], "additionalProperties": False}


def built(vendor: str, parts: list[dict], *, model: str | None = None, schema: dict | None = SCHEMA):
    row = HistoryRow.user(parts_of(parts))
    request = Request(model or MODELS[vendor], "Read receipts.", [row], response_schema=schema)
    return ADAPTERS[vendor].build(request, "key-123")


PHOTO = [{"type": "text", "text": "Read it."}, {"type": "image", "media_type": "image/png", "data": PNG}]


@pytest.mark.parametrize("vendor", list(ADAPTERS))
def test_what_our_adapters_build_is_answered_with_an_object_matching_the_schema(vendor) -> None:
    call = built(vendor, PHOTO + ([{"type": "document", "data": PDF}] if vendor != "groq" else []))
    response = post(Simulator(), vendor, call.path, call.headers, call.body)
    assert response.status_code == 200, response.text
    answer = ADAPTERS[vendor].parse(response.json()).text
    jsonschema.validate(__import__("json").loads(answer), SCHEMA)


def _spoil_data(vendor: str, body: dict, data: str) -> None:
    if vendor == "anthropic":
        body["messages"][0]["content"][1]["source"]["data"] = data
    elif vendor == "groq":
        body["messages"][1]["content"][1]["image_url"]["url"] = f"data:image/png;base64,{data}"
    else:
        body["contents"][0]["parts"][1]["inlineData"]["data"] = data


@pytest.mark.parametrize("vendor", list(ADAPTERS))
@pytest.mark.parametrize("data", ["not base64!", JPEG, GIF])
def test_bytes_that_are_not_the_media_type_or_not_base64_are_refused(vendor, data) -> None:
    call = built(vendor, PHOTO)
    body = copy.deepcopy(call.body)
    _spoil_data(vendor, body, data)
    response = post(Simulator(), vendor, call.path, call.headers, body)
    assert response.status_code == 400, response.text


REJECTS = [
    ("anthropic", lambda b: b["messages"][0]["content"][1]["source"].update(media_type="image/heic"), 400,
     "media_type: Input should be"),
    ("anthropic", lambda b: b.update(model="claude-3-haiku-20240307") or b["messages"][0]["content"].append(
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}), 400,
     "does not support PDF input"),
    ("anthropic", lambda b: b["messages"][0]["content"].append(
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PNG}}), 400,
     "The PDF specified was not valid"),
    ("anthropic", lambda b: b.update(model="claude-3-5-haiku-latest"), 400, "structured outputs are not supported"),
    ("anthropic", lambda b: b["output_config"]["format"]["schema"].pop("additionalProperties"), 400,
     "additionalProperties: false"),
    ("anthropic", lambda b: b["output_config"].update(form="x"), 400, "Extra inputs are not permitted"),
    ("groq", lambda b: b.update(model="llama-3.3-70b-versatile"), 400, "value must be a string"),
    ("groq", lambda b: b["messages"][1]["content"].append({"type": "file", "file": {"file_data": PDF}}), 400,
     "allowed values ['text', 'image_url']"),
    ("groq", lambda b: b["messages"][1]["content"].extend(copy.deepcopy(b["messages"][1]["content"][1:]) * 5), 400,
     "up to 5 images"),
    ("groq", lambda b: b["messages"][1]["content"][1]["image_url"].update(
        url="data:image/png;base64," + base64.b64encode(base64.b64decode(PNG) + bytes(4 * 1024 * 1024)).decode()),
     413, "Request Entity Too Large"),
    ("groq", lambda b: b["response_format"]["json_schema"].update(strict=True), 400, "not supported on"),
    ("groq", lambda b: b.update(model="llama-3.1-8b-instant", messages=[b["messages"][0],
                                                                         {"role": "user", "content": "hi"}]), 400,
     "does not support response format `json_schema`"),
    ("gemini", lambda b: b["contents"][0]["parts"][1]["inlineData"].update(mimeType="image/gif", data=GIF), 400,
     "Unsupported MIME type: image/gif"),
    ("gemini", lambda b: b["contents"][0]["parts"][1]["inlineData"].update(colour="red"), 400, "Unknown name"),
    ("gemini", lambda b: b["generationConfig"].pop("responseMimeType"), 400, "requires response_mime_type"),
    ("gemini", lambda b: b["contents"][0]["parts"].append({"fileData": {"mimeType": "application/pdf",
                                                                        "fileUri": "ftp://x"}}), 400, "file URI"),
]


@pytest.mark.parametrize(("vendor", "spoil", "status", "said"), REJECTS)
def test_the_simulator_refuses_what_the_vendor_refuses(vendor, spoil, status, said) -> None:
    call = built(vendor, PHOTO)
    body = copy.deepcopy(call.body)
    spoil(body)
    response = post(Simulator(), vendor, call.path, call.headers, body)
    assert response.status_code == status, response.text
    assert said in response.text


def test_the_simulator_takes_gemini_parts_in_snake_case_with_url_safe_base64_as_the_sdk_sends_them() -> None:
    call = built("gemini", PHOTO)
    body = copy.deepcopy(call.body)
    raw = base64.b64decode(PNG)
    body["contents"][0]["parts"][1] = {"inline_data": {"mime_type": "image/png",
                                                       "data": base64.urlsafe_b64encode(raw).decode()}}
    assert post(Simulator(), "gemini", call.path, call.headers, body).status_code == 200


@pytest.mark.parametrize("seed", range(20))
def test_made_up_values_match_their_schemas(seed) -> None:
    schemas = [
        {"type": "object", "properties": {
            "code": {"type": "string", "pattern": r"^[A-Z]{3}-\d{4}$"},
            "n": {"type": "integer", "minimum": 5, "maximum": 9, "multipleOf": 2},
            "when": {"type": "string", "format": "date-time"}, "mail": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"}, "kind": {"enum": ["a", "b"]},
            "maybe": {"type": ["string", "null"]}, "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "tags": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3}, "uniqueItems": True,
                     "minItems": 2, "maxItems": 4}},
         "required": ["code", "n", "when"], "additionalProperties": False},
        {"$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string", "minLength": 3, "maxLength": 8},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}},
         "$ref": "#/$defs/node"},
        {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]},
        {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                   {"properties": {"b": {"const": 1}}, "required": ["b"]}]},
    ]
    for schema in schemas:
        made = conforming(schema, random.Random(seed))
        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(made)
