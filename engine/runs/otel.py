"""OpenTelemetry export: each run as a tree of spans with the GenAI semantic conventions, sent over OTLP/HTTP.

The export hears the run's trace events (a run observer, see `Services.run_observers`), so
the spans say what the JSONL trace says and no more: a Release run exports its run span
alone, a Debug run a span per block step with `chat`, `execute_tool` and HTTP client spans
inside, and only a Detailed run exports message contents (scrubbed by the run's own redactor first).

    run <diagram>                       diagrama.run.id, diagrama.run.status
      <block id>                        diagrama.block.type, diagrama.block.status, error.type
        chat <model>                    gen_ai.* request, response and usage attributes
        execute_tool <tool>             gen_ai.tool.name, gen_ai.tool.call.id
        <METHOD>                        an HttpRequest's call: http.request.method, url.full, status code
      loop <loop id>                    the whole loop
        <loop id>                       each visit of the Loop block
        <loop id> pass N                each pass, its body blocks inside
      <Subdiagram block id>             a Subdiagram's step: its child's steps inside (`sub/ask`)
      <Loop id with concurrency>        its passes inside (`<loop id> pass N`), side by side

Events of a nested run (a child, a concurrent pass) carry their lane (engine.runtime.trace_lane):
each lane has its own block under way, under the span that started the lane.

The run header of the JSONL trace gets `otel_trace_id`, so a trace file and the exported
trace join. The SDK is imported only here, and only when `--otel` (or DIAGRAMA_OTEL=1)
asks for the export: `pip install 'diagrama[otel]'`.

The export never holds the command up: at the end it waits for the collector at most
EXIT_WAIT seconds (a collector that is down or hangs cannot delay the exit by its timeouts
and retries), and says in one warning line how many spans were dropped. The SDK's own log
lines (a retry a line) are kept quiet.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from engine.format.levels import MESSAGE_LEVELS, MessageLevel
from engine.runs.otel_genai import chat_attributes, content_attributes, run_cost_attributes, tool_attributes
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import Span, Tracer

    from engine.compile.diagram import Diagram
    from engine.format.redact import Redactor

__all__ = ["EXIT_WAIT", "OtelExport", "otel_wanted", "otlp_export"]

_SCOPE = "diagrama"
EXIT_WAIT = 0.5
"""Seconds a command waits, after its run, for the collector to take the last spans."""


def otel_wanted(flag: bool) -> bool:
    """`--otel` given, or DIAGRAMA_OTEL set to anything but empty, 0 or false."""
    return flag or os.environ.get("DIAGRAMA_OTEL", "").strip().lower() not in ("", "0", "false", "no")


def otlp_export() -> OtelExport:
    """The export `--otel` makes: a batch processor and the OTLP/HTTP protobuf exporter, both configured by the
    standard OTEL_EXPORTER_OTLP_* variables; the service is OTEL_SERVICE_NAME, or `diagrama`."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    for name in ("opentelemetry.exporter", "opentelemetry.sdk"):  # a failed export is our one warning line
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or "diagrama"})
    # Not shut down at exit by the SDK (which waits out the exporter's timeout and retries): `shutdown` bounds it.
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    exporter = _Counted(OTLPSpanExporter())

    class Counting(BatchSpanProcessor):
        """The batch processor, counting the spans that ended: what the collector should receive."""

        ended = 0

        def on_end(self, span: ReadableSpan) -> None:
            Counting.ended += 1
            super().on_end(span)

    processor = Counting(cast("SpanExporter", exporter))
    provider.add_span_processor(processor)
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") \
        or "http://localhost:4318"
    return OtelExport(provider, lambda: (Counting.ended, exporter.taken), endpoint)


