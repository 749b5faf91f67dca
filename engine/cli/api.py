"""`diagrama api` and `diagrama api-key`: the folder's robots as an HTTP service (the web extra), and its keys; the
`--log-format`/`--log-level` options every service command shares."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from engine.cli import PATH, blocks_registry, console, fail, require_extra, runs_folder


def log_options(level: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--log-format and --log-level, which every service command takes (`level`: its default)."""

    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option("--log-level", default=level, show_default=True,
                               help="debug, info, warning or error")(command)
        return click.option("--log-format", default=None,
                            help="console or json (default: json when stderr is not a terminal)")(command)

    return add


def start_logs(log_format: str | None, log_level: str, secrets: list[str] | None = None) -> None:
    """Configure a service's logs (engine.runs.service_logs), or exit 2 naming the bad option."""
    from engine.errors import UsageError
    from engine.runs.service_logs import LOG_FORMATS, LOG_LEVELS, configure

    if log_format is not None and log_format not in LOG_FORMATS:
        raise fail(UsageError(f"--log-format is console or json, not {log_format!r}"))
    if log_level.lower() not in LOG_LEVELS:
        raise fail(UsageError(f"--log-level is one of {', '.join(LOG_LEVELS)}, not {log_level!r}"))
    configure(log_format, log_level.lower(), secrets or ())  # type: ignore[arg-type]  # checked just above


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _finite(_context: click.Context, _param: click.Parameter, value: float) -> float:
    # FloatRange(min=0) takes `nan` (it compares false with 0) and `inf`: a limit that never refuses a request.
    if not math.isfinite(value):
        raise click.BadParameter(f"a finite number of requests a minute per key (0: no limit), not {value}")
    return value


@click.command()
@click.argument("folder", type=PATH, default=Path("diagrams"), required=False)
@click.option("--port", type=int, default=8080, show_default=True, help="port on the host")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="127.0.0.1 keeps it local; 0.0.0.0 serves the network")
@click.option("--keys-file", type=PATH, help="keys' digests, `ID sha256:HEX [rpm=N] [admin]` a line (`diagrama "
              "api-key ID`); read again when it changes, and on SIGHUP")
@click.option("--admin-key", "admin_key", multiple=True, metavar="ID",
              help="a key (by its id) that sees every caller's runs and sessions (repeatable; also $DIAGRAMA_API_ADMINS)")
@click.option("--cors-origin", "cors_origin", multiple=True, metavar="ORIGIN",
              help="an origin whose pages may call the API, as https://app.example.com (repeatable)")
@click.option("--no-auth", is_flag=True, help="serve without keys: loopback addresses only")
@click.option("--rpm", type=click.FloatRange(min=0), default=600, show_default=True, callback=_finite,
              help="requests a minute per key (0: no limit)")
@click.option("--offline", is_flag=True, help="answer request blocks with the simulator")
@click.option("--backend", default="local", show_default=True, help="local (runs in this process) or celery (on workers)")
@click.option("--broker", help="Celery broker URL (default redis://127.0.0.1:6379/0)")
@click.option("--store", "store_url", help="SQLAlchemy URL of the run store, which also keeps the checkpoints (waits, "
              "resumes, sessions)")
@click.option("--runs-dir", type=PATH)
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides the diagrams' own that they may read files from (repeatable)")
@click.option("--prune-after", help="delete finished runs' checkpoints this long after they end (s, m, h, d: 7d), "
              "checked hourly; default $DIAGRAMA_PRUNE_AFTER, else kept")
@click.option("--drain-timeout", type=click.FloatRange(min=0), default=30, show_default=True,
              help="on SIGTERM: seconds runs in flight have to end (durable runs stop at their next step and are "
                   "resumable); then what is left is interrupted")
@click.option("--resume-interrupted", is_flag=True,
              help="on start, resume the folder's interrupted durable runs (a drained or killed server's)")
@click.option("--callback-secret", help="the secret callbacks are signed with (HMAC-SHA256; at least 16 characters); "
              "default $DIAGRAMA_CALLBACK_SECRET, which keeps it out of the process list. Without one, a run request's "
              "callback_url is refused")
@click.option("--callback-host", multiple=True, metavar="HOST",
              help="a host a run's callback_url may name (as allowed_hosts: api.example.com, *.example.com, "
                   "localhost:8080; repeatable); default $DIAGRAMA_CALLBACK_HOSTS, comma-separated; none: no callbacks")
