"""Where a request goes: the pooled httpx clients, and the run's offline vendors.

A client belongs to the event loop it was first used on and keeps the transport it was
made with, so the pool (`Services.http_clients`) is keyed by vendor, loop and transport.
A pooled client keeps no cookies: the runs that share it (a batch's, the studio's) must not
share a server's session, nor send one run's cookie with another's request.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
from typing import TYPE_CHECKING

import httpx

from engine.providers.bodies import ACCEPT_ENCODING
from engine.providers.simulator import Simulator

if TYPE_CHECKING:
    from engine.runtime.context import OfflineVendors, Services

__all__ = ["client_for", "simulator_for"]

_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=200)


def client_for(services: Services, vendor: str, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The pooled client for a vendor on this event loop, over `transport` or the services' stand-in for the vendor."""
    transport = transport or services.transports.get(vendor)
    pool = services.http_clients
    loop_id = id(asyncio.get_running_loop())
    # The pooled client holds its transport, so the transport's id cannot be reused while the entry lives.
    key = (vendor, loop_id, id(transport) if transport is not None else 0)
    client = pool.get(key)
    if client is None or client.is_closed:
        for stale in [k for k in pool if k[1] != loop_id]:
            del pool[stale]
        # Only the codings engine.providers.bodies decodes under its cap (httpx would offer br and zstd too).
        client = pool[key] = httpx.AsyncClient(transport=transport, limits=_LIMITS, timeout=None, cookies=_no_cookies(),
                                               headers={"accept-encoding": ACCEPT_ENCODING})
    return client


def _no_cookies() -> http.cookiejar.CookieJar:
    """A jar that keeps nothing: its policy accepts no domain."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def simulator_for(services: Services) -> OfflineVendors:
    """The run's offline vendors: the services' own, else a default simulator kept on them."""
    if services.simulator is None:
        services.simulator = Simulator()
    return services.simulator
