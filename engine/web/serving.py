"""Serving `diagrama api` with a graceful drain: a deploy's SIGTERM loses no run.

The first SIGTERM does not stop the server at once (uvicorn's own handling closes the listening socket, then the
lifespan cancels every run: interrupted, and before this, never resumable from another host). It drains:
readiness answers 503 so a load balancer sends new work elsewhere, new runs and resumes are refused (503),
each durable run stops at its next step (its last checkpoint is where another process goes on), the others get
`drain_timeout` seconds to end; then the server stops as uvicorn does. A second SIGTERM, or Ctrl-C, stops at once.
"""

from __future__ import annotations

import asyncio
import signal
from types import FrameType
from typing import Any

import uvicorn

from engine.runs.service_logs import log

__all__ = ["DrainingServer", "backend_of", "serve"]


def backend_of(app: Any) -> Any:
    """The robots API's backend under its middleware (each keeps the app it wraps as `app`)."""
    seen = app
    for _ in range(16):
        state = getattr(seen, "state", None)
        backend = getattr(state, "backend", None) if state is not None else None
        if backend is not None:
            return backend
        seen = getattr(seen, "app", None)
        if seen is None:
            break
    raise LookupError("not the robots API's app (engine.web.api.create_app)")


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, backend: Any, drain_timeout: float) -> None:
        super().__init__(config)
        self.backend = backend
        self.drain_timeout = drain_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None

    async def startup(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig != signal.SIGTERM or self._loop is None or self._draining is not None or self.should_exit:
            super().handle_exit(sig, frame)  # a second signal, or Ctrl-C: stop now (runs are interrupted)
            return
        self._captured_signals.append(sig)  # re-raised once served, as uvicorn does: the exit status says SIGTERM
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        self._draining = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        try:
            await self.backend.drain(self.drain_timeout)
        except Exception as exc:  # a drain that fails still stops the server: the runs left are interrupted
            log("diagrama.api").error("drain_failed", error=type(exc).__name__)
        self.should_exit = True


def serve(app: Any, *, host: str, port: int, drain_timeout: float) -> None:
    """Serve `app` (engine.web.api.create_app's) on host:port until SIGTERM, drained (module docstring)."""
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    DrainingServer(config, backend_of(app), drain_timeout).run()
