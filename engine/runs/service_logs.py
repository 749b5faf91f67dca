"""Logs of the long-running services (`diagrama api`, `diagrama serve`, the Celery worker): structlog, one line per
request and per run, as console text or JSON lines, keys scrubbed from every line.

This module is the global-state department for those logs (structlog's own advice): `configure` is called once, by
the command that starts a service, and sets structlog's chain and the standard library's root handler, so that
uvicorn's and Celery's own lines come out in the same format. Runs' traces are not logs and are not touched here.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, Literal, TextIO

import orjson
import structlog

from engine.format.redact import Redactor
from engine.runtime.context import RunObserver, Services
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "configure", "default_format", "log", "run_log_observer"]

LOG_FORMATS = ("console", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")
LogFormat = Literal["console", "json"]


def default_format() -> LogFormat:
    """JSON lines for a log collector (stderr is not a terminal), readable lines for a person at one."""
    return "console" if sys.stderr.isatty() else "json"


class _Scrubbed:
    """The renderer, then the redactor over the whole rendered line: a key anywhere in it (a value, a traceback,
    a foreign library's message) is replaced, whichever field carried it."""

    def __init__(self, render: Any, redactor: Redactor) -> None:
        self._render = render
        self._redactor = redactor

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> str:
        return self._redactor.text(str(self._render(logger, method, event)))


def configure(format: LogFormat | None = None, level: str = "info", secrets: Iterable[str] = (),
              stream: TextIO | None = None) -> None:
    """Send structlog's and the standard library's records to `stream` (stderr) as `format` (default:
    `default_format()`), at `level` and above; `secrets` (an API's keys) are scrubbed besides the environment's."""
    chosen = format or default_format()
    number = logging.getLevelNamesMapping()[level.upper()]
    out = stream or sys.stderr
    redactor = Redactor([*Services().secrets(), *secrets])
    shared: list[Any] = [structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True)]
    if chosen == "json":
        shared.append(structlog.processors.format_exc_info)
        renderer: Any = structlog.processors.JSONRenderer(serializer=_json)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
    scrubbed = _Scrubbed(renderer, redactor)
    # Our own lines go straight to the stream (a line per request must cost microseconds, not the standard library's
    # handler chain); other libraries' records come through the root logger's handler, rendered the same way.
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, *shared, scrubbed],
        logger_factory=structlog.WriteLoggerFactory(file=out),
        wrapper_class=structlog.make_filtering_bound_logger(number),
        cache_logger_on_first_use=False,  # configure may run again (tests, a second command in one process)
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, scrubbed],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_diagrama_service", False):
            root.removeHandler(old)
    handler._diagrama_service = True  # type: ignore[attr-defined]  # marks ours, so a second configure replaces it
    root.addHandler(handler)
    root.setLevel(number)
    # uvicorn's access lines repeat our request lines without the key id or duration: ours stand for them; httpx's
    # line per vendor call (a run's own requests are in its trace) only below info.
    logging.getLogger("uvicorn.access").disabled = True
    # uvicorn's own logging config (one a host app or an earlier server applied) sends its lines to handlers of its
    # own that never reach the redactor: they go through ours instead.
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    logging.getLogger("httpx").setLevel(max(number, logging.WARNING) if number > logging.DEBUG else number)


def _json(event: Any, **_: Any) -> str:
    return orjson.dumps(event, default=str).decode()


def log(name: str) -> Any:
    """A structlog logger for one service (`diagrama.api`, `diagrama.studio`, `diagrama.runs`), its name in each line."""
    return structlog.get_logger().bind(logger=name)


def run_log_observer(diagram: Diagram, redactor: Redactor) -> RunObserver:
    """A run observer (Services.run_observers) that logs one line when the run finishes: its id, diagram, status,
    steps and duration. The studio's and the worker's runs are logged with it; `robot` is the file's stem, as
    `diagrama api` names its robots."""
    logger = log("diagrama.runs")

    def observe(event: dict[str, Any]) -> None:
        if event.get("event") == Event.RUN_FINISHED:
            logger.info("run", run_id=event.get("run_id"), robot=diagram.path.stem, status=event.get("status"),
                        steps=event.get("steps"), duration_ms=event.get("duration_ms"))

    return observe
