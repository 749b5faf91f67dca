"""Sending one HTTP request as a run makes it: the overall deadline, retries and backoff.

Two callers share the one retry loop: a request block's POST to its vendor (`send`, judged by the
vendor's adapter: only a 2xx with JSON is an answer), and an HttpRequest block's call (`fetch`: any
method, every final status handed back with its raw body, redirects followed on the same host only).
Retries follow docs/VENDORS.md ("Retries"): 408, 409, 429 and 5xx and dropped connections, with
`x-should-retry` deciding first, then `retry-after-ms`, `retry-after` or Gemini's `retryDelay` as the
wait, else exponential backoff with jitter — never past the block's timeout. A response body is read as
a stream and refused past `max_body` bytes (32 MB by default), so a runaway body cannot fill memory. A
vendor's streamed reply (`assemble`) is read event by event into the body the non-streaming call gives,
each piece of text handed on as it comes: a stream that breaks before its first piece is retried like a
request, one that breaks after it is `stream_interrupted`. Knows no vendor's JSON beyond the error hints
it reads, and no run: each attempt and retry is told to the hooks the caller passes (the run's trace).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import httpx
import orjson

from engine.errors import BlockTimeout, HttpError, ProviderError
from engine.providers.bodies import BodyRefused, capped_body, capped_lines
from engine.providers.clients import ProxyUnusable
from engine.providers.response_cache import CACHE_EXTENSION, CacheNote, CachingClient
from engine.providers.retries import Retried, Retryable, StopAtDeadline, retryable, retrying, wait_hint
from engine.providers.streaming import Assembler, StreamBroke, StreamReader, TextSink
from engine.providers.wire import Adapter, HttpCall, WireError

if TYPE_CHECKING:
    from engine.runtime.context import VendorSlots

__all__ = ["MAX_BODY_BYTES", "MAX_REDIRECTS", "MAX_RETRIES", "Exchanges", "Fetched", "Outgoing", "Response", "Retried",
           "SendHooks", "base_url", "fetch", "send"]

MAX_RETRIES = 4
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The most a vendor response body may hold (Anthropic's own request limit is 32 MB)."""
MAX_REDIRECTS = 5
"""Redirects an HttpRequest follows (on its own host) within one attempt."""
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN_TEXT = 10_000
"""Characters of a body that is not JSON that a Detailed trace keeps."""


@dataclass(slots=True)
class Response:
    """A vendor's 2xx answer, its JSON read."""

    status: int
    body: Any
    headers: dict[str, str]
    attempts: int
    cache: CacheNote | None = None
    """With a response cache on: whether the answer came from it, and how to keep it once it is read good."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One request as it is sent: method, URL, headers, body bytes, and the body as a Detailed trace shows it."""

    method: str
    url: str | httpx.URL
    """Text, or the URL already parsed (HttpRequest's, as its host was checked): parsed once, not again."""
    headers: dict[str, str]
    content: bytes | None = None
    shown: Any = None


@dataclass(slots=True)
class Fetched:
    """What an HttpRequest got: the final status (of the last attempt), headers, the raw body, the URL answered."""

    status: int
    headers: dict[str, str]
    raw: bytes
    url: httpx.URL
    attempts: int


class Exchanges(Protocol):
    """Hears each attempt's HTTP request and response (a run's Detailed trace)."""

    def requested(self, method: str, url: str, headers: dict[str, str], body: Any, attempt: int) -> None: ...

    def responded(self, status: int, headers: dict[str, str], body: Any, duration_ms: float, attempt: int) -> None: ...


@dataclass(frozen=True, slots=True)
class SendHooks:
    """What the caller lends one send: its clock and sleep, vendor limits, and who hears about attempts."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    limits: VendorSlots | None = None
    exchanges: Exchanges | None = None
    """None skips building the per-attempt records (they cost headers copies; Detailed only)."""
    retried: Retried | None = None
    max_body: int = MAX_BODY_BYTES
    """Bytes past which a response body is refused (`provider_malformed_response`) without reading on."""
    on_text: TextSink | None = None
    """Hears each piece of a streamed answer's text as it arrives."""


