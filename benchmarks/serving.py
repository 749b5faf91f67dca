"""What the benchmarks that serve something over HTTP share: a free loopback port, a percentile, and waiting for a
server process to answer."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx

__all__ = ["free_port", "percentile", "wait_for_server"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentile(values: list[float], fraction: float) -> float:
    """The value at `fraction` (0.5: the median) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def wait_for_server(url: str, server: subprocess.Popen[bytes] | None = None, *, seconds: float = 30) -> None:
    """Return once `url` answers; SystemExit naming it when `seconds` pass first or the `server` process ends."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline or (server is not None and server.poll() is not None):
                raise SystemExit(f"{url} did not answer: the server did not start") from None
            time.sleep(0.05)
