"""OpenTelemetry export: the order agent's span tree with GenAI attributes, contents by level, OTLP/HTTP out."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from blocks.registry import registry as block_registry
from engine import MessageLevel, Services, execute, read_events
from engine.compile.loader import load_diagram
from engine.runs.otel import OtelExport

pytestmark = pytest.mark.slow  # a collector that is down or hangs, waited for

DIAGRAMS = Path(__file__).resolve().parents[2] / "diagrams"
KEY = "sk-ant-k9x7q"  # short: the simulator picks tools by the words of the question, and a key is one more


def exported(diagram: str, tmp_path: Path, level: MessageLevel | None = None, **inputs: Any) -> tuple[Any, list[ReadableSpan]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    services = Services(offline=True, environ={"ANTHROPIC_API_KEY": KEY})
    services.run_observers.append(OtelExport(provider))
    loaded = load_diagram(DIAGRAMS / diagram, block_registry())
    result = asyncio.run(execute(loaded, inputs, runs_dir=tmp_path, services=services, message_level=level))
    return result, list(spans.get_finished_spans())


def tree(spans: list[ReadableSpan]) -> list[str]:
    """Each span as an indented name, children in start order."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    lines: list[str] = []

    def walk(span: ReadableSpan, depth: int) -> None:
        lines.append("  " * depth + span.name)
        for child in sorted(children.get(span.context.span_id, []), key=lambda s: s.start_time or 0):
            walk(child, depth + 1)

    for root in children[None]:
        walk(root, 0)
    return lines


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def test_order_agent_exports_a_span_tree_with_genai_attributes(tmp_path: Path) -> None:
    result, spans = exported("order_agent.yaml", tmp_path)
    assert result.status == "succeeded"
    assert tree(spans) == [
        "run order-agent",
        "  start",
        "  ask",
        "    chat claude-sonnet-5-5",
        "  dispatch",
        "    execute_tool get_order_status",
        "  ask",
        "    chat claude-sonnet-5-5",
        "  done",
    ]
    assert {span.context.trace_id for span in spans} == {spans[0].context.trace_id}
    first, second = named(spans, "chat claude-sonnet-5-5")
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == "claude-sonnet-5-5"
    assert attributes["gen_ai.request.max_tokens"] == 512
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert attributes["gen_ai.usage.input_tokens"] > 0 and attributes["gen_ai.usage.output_tokens"] > 0
    assert dict(second.attributes or {})["gen_ai.response.finish_reasons"] == ("end_turn",)
    [tool] = named(spans, "execute_tool get_order_status")
    assert dict(tool.attributes or {})["gen_ai.operation.name"] == "execute_tool"
    assert dict(tool.attributes or {})["gen_ai.tool.name"] == "get_order_status"
    # Contents are Detailed's alone: a Debug run exports none.
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg"))
                   for span in spans for key in (span.attributes or {}))
    # The JSONL run header names the exported trace, so the two join.
    [root] = named(spans, "run order-agent")
    header = read_events(result.trace)[0]
    assert header["event"] == "run_started"
    assert header["otel_trace_id"] == f"{root.context.trace_id:032x}"
    assert dict(root.attributes or {})["diagrama.run.id"] == result.run_id
    # claude-sonnet-5-5 is priced (the shipped table: 2 USD in, 10 out per million tokens): each chat has its cost and
    # the run their sum.
    costs = []
    for chat in (first, second):
        said = dict(chat.attributes or {})
        assert "diagrama.cost_unknown" not in said
        costs.append(said["diagrama.cost_usd"])
        assert said["diagrama.cost_usd"] == pytest.approx(
            (said["gen_ai.usage.input_tokens"] * 2 + said["gen_ai.usage.output_tokens"] * 10) / 1e6)
    assert dict(root.attributes or {})["diagrama.cost_unknown_steps"] == 0
    assert dict(root.attributes or {})["diagrama.cost_usd"] == pytest.approx(sum(costs))


def test_a_chat_span_has_every_usage_kind_and_its_cost() -> None:
    from engine.runs.otel_genai import chat_attributes

    attributes = chat_attributes({
        "vendor": "anthropic", "model": "claude-sonnet-4-5", "finish": "complete", "cost": {"usd": 0.0123},
        "usage": {"input_tokens": 4620, "output_tokens": 30, "thinking_tokens": 12, "cache_write_tokens": 1200,
                  "cache_read_tokens": 3400}})
    assert {key: value for key, value in attributes.items() if key.startswith(("gen_ai.usage", "diagrama.cost"))} == {
        "gen_ai.usage.input_tokens": 4620, "gen_ai.usage.output_tokens": 30, "gen_ai.usage.reasoning_tokens": 12,
        "gen_ai.usage.cache_creation.input_tokens": 1200, "gen_ai.usage.cache_read.input_tokens": 3400,
        "diagrama.cost_usd": 0.0123}


