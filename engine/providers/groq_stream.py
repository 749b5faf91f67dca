"""Groq's streamed chat completion, assembled into the `chat.completion` the non-streaming call answers.

Each event is an OpenAI-style `chat.completion.chunk`: `choices[0].delta` carries the next piece of
`content`, `reasoning` or `refusal`, and `tool_calls` by `index` (the id, type and name once, the
arguments' JSON text in pieces); `finish_reason` comes on the last chunk with a choice, and the
usage in `x_groq.usage` (or `usage`, when `stream_options.include_usage` asked for it). `data: [DONE]`
ends the stream; `x_groq.error` (or an `error` object) is Groq stopping it early.
"""

from __future__ import annotations

from typing import Any

from engine.errors import WireError
from engine.providers.streaming import StreamBroke, as_object, event_json

__all__ = ["GroqStream"]

_HEAD = ("id", "created", "model", "system_fingerprint")
_RETRYABLE = ("service_unavailable", "internal_server_error", "capacity_exceeded", "rate_limit_exceeded")


class GroqStream:
    __slots__ = ("_calls", "_finish", "_head", "_parts", "_usage", "_x_groq", "done")

    def __init__(self) -> None:
        self._head: dict[str, Any] = {}
        self._parts: dict[str, str] = {}
        """content, reasoning, refusal: each one's text so far."""
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._x_groq: dict[str, Any] = {}
        self.done = False

    def feed(self, event: str, data: str) -> str | None:
        if data.strip() == "[DONE]":
            self.done = True
            return None
        chunk = event_json(data)
        if not isinstance(chunk, dict):
            raise WireError(f"a stream chunk that is not an object: {data[:80]!r}")
        extra = as_object(chunk.get("x_groq"))
        error = chunk.get("error") or extra.get("error")
        if error:
            detail = error if isinstance(error, dict) else {"message": str(error)}
            kind = str(detail.get("code") or detail.get("type") or "stream_error")
            raise StreamBroke(kind, str(detail.get("message") or ""), retryable=kind in _RETRYABLE)
        for key in _HEAD:
            if key in chunk and key not in self._head:
                self._head[key] = chunk[key]
        self._x_groq.update({key: value for key, value in extra.items() if key != "usage"})
        usage = chunk.get("usage") or extra.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        piece: str | None = None
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # one choice is asked for (n is never sent)
            delta = as_object(choice.get("delta"))
            for key in ("content", "reasoning", "refusal"):
                text = delta.get(key)
                if isinstance(text, str) and text:
                    self._parts[key] = self._parts.get(key, "") + text
                    piece = text if key == "content" else piece
            for call in delta.get("tool_calls") or []:
                self._call(call)
            if choice.get("finish_reason"):
                self._finish = str(choice["finish_reason"])
                self.done = True  # [DONE] follows; a stream cut just before it has lost nothing
        return piece

    def _call(self, call: Any) -> None:
        if not isinstance(call, dict) or not isinstance(call.get("index"), int):
            raise WireError("a tool_calls delta without its index")
        entry = self._calls.setdefault(call["index"], {"id": None, "type": "function",
                                                       "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            entry["id"] = call["id"]
        function = as_object(call.get("function"))
        for key in ("name", "arguments"):
            if isinstance(function.get(key), str):
                entry["function"][key] += function[key]

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self._parts.get("content") or None}
        if self._calls:
            message["tool_calls"] = [self._calls[index] for index in sorted(self._calls)]
        for key in ("reasoning", "refusal"):
            if key in self._parts:
                message[key] = self._parts[key]
        completion: dict[str, Any] = {**self._head, "object": "chat.completion",
                                      "choices": [{"index": 0, "message": message, "finish_reason": self._finish}]}
        if self._usage is not None:
            completion["usage"] = self._usage
        if self._x_groq:
            completion["x_groq"] = self._x_groq
        return completion
