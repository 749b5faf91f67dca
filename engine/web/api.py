"""`diagrama api`'s ASGI app: `create_app(DIR)` serves every diagram of DIR as a robot (engine.web.service), for
`diagrama api` or any ASGI server (`uvicorn --factory engine.web.api:create_app` reads DIAGRAMA_API_DIR and
DIAGRAMA_API_KEYS).

Keys: DIAGRAMA_API_KEYS and the keys file's; with none, it refuses to start unless `no_auth` (the CLI allows that on
a loopback address only). The run store is the batch extra's, where SQLAlchemy is installed (always for Celery);
the checkpoint store (durable runs, waits, sessions) is its SQLite file, the runs folder's `diagrama.db` by default.
With `prune_after` (or DIAGRAMA_PRUNE_AFTER) the server prunes finished runs' checkpoints past that retention while
it runs (engine.web.service.pruning).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import structlog
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from engine.compile.block import BlockRegistry
from engine.errors import UsageError
from engine.runs.owners import open_owners
from engine.runs.prune import RETENTION_VARIABLE, parse_retention
from engine.runs.service_logs import configure as configure_logs
from engine.runtime.context import Services
from engine.web.service.app import OPERATIONS, Backend, RobotsApi
from engine.web.service.around import AroundRuns, otel_export
from engine.web.service.cors import Cors, checked_origins
from engine.web.service.durable import Durable
from engine.web.service.failures import exception_handlers
from engine.web.service.gate import Gate, RateLimits, RequestLog
from engine.web.service.keys import KEYS_VARIABLE, LocalRateLimits, admin_ids, keys_from_environ
from engine.web.service.pruning import Pruner
from engine.web.service.recovery import resume_left
from engine.web.service.robots import Robots
from engine.web.service.rotation import LiveKeys, reload_on_hangup
from engine.web.service.runs import LocalBackend
from engine.web.service.schedules import Scheduler
from engine.web.service.shown import Shown
from engine.web.service.tenants import Tenants
from engine.web.service.webhooks import Webhooks

__all__ = ["DIR_VARIABLE", "create_app"]

DIR_VARIABLE = "DIAGRAMA_API_DIR"


def _mcp(api: RobotsApi) -> Any:
    """`/mcp`'s app (engine.web.service.mcp_http), or None without the mcp extra."""
    try:
        from engine.web.service.mcp_http import McpEndpoint
    except ImportError:
        return None
    return McpEndpoint(api)


def _trigger_claims(run_store: Any) -> Any:
    """Schedules' ticks and webhooks' deliveries claimed in the run store (engine.runs.trigger_claims), or in this
    process without one."""
    from engine.runs.trigger_claims import MemoryClaims, TriggerClaims

    return TriggerClaims(run_store) if run_store is not None else MemoryClaims()


def _store(runs_dir: Path, url: str | None) -> Any:
    try:
        from engine.runs.store import open_store
    except ImportError:  # no batch extra: the traces are the record
        return None
    return open_store(url, runs_dir)


