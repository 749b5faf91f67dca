"""`diagrama api --otel`: each run the server runs is exported as OpenTelemetry spans to a real OTLP/HTTP endpoint on
a loopback port, joined to its trace file by the trace id; the last spans go out when the server stops."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.runtime.trace import read_events as read_trace
from tests.api.conftest import AUTH, Served
from tests.otel.test_otel_export import _Collector, collector

__all__ = ["collector"]  # the fixture, imported for this module's tests


def test_each_run_of_the_server_is_exported_as_spans(make_app: Callable[..., Any], serve: Callable[..., Served],
                                                     collector: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "robots")
    served = serve(make_app(otel=True))
    ran = [httpx.post(f"{served.url}/v1/robots/{robot}/runs", json=body, headers=AUTH, timeout=30).json()
           for robot, body in (("counter", {"inputs": {"times": 2}}), ("echoer", {}))]
    served.stop()  # the server's shutdown sends what the export still holds
    spans: dict[str, list[str]] = {}
    services: set[str] = set()
    for path, _content_type, body in _Collector.received:
        assert path == "/v1/traces"
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.setdefault(span.trace_id.hex(), []).append(span.name)
    assert services == {"robots"}
    by_run = {}
    for run in ran:
        header = read_trace(tmp_path / "runs" / run["run_id"] / "trace.jsonl")[0]
        by_run[run["robot"]] = sorted(spans[header["otel_trace_id"]])
    assert by_run["counter"] == sorted(["run counter", "start", "count", "count", "greet"])
    assert by_run["echoer"] == sorted(["run echoer", "start", "keep"])