def test_a_model_with_no_price_says_its_cost_is_unknown_never_zero() -> None:
    from engine.runs.otel_genai import chat_attributes, run_cost_attributes

    # gemini-3.5-flash: not in the shipped table (no price from a source that could be checked): its cost is null.
    chat = chat_attributes({"vendor": "gemini", "model": "gemini-3.5-flash", "finish": "complete", "cost": None,
                            "usage": {"input_tokens": 281, "output_tokens": 10}})
    assert chat["diagrama.cost_unknown"] is True and "diagrama.cost_usd" not in chat
    run = run_cost_attributes({"usd": None, "known_usd": 0.0, "requests": 2, "unknown_steps": 2})
    assert run == {"diagrama.cost_unknown_steps": 2}  # no total


def test_detailed_exports_message_contents_and_never_a_key(tmp_path: Path) -> None:
    _, spans = exported("order_agent.yaml", tmp_path, MessageLevel.DETAILED, question=f"Onde está o meu pedido 42? {KEY}")
    chat = dict(named(spans, "chat claude-sonnet-5-5")[0].attributes or {})
    assert "Onde está o meu pedido 42?" in chat["gen_ai.input.messages"]
    assert "support agent" in chat["gen_ai.system_instructions"]
    assert "get_order_status" in chat["gen_ai.output.messages"]
    tool = dict(named(spans, "execute_tool get_order_status")[0].attributes or {})
    assert tool["gen_ai.tool.call.arguments"] == '{"order_id":42}'
    assert "gen_ai.tool.call.result" in tool
    everything = repr([dict(span.attributes or {}) for span in spans])
    assert KEY not in everything and "[REDACTED]" in everything


