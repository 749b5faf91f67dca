"""`diagrama serve`: the studio over a folder of diagrams, on a local port (the web extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli import blocks_registry, console, fail, require_extra, runs_folder


def serve(
    folder: Annotated[Path, typer.Argument(help="folder of diagrams")] = Path("diagrams"),
    port: Annotated[int, typer.Option("--port", help="port on the host")] = 8765,
    host: Annotated[str, typer.Option("--host", help="127.0.0.1 keeps it local; 0.0.0.0 shares it")] = "127.0.0.1",
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """A local web view of a folder of diagrams and their runs (read-only over the YAML)."""
    for module in ("starlette", "uvicorn", "ruamel.yaml"):
        require_extra(module, "web", "serve")
    import uvicorn
    from rich.markup import escape

    from engine.errors import UsageError
    from engine.web.app import create_app

    if not folder.is_dir():
        raise fail(UsageError(f"{folder} is not a folder of diagrams"))
    web = create_app(folder, runs_folder(runs_dir), blocks_registry())
    console(stderr=True).print(f"diagrama: serving {escape(str(folder))} on http://{host}:{port}/ (Ctrl-C stops)")
    uvicorn.run(web, host=host, port=port, log_level="warning")
