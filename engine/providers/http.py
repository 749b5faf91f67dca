"""Sending one vendor request: the overall deadline, retries and backoff.

Retries follow docs/VENDORS.md ("Retries"): 408, 409, 429 and 5xx and dropped connections, with
`x-should-retry` deciding first, then `retry-after-ms`, `retry-after` or Gemini's
`retryDelay` as the wait, else exponential backoff with jitter — never past the
block's timeout. A response body is read as a stream and refused past `max_body`
bytes (32 MB by default), so a runaway body cannot fill memory. A streamed reply (`assemble`) is read event by
event into the body the non-streaming call gives, each piece of text handed on as it comes: a stream that breaks
before its first piece is retried like a request, one that breaks after it is `stream_interrupted`. Knows no vendor's JSON
beyond the error hints it reads, and no run: each attempt and retry is told to the hooks
the caller passes (the run's trace).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, stop_any
from tenacity.stop import stop_base

from engine.errors import BlockTimeout, ProviderError
from engine.errors import RetryableProviderError as _Retryable
from engine.providers.streaming import Assembler, StreamBroke, StreamReader, TextSink
from engine.providers.wire import Adapter, HttpCall, WireError

if TYPE_CHECKING:
    from engine.runtime.context import VendorSlots

__all__ = ["MAX_BODY_BYTES", "MAX_RETRIES", "Exchanges", "Response", "Retried", "SendHooks", "base_url", "send"]

MAX_RETRIES = 4
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The most a vendor response body may hold (Anthropic's own request limit is 32 MB)."""
_RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass(slots=True)
class Response:
    status: int
    body: Any
    headers: dict[str, str]
    attempts: int


class Exchanges(Protocol):
    """Hears each attempt's HTTP request and response (a run's Detailed trace)."""

    def requested(self, method: str, url: str, headers: dict[str, str], body: Any, attempt: int) -> None: ...

    def responded(self, status: int, headers: dict[str, str], body: Any, duration_ms: float, attempt: int) -> None: ...


Retried = Callable[[int, float, str], None]
"""retried(attempt, wait_s, reason): the attempt that failed, the wait before the next one, and why."""


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


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # neither seconds nor an HTTP date ("soon"): back off as if it were absent
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _wait_hint(response: httpx.Response, body: Any) -> float | None:
    milliseconds = response.headers.get("retry-after-ms")
    if milliseconds:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    after = _seconds(response.headers.get("retry-after"))
    if after is not None:
        return after
    if isinstance(body, dict):  # Gemini: google.rpc.RetryInfo in the error details
        for detail in (body.get("error") or {}).get("details") or []:
            delay = detail.get("retryDelay") if isinstance(detail, dict) else None
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return float(delay[:-1])
                except ValueError:
                    pass
    return None


def _backoff(attempt: int) -> float:
    return float(min(0.5 * 2 ** (attempt - 1), 8.0) * (1 - 0.25 * random.random()))  # jitter, not security


def _decoded(raw: bytes) -> tuple[Any, bool]:
    """The body as JSON, or (a readable prefix, True) when it is not JSON."""
    try:
        return (orjson.loads(raw) if raw else None), False
    except orjson.JSONDecodeError:
        return raw[:2000].decode("utf-8", "replace"), True