def base_url(explicit: str | None, adapter: Adapter, environ: dict[str, str] | Any) -> str:
    """The block's base_url, else the vendor's environment variable, else its host."""
    return (explicit or environ.get(adapter.base_variable) or adapter.default_base).rstrip("/")


def _join(base: str, path: str) -> str:
    # A base that already ends with part of the path (".../openai/v1") is not doubled.
    segments = path.strip("/").split("/")
    for cut in range(len(segments) - 1, 0, -1):
        prefix = "/" + "/".join(segments[:cut])
        if base.endswith(prefix):
            return base + path[len(prefix):]
    return base + path


def _decoded(raw: bytes) -> tuple[Any, bool]:
    """The body as JSON, or (a readable prefix, True) when it is not JSON."""
    try:
        return (orjson.loads(raw) if raw else None), False
    except orjson.JSONDecodeError:
        return raw[:2000].decode("utf-8", "replace"), True


_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class _Reading(Protocol[_T_co]):
    """How one caller reads what came back: its errors, what a trace shows, redirects, and the verdict."""

    @property
    def label(self) -> str:
        """Who answered, as messages name it (the vendor, or the host)."""

    def error(self, message: str, kind: str) -> ProviderError | HttpError:
        """The caller's error of `kind` (`connection_error`, `malformed_response`)."""

    def shown(self, raw: bytes | dict[str, Any]) -> Any:
        """A body as a Detailed trace shows it (bytes, or a stream's assembled reply)."""

    def follow(self, response: httpx.Response, hop: int) -> httpx.Request | None:
        """The request a redirect leads to, when it is to be followed; None to keep this response."""

    def judge(self, response: httpx.Response, raw: bytes | dict[str, Any], attempt: int) -> _T_co:
        """The answer; raises Retryable for one worth another attempt, or the caller's error."""


class _Settled(Retryable):
    """A status worth another attempt that, if it is the last one, is still an answer: the caller judges it."""

    def __init__(self, error: HttpError, wait: float | None, settled: Fetched) -> None:
        super().__init__(error, wait)
        self.settled = settled