# Long: the service's parts (keys, backend, routes, lifespan) wired in the one place they meet.
def create_app(
    folder: Path | str | None = None,
    *,
    runs_dir: Path | None = None,
    registry: BlockRegistry | None = None,
    services: Services | None = None,
    keys_file: Path | None = None,
    no_auth: bool = False,
    rpm: float | None = 600,
    offline: bool = False,
    backend: Literal["local", "celery"] = "local",
    broker: str | None = None,
    store_url: str | None = None,
    data_roots: tuple[Path, ...] = (),
    prune_after: str | None = None,
    callback_secret: str | None = None,
    callback_hosts: tuple[str, ...] | None = None,
    otel: bool = False,
    resume_interrupted: bool = False,
    admin_keys: tuple[str, ...] = (),
    cors_origins: tuple[str, ...] = (),
    drafts: bool = False,
) -> Starlette | Any:
    """The robots API over `folder` (default $DIAGRAMA_API_DIR, else `diagrams`) as an ASGI app; UsageError when it
    cannot serve (no keys without `no_auth`, a bad keys file, not a folder, a retention that is no duration).
    `prune_after` (else $DIAGRAMA_PRUNE_AFTER; `7d`, `12h`…): prune finished runs' checkpoints past it, periodically.
    `callback_secret` (else $DIAGRAMA_CALLBACK_SECRET) signs run callbacks, sent only to `callback_hosts` (else
    $DIAGRAMA_CALLBACK_HOSTS); `otel` (or DIAGRAMA_OTEL=1) exports each run's spans (engine.web.service.around).
    `resume_interrupted`: at start, resume the folder's interrupted durable runs (engine.web.service.recovery).
    `admin_keys` (and $DIAGRAMA_API_ADMINS): ids of keys that see every caller's runs (engine.web.service.tenants);
    `cors_origins`: origins whose pages may call the API (engine.web.service.cors). `drafts`: serve each robot's file
    as it is, not its published version (engine.runs.published)."""
    from engine.runtime.api import default_registry

    root = Path(folder if folder is not None else os.environ.get(DIR_VARIABLE, "diagrams"))
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder of diagrams")
    services = services or Services(offline=offline)
    services.offline = offline
    keys, plain = keys_from_environ(services.environ)
    admins = admin_ids(services.environ, admin_keys)
    ring: LiveKeys | None = LiveKeys(keys, keys_file, admins) if keys or keys_file is not None else None
    if ring is None or not ring.keys:
        if not no_auth:
            raise UsageError(f"no API keys: set {KEYS_VARIABLE} or give --keys-file (make one with `diagrama api-key "
                             "ID`), or, on a loopback address only, --no-auth")
        if admins:
            raise UsageError("--admin-key names a key, and this server has none (--no-auth: its one caller sees all)")
        ring = None
    origins = checked_origins(cors_origins)
    given = prune_after if prune_after is not None else services.environ.get(RETENTION_VARIABLE) or None
    retention = parse_retention(given, "--prune-after" if prune_after is not None else RETENTION_VARIABLE) \
        if given is not None else None
    if not structlog.is_configured():  # served by another ASGI server (uvicorn --factory): logs as `diagrama api`'s
        configure_logs(None, "info", plain)
    runs = Path(runs_dir if runs_dir is not None else os.environ.get("DIAGRAMA_RUNS_DIR", "runs"))
    limits: RateLimits = LocalRateLimits()
    chosen: Backend
    run_store: Any
    export = otel_export(otel, services, celery=backend == "celery")  # an observer before the backend's relay
    if backend == "celery":
        from engine.runs.store import default_store_url
        from engine.web.service.celery import CeleryBackend

        url = store_url or os.environ.get("DIAGRAMA_STORE") or default_store_url(runs)
        celery = CeleryBackend(root, runs, broker=broker, store_url=url, offline=offline,
                               durable=Durable.open(url, runs, root))
        limits, chosen, run_store = celery.limits, celery, celery.store
    elif backend == "local":
        run_store = _store(runs, store_url)
        chosen = LocalBackend(root, runs, services, store=run_store, durable=Durable.open(store_url, runs, root))
    else:
        raise UsageError(f"the backend is local or celery, not {backend!r}")
    tenants = Tenants(open_owners(chosen.durable.store.url) if ring is not None else None, secured=ring is not None)
    api = RobotsApi(root, Robots(root, registry or default_registry(), data_roots, drafts=drafts), chosen, plain,
                    secured=ring is not None, tenants=tenants,
                    shown=Shown.of(root, runs, chosen.durable.store.where, data_roots))

    around = AroundRuns.build(root, chosen, run_store, services.environ, callback_secret=callback_secret,
                              callback_hosts=callback_hosts, export=export,
                              tenants=api.tenants)  # each key lists its own runs
    pruner = Pruner(chosen.durable, retention, run_store) if retention is not None else None
    claims = _trigger_claims(run_store)  # a tick or a delivery starts one run across processes sharing the store
    api.hooks = Webhooks(api, claims, services.environ)
    scheduler = Scheduler(api.robots, chosen, claims, plain)
    mcp = _mcp(api)  # the robots as MCP tools, behind the same Gate

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        pruning = asyncio.create_task(pruner.run(), name="prune") if pruner is not None else None
        scheduling = asyncio.create_task(scheduler.run(), name="schedules")
        if resume_interrupted:  # a drained or killed server's runs go on here (each taken over by one process)
            await resume_left(api)
        async with mcp.running() if mcp is not None else contextlib.nullcontext():
            with reload_on_hangup(ring):  # SIGHUP reads the keys file again
                yield
        if pruning is not None:
            pruning.cancel()
            await asyncio.gather(pruning, return_exceptions=True)
        scheduling.cancel()
        await asyncio.gather(scheduling, return_exceptions=True)
        await scheduler.close()
        await chosen.close()  # a local run still going is interrupted (its trace says so)
        await around.close()
        tenants.close()

    routes: list[BaseRoute] = [*api.routes(around), *([Route("/mcp", mcp)] if mcp is not None else [])]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=exception_handlers())
    app.state.api = api
    app.state.backend = chosen
    app.state.pruner = pruner
    app.state.scheduler = scheduler
    public = frozenset(op.path for op in OPERATIONS if op.public)
    gate = Gate(app, ring, limits, rpm, public)
    return RequestLog(Cors(gate, origins) if origins else gate, "diagrama.api")
