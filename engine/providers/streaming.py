"""A vendor's Server-Sent Events, read into the reply the non-streaming call gives.

Vendor-neutral: the SSE framing (the WHATWG rules a vendor's stream follows: `event:`,
`data:` lines, a blank line ends an event, `:` a comment), the `Assembler` each adapter
makes for one streamed reply (`anthropic_stream`, `groq_stream`, `gemini_stream`), and
`StreamReader`, which feeds one HTTP response's events to it and hands each piece of answer
text to the caller as it comes. What a break means (retried before the first piece,
`stream_interrupted` after it) is decided by the sender (`http`), which counts the pieces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import orjson

from engine.errors import WireError

__all__ = ["Assembler", "SseDecoder", "StreamBroke", "StreamReader", "TextSink", "as_object", "event_json"]

TextSink = Callable[[str], None]
"""on_text(piece): a piece of the answer's text, as the vendor sent it."""


class StreamBroke(Exception):  # a fact about the stream, read by the sender
    """The vendor said, inside the stream, that it stopped (Anthropic's `error` event, Groq's `x_groq.error`, an
    error object in Gemini's stream)."""

    def __init__(self, vendor_type: str, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.vendor_type, self.message, self.retryable = vendor_type, message, retryable


class Assembler(Protocol):
    """One streamed reply, built up event by event into the body the non-streaming call answers."""

    done: bool
    """The vendor's end of the reply was seen (a stop reason, a prompt block, `[DONE]`)."""

    def feed(self, event: str, data: str) -> str | None:
        """Take one event (its name, '' when it has none, and its data); the answer text it adds, if any.
        Raise StreamBroke for an error the vendor sent, WireError for an event that cannot be read."""
        ...

    def body(self) -> dict[str, Any]:
        """The reply as the vendor's non-streaming JSON body (which the adapter's `parse` reads)."""
        ...


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a field a vendor left out or sent as null)."""
    return value if isinstance(value, dict) else {}


def event_json(data: str) -> Any:
    """An event's data as JSON; text that is not JSON is a WireError naming its start."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise WireError(f"a stream event that is not JSON: {data[:80]!r}") from None


class SseDecoder:
    """Lines of `text/event-stream` → (event name, data) pairs, one per dispatched event."""

    __slots__ = ("_data", "_event")

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def line(self, line: str) -> tuple[str, str] | None:
        """Take one line (without its line ending); the event it completes, if it is the blank line after one."""
        if not line:
            if not self._data:
                self._event = ""
                return None
            found = (self._event, "\n".join(self._data))
            self._event, self._data = "", []
            return found
        if line.startswith(":"):
            return None  # a comment (a keep-alive)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None  # `id` and `retry` mean nothing within one response

    def end(self) -> tuple[str, str] | None:
        """The event left when the body ends without its blank line (it is dispatched: its data is whole)."""
        return self.line("")


class StreamReader:
    """Feeds one response's events to an assembler; counts the text pieces handed on (the sender reads `pieces`)."""

    __slots__ = ("assembler", "limit", "on_text", "pieces", "size")

    def __init__(self, assembler: Assembler, on_text: TextSink | None, limit: int) -> None:
        self.assembler, self.on_text, self.limit = assembler, on_text, limit
        self.pieces = 0
        self.size = 0

    async def read(self, lines: AsyncIterator[str], too_large: Callable[[], Exception]) -> dict[str, Any]:
        """The assembled body; raises what the assembler raises, `too_large()` past `limit` characters, and
        EOFError when the body ends before the vendor's end of the reply."""
        decoder = SseDecoder()
        async for line in lines:
            self.size += len(line) + 1
            if self.size > self.limit:
                raise too_large()
            event = decoder.line(line)
            if event is not None:
                self._feed(*event)
        last = decoder.end()
        if last is not None:
            self._feed(*last)
        if not self.assembler.done:
            raise EOFError("the stream ended before the reply did")
        return self.assembler.body()

    def _feed(self, event: str, data: str) -> None:
        piece = self.assembler.feed(event, data)
        if piece:
            self.pieces += 1
            if self.on_text is not None:
                self.on_text(piece)
