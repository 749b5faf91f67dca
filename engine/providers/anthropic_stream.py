"""Anthropic's streamed Messages reply, assembled into the Message the non-streaming call answers.

The events (docs/VENDORS.md, Anthropic; the SDK's `accumulate_event` does the same): `message_start`
carries the message with empty content; `content_block_start` opens a block at its index;
`content_block_delta` grows it (`text_delta`, `input_json_delta` — the tool input's JSON text in
pieces, read when the block stops — `citations_delta`, `thinking_delta`, `signature_delta`);
`message_delta` sets `stop_reason`, `stop_sequence`, `stop_details` and the usage (cumulative
totals: they replace, and a count it leaves out keeps `message_start`'s); `message_stop` ends it;
`ping` means nothing; `error` is the vendor stopping the stream.
"""

from __future__ import annotations

from typing import Any

import orjson

from engine.errors import WireError
from engine.providers.streaming import StreamBroke, as_object, event_json

__all__ = ["RETRYABLE_TYPES", "AnthropicStream"]

RETRYABLE_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
"""Error types an `error` event may carry that a new request may not meet (the statuses retried: 429, 5xx, 408)."""
_CUT_OFF = ("max_tokens", "model_context_window_exceeded")


class AnthropicStream:
    __slots__ = ("_inputs", "_message", "done")

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._inputs: dict[int, str] = {}
        """A tool-use block's input JSON text so far, by block index."""
        self.done = False

    def feed(self, event: str, data: str) -> str | None:
        value = event_json(data)
        if not isinstance(value, dict):
            raise WireError(f"a stream event that is not an object: {data[:80]!r}")
        kind = value.get("type") or event
        if kind == "ping":
            return None
        if kind == "error":
            error = as_object(value.get("error"))
            vendor_type = str(error.get("type") or "error")
            raise StreamBroke(vendor_type, str(error.get("message") or ""), retryable=vendor_type in RETRYABLE_TYPES)
        if kind == "message_start":
            message = value.get("message")
            if not isinstance(message, dict):
                raise WireError("message_start without its message")
            self._message = {**message, "content": list(message.get("content") or [])}
            return None
        message = self._message
        if message is None:
            raise WireError(f"{kind} before message_start")
        if kind == "content_block_start":
            block = value.get("content_block")
            if not isinstance(block, dict):
                raise WireError("content_block_start without its content_block")
            message["content"].append(dict(block))
        elif kind == "content_block_delta":
            return self._delta(self._block(value), value.get("delta"), int(value.get("index") or 0))
        elif kind == "content_block_stop":
            self._stop(int(value.get("index") or 0))
        elif kind == "message_delta":
            self._message_delta(message, value)
        elif kind == "message_stop":
            self.done = True
        return None

    def _block(self, value: dict[str, Any]) -> dict[str, Any]:
        assert self._message is not None  # feed checked it
        index = value.get("index")
        content = self._message["content"]
        if not isinstance(index, int) or not 0 <= index < len(content):
            raise WireError(f"a content_block_delta for block {index!r}, which was not started")
        block: dict[str, Any] = content[index]
        return block

    def _delta(self, block: dict[str, Any], delta: Any, index: int) -> str | None:
        if not isinstance(delta, dict):
            raise WireError("a content_block_delta without its delta")
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            block["text"] = str(block.get("text") or "") + text
            return text if block.get("type") == "text" else None
        if kind == "input_json_delta":
            self._inputs[index] = self._inputs.get(index, "") + str(delta.get("partial_json") or "")
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        return None

    def _stop(self, index: int) -> None:
        text = self._inputs.pop(index, None)
        if text is None or self._message is None or not 0 <= index < len(self._message["content"]):
            return
        block = self._message["content"][index]
        try:
            block["input"] = orjson.loads(text) if text.strip() else {}
        except orjson.JSONDecodeError:
            # A call cut off by the token limit: the non-streaming reply has what was read of it, and `judge`
            # makes the turn output_truncated; any other stop with broken JSON cannot be read.
            block["input"] = {}
            block["_broken"] = True

    def _message_delta(self, message: dict[str, Any], value: dict[str, Any]) -> None:
        delta = as_object(value.get("delta"))
        for key in ("stop_reason", "stop_sequence", "stop_details", "container"):
            if key in delta:
                message[key] = delta[key]
        usage = value.get("usage")
        if isinstance(usage, dict):
            merged = dict(message.get("usage") or {})
            merged.update({key: count for key, count in usage.items() if count is not None})
            message["usage"] = merged
        if message.get("stop_reason"):
            self.done = True  # message_stop follows; a stream cut just before it has lost nothing

    def body(self) -> dict[str, Any]:
        if self._message is None:
            raise WireError("the stream had no message_start")
        message = dict(self._message)
        content = []
        for block in message["content"]:
            if block.pop("_broken", False) and message.get("stop_reason") not in _CUT_OFF:
                raise WireError(f"the input of '{block.get('name')}' is not JSON")
            content.append(block)
        message["content"] = content
        return message
