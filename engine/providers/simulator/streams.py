"""The simulator's streams: a reply's non-streaming body told as the vendor streams it, as Server-Sent Events.

Anthropic's `message_start` … `message_stop` events, Groq's `chat.completion.chunk`s ending in `[DONE]` (the
usage in `x_groq.usage` on the last), Gemini's GenerateContentResponse chunks (`streamGenerateContent?alt=sse`).
The answer's text comes in pieces (a scripted reply's own `pieces`, else a word each), a tool call's arguments
in two; `break_after: N` ends the body after N pieces of text, without the vendor's end (a dropped stream).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["sse_events", "text_pieces"]

_WORD = re.compile(r"\s*\S+\s*|\s+")


def text_pieces(text: str, pieces: list[str] | None = None) -> list[str]:
    """`text` as the stream sends it: the scripted pieces when they make it up, else a word (with its spaces) each."""
    if pieces and "".join(pieces) == text:
        return [piece for piece in pieces if piece]
    return _WORD.findall(text)


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]


def _event(name: str | None, data: Any) -> bytes:
    head = f"event: {name}\n".encode() if name else b""
    return head + b"data: " + (data if isinstance(data, bytes) else orjson.dumps(data)) + b"\n\n"


class _Counted:
    """Pieces of text left before the stream breaks (None: it does not)."""

    def __init__(self, break_after: int | None) -> None:
        self.left = break_after

    def spend(self) -> bool:
        """Whether one more piece of text may be sent."""
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True


class _Broken(Exception):  # a signal within this module: the scripted break was reached
    pass


def sse_events(vendor: str, body: dict[str, Any], pieces: list[str] | None = None,
               break_after: int | None = None) -> list[bytes]:
    """The events of `body` streamed by `vendor`; cut short (no end) after `break_after` pieces of text."""
    made: list[bytes] = []
    counter = _Counted(break_after)
    events = {"anthropic": _anthropic, "groq": _groq}.get(vendor, _gemini)(body, pieces, counter)
    try:
        for event in events:
            made.append(event)
    except _Broken:
        pass
    return made


def _text(counter: _Counted, text: str, pieces: list[str] | None) -> Iterator[str]:
    for piece in text_pieces(text, pieces):
        if not counter.spend():
            raise _Broken
        yield piece


def _anthropic(body: dict[str, Any], pieces: list[str] | None, counter: _Counted) -> Iterator[bytes]:
    usage = dict(body.get("usage") or {})
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None, "stop_details": None,
             "usage": {**usage, "output_tokens": 1}}
    yield _event("message_start", {"type": "message_start", "message": start})
    yield _event("ping", {"type": "ping"})
    for index, block in enumerate(body.get("content") or []):
        kind = block.get("type")
        opened = {"text": {"type": "text", "text": ""},
                  "thinking": {"type": "thinking", "thinking": "", "signature": ""},
                  "tool_use": {**block, "input": {}}, "server_tool_use": {**block, "input": {}}}.get(kind, block)
        yield _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened})
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []]
            for delta in deltas:
                yield _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            deltas = []
            for piece in _text(counter, str(block.get("text") or ""), pieces):
                yield _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "text_delta", "text": piece}})
        elif kind == "thinking":
            deltas += [{"type": "thinking_delta", "thinking": part} for part in _halves(str(block.get("thinking")))]
            deltas.append({"type": "signature_delta", "signature": block.get("signature")})
        elif kind in ("tool_use", "server_tool_use"):
            deltas += [{"type": "input_json_delta", "partial_json": part}
                       for part in _halves(orjson.dumps(block.get("input") or {}).decode())]
        for delta in deltas:
            yield _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    delta = {key: body.get(key) for key in ("stop_reason", "stop_sequence", "stop_details")}
    yield _event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    yield _event("message_stop", {"type": "message_stop"})


def _groq(body: dict[str, Any], pieces: list[str] | None, counter: _Counted) -> Iterator[bytes]:
    head: dict[str, Any] = {key: body[key] for key in ("id", "created", "model", "system_fingerprint") if key in body}
    head["object"] = "chat.completion.chunk"
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    x_groq = dict(body.get("x_groq") or {})

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        return _event(None, {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                  "finish_reason": finish}], **extra})

    yield chunk({"role": "assistant", "content": ""}, x_groq={"id": x_groq.get("id")})
    for part in _halves(str(message.get("reasoning") or "")):
        yield chunk({"reasoning": part})
    for piece in _text(counter, str(message.get("content") or ""), pieces):
        yield chunk({"content": piece})
    if message.get("refusal"):
        yield chunk({"refusal": message["refusal"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        yield chunk({"tool_calls": [{"index": index, "id": call.get("id"), "type": "function",
                                     "function": {"name": function.get("name"), "arguments": ""}}]})
        for part in _halves(str(function.get("arguments") or "")):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, choice.get("finish_reason"), x_groq={**x_groq, "usage": body.get("usage")})
    yield _event(None, b"[DONE]")


def _gemini(body: dict[str, Any], pieces: list[str] | None, counter: _Counted) -> Iterator[bytes]:
    head: dict[str, Any] = {key: body[key] for key in ("modelVersion", "responseId") if key in body}
    candidates = body.get("candidates") or []
    if not candidates:  # a blocked prompt: one chunk says so
        yield _event(None, body)
        return
    candidate = candidates[0]

    def chunk(parts: list[dict[str, Any]]) -> bytes:
        return _event(None, {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], **head})

    for part in (candidate.get("content") or {}).get("parts") or []:
        if "text" not in part or part.get("thought"):
            yield chunk([part])
            continue
        signature = part.get("thoughtSignature")
        said = text_pieces(str(part["text"]), pieces)
        if not said and signature:
            yield chunk([part])
        for number, piece in enumerate(said):
            if not counter.spend():
                raise _Broken
            sent: dict[str, Any] = {"text": piece}
            if signature and number == len(said) - 1:
                sent["thoughtSignature"] = signature
            yield chunk([sent])
    last = {key: value for key, value in candidate.items() if key != "content"}
    final: dict[str, Any] = {"candidates": [last], **head}
    if "usageMetadata" in body:
        final["usageMetadata"] = body["usageMetadata"]
    yield _event(None, final)
