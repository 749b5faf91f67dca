"""How a request block's call shows in its run: each attempt's request and response (Detailed, image and document
data left out), its retries, and a streamed answer's pieces as they come."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine import Event, MessageLevel

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio

__all__ = ["Traced", "text_sink"]


def _without_data(value: Any, hidden: dict[str, str]) -> Any:
    """A request body with each image's or document's base64 (`hidden`: data → how it is shown) left out, also
    inside a `data:` URL; the rest as it was."""
    if isinstance(value, str):
        if value in hidden:
            return hidden[value]
        if value.startswith("data:"):
            head, _, data = value.partition(",")
            if data in hidden:
                return f"{head},{hidden[data]}"
        return value
    if isinstance(value, dict):
        return {key: _without_data(item, hidden) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_data(item, hidden) for item in value]
    return value


class Traced:
    """What the providers' request path tells the run, as trace events: attempts (Detailed) and retries."""

    __slots__ = ("context", "hidden")

    def __init__(self, context: RunContext, hidden: dict[str, str] | None = None) -> None:
        self.context = context
        self.hidden = hidden
        """The request's base64 data, and what the trace shows instead: never the data itself."""

    def requested(self, method: str, url: str, headers: dict[str, str], body: Any, attempt: int) -> None:
        if self.hidden:
            body = _without_data(body, self.hidden)
        self.context.emit(Event.HTTP_REQUEST, method=method, url=url, headers=headers, body=body, attempt=attempt)

    def responded(self, status: int, headers: dict[str, str], body: Any, duration_ms: float, attempt: int) -> None:
        self.context.emit(Event.HTTP_RESPONSE, status=status, headers=headers, body=body, duration_ms=duration_ms,
                          attempt=attempt)

    def retried(self, attempt: int, wait_s: float, reason: str) -> None:
        self.context.emit(Event.PROVIDER_RETRIED, attempt=attempt, wait_s=wait_s, reason=reason)


def text_sink(context: RunContext, block: str) -> Callable[[str], None] | None:
    """Where a streamed answer's pieces go: a `text_delta` event each (Debug and above; the trace's console and
    observers, `diagrama api`'s relay among them, hear it as it is recorded) and the run's text observers."""
    observers = context.services.text_observers
    emit = context.message_level >= MessageLevel.DEBUG
    if not emit and not observers:
        return None

    def on_text(piece: str) -> None:
        if emit:
            context.emit(Event.TEXT_DELTA, text=piece)
        for observer in observers:
            observer(block, piece)

    return on_text
