"""Streamed replies assembled into exactly the reply the non-streaming call gives.

Two sources of truth: the hand-written streams in tests/vendors/streams/, each with what the vendor's official SDK
read from it (`.sdk.json`, recorded by `python -m tests.vendors.streams.record`); and every recorded non-streaming
body in tests/vendors/<vendor>/, streamed the way the simulator streams it (checked by the official SDKs here too)
and read back: the same Reply as the body itself gives, field for field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from engine.errors import WireError
from engine.providers.simulator.streams import sse_events
from engine.providers.streaming import SseDecoder, StreamBroke
from engine.providers.wire import Reply
from tests.vendors.streams.record import anthropic_view, gemini_view, groq_view
from tests.vendors.streams_helpers import ADAPTERS, assembled, streamed_reply

HERE = Path(__file__).parent
STREAMS = sorted((HERE / "streams").glob("*.sse"))
BODIES = [path for vendor in ADAPTERS for path in sorted((HERE / vendor).glob("*.json"))
          if not path.stem.startswith("wrong_types") and path.stem != "no_candidates"]


def _sealed(reply: Reply) -> Any:
    """The sealed parts as JSON (key order is not part of them)."""
    return orjson.loads(reply.signature) if reply.signature and reply.signature.startswith("{") else reply.signature


def _same(left: Reply, right: Reply) -> None:
    for name in Reply.__dataclass_fields__:
        if name != "signature":
            assert getattr(left, name) == getattr(right, name), name
    assert _sealed(left) == _sealed(right)


@pytest.mark.parametrize("path", STREAMS, ids=lambda path: path.stem)
def test_a_recorded_stream_assembles_what_the_official_sdk_reads_from_it(path: Path) -> None:
    vendor = path.stem.split("_")[0]
    sdk = orjson.loads(path.with_suffix(".sdk.json").read_bytes())
    reply, pieces = streamed_reply(vendor, path.read_bytes())
    if vendor == "anthropic":
        _same(reply, ADAPTERS[vendor].parse(sdk["message"]))
        assert pieces == sdk["text_events"]
        return
    assert pieces == sdk["text_pieces"] and reply.text == "".join(sdk["text_pieces"])
    assert reply.stop_reason == sdk["finish_reason"]
    if vendor == "groq":
        assert [(c.id, c.name, c.arguments) for c in reply.calls] == \
            [(c["id"], c["name"], orjson.loads(c["arguments"])) for c in sdk["tool_calls"]]
        assert (reply.input_tokens, reply.output_tokens) == (sdk["usage"]["prompt_tokens"],
                                                             sdk["usage"]["completion_tokens"])
        assert reply.thinking_tokens == (sdk["usage"].get("completion_tokens_details") or {}).get("reasoning_tokens")
        assert (_sealed(reply) or {}).get("parts", [{}])[0].get("reasoning") == sdk["reasoning"]
    else:
        assert [(c.name, c.arguments) for c in reply.calls] == [(c["name"], c["args"]) for c in sdk["function_calls"]]
        usage = sdk["usage"]
        assert reply.input_tokens == usage["prompt_token_count"]
        assert reply.output_tokens == usage.get("candidates_token_count", 0) + usage.get("thoughts_token_count", 0)
        signed = bool(reply.signature) or any(c.signature for c in reply.calls)
        assert signed == sdk["has_thought_signature"]


def test_the_recorded_streams_cover_each_kind_of_piece() -> None:
    """Text in pieces, tool input and arguments in pieces, reasoning, signatures, citations, usage on the last."""
    text = b"".join(path.read_bytes() for path in STREAMS)
    for needed in (b"input_json_delta", b"thinking_delta", b"signature_delta", b"citations_delta", b"ping",
                   b'"reasoning"', b"x_groq", b"[DONE]", b"thoughtSignature", b'"thought": true', b"functionCall"):
        assert needed in text, needed


@pytest.mark.parametrize("path", BODIES, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_every_recorded_body_streamed_and_read_back_is_the_same_reply(path: Path) -> None:
    vendor = path.parent.name
    body = orjson.loads(path.read_bytes())
    whole = ADAPTERS[vendor].parse(body)
    reply, pieces = streamed_reply(vendor, b"".join(sse_events(vendor, body)))
    _same(reply, whole)
    assert "".join(pieces) == whole.text
    if whole.text:  # other piece sizes: the scripted pieces, one piece
        middle = len(whole.text) // 2
        for cut in ([whole.text[:middle], whole.text[middle:]], [whole.text]):
            again, said = streamed_reply(vendor, b"".join(sse_events(vendor, body, cut)))
            _same(again, whole)
            assert "".join(said) == whole.text  # in `cut`'s pieces where one text part holds it all


@pytest.mark.parametrize("path", [p for p in BODIES if ADAPTERS[p.parent.name].parse(
    orjson.loads(p.read_bytes())).text], ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_a_stream_cut_short_is_never_taken_for_a_whole_reply(path: Path) -> None:
    vendor = path.parent.name
    body = orjson.loads(path.read_bytes())
    for after in (0, 1):
        with pytest.raises(EOFError):
            assembled(vendor, b"".join(sse_events(vendor, body, break_after=after)))


@pytest.mark.parametrize("path", [p for p in BODIES if p.parent.name == "anthropic"], ids=lambda path: path.stem)
def test_anthropics_sdk_accumulates_the_simulators_stream_into_the_same_reply(path: Path) -> None:
    pytest.importorskip("anthropic")
    body = orjson.loads(path.read_bytes())
    sdk = anthropic_view(b"".join(sse_events("anthropic", body)))
    _same(ADAPTERS["anthropic"].parse(sdk["message"]), ADAPTERS["anthropic"].parse(body))


@pytest.mark.parametrize("path", [p for p in BODIES if p.parent.name in ("groq", "gemini")],
                         ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_groqs_and_googles_sdks_read_the_simulators_stream_as_the_body_says(path: Path) -> None:
    vendor = path.parent.name
    pytest.importorskip("groq" if vendor == "groq" else "google.genai")
    body = orjson.loads(path.read_bytes())
    whole = ADAPTERS[vendor].parse(body)
    sdk = (groq_view if vendor == "groq" else gemini_view)(b"".join(sse_events(vendor, body)))
    assert "".join(sdk["text_pieces"]) == whole.text
    assert sdk["finish_reason"] == whole.stop_reason or (whole.finish == "blocked" and sdk["finish_reason"] is None)
    names = [c["name"] for c in sdk["tool_calls" if vendor == "groq" else "function_calls"]]
    assert names == [call.name for call in whole.calls]


@pytest.mark.parametrize(("vendor", "event", "kind", "retryable"), [
    ("anthropic", b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
     "overloaded_error", True),
    ("anthropic", b'event: error\ndata: {"type":"error","error":{"type":"invalid_request_error","message":"no"}}\n\n',
     "invalid_request_error", False),
    ("groq", b'data: {"id":"x","choices":[],"x_groq":{"id":"r","error":"service_unavailable"}}\n\n', "stream_error",
     False),
    ("groq", b'data: {"error":{"message":"over capacity","type":"service_unavailable","code":"capacity_exceeded"}}\n\n',
     "capacity_exceeded", True),
    ("gemini", b'data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}\n\n', "UNAVAILABLE", True),
])
def test_an_error_inside_the_stream_names_the_vendors_type(vendor: str, event: bytes, kind: str,
                                                           retryable: bool) -> None:
    start = sse_events(vendor, orjson.loads((HERE / vendor / "text.json").read_bytes()), break_after=0)
    with pytest.raises(StreamBroke) as broke:
        assembled(vendor, b"".join(start) + event)
    assert broke.value.vendor_type == kind and broke.value.retryable is retryable


@pytest.mark.parametrize("data", [b"data: {not json\n\n", b"data: [1, 2]\n\n"])
def test_an_event_that_cannot_be_read_is_a_wire_error(data: bytes) -> None:
    for vendor in ADAPTERS:
        with pytest.raises(WireError):
            assembled(vendor, data)


def test_sse_framing_comments_multiline_data_and_a_last_event_without_its_blank_line() -> None:
    decoder = SseDecoder()
    lines = [": keep-alive", "event: message_start", "data: {\"a\":", "data: 1}", "", "id: 7", "retry: 10", "",
             "data:no-space"]
    found = [event for line in lines if (event := decoder.line(line)) is not None]
    assert found == [("message_start", '{"a":\n1}')]
    assert decoder.end() == ("", "no-space")


def test_crlf_line_endings_are_read_as_the_vendor_sent_them() -> None:
    body = orjson.loads((HERE / "groq" / "text.json").read_bytes())
    raw = b"".join(sse_events("groq", body)).replace(b"\n", b"\r\n")
    reply, _ = streamed_reply("groq", raw)
    assert reply.text == ADAPTERS["groq"].parse(body).text
