"""`diagrama serve`: the studio over a folder of diagrams, on a local port (the web extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli import blocks_registry, console, fail, require_extra, runs_folder
from engine.cli.api import LogFormatOption, LogLevelOption, start_logs


def serve(
    folder: Annotated[Path, typer.Argument(help="folder of diagrams")] = Path("diagrams"),
    port: Annotated[int, typer.Option("--port", help="port on the host")] = 8765,
    host: Annotated[str, typer.Option("--host", help="127.0.0.1 keeps it local; 0.0.0.0 shares it")] = "127.0.0.1",
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="view and run only; no edit is written")] = False,
    allow_online: Annotated[bool, typer.Option(
        "--allow-online", help="let the page start runs against the real vendors with this machine's keys")] = False,
    allowed_host: Annotated[list[str] | None, typer.Option(
        "--allowed-host", help="another Host name the studio answers for (with --host 0.0.0.0)")] = None,
    data_root: Annotated[list[Path] | None, typer.Option(
        "--data-root", help="a folder besides the diagrams' own that they may read files from (repeatable)")] = None,
    log_format: LogFormatOption = None,
    log_level: LogLevelOption = "warning",
) -> None:
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
