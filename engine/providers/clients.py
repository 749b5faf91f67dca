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
    from engine.providers.response_cache import ResponseCache
    from engine.runtime.context import OfflineVendors, Services

__all__ = ["ProxyUnusable", "client_for", "simulator_for"]

_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=200)


def client_for(services: Services, vendor: str, transport: httpx.AsyncBaseTransport | None = None, *,
               cache: ResponseCache | None = None) -> httpx.AsyncClient:
    """The pooled client for a vendor on this event loop, over `transport` or the services' stand-in for the vendor;
    with `cache`, one that answers from it what it kept (engine.providers.response_cache)."""
    transport = transport or services.transports.get(vendor)
    pool = services.http_clients
    loop_id = id(asyncio.get_running_loop())
    # The pooled client holds its transport and cache, so their ids cannot be reused while the entry lives.
    key = (vendor, loop_id, id(transport) if transport is not None else 0, id(cache) if cache is not None else 0)
    client = pool.get(key)
    if client is None or client.is_closed:
        for stale in [k for k in pool if k[1] != loop_id]:
            del pool[stale]
        # Only the codings engine.providers.bodies decodes under its cap (httpx would offer br and zstd too).
        headers = {"accept-encoding": ACCEPT_ENCODING}
        try:
            if cache is not None:
                from engine.providers.response_cache import CachingClient

                client = CachingClient(cache, vendor, transport=transport, limits=_LIMITS, timeout=None,
                                       cookies=_no_cookies(), headers=headers)
            else:
                client = httpx.AsyncClient(transport=transport, limits=_LIMITS, timeout=None, cookies=_no_cookies(),
                                           headers=headers)
        except ImportError as exc:  # a proxy from the environment that needs a package not installed (socksio)
            client = httpx.AsyncClient(transport=_Unusable(_proxy_message(exc)), headers=headers, trust_env=False)
        pool[key] = client
    return client


class ProxyUnusable(httpx.TransportError):
    """The environment names a proxy this installation cannot use: every request fails so, at once, unretried."""


class _Unusable(httpx.AsyncBaseTransport):
    """What a client sends through when its proxy cannot be set up: each request fails with the reason."""

    def __init__(self, message: str) -> None:
        self.message = message

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise ProxyUnusable(self.message, request=request)


_PROXY_VARIABLES = ("ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


def _proxy_message(exc: ImportError) -> str:
    """Which variable names the proxy (its URL without a password) and what it needs (httpx's own words)."""
    import os
    import re

    named = next(((name, value) for name in _PROXY_VARIABLES if (value := os.environ.get(name, "")).startswith("socks")),
                 None)
    where = f"{named[0]}={re.sub(r'//[^/@]*@', '//', named[1])}" if named else "the environment's proxy"
    unset = f"; or unset {named[0]}" if named else ""
    return f"cannot use the proxy {where}: {exc}{unset}"


def _no_cookies() -> http.cookiejar.CookieJar:
    """A jar that keeps nothing: its policy accepts no domain."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def simulator_for(services: Services) -> OfflineVendors:
    """The run's offline vendors: the services' own, else a default simulator kept on them."""
    if services.simulator is None:
        services.simulator = Simulator()
    return services.simulator
