"""Service logs: JSON or console lines on stderr, keys scrubbed from every line (foreign libraries' too), a `run` line
per run for the studio and the worker, a `request` line per request for the studio."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
import structlog
from structlog.testing import capture_logs

from engine import execute
from engine.compile.block import BlockRegistry
from engine.compile.loader import load_diagram
from engine.runs.service_logs import configure, log, run_log_observer
from engine.runtime.context import Services
from engine.web.service.gate import RequestLog
from tests.api.conftest import COUNTER, KEY


@pytest.fixture
def stderr() -> Iterator[io.StringIO]:
    """A stream for the service logs; structlog and the root logger put back afterwards."""
    captured = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield captured
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def test_json_lines_carry_the_fields_and_never_a_key(stderr: io.StringIO) -> None:
    configure("json", "info", secrets=[KEY], stream=stderr)
    log("diagrama.api").info("request", method="GET", path="/v1/robots", status=200, key_id="ci", note=f"Bearer {KEY}")
    logging.getLogger("uvicorn.error").warning("a foreign line quoting %s", KEY)
    log("diagrama.api").debug("below the level")
    lines = [orjson.loads(line) for line in stderr.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["request", "a foreign line quoting [REDACTED]"]
    assert lines[0]["key_id"] == "ci" and lines[0]["note"] == "Bearer [REDACTED]" and lines[0]["level"] == "info"
    assert lines[1]["logger"] == "uvicorn.error" and "timestamp" in lines[1]
    assert KEY not in stderr.getvalue()


def test_console_lines_for_a_person(stderr: io.StringIO) -> None:
    configure("console", "debug", stream=stderr)
    log("diagrama.worker").debug("run", run_id="r1", status="succeeded")
    text = stderr.getvalue()
    assert "run" in text and "run_id=r1" in text and not text.lstrip().startswith("{")


def test_each_run_of_the_studio_or_a_worker_logs_one_run_line(tmp_path: Path, registry: BlockRegistry) -> None:
    (tmp_path / "count_robot.yaml").write_text(COUNTER.lstrip())  # a robot is named by its file (the API's name)
    diagram = load_diagram(tmp_path / "count_robot.yaml", registry)
    services = Services(environ={})
    services.run_observers.append(run_log_observer)
    with capture_logs() as logs:
        result = asyncio.run(execute(diagram, {"times": 2}, runs_dir=tmp_path / "runs", services=services))
    assert [(line["event"], line["run_id"], line["robot"], line["status"], line["steps"]) for line in logs] == [
        ("run", result.run_id, "count_robot", "succeeded", 4)]


def test_the_studio_logs_one_line_per_request(tmp_path: Path, registry: BlockRegistry) -> None:
    from engine.web.app import create_app

    studio = RequestLog(create_app(tmp_path, tmp_path / "runs", registry, token="t"), "diagrama.studio")

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=studio), base_url="http://127.0.0.1:8765") as c:
            return await c.get("/api/diagrams?secret=1", headers={"X-Request-ID": "req-7"})

    with capture_logs() as logs:
        answered = asyncio.run(go())
    assert answered.headers["x-request-id"] == "req-7"
    [line] = logs
    assert line["event"] == "request" and line["path"] == "/api/diagrams" and line["status"] == answered.status_code
    assert line["request_id"] == "req-7" and "secret" not in repr(line) and line["duration_ms"] >= 0