class _Attempts:
    """One send's attempts: each call posts once and returns the 2xx response or raises."""

    __slots__ = ("adapter", "assemble", "block", "body", "client", "count", "deadline", "headers", "hooks", "payload",
                 "timeout", "url")

    def __init__(self, client: httpx.AsyncClient, url: str, call: HttpCall, headers: dict[str, str], adapter: Adapter,
                 block: str, timeout: float, hooks: SendHooks,
                 assemble: Callable[[], Assembler] | None = None) -> None:
        self.client, self.url, self.headers, self.adapter = client, url, headers, adapter
        self.body, self.payload = call.body, orjson.dumps(call.body)
        self.block, self.timeout, self.hooks = block, timeout, hooks
        self.deadline = hooks.clock() + timeout
        self.count = 0
        self.assemble = assemble

    def timed_out(self) -> BlockTimeout:
        return BlockTimeout(f"block '{self.block}' timed out after {self.timeout:g} s (its 'timeout' input), "
                            "retries included", block=self.block)

    async def __call__(self) -> Response:
        self.count += 1
        remaining = self.deadline - self.hooks.clock()
        if remaining <= 0:
            raise self.timed_out()
        exchanges = self.hooks.exchanges
        if exchanges is not None:
            exchanges.requested("POST", self.url, self.headers, self.body, self.count)
        began = time.perf_counter()
        response, raw = await self._post(remaining)
        body, malformed = _decoded(raw) if isinstance(raw, bytes) else (raw, False)
        if exchanges is not None:
            exchanges.responded(response.status_code, dict(response.headers), body,
                                round((time.perf_counter() - began) * 1000, 3), self.count)
        return self._judge(response, body, malformed)

    def _too_large(self) -> ProviderError:
        limit = self.hooks.max_body
        size = f"{limit / 1024 / 1024:g} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
        return ProviderError(f"{self.adapter.vendor} sent a response body larger than {size}; stopped reading it",
                             type="provider_malformed_response", block=self.block)

    async def _read(self, response: httpx.Response) -> bytes:
        """The body, streamed, refused as soon as it passes the cap (a declared length past it is refused unread)."""
        limit = self.hooks.max_body
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise self._too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    async def _post(self, remaining: float) -> tuple[httpx.Response, bytes | dict[str, Any]]:
        """The response and its body: the raw bytes, or a stream's assembled reply."""
        limits = self.hooks.limits
        reader: StreamReader | None = None
        try:
            async with asyncio.timeout(remaining):
                async with limits.slot(self.adapter.vendor) if limits is not None else contextlib.nullcontext():
                    request = self.client.build_request("POST", self.url, content=self.payload, headers=self.headers,
                                                        timeout=httpx.Timeout(remaining))
                    response = await self.client.send(request, stream=True)
                    try:
                        if self.assemble is not None and 200 <= response.status_code < 300:
                            reader = StreamReader(self.assemble(), self.hooks.on_text, self.hooks.max_body)
                            return response, await reader.read(response.aiter_lines(), self._too_large)
                        return response, await self._read(response)
                    finally:
                        await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise self.timed_out() from None
        except StreamBroke as broke:
            raise self._broken(reader, broke.vendor_type, broke.message, broke.retryable) from None
        except EOFError:
            raise self._broken(reader, None, "the stream ended before the reply did", True) from None
        except WireError as exc:
            raise ProviderError(f"{self.adapter.vendor} sent a stream we cannot read: {exc}",
                                type="provider_malformed_response", block=self.block) from None
        except httpx.DecodingError as exc:  # a content-encoding (gzip, ...) that does not decode: unreadable
            raise ProviderError(f"{self.adapter.vendor} sent a body that cannot be decoded ({exc})",
                                type="provider_malformed_response", block=self.block) from None
        except httpx.TransportError as exc:
            if reader is not None:
                raise self._broken(reader, None, f"connection lost ({type(exc).__name__}: {exc})", True) from None
            error = ProviderError(f"{self.adapter.vendor}: connection failed ({type(exc).__name__}: {exc})",
                                  type="provider_connection_error", block=self.block)
            raise _Retryable(error, None) from None

    def _broken(self, reader: StreamReader | None, vendor_type: str | None, reason: str, retryable: bool) -> Exception:
        """A stream that stopped: retried like a request before its first piece of text (nobody has seen any of
        it; when `retryable`), `stream_interrupted` after it (what was shown cannot be taken back)."""
        vendor = self.adapter.vendor
        said = f" ({vendor_type})" if vendor_type else ""
        if reader is not None and reader.pieces:
            return ProviderError(f"{vendor}'s stream broke after {reader.pieces} piece(s) of text{said}: {reason}",
                                 type="stream_interrupted", block=self.block, vendor_type=vendor_type)
        error = ProviderError(f"{vendor}'s stream broke before its first piece of text{said}: {reason}",
                              type="provider_error", block=self.block, vendor_type=vendor_type)
        return _Retryable(error, None) if retryable else error

    def _judge(self, response: httpx.Response, body: Any, malformed: bool) -> Response:
        """A 2xx with JSON is the answer; a retryable status raises _Retryable; any other raises at once."""
        vendor, status = self.adapter.vendor, response.status_code
        if 200 <= status < 300:
            if malformed or body is None:
                raise ProviderError(f"{vendor} answered {status} with a body that is not JSON (truncated or malformed)",
                                    type="provider_malformed_response", block=self.block)
            return Response(status, body, dict(response.headers), self.count)
        vendor_type, message = self.adapter.error(status, body)
        error = ProviderError(f"{vendor} answered {status} {vendor_type}: {message or 'no message'}",
                              type="provider_error", block=self.block, status=status, vendor_type=vendor_type)
        should = response.headers.get("x-should-retry")
        retry = should == "true" if should in ("true", "false") else (status in _RETRY_STATUSES or status >= 500)
        if retry:
            raise _Retryable(error, _wait_hint(response, body))
        raise error


def _wait(state: RetryCallState) -> float:
    failure = state.outcome.exception() if state.outcome else None
    hint = failure.wait if isinstance(failure, _Retryable) else None
    return float(hint) if hint is not None and hint >= 0 else _backoff(state.attempt_number)


class _stop_at_deadline(stop_base):  # tenacity's own naming for stop conditions
    def __init__(self, clock: Callable[[], float], deadline: float) -> None:
        self.clock, self.deadline = clock, deadline

    def __call__(self, state: RetryCallState) -> bool:
        self.stopped_wait = state.upcoming_sleep or 0
        return self.clock() + self.stopped_wait >= self.deadline

    stopped_wait: float = 0.0
    """The wait that was asked for when this condition last looked (the one that would have crossed the deadline)."""


def _before_sleep(retried: Retried | None) -> Callable[[RetryCallState], None] | None:
    if retried is None:
        return None

    def note(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        reason = failure.error.message if isinstance(failure, _Retryable) else str(failure)
        retried(state.attempt_number, round(state.upcoming_sleep, 3), reason)

    return note


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
    hooks = hooks or SendHooks()
    attempts = _Attempts(client, _join(base, call.path), call, {**call.headers, **(extra_headers or {})}, adapter,
                         block, timeout, hooks, assemble)
    at_deadline = _stop_at_deadline(hooks.clock, attempts.deadline)
    retrying = AsyncRetrying(
        stop=stop_any(stop_after_attempt(max_retries + 1), at_deadline),
        wait=_wait,
        retry=retry_if_exception_type(_Retryable),
        sleep=hooks.sleep,
        before_sleep=_before_sleep(hooks.retried),
        reraise=True,
    )
    try:
        return await retrying(attempts)
    except _Retryable as last:
        if attempts.count <= max_retries:
            # Stopped early because the next wait would cross the deadline: say so, not "timed out after".
            raise BlockTimeout(f"block '{block}' stopped retrying: the next wait ({at_deadline.stopped_wait:.3g} s) "
                               f"would pass the {timeout:g} s timeout (its 'timeout' input); last answer: "
                               f"{last.error.message}", block=block) from None
        raise last.error.after_attempts(attempts.count) from last.error
