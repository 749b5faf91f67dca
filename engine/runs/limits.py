"""Limits shared by all runs of a batch: requests per minute and calls in flight, per vendor.

A token bucket refills at `rpm / 60` requests a second and holds one interval's worth (one
request), starting full: the limit holds from the first second, with no burst of `rpm`
requests at the start. A semaphore bounds the calls in flight. Request blocks take both around each HTTP attempt, so a big batch
waits its turn instead of collecting 429s (which are still retried as usual).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

__all__ = ["VENDOR_ALIASES", "TokenBucket", "VendorLimits", "parse_limits"]

VENDOR_ALIASES = {"claude": "anthropic", "anthropic": "anthropic", "groq": "groq", "gemini": "gemini", "google": "gemini"}


class TokenBucket:
    """Requests spaced `60 / per_minute` seconds apart, the first one at once."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        # One interval's worth: a full minute's bucket would let `per_minute` requests through in the first second.
        self.capacity = 1.0
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        async with self._lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                await asyncio.sleep((1 - self.tokens) / self.rate)


@dataclass
class VendorLimits:
    rpm: dict[str, TokenBucket] = field(default_factory=dict)
    concurrent: dict[str, asyncio.Semaphore] = field(default_factory=dict)

    @asynccontextmanager
    async def slot(self, vendor: str) -> AsyncIterator[None]:
        bucket = self.rpm.get(vendor)
        if bucket is not None:
            await bucket.take()
        semaphore = self.concurrent.get(vendor)
        if semaphore is None:
            yield
            return
        async with semaphore:
            yield


def parse_limits(pairs: list[str], option: str) -> dict[str, float]:
    """`claude=50` → {"anthropic": 50.0}; raises ValueError with the option named."""
    limits: dict[str, float] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        vendor = VENDOR_ALIASES.get(name.strip().lower())
        if vendor is None:
            raise ValueError(f"{option} {pair!r}: the vendor is one of claude, groq, gemini")
        try:
            limits[vendor] = float(value)
        except ValueError:
            raise ValueError(f"{option} {pair!r}: expected vendor=number") from None
        if limits[vendor] <= 0:
            raise ValueError(f"{option} {pair!r}: must be positive")
    return limits
