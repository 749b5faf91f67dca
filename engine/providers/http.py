"""Sending one vendor request: pooled httpx clients, the overall deadline, retries.

Retries follow DESIGN.md: 408, 409, 429 and 5xx and dropped connections, with
`x-should-retry` deciding first, then `retry-after-ms`, `retry-after` or Gemini's
`retryDelay` as the wait, else exponential backoff with jitter — never past the
block's timeout. Knows no vendor's JSON beyond the error hints it reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, stop_any
from tenacity.stop import stop_base

from engine.errors import BlockTimeout, ProviderError
from engine.providers.wire import Adapter, HttpCall
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from engine.runtime.context import RunContext, Services

__all__ = ["MAX_RETRIES", "Response", "base_url", "client_for", "send"]

MAX_RETRIES = 4
_RETRY_STATUSES = frozenset({408, 409, 429})
_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=200)


@dataclass(slots=True)
class Response:
    status: int
    body: Any
    headers: dict[str, str]
    attempts: int


class _Retryable(Exception):
    def __init__(self, error: ProviderError, wait: float | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait


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


def client_for(services: Services, vendor: str, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """One pooled client per vendor per event loop (httpx clients belong to a loop).

    Tests put a transport for a vendor in `services.extras["transports"]` to stand in
    for the far side of the wire.
    """
    transport = transport or services.extras.get("transports", {}).get(vendor)
    pool: dict[tuple[str, int], httpx.AsyncClient] = services.extras.setdefault("http_clients", {})
    loop_id = id(asyncio.get_running_loop())
    key = (vendor, loop_id)
    client = pool.get(key)
    if client is None or client.is_closed:
        for stale in [k for k in pool if k[1] != loop_id]:
            del pool[stale]
        client = pool[key] = httpx.AsyncClient(transport=transport, limits=_LIMITS, timeout=None)
    return client


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
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


async def send(
    context: RunContext,
    client: httpx.AsyncClient,
    base: str,
    call: HttpCall,
    adapter: Adapter,
    *,
    timeout: float,  # noqa: ASYNC109  # the deadline also bounds the retries' sleeps, not just one await
    extra_headers: dict[str, str] | None = None,
    max_retries: int = MAX_RETRIES,
) -> Response:
    """POST `call` with retries; raise ProviderError or BlockTimeout, never an httpx error."""
    services = context.services
    clock: Callable[[], float] = services.clock
    deadline = clock() + timeout
    url = _join(base, call.path)
    headers = {**call.headers, **(extra_headers or {})}
    payload = orjson.dumps(call.body)
    detailed = context.message_level >= 2
    block = context.current.id
    attempts = 0

    def timed_out() -> BlockTimeout:
        return BlockTimeout(f"block '{block}' timed out after {timeout:g} s (its 'timeout' input), retries included",
                            block=block)

    async def attempt() -> Response:
        nonlocal attempts
        attempts += 1
        remaining = deadline - clock()
        if remaining <= 0:
            raise timed_out()
        if detailed:
            context.emit(Event.HTTP_REQUEST, method="POST", url=url, headers=headers, body=call.body, attempt=attempts)
        began = time.perf_counter()
        limits = services.extras.get("limits")
        try:
            async with asyncio.timeout(remaining):
                async with limits.slot(adapter.vendor) if limits is not None else contextlib.nullcontext():
                    response = await client.post(url, content=payload, headers=headers,
                                                 timeout=httpx.Timeout(remaining))
                    raw = await response.aread()
        except (TimeoutError, httpx.TimeoutException):
            raise timed_out() from None
        except httpx.TransportError as exc:
            error = ProviderError(f"{adapter.vendor}: connection failed ({type(exc).__name__}: {exc})",
                                  type="provider_connection_error", block=block)
            raise _Retryable(error, None) from None
        try:
            body: Any = orjson.loads(raw) if raw else None
            malformed = False
        except orjson.JSONDecodeError:
            body, malformed = raw[:2000].decode("utf-8", "replace"), True
        if detailed:
            context.emit(Event.HTTP_RESPONSE, status=response.status_code, headers=dict(response.headers), body=body,
                         duration_ms=round((time.perf_counter() - began) * 1000, 3), attempt=attempts)
        status = response.status_code
        if 200 <= status < 300:
            if malformed or body is None:
                raise ProviderError(f"{adapter.vendor} answered {status} with a body that is not JSON "
                                    "(truncated or malformed)", type="provider_malformed_response", block=block)
            return Response(status, body, dict(response.headers), attempts)
        vendor_type, message = adapter.error(status, body)
        error = ProviderError(
            f"{adapter.vendor} answered {status} {vendor_type}: {message or 'no message'}",
            type="provider_error", block=block, status=status, vendor_type=vendor_type,
        )
        should = response.headers.get("x-should-retry")
        retry = should == "true" if should in ("true", "false") else (status in _RETRY_STATUSES or status >= 500)
        if retry:
            raise _Retryable(error, _wait_hint(response, body))
        raise error

    def wait(state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        hint = failure.wait if isinstance(failure, _Retryable) else None
        return float(hint) if hint is not None and hint >= 0 else _backoff(state.attempt_number)

    class stop_at_deadline(stop_base):  # tenacity's own naming for stop conditions
        def __call__(self, state: RetryCallState) -> bool:
            return clock() + (state.upcoming_sleep or 0) >= deadline

    def note_retry(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        context.emit(Event.PROVIDER_RETRIED, attempt=state.attempt_number, wait_s=round(state.upcoming_sleep, 3),
                     reason=failure.error.message if isinstance(failure, _Retryable) else str(failure))

    retrying = AsyncRetrying(
        stop=stop_any(stop_after_attempt(max_retries + 1), stop_at_deadline()),
        wait=wait,
        retry=retry_if_exception_type(_Retryable),
        sleep=services.sleep,
        before_sleep=note_retry,
        reraise=True,
    )
    try:
        return await retrying(attempt)
    except _Retryable as last:
        if attempts <= max_retries:
            # Stopped early because the next wait would cross the deadline.
            raise BlockTimeout(f"block '{block}' timed out after {timeout:g} s (its 'timeout' input) while "
                               f"retrying: {last.error.message}", block=block) from None
        last.error.message += f" (after {attempts} attempts)"
        last.error.args = (last.error.message,)
        raise last.error from None