@click.option("--otel", is_flag=True, help="export each run as OpenTelemetry spans over OTLP (OTEL_EXPORTER_OTLP_* "
              "variables; or DIAGRAMA_OTEL=1); on Celery, start the workers with --otel")
@click.option("--drafts", is_flag=True, help="serve each robot's file as it is now, not its published version "
              "(development)")
@log_options("info")
def api(folder: Path, port: int, host: str, keys_file: Path | None, admin_key: tuple[str, ...],
        cors_origin: tuple[str, ...], no_auth: bool, rpm: float, offline: bool, backend: str, broker: str | None,
        store_url: str | None, runs_dir: Path | None, data_root: tuple[Path, ...],
        prune_after: str | None, drain_timeout: float, resume_interrupted: bool, log_format: str | None,
        log_level: str, callback_secret: str | None, callback_host: tuple[str, ...],
        otel: bool, drafts: bool) -> None:
    """Serve the folder's robots over HTTP: list them, run them, follow their events (SSE); bearer keys required."""
    for module in ("starlette", "uvicorn", "sse_starlette"):
        require_extra(module, "web", "api")
    if backend == "celery":
        require_extra("celery", "celery", "api --backend celery")
        require_extra("sqlalchemy", "celery", "api --backend celery")
    from engine.runs.otel import otel_wanted

    if otel_wanted(otel) and backend != "celery":  # on Celery the workers export the runs
        require_extra("opentelemetry.sdk", "otel", "api --otel")
        require_extra("opentelemetry.exporter.otlp.proto.http", "otel", "api --otel")
    from engine.errors import DiagramaError, UsageError
    from engine.runs.service_logs import log
    from engine.runtime.context import Services
    from engine.web.api import create_app
    from engine.web.service.keys import keys_from_environ

    if no_auth and not _loopback(host):
        raise fail(UsageError(f"--no-auth serves only a loopback address (127.0.0.1, ::1, localhost), not {host}; "
                              "give keys to serve the network"))
    services = Services(offline=offline)
    try:
        _keys, plain = keys_from_environ(services.environ)
        start_logs(log_format, log_level, plain)
        app = create_app(folder, runs_dir=runs_folder(runs_dir), registry=blocks_registry(), services=services,
                         keys_file=keys_file, no_auth=no_auth, rpm=rpm or None, offline=offline,
                         backend=backend,  # type: ignore[arg-type]  # create_app refuses another name
                         broker=broker, store_url=store_url, data_roots=tuple(data_root or ()),
                         prune_after=prune_after, callback_secret=callback_secret,
                         callback_hosts=callback_host or None, otel=otel, resume_interrupted=resume_interrupted,
                         admin_keys=admin_key,
                         cors_origins=cors_origin, drafts=drafts)
    except DiagramaError as exc:
        raise fail(exc) from None
    from engine.runs.prune import RETENTION_VARIABLE

    log("diagrama.api").info("serving", url=f"http://{host}:{port}/v1/robots", folder=str(folder), backend=backend,
                             auth="none" if no_auth else "keys", offline=offline,
                             prune_after=prune_after or services.environ.get(RETENTION_VARIABLE) or None)
    _warn_unpublished(folder, drafts)
    from engine.web.serving import serve

    serve(app, host=host, port=port, drain_timeout=drain_timeout)


def _warn_unpublished(folder: Path, drafts: bool) -> None:
    """Say which robots are served as their files are because they were never published (edits go live on save)."""
    from engine.runs.published import live_version
    from engine.runs.service_logs import log

    names = sorted(path.stem for path in folder.glob("*.yaml") if not path.name.endswith(".scenario.yaml"))
    never = [] if drafts else [name for name in names if live_version(folder / f"{name}.yaml") is None]
    if never:
        log("diagrama.api").warning("never published: served as their files are (an edit goes live when saved); "
                                    "`diagrama publish FILE` pins one", robots=never)


@click.command("api-key")
@click.argument("key_id")
def api_key(key_id: str) -> None:
    """Make an API key: prints the key (give it to the caller; it is not kept) and its keys-file line."""
    from engine.errors import UsageError
    from engine.web.service.keys import new_key

    try:
        key, line = new_key(key_id)
    except UsageError as exc:
        raise fail(exc) from None
    out = console()
    out.print(f"key: {key}", markup=False)
    out.print(f"keys-file line: {line}", markup=False)