def test_a_blocks_own_detailed_exports_its_contents_in_a_debug_run(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "diagrams"
    shutil.copytree(DIAGRAMS, folder, ignore=shutil.ignore_patterns("*.embeddings.json"))
    path = folder / "order_agent.yaml"
    path.write_text(path.read_text().replace("    type: ClaudeRequest\n", "    type: ClaudeRequest\n"
                                             "    message_level: Detailed\n", 1))
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    services = Services(offline=True, environ={})
    services.run_observers.append(OtelExport(provider))
    loaded = load_diagram(path, block_registry())
    assert loaded.message_level is MessageLevel.DEBUG and loaded.blocks["ask"].message_level is MessageLevel.DETAILED
    asyncio.run(execute(loaded, {}, runs_dir=tmp_path / "runs", services=services))
    finished = list(spans.get_finished_spans())
    assert all("gen_ai.input.messages" in dict(span.attributes or {}) for span in named(finished, "chat claude-sonnet-5-5"))
    [tool] = named(finished, "execute_tool get_order_status")  # dispatch runs at Debug: no contents
    assert "gen_ai.tool.call.arguments" not in dict(tool.attributes or {})


def test_loop_passes_nest_their_steps(tmp_path: Path) -> None:
    _, spans = exported("classify_messages.yaml", tmp_path)
    lines = tree(spans)
    assert lines[:8] == ["run classify-messages", "  start", "  loop each_message", "    each_message",
                         "    each_message pass 0", "      classify", "        chat llama-3.3-70b-versatile",
                         "    each_message"]
    assert lines[-1] == "  report"
    classify = dict(named(spans, "chat llama-3.3-70b-versatile")[0].attributes or {})
    assert classify["gen_ai.provider.name"] == "groq" and classify["gen_ai.request.temperature"] == 0


def test_errors_are_recorded_with_their_type(tmp_path: Path) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    services = Services(offline=False, environ={})  # online without a key: the request block fails
    services.run_observers.append(OtelExport(provider))
    loaded = load_diagram(DIAGRAMS / "order_agent.yaml", block_registry())
    result = asyncio.run(execute(loaded, {}, runs_dir=tmp_path, services=services))
    assert result.path == ["start", "ask", "apologise"]  # handled
    finished = list(spans.get_finished_spans())
    [ask] = named(finished, "ask")
    assert dict(ask.attributes or {})["error.type"] == "missing_api_key"
    assert ask.status.status_code.name == "ERROR"
    [root] = named(finished, "run order-agent")
    assert root.status.status_code.name != "ERROR"  # the error was handled; the run succeeded


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        _Collector.received.append((self.path, self.headers.get("content-type", ""), body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    """A loopback OTLP/HTTP endpoint that records what it is sent."""
    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_run_otel_sends_otlp_http_to_the_configured_endpoint(tmp_path: Path, collector: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from engine.cli import app

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "shop-support")
    outcome = CliRunner().invoke(app, ["run", str(DIAGRAMS / "order_agent.yaml"), "--offline", "--otel", "--quiet",
                                       "--runs-dir", str(tmp_path), "--output", "json"])
    assert outcome.exit_code == 0, outcome.output
    assert _Collector.received, "nothing reached the collector"
    names: list[str] = []
    trace_ids: set[str] = set()
    services: set[str] = set()
    for path, content_type, body in _Collector.received:
        assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    names.append(span.name)
                    trace_ids.add(span.trace_id.hex())
    assert services == {"shop-support"}
    assert sorted(names) == sorted(["run order-agent", "start", "ask", "chat claude-sonnet-5-5", "dispatch",
                                    "execute_tool get_order_status", "ask", "chat claude-sonnet-5-5", "done"])
    [trace] = list(tmp_path.glob("*/trace.jsonl"))
    assert trace_ids == {read_events(trace)[0]["otel_trace_id"]}


def test_otel_without_the_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from engine.cli import app

    monkeypatch.setitem(__import__("sys").modules, "opentelemetry.sdk", None)
    monkeypatch.setenv("DIAGRAMA_OTEL", "1")
    outcome = CliRunner().invoke(app, ["run", str(DIAGRAMS / "greeting_counter.yaml"), "--runs-dir", str(tmp_path)])
    assert outcome.exit_code == 2
    assert "pip install 'diagrama[otel]'" in outcome.output


def test_subdiagram_steps_and_concurrent_passes_nest_under_the_step_that_ran_them(tmp_path: Path) -> None:
    result, spans = exported("triage_inbox.yaml", tmp_path)
    assert result.status == "succeeded", result.errors
    lines = tree(spans)
    assert lines[:4] == ["run triage-inbox", "  start", "  loop each_message", "    each_message"]
    assert lines[-1] == "  report"
    # Each pass under the concurrent Loop's step, its Subdiagram step in it, the child's steps under that.
    for index in range(3):
        at = lines.index(f"      each_message pass {index}")
        assert lines[at + 1:at + 5] == ["        classify", "          classify/start", "          classify/classify",
                                        "            chat llama-3.3-70b-versatile"]
    assert all(span.end_time is not None for span in spans)


HTTP_DIAGRAM = """
diagram: lookup
allowed_hosts: [api.shop.test]
secrets: [SHOP_API_TOKEN]
blocks:
  - id: start
    type: Start
    next: fetch
  - id: fetch
    type: HttpRequest
    with:
      url: https://api.shop.test/v1/orders/42
      query: {key: "{{ secret('SHOP_API_TOKEN') }}"}
      fail_on_status: false
"""


def test_an_http_request_is_an_http_client_span_its_url_scrubbed(tmp_path: Path) -> None:
    import httpx

    token = "tok-7Hq2xZ"
    answers = [httpx.Response(503, headers={"retry-after": "0"}), httpx.Response(404, json={"error": "no such order"})]

    async def no_wait(_seconds: float) -> None:
        await asyncio.sleep(0)

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    services = Services(offline=False, environ={"SHOP_API_TOKEN": token}, sleep=no_wait,
                        transports={"http": httpx.MockTransport(lambda _request: answers.pop(0))})
    services.run_observers.append(OtelExport(provider))
    path = tmp_path / "lookup.yaml"
    path.write_text(HTTP_DIAGRAM)
    result = asyncio.run(execute(load_diagram(path, block_registry()), {}, runs_dir=tmp_path / "runs",
                                 services=services, message_level=MessageLevel.DEBUG))
    assert result.status == "succeeded", result.errors
    finished = list(spans.get_finished_spans())
    assert tree(finished) == ["run lookup", "  start", "  fetch", "    GET"]
    [get] = named(finished, "GET")
    assert get.kind.name == "CLIENT"
    assert get.status.status_code.name == "ERROR"  # a 404 is a client span's error, though the block took it
    assert dict(get.attributes or {}) == {
        "http.request.method": "GET", "url.full": "https://api.shop.test/v1/orders/42?key=[REDACTED]",
        "http.response.status_code": 404, "server.address": "api.shop.test", "server.port": 443,
        "http.request.resend_count": 1, "error.type": "404"}
    assert token not in repr([dict(span.attributes or {}) for span in finished])


# -- a collector that is down or hangs does not hold the command up ---------------------------------------------


@pytest.fixture
def hanging_collector() -> Iterator[str]:
    """A loopback port that accepts connections and never answers."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for connection in accepted:
            connection.close()
        listener.close()


def _dead_port() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"  # closed again: connections are refused


@pytest.mark.parametrize("kind", ["down", "hanging"])
def test_a_down_or_hanging_collector_drops_the_spans_with_one_warning_and_does_not_hold_the_exit(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    import os
    import subprocess
    import sys

    endpoint = _dead_port() if kind == "down" else request.getfixturevalue("hanging_collector")
    environ = os.environ | {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
    # The exporter would retry for 30 s; the command waits a moment (EXIT_WAIT) and says what was dropped.
    outcome = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(DIAGRAMS / "greeting_counter.yaml"),
                              "--otel", "--quiet", "--runs-dir", str(tmp_path)], capture_output=True, text=True,
                             env=environ, timeout=25, check=False)
    assert outcome.returncode == 0, outcome.stderr
    warnings = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, outcome.stderr
    assert warnings[0].startswith("warning: ") and "OpenTelemetry spans dropped" in warnings[0]
    assert endpoint in warnings[0] and "Traceback" not in outcome.stderr
