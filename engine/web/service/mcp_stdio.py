"""`diagrama mcp DIR`: the folder's robots as MCP tools over stdio, for one local client (Claude Desktop, an IDE, an
agent). The runs go through the API's local backend (engine.web.service.runs: each a turn, durable where the diagram
is, recorded in the run store where the batch extra is), with no key: stdio's one user sees every run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp.server.stdio import stdio_server

from engine.compile.block import BlockRegistry
from engine.errors import UsageError
from engine.runtime.context import Services
from engine.web.service.app import RobotsApi
from engine.web.service.durable import Durable
from engine.web.service.mcp_robots import RobotsMcp
from engine.web.service.robots import Robots
from engine.web.service.runs import LocalBackend

__all__ = ["serve_stdio"]


def _run_store(runs_dir: Path, url: str | None) -> Any:
    try:
        from engine.runs.store import open_store
    except ImportError:  # no batch extra: the traces are the record
        return None
    return open_store(url, runs_dir)


def serve_stdio(folder: Path, *, registry: BlockRegistry, services: Services, runs_dir: Path,
                store_url: str | None = None, data_roots: tuple[Path, ...] = ()) -> None:
    """Serve `folder`'s robots over this process's stdin and stdout until the client closes them; UsageError when
    `folder` is no folder."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder of diagrams")
    root = folder.resolve()
    asyncio.run(_serve(Robots(root, registry, data_roots), services, runs_dir, store_url))


async def _serve(robots: Robots, services: Services, runs_dir: Path, store_url: str | None) -> None:
    root = robots.folder
    backend = LocalBackend(root, runs_dir, services, store=_run_store(runs_dir, store_url),
                           durable=Durable.open(store_url, runs_dir, root))
    served = RobotsMcp(RobotsApi(root, robots, backend, [], secured=False))
    try:
        async with stdio_server() as (read, write):
            await served.server.run(read, write, served.server.create_initialization_options())
    finally:
        await backend.close()  # a run still going is interrupted (durable ones resume with `diagrama resume`)
