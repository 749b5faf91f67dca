"""`diagrama serve`: the studio over a folder of diagrams, on a local port (the web extra)."""

from __future__ import annotations

from pathlib import Path

import click

from engine.cli import PATH, blocks_registry, console, fail, require_extra, runs_folder
from engine.cli.api import log_options, start_logs


@click.command()
@click.argument("folder", type=PATH, default=Path("diagrams"), required=False)
@click.option("--port", type=int, default=8765, show_default=True, help="port on the host")
@click.option("--host", default="127.0.0.1", show_default=True, help="127.0.0.1 keeps it local; 0.0.0.0 shares it")
@click.option("--runs-dir", type=PATH)
@click.option("--read-only", is_flag=True, help="view and run only; no edit is written")
@click.option("--allow-online", is_flag=True,
              help="let the page start runs against the real vendors with this machine's keys")
@click.option("--allowed-host", multiple=True, help="another Host name the studio answers for (with --host 0.0.0.0)")
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides the diagrams' own that they may read files from (repeatable)")
@log_options("warning")
def serve(folder: Path, port: int, host: str, runs_dir: Path | None, read_only: bool, allow_online: bool,
          allowed_host: tuple[str, ...], data_root: tuple[Path, ...], log_format: str | None, log_level: str) -> None:
    """The studio: build, edit, run and debug the folder's diagrams in the browser; the YAML files stay the source."""
    for module in ("starlette", "uvicorn", "ruamel.yaml"):
        require_extra(module, "web", "serve")
    import uvicorn
    from rich.markup import escape

    from engine.errors import UsageError
    from engine.runs.service_logs import run_log_observer
    from engine.runtime.context import Services
    from engine.web.app import create_app
    from engine.web.service.gate import RequestLog

    if not folder.is_dir():
        raise fail(UsageError(f"{folder} is not a folder of diagrams"))
    start_logs(log_format, log_level)
    services = Services()
    services.run_observers.append(run_log_observer)  # a `run` line as each of the page's runs ends
    web = create_app(folder, runs_folder(runs_dir), blocks_registry(), services, read_only=read_only,
                     allow_online=allow_online, host=host, port=port, extra_hosts=tuple(allowed_host or ()),
                     data_roots=tuple(data_root or ()))
    mode = "read-only" if read_only else "editing"
    online = "runs from the page may go online" if allow_online else "runs from the page are offline"
    console(stderr=True).print(f"diagrama studio: {escape(str(folder))} on http://{host}:{port}/ ({mode}; {online}; "
                               "Ctrl-C stops)")
    uvicorn.run(RequestLog(web, "diagrama.studio"), host=host, port=port, log_config=None, access_log=False)
