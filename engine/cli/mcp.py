"""`diagrama mcp DIR`: the folder's robots as MCP tools over stdio (the mcp extra); engine.web.service.mcp_stdio
serves them."""

from __future__ import annotations

import os
from pathlib import Path

import click

from engine.cli import PATH, blocks_registry, fail, require_extra


@click.command()
@click.argument("folder", type=PATH, default=Path("diagrams"), required=False)
@click.option("--offline", is_flag=True, help="answer request blocks with the simulator")
@click.option("--runs-dir", type=PATH, help="where runs' traces go (default $DIAGRAMA_RUNS_DIR, else `runs` beside "
              "the folder: a client may start this command in any folder)")
@click.option("--store", "store_url", help="SQLAlchemy URL of the run store, which also keeps the checkpoints (waits, "
              "resumes)")
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides the diagrams' own that they may read files from (repeatable)")
def mcp(folder: Path, offline: bool, runs_dir: Path | None, store_url: str | None,
        data_root: tuple[Path, ...]) -> None:
    """Serve the folder's robots as MCP tools over stdio (Claude Desktop, IDEs, agents): each robot a tool."""
    require_extra("mcp", "mcp", "mcp")
    from engine.errors import DiagramaError
    from engine.runs.service_logs import configure
    from engine.runtime.context import Services
    from engine.web.service.mcp_stdio import serve_stdio

    configure(None, "warning")  # stderr: stdout is the protocol's
    runs = runs_dir or Path(os.environ.get("DIAGRAMA_RUNS_DIR") or folder.resolve().parent / "runs")
    try:
        serve_stdio(folder, registry=blocks_registry(), services=Services(offline=offline), runs_dir=runs,
                    store_url=store_url, data_roots=data_root)
    except DiagramaError as exc:
        raise fail(exc) from None
