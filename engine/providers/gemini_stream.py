"""Gemini's `streamGenerateContent?alt=sse`, assembled into the GenerateContentResponse the non-streaming call
answers.

Each event is a whole GenerateContentResponse holding the next parts of the one candidate: text in
pieces (a thought signature may come on a later, empty text part), function calls whole. Consecutive
text parts of the same kind (answer or thought) are joined into one, as the non-streaming reply has
them; `finishReason`, `finishMessage`, the safety ratings, grounding and usage come on the last chunk
(a later value replaces an earlier one); citation sources add up. A chunk with a `promptFeedback`
block reason and no candidate is a blocked prompt; an `error` object is Google stopping the stream.
"""

from __future__ import annotations

from typing import Any

from engine.errors import WireError
from engine.providers.streaming import StreamBroke, as_object, event_json

__all__ = ["GeminiStream"]

_RETRYABLE = frozenset({"UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"})
_LAST_WINS = ("finishReason", "finishMessage", "safetyRatings", "groundingMetadata", "urlContextMetadata", "index")


def _signature(part: dict[str, Any]) -> Any:
    return part.get("thoughtSignature") or part.get("thought_signature")


class GeminiStream:
    __slots__ = ("_candidate", "_head", "_parts", "done")

    def __init__(self) -> None:
        self._head: dict[str, Any] = {}
        self._candidate: dict[str, Any] = {}
        self._parts: list[dict[str, Any]] = []
        self.done = False

    def feed(self, event: str, data: str) -> str | None:
        chunk = event_json(data)
        if not isinstance(chunk, dict):
            raise WireError(f"a stream chunk that is not an object: {data[:80]!r}")
        if isinstance(chunk.get("error"), dict):
            error = chunk["error"]
            status = str(error.get("status") or f"http_{error.get('code')}")
            raise StreamBroke(status, str(error.get("message") or ""), retryable=status in _RETRYABLE)
        for key in ("usageMetadata", "promptFeedback", "modelVersion", "responseId"):
            if key in chunk and (key in ("usageMetadata", "promptFeedback") or key not in self._head):
                self._head[key] = chunk[key]
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self.done = True
        candidates = chunk.get("candidates") or []
        if not candidates:
            return None
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise WireError("a stream chunk's candidate is not an object")
        for key in _LAST_WINS:
            if key in candidate:
                self._candidate[key] = candidate[key]
        sources = (candidate.get("citationMetadata") or {}).get("citationSources")
        if sources:
            kept = self._candidate.setdefault("citationMetadata", {"citationSources": []})
            kept["citationSources"] += sources
        if candidate.get("finishReason"):
            self.done = True
        content = as_object(candidate.get("content"))
        if "role" in content:
            self._candidate.setdefault("content", {})["role"] = content["role"]
        pieces = [self._add(part) for part in content.get("parts") or []]
        return "".join(piece for piece in pieces if piece) or None

    def _add(self, part: Any) -> str | None:
        """Add one part (joined to the one before when both are text of the same kind); its answer text."""
        if not isinstance(part, dict):
            raise WireError("a stream chunk's part is not an object")
        part = dict(part)
        last = self._parts[-1] if self._parts else None
        if "text" in part and last is not None and "text" in last and bool(last.get("thought")) == bool(
                part.get("thought")) and not (_signature(last) and _signature(part)):
            last["text"] = str(last["text"]) + str(part["text"] or "")
            if _signature(part):
                last["thoughtSignature"] = _signature(part)
        else:
            self._parts.append(part)
        return str(part["text"]) if "text" in part and not part.get("thought") and part["text"] else None

    def body(self) -> dict[str, Any]:
        response: dict[str, Any] = {}
        if self._candidate or self._parts:
            candidate = dict(self._candidate)
            if self._parts:
                candidate["content"] = {**candidate.get("content", {}), "parts": self._parts}
            response["candidates"] = [candidate]
        response.update(self._head)
        return response
