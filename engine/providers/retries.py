"""When to try a request again, and how long to wait first (docs/VENDORS.md, "Retries").

408, 409, 429 and 5xx are worth another attempt unless the server's `x-should-retry` says otherwise;
the wait is the server's hint (`retry-after-ms`, `retry-after` in seconds or as an HTTP date, Gemini's
`retryDelay`), else exponential backoff with jitter; the block's deadline is a stop condition, and the
wait that would have crossed it is kept for the message. Knows nothing of what is sent.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, stop_any
from tenacity.stop import stop_base

from engine.errors import RetryableProviderError as Retryable

__all__ = ["Retried", "Retryable", "StopAtDeadline", "retryable", "retrying", "wait_hint"]

_RETRY_STATUSES = frozenset({408, 409, 429})

Retried = Callable[[int, float, str], None]
"""retried(attempt, wait_s, reason): the attempt that failed, the wait before the next one, and why."""


def retryable(response: httpx.Response) -> bool:
    """Whether this status is worth another attempt: `x-should-retry` decides first, then the status."""
    should = response.headers.get("x-should-retry")
    status = response.status_code
    return should == "true" if should in ("true", "false") else (status in _RETRY_STATUSES or status >= 500)


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


def wait_hint(response: httpx.Response, body: Any) -> float | None:
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


def _wait(state: RetryCallState) -> float:
    failure = state.outcome.exception() if state.outcome else None
    hint = failure.wait if isinstance(failure, Retryable) else None
    return float(hint) if hint is not None and hint >= 0 else _backoff(state.attempt_number)


class StopAtDeadline(stop_base):
    """tenacity's stop condition for a deadline: stop when the next wait would cross it."""

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
        reason = failure.error.message if isinstance(failure, Retryable) else str(failure)
        retried(state.attempt_number, round(state.upcoming_sleep, 3), reason)

    return note


def retrying(*, max_retries: int, at_deadline: StopAtDeadline, sleep: Callable[[float], Any],
             retried: Retried | None) -> AsyncRetrying:
    """The retry loop: Retryable failures tried again, at most `max_retries` times and never past the deadline."""
    return AsyncRetrying(
        stop=stop_any(stop_after_attempt(max_retries + 1), at_deadline),
        wait=_wait,
        retry=retry_if_exception_type(Retryable),
        sleep=sleep,
        before_sleep=_before_sleep(retried),
        reraise=True,
    )