class _Attempts(Generic[_T]):
    """One send's attempts: each call sends once (following the redirects its reading allows) and returns the
    reading's answer, or raises."""

    __slots__ = ("assemble", "block", "client", "count", "deadline", "hooks", "outgoing", "reading", "timeout")

    def __init__(self, client: httpx.AsyncClient, outgoing: Outgoing, reading: _Reading[_T], block: str,
                 timeout: float, hooks: SendHooks, assemble: Callable[[], Assembler] | None = None) -> None:
        self.client, self.outgoing, self.reading = client, outgoing, reading
        self.block, self.timeout, self.hooks = block, timeout, hooks
        self.deadline = hooks.clock() + timeout
        self.count = 0
        self.assemble = assemble
        """A vendor's streamed reply: a fresh assembler per attempt reads a 2xx's events into the reply's body."""

    def timed_out(self) -> BlockTimeout:
        return BlockTimeout(f"block '{self.block}' timed out after {self.timeout:g} s (its 'timeout' input), "
                            "retries included", block=self.block)

    async def __call__(self) -> _T:
        self.count += 1
        remaining = self.deadline - self.hooks.clock()
        if remaining <= 0:
            raise self.timed_out()
        response, raw = await self._exchange(remaining)
        return self.reading.judge(response, raw, self.count)

    def _too_large(self) -> ProviderError | HttpError:
        limit = self.hooks.max_body
        size = f"{limit / 1024 / 1024:g} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
        return self.reading.error(f"{self.reading.label} sent a response body larger than {size}; stopped reading it",
                                  "malformed_response")

    async def _read(self, response: httpx.Response) -> bytes:
        """The body, decoded under the cap (engine.providers.bodies); a declared length past it is refused unread."""
        limit = self.hooks.max_body
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large()
        return await capped_body(response, limit, self._too_large)

    def _slot(self, request: httpx.Request) -> contextlib.AbstractAsyncContextManager[None]:
        """The vendor slot an attempt waits for; none when the response cache holds its answer (it asks no vendor)."""
        limits = self.hooks.limits
        if limits is None or (isinstance(self.client, CachingClient) and self.client.kept(request)):
            return contextlib.nullcontext()
        return limits.slot(self.reading.label)

    async def _exchange(self, remaining: float) -> tuple[httpx.Response, bytes | dict[str, Any]]:
        """The final response and its body: the raw bytes, or a stream's assembled reply."""
        reading, exchanges = self.reading, self.hooks.exchanges
        outgoing = self.outgoing
        reader: StreamReader | None = None
        raw: bytes | dict[str, Any]
        try:
            async with asyncio.timeout(remaining):
                request = self.client.build_request(outgoing.method, outgoing.url, content=outgoing.content,
                                                    headers=outgoing.headers, timeout=httpx.Timeout(remaining))
                async with self._slot(request):
                    shown_headers, shown_body = outgoing.headers, outgoing.shown
                    hop = 0
                    while True:
                        if exchanges is not None:
                            exchanges.requested(request.method, str(request.url), shown_headers, shown_body,
                                                self.count)
                        began = time.perf_counter()
                        try:
                            response = await self.client.send(request, stream=True)
                        except httpx.InvalidURL as exc:  # httpx reads a redirect's Location as the answer comes
                            raise reading.error(f"{reading.label} answered with a redirect whose Location is not a "
                                                f"URL ({exc})", "malformed_response") from None
                        try:
                            if self.assemble is not None and 200 <= response.status_code < 300:
                                reader = StreamReader(self.assemble(), self.hooks.on_text, self.hooks.max_body)
                                raw = await reader.read(capped_lines(response, self.hooks.max_body, self._too_large),
                                                        self._too_large)
                            else:
                                raw = await self._read(response)
                        finally:
                            await response.aclose()
                        if exchanges is not None:
                            exchanges.responded(response.status_code, dict(response.headers), reading.shown(raw),
                                                round((time.perf_counter() - began) * 1000, 3), self.count)
                        following = reading.follow(response, hop)
                        if following is None:
                            return response, raw
                        hop += 1
                        request = following
                        shown_headers = dict(request.headers)
                        shown_body = shown_body if request.method == outgoing.method else None
        except (TimeoutError, httpx.TimeoutException):
            raise self.timed_out() from None
        except StreamBroke as broke:
            raise self._broken(reader, broke.vendor_type, broke.message, broke.retryable) from None
        except EOFError:
            raise self._broken(reader, None, "the stream ended before the reply did", True) from None
        except WireError as exc:
            raise reading.error(f"{reading.label} sent a stream we cannot read: {exc}", "malformed_response") from None
        except (httpx.DecodingError, BodyRefused) as exc:  # a content-encoding we do not read, or that does not decode
            raise reading.error(f"{reading.label} sent a body that cannot be read: {exc}", "malformed_response") \
                from None
        except ProxyUnusable as exc:  # the environment's proxy, unusable here: no retry can change that
            raise reading.error(f"{reading.label}: {exc}", "connection_error") from None
        except httpx.TransportError as exc:
            if reader is not None:
                raise self._broken(reader, None, f"connection lost ({type(exc).__name__}: {exc})", True) from None
            error = reading.error(f"{reading.label}: connection failed ({type(exc).__name__}: {exc})", "connection_error")
            raise Retryable(error, None) from None

    def _broken(self, reader: StreamReader | None, vendor_type: str | None, reason: str, retryable: bool) -> Exception:
        """A vendor's stream that stopped: retried like a request before its first piece of text (nobody has seen any
        of it; when `retryable`), `stream_interrupted` after it (what was shown cannot be taken back)."""
        vendor = self.reading.label
        said = f" ({vendor_type})" if vendor_type else ""
        if reader is not None and reader.pieces:
            return ProviderError(f"{vendor}'s stream broke after {reader.pieces} piece(s) of text{said}: {reason}",
                                 type="stream_interrupted", block=self.block, vendor_type=vendor_type)
        error = ProviderError(f"{vendor}'s stream broke before its first piece of text{said}: {reason}",
                              type="provider_error", block=self.block, vendor_type=vendor_type)
        return Retryable(error, None) if retryable else error


