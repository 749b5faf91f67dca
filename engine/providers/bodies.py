"""A response's body read under a cap on its decoded size, however it is encoded.

httpx decodes a content-coding a whole received chunk at a time, so a small gzip bomb — worse, one gzip inside
another (`Content-Encoding: gzip, gzip`), whose ratio is squared — expands to gigabytes in one call, before any cap
can look. Here the raw bytes are read and decoded with a bound on each call's output: the cap holds on decoded bytes
whatever the body claims. One layer at most, of what we accept (identity, gzip, deflate); anything else is refused
(`BodyRefused`), as our requests only offer those (`ACCEPT_ENCODING`).
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import AsyncIterator, Callable

import httpx

__all__ = ["ACCEPT_ENCODING", "BodyRefused", "capped_body", "capped_lines"]

ACCEPT_ENCODING = "gzip, deflate"
"""What our requests offer to decode (httpx would add br and zstd where their packages are installed)."""


class BodyRefused(Exception):
    """A body that cannot be read within our terms: its content-coding (more than one layer, one we do not decode, or
    bytes that do not decode); the message says which."""


class _Inflater:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it), its output bounded per call."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._zlib: zlib._Decompress = zlib.decompressobj(31 if coding in ("gzip", "x-gzip") else zlib.MAX_WBITS)
        self._started = False

    def decode(self, data: bytes, room: int) -> bytes:
        """Up to `room` decoded bytes of `data` and of what earlier calls left unread; the rest waits in the object."""
        try:
            out = self._zlib.decompress(data, room)
        except zlib.error:
            if self.coding == "deflate" and not self._started:  # a raw deflate stream, without zlib's header
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                self._started = True
                return self.decode(data, room)
            raise BodyRefused(f"its {self.coding} encoding does not decode") from None
        self._started = True
        if self._zlib.eof and self._zlib.unused_data and self.coding in ("gzip", "x-gzip"):
            rest = self._zlib.unused_data  # another gzip member follows (concatenated files)
            self._zlib = zlib.decompressobj(31)
            return out + (self.decode(rest, room - len(out)) if room > len(out) else b"")
        return out

    @property
    def pending(self) -> bytes:
        return self._zlib.unconsumed_tail


def _decoder(response: httpx.Response) -> _Inflater | None:
    codings = [part.strip().lower() for part in response.headers.get("content-encoding", "").split(",")]
    codings = [coding for coding in codings if coding and coding != "identity"]
    if len(codings) > 1:
        raise BodyRefused(f"its body has {len(codings)} layers of content-encoding ({', '.join(codings)}); we read one")
    if not codings:
        return None
    if codings[0] not in ("gzip", "x-gzip", "deflate"):
        raise BodyRefused(f"its content-encoding is {codings[0]}, which we did not offer (we accept {ACCEPT_ENCODING})")
    return _Inflater(codings[0])


async def _chunks(response: httpx.Response, limit: int, too_large: Callable[[], Exception]) -> AsyncIterator[bytes]:
    """The body's decoded bytes as they come; `too_large()` is raised once they pass `limit`."""
    if response.is_stream_consumed:  # read when it was made (a stand-in transport's response from bytes): as it is
        content = response.content
        if len(content) > limit:
            raise too_large()
        if content:
            yield content
        return
    decoder = _decoder(response)
    size = 0
    async for raw in response.aiter_raw():
        if decoder is None:
            size += len(raw)
            if size > limit:
                raise too_large()
            yield raw
            continue
        data = raw
        while True:
            out = decoder.decode(data, limit - size + 1)
            size += len(out)
            if size > limit:
                raise too_large()
            if out:
                yield out
            data = decoder.pending
            if not data:
                break


async def capped_body(response: httpx.Response, limit: int, too_large: Callable[[], Exception]) -> bytes:
    """The whole decoded body, at most `limit` bytes (`too_large()` past it, raised as soon as it is passed)."""
    return b"".join([chunk async for chunk in _chunks(response, limit, too_large)])


async def capped_lines(response: httpx.Response, limit: int, too_large: Callable[[], Exception]) -> AsyncIterator[str]:
    """The decoded body's lines (a stream's events) as text in its charset, without their ends: split at CRLF, LF or
    CR, as Server-Sent Events are (a CR at a chunk's end waits: an LF may follow in the next)."""
    text = codecs.getincrementaldecoder(response.charset_encoding or "utf-8")("replace")
    buffer = ""
    async for chunk in _chunks(response, limit, too_large):
        buffer += text.decode(chunk)
        start = 0
        for end in _EOL.finditer(buffer):
            if end.group() == "\r" and end.end() == len(buffer):
                break
            yield buffer[start:end.start()]
            start = end.end()
        buffer = buffer[start:]
    buffer += text.decode(b"", final=True)
    lines = _EOL.split(buffer)
    if lines and lines[-1] == "":
        lines.pop()  # the body ended with a line's end: no line after it
    for line in lines:
        yield line


_EOL = re.compile(r"\r\n|\n|\r")