class _Counted:
    """An exporter that counts the spans the collector took (SpanExporter's methods, passed on)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.taken = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result.name == "SUCCESS":
            self.taken += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class OtelExport:
    """A run observer factory (see `Services.run_observers`): one `_RunSpans` per run, all on one tracer provider."""

    def __init__(self, provider: TracerProvider, counts: Callable[[], tuple[int, int]] | None = None,
                 endpoint: str = "") -> None:
        self.provider = provider
        self._tracer = provider.get_tracer(_SCOPE)
        self._counts = counts
        """The spans ended so far, and those the collector took."""
        self._endpoint = endpoint

    def __call__(self, diagram: Diagram, redactor: Redactor) -> _RunSpans:
        return _RunSpans(self._tracer, diagram, redactor)

    def flush(self, wait: float = EXIT_WAIT) -> None:
        """Send what the processor holds, waiting at most `wait` seconds (the processor otherwise sends on its own)."""
        _bounded(self.provider.force_flush, wait)

    def shutdown(self, wait: float = EXIT_WAIT) -> str | None:
        """Send the last spans and stop the exporter, waiting at most `wait` seconds for the collector; the command
        calls it before it exits. A warning line when spans were dropped (the collector is down, hangs or refused)."""
        finished = _bounded(self.provider.shutdown, wait)
        ended, taken = self._counts() if self._counts is not None else (0, 0)
        if ended <= taken:
            return None
        why = "did not take them" if finished else f"did not answer within {wait:g} s"
        return (f"warning: {ended - taken} of {ended} OpenTelemetry span{'s' if ended != 1 else ''} dropped: "
                f"the collector at {self._endpoint} {why}")


def _bounded(work: Callable[[], object], wait: float) -> bool:
    """`work()` in a daemon thread, waited for at most `wait` seconds; whether it finished. (A daemon thread: a
    collector that never answers cannot keep the process from exiting.)"""
    done = threading.Event()

    def target() -> None:
        try:
            work()
        finally:
            done.set()

    threading.Thread(target=target, name="diagrama-otel-export", daemon=True).start()
    return done.wait(wait)


@dataclass(slots=True)
class _Loop:
    """A Loop's spans: the whole loop, and the pass under way (its body blocks' parent)."""

    block: str
    span: Span
    current_pass: Span | None = None


@dataclass(slots=True)
class _Exchange:
    """The vendor request and reply bodies of the request under way (Detailed only), for message contents."""

    request: Any = None
    response: Any = None


class _RunSpans:
    """Turns one run's trace events into spans as they happen (an observer sees each event before it is written)."""

    def __init__(self, tracer: Tracer, diagram: Diagram, redactor: Redactor) -> None:
        self._tracer = tracer
        self._diagram = diagram
        self._redactor = redactor
        self._run: Span | None = None
        self._blocks: dict[str, Span] = {}
        """Lane → its block under way ("" the top run's own)."""
        self._loops: list[_Loop] = []
        self._exchanges: dict[str, _Exchange] = {}
        self._detailed: set[str] = set()
        """The lanes whose block under way exports message contents: Detailed's alone."""
        self._lane_parents: dict[str, Span] = {}
        """A nested lane → the span its blocks go under: the Subdiagram's step, or the pass."""
        self._passes: dict[str, list[Span]] = {}
        """A lane → the pass spans of its concurrent Loop under way, ended with the Loop's step."""
        self._detailed_blocks: set[str] = set()
        self._body_ports = {block.id: port for block in diagram.blocks.values()
                            if (port := type(block.impl).body_port) is not None}
        """The blocks whose body runs inside them (a Loop's), by id: their port's name."""
        self._handlers = {
            Event.RUN_STARTED: self._run_started,
            Event.BLOCK_STARTED: self._block_started,
            Event.LOOP_PASS_STARTED: self._pass_started,
            Event.BLOCK_FAILED: self._block_failed,
            Event.BLOCK_FINISHED: self._block_finished,
            Event.HTTP_REQUEST: self._http_request,
            Event.HTTP_RESPONSE: self._http_response,
            Event.PROVIDER_CALLED: self._provider_called,
            Event.TOOL_CALLED: self._tool_called,
            Event.HTTP_CALLED: self._http_called,
            Event.SUBDIAGRAM_STARTED: self._subdiagram_started,
            Event.RUN_FINISHED: self._run_finished,
        }

    def __call__(self, event: dict[str, Any]) -> None:
        handler = self._handlers.get(event["event"])
        if handler is not None:
            handler(event)

    # -- the span tree ---------------------------------------------------------------------------------

    def _parent(self) -> Span | None:
        """Where a block's span goes: the innermost loop pass under way, else the run."""
        for loop in reversed(self._loops):
            if loop.current_pass is not None:
                return loop.current_pass
            return loop.span
        return self._run

    def _start(self, name: str, parent: Span | None, attributes: dict[str, Any], start_time: int | None = None) -> Span:
        from opentelemetry import trace

        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(name, context=context, attributes=attributes, start_time=start_time)

    def _run_started(self, event: dict[str, Any]) -> None:
        from opentelemetry.trace import SpanKind

        # Contents go with the block's own level in this run, as its http events do (its own Detailed in a Debug run).
        levels = self._diagram.message_levels(MESSAGE_LEVELS.get(str(event.get("message_level"))))
        self._detailed_blocks = {block.id for block in self._diagram.blocks.values()
                                 if (block.message_level if levels is None else levels[block]) >= MessageLevel.DETAILED}
        self._run = self._tracer.start_span(
            f"run {self._diagram.name}", kind=SpanKind.INTERNAL,
            attributes={"diagrama.run.id": str(event.get("run_id")), "diagrama.diagram.name": self._diagram.name,
                        "diagrama.diagram.path": str(event.get("path", "")),
                        "diagrama.message_level": str(event.get("message_level", ""))})
        event["otel_trace_id"] = f"{self._run.get_span_context().trace_id:032x}"

    def _block_started(self, event: dict[str, Any]) -> None:
        block = str(event.get("block"))
        lane = str(event.get("lane") or "")
        if block in self._detailed_blocks:
            self._detailed.add(lane)
        else:
            self._detailed.discard(lane)
        if not lane and block in self._body_ports:
            self._enter_loop(block, str(event.get("block_type")))
        self._exchanges[lane] = _Exchange()
        parent = self._lane_parents.get(lane, self._run) if lane else self._parent()
        self._blocks[lane] = self._start(block, parent, {"diagrama.block.id": block,
                                                         "diagrama.block.type": str(event.get("block_type")),
                                                         "diagrama.step": int(event.get("step") or 0)})

    def _subdiagram_started(self, event: dict[str, Any]) -> None:
        """The child's lane goes under the Subdiagram's step (its lane: the caller's, then the block's own id)."""
        lane = str(event.get("lane") or "")
        step = self._blocks.get(lane)
        if step is not None:
            own = str(event.get("block")).rsplit("/", 1)[-1]
            self._lane_parents[f"{lane}/{own}" if lane else own] = step

    def _enter_loop(self, block: str, block_type: str) -> None:
        """A visit of a Loop block: the first opens its loop span; a later one ends the pass that led back to it."""
        for depth, loop in enumerate(self._loops):
            if loop.block == block:
                for inner in reversed(self._loops[depth + 1:]):  # body loops left by a link out of them
                    self._end_loop(inner)
                del self._loops[depth + 1:]
                if loop.current_pass is not None:
                    loop.current_pass.end()
                    loop.current_pass = None
                return
        span = self._start(f"loop {block}", self._parent(), {"diagrama.block.id": block, "diagrama.block.type": block_type})
        self._loops.append(_Loop(block, span))

    def _pass_started(self, event: dict[str, Any]) -> None:
        lane = str(event.get("lane") or "")
        if lane.endswith("]"):  # a concurrent Loop's pass: its own lane, under the Loop's step
            caller = lane.rsplit("/", 1)[0] if "/" in lane else ""
            step = self._blocks.get(caller)
            if step is not None:
                index = event.get("index")
                span = self._start(f"{event.get('block')} pass {index}", step,
                                   {"diagrama.block.id": str(event.get("block")), "diagrama.loop.pass": int(index or 0)})
                self._lane_parents[lane] = span
                self._passes.setdefault(caller, []).append(span)
            return
        if lane or not self._loops:  # a sequential loop inside a nested run: its steps go under the lane's parent
            return
        loop = self._loops[-1]
        index = event.get("index")
        loop.current_pass = self._start(f"{loop.block} pass {index}", loop.span,
                                        {"diagrama.block.id": loop.block, "diagrama.loop.pass": int(index or 0)})

    def _block_failed(self, event: dict[str, Any]) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self._blocks.get(str(event.get("lane") or ""), self._run)
        if span is None:
            return
        error_type = str(event.get("error_type") or "error")
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, self._redactor.text(str(event.get("message") or ""))[:1000]))

    def _block_finished(self, event: dict[str, Any]) -> None:
        lane = str(event.get("lane") or "")
        span = self._blocks.pop(lane, None)
        for done in self._passes.pop(lane, ()):  # a concurrent Loop's step ends after all its passes
            done.end()
        if span is None:
            return
        status = str(event.get("status"))
        span.set_attribute("diagrama.block.status", status)
        if event.get("next"):
            span.set_attribute("diagrama.block.next", str(event["next"]))
        span.end()
        block = str(event.get("block"))
        if not lane and block in self._body_ports and event.get("via") != self._body_ports[block]:
            self._leave_loop(block)

    def _leave_loop(self, block: str) -> None:
        """The Loop is done (or failed): end its last pass and its span, and any loop inside it still open."""
        for depth, loop in enumerate(self._loops):
            if loop.block == block:
                for inner in reversed(self._loops[depth:]):
                    self._end_loop(inner)
                del self._loops[depth:]
                return

    @staticmethod
    def _end_loop(loop: _Loop) -> None:
        if loop.current_pass is not None:
            loop.current_pass.end()
            loop.current_pass = None
        loop.span.end()

    def _run_finished(self, event: dict[str, Any]) -> None:
        from opentelemetry.trace import Status, StatusCode

        for passes in self._passes.values():  # a run stopped mid-block (deadline, interrupt)
            for span in passes:
                span.end()
        self._passes.clear()
        for span in reversed(self._blocks.values()):
            span.end()
        self._blocks.clear()
        for loop in reversed(self._loops):
            self._end_loop(loop)
        self._loops.clear()
        run = self._run
        if run is None:
            return
        status = str(event.get("status"))
        run.set_attributes({"diagrama.run.status": status, "diagrama.run.steps": int(event.get("steps") or 0),
                            **run_cost_attributes(event.get("cost"))})
        if status != "succeeded":
            errors = event.get("errors") or []
            first = errors[0] if errors and isinstance(errors[0], dict) else {}
            run.set_attribute("error.type", str(first.get("type") or status))
            run.set_status(Status(StatusCode.ERROR, self._redactor.text(str(first.get("message") or status))[:1000]))
        run.end()
        self._run = None

    # -- requests and tools ------------------------------------------------------------------------------

    def _exchange(self, event: dict[str, Any]) -> _Exchange:
        return self._exchanges.setdefault(str(event.get("lane") or ""), _Exchange())

    def _http_request(self, event: dict[str, Any]) -> None:
        self._exchange(event).request = event.get("body")

    def _http_response(self, event: dict[str, Any]) -> None:
        self._exchange(event).response = event.get("body")

    def _provider_called(self, event: dict[str, Any]) -> None:
        from opentelemetry.trace import SpanKind

        now = time.time_ns()
        began = now - int(float(event.get("duration_ms") or 0) * 1_000_000)
        attributes = chat_attributes(event)
        lane = str(event.get("lane") or "")
        exchange = self._exchange(event)
        if lane in self._detailed:
            attributes.update(content_attributes(str(event.get("vendor")), exchange.request, exchange.response,
                                                 self._redactor))
        span = self._tracer.start_span(f"chat {event.get('model')}", kind=SpanKind.CLIENT, attributes=attributes,
                                       start_time=began, context=self._context_of(self._blocks.get(lane)))
        span.end(end_time=now)
        self._exchanges[lane] = _Exchange()

    def _tool_called(self, event: dict[str, Any]) -> None:
        from opentelemetry.trace import Status, StatusCode

        now = time.time_ns()
        began = now - int(float(event.get("duration_ms") or 0) * 1_000_000)
        lane = str(event.get("lane") or "")
        span = self._tracer.start_span(f"execute_tool {event.get('tool')}", attributes=tool_attributes(
            event, self._redactor, contents=lane in self._detailed), start_time=began,
            context=self._context_of(self._blocks.get(lane)))
        if event.get("ok") is False:
            span.set_status(Status(StatusCode.ERROR, self._redactor.text(str(event.get("error") or ""))[:1000]))
        span.end(end_time=now)

    def _http_called(self, event: dict[str, Any]) -> None:
        """An HttpRequest's call as an HTTP client span (the HTTP semantic conventions); its URL scrubbed."""
        from urllib.parse import urlsplit

        from opentelemetry.trace import SpanKind, Status, StatusCode

        now = time.time_ns()
        began = now - int(float(event.get("duration_ms") or 0) * 1_000_000)
        method, status = str(event.get("method")), int(event.get("status") or 0)
        url = self._redactor.text(str(event.get("url")))
        attributes: dict[str, Any] = {"http.request.method": method, "url.full": url,
                                      "http.response.status_code": status}
        parts = urlsplit(url)
        if parts.hostname:
            attributes["server.address"] = parts.hostname
            attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        attempts = int(event.get("attempts") or 1)
        if attempts > 1:
            attributes["http.request.resend_count"] = attempts - 1
        if status >= 400:  # a client span's error, as the conventions have it: whether or not the block fails on it
            attributes["error.type"] = str(status)
        span = self._tracer.start_span(method, kind=SpanKind.CLIENT, attributes=attributes, start_time=began,
                                       context=self._context_of(self._blocks.get(str(event.get("lane") or ""))))
        if status >= 400:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=now)

    def _context_of(self, span: Span | None) -> Any:
        from opentelemetry import trace

        parent = span if span is not None else self._parent()
        return trace.set_span_in_context(parent) if parent is not None else None