class _VendorReading:
    """A request block's: only a 2xx with JSON is an answer; another status is the vendor's error, read by its adapter."""

    __slots__ = ("adapter", "block")

    def __init__(self, adapter: Adapter, block: str) -> None:
        self.adapter, self.block = adapter, block

    @property
    def label(self) -> str:
        return self.adapter.vendor

    def error(self, message: str, kind: str) -> ProviderError:
        return ProviderError(message, type=f"provider_{kind}", block=self.block)

    def shown(self, raw: bytes | dict[str, Any]) -> Any:
        return _decoded(raw)[0] if isinstance(raw, bytes) else raw

    def follow(self, response: httpx.Response, hop: int) -> None:
        return None  # a vendor's redirect is its error: the block must not carry the key to another host

    def judge(self, response: httpx.Response, raw: bytes | dict[str, Any], attempt: int) -> Response:
        """A 2xx with JSON (or a stream's assembled reply) is the answer; a retryable status raises Retryable; any
        other raises at once."""
        body, malformed = _decoded(raw) if isinstance(raw, bytes) else (raw, False)
        vendor, status = self.adapter.vendor, response.status_code
        if 200 <= status < 300:
            if malformed or body is None:
                raise ProviderError(f"{vendor} answered {status} with a body that is not JSON (truncated or malformed)",
                                    type="provider_malformed_response", block=self.block)
            return Response(status, body, dict(response.headers), attempt, response.extensions.get(CACHE_EXTENSION))
        vendor_type, message = self.adapter.error(status, body)
        error = ProviderError(f"{vendor} answered {status} {vendor_type}: {message or 'no message'}",
                              type="provider_error", block=self.block, status=status, vendor_type=vendor_type)
        if retryable(response):
            raise Retryable(error, wait_hint(response, body))
        raise error


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme)


class _WebReading:
    """An HttpRequest's: every final status is an answer; redirects are followed on the request's own host only."""

    __slots__ = ("block", "origin")

    def __init__(self, block: str, url: httpx.URL) -> None:
        self.block, self.origin = block, _origin(url)

    @property
    def label(self) -> str:
        return self.origin[1]

    def error(self, message: str, kind: str) -> HttpError:
        return HttpError(message, type=f"http_{kind}", block=self.block)

    def shown(self, raw: bytes | dict[str, Any]) -> Any:
        if not isinstance(raw, bytes):  # an assembled stream: fetch assembles none
            return raw
        body, malformed = _decoded(raw)
        if not malformed:
            return body
        text = raw.decode("utf-8", "replace")
        return text if len(text) <= _SHOWN_TEXT else text[:_SHOWN_TEXT] + "…"

    def follow(self, response: httpx.Response, hop: int) -> httpx.Request | None:
        following = response.next_request
        if following is None:
            return None
        scheme, host, port = _origin(following.url)
        same = (scheme, host, port) == self.origin
        upgraded = host == self.origin[1] and (self.origin[0], scheme) == ("http", "https") \
            and self.origin[2] == 80 and port == 443  # http → https on the same host, default ports
        if not (same or upgraded):
            # Another host (or a downgrade to http) would carry the request, headers and all, where nobody allowed it.
            raise HttpError(f"{self.label} answered {response.status_code} redirecting to {scheme}://{host}"
                            f"{'' if port == _DEFAULT_PORTS.get(scheme) else f':{port}'}; a redirect is followed only "
                            "on the same host (request that URL yourself, with its host in allowed_hosts)",
                            type="http_redirect_refused", block=self.block, status=response.status_code)
        if hop >= MAX_REDIRECTS:
            raise HttpError(f"{self.label} redirected more than {MAX_REDIRECTS} times", type="http_redirect_refused",
                            block=self.block, status=response.status_code)
        return following

    def judge(self, response: httpx.Response, raw: bytes | dict[str, Any], attempt: int) -> Fetched:
        body = raw if isinstance(raw, bytes) else orjson.dumps(raw)  # an assembled stream: fetch assembles none
        fetched = Fetched(response.status_code, dict(response.headers), body, response.request.url, attempt)
        if retryable(response):
            error = HttpError(f"{self.label} answered {response.status_code}", block=self.block,
                              status=response.status_code)
            raise _Settled(error, wait_hint(response, None), fetched)
        return fetched


async def _attempt_all(attempts: _Attempts[_T], *, max_retries: int) -> _T:
    """The attempts, retried as the module says; what the last one answered, or its error."""
    hooks, block, timeout = attempts.hooks, attempts.block, attempts.timeout
    at_deadline = StopAtDeadline(hooks.clock, attempts.deadline)
    loop = retrying(max_retries=max_retries, at_deadline=at_deadline, sleep=hooks.sleep, retried=hooks.retried)
    try:
        answer: _T = await loop(attempts)
        return answer
    except _Settled as last:
        return last.settled  # type: ignore[return-value]  # only a _WebReading settles, and it reads Fetched
    except Retryable as last:
        if attempts.count <= max_retries:
            # Stopped early because the next wait would cross the deadline: say so, not "timed out after".
            raise BlockTimeout(f"block '{block}' stopped retrying: the next wait ({at_deadline.stopped_wait:.3g} s) "
                               f"would pass the {timeout:g} s timeout (its 'timeout' input); last answer: "
                               f"{last.error.message}", block=block) from None
        raise last.error.after_attempts(attempts.count) from last.error


async def send(
    client: httpx.AsyncClient,
    base: str,
    call: HttpCall,
    adapter: Adapter,
    *,
    block: str,
    timeout: float,  # noqa: ASYNC109  # the deadline also bounds the retries' sleeps, not just one await
    hooks: SendHooks | None = None,
    extra_headers: dict[str, str] | None = None,
    max_retries: int = MAX_RETRIES,
    assemble: Callable[[], Assembler] | None = None,
) -> Response:
    """POST `call` with retries: the 2xx response, or ProviderError or BlockTimeout, never an httpx error.

    `block` names the block in timeout messages. With `assemble` the call is a stream read by a fresh assembler
    per attempt (the Response's body is the assembled reply), each piece of text told to `hooks.on_text`.
    """
    outgoing = Outgoing("POST", _join(base, call.path), {**call.headers, **(extra_headers or {})},
                        orjson.dumps(call.body), call.body)
    attempts = _Attempts(client, outgoing, _VendorReading(adapter, block), block, timeout, hooks or SendHooks(),
                         assemble)
    return await _attempt_all(attempts, max_retries=max_retries)


async def fetch(
    client: httpx.AsyncClient,
    outgoing: Outgoing,
    *,
    block: str,
    timeout: float,  # noqa: ASYNC109  # the deadline also bounds the retries' sleeps, not just one await
    hooks: SendHooks | None = None,
    max_retries: int = 2,
) -> Fetched:
    """Send `outgoing` with retries: the last answer whatever its status (a status still worth retrying when the
    retries or the timeout ran out included), or HttpError or BlockTimeout, never an httpx error."""
    attempts = _Attempts(client, outgoing, _WebReading(block, httpx.URL(outgoing.url)), block, timeout,
                         hooks or SendHooks())
    return await _attempt_all(attempts, max_retries=max_retries)
