"""Cost of `--otel` per block step, in µs: the same runs with and without the OpenTelemetry export.

In process, offline: (a) the counter cycle of benchmarks/engine_steps.py (one Set block,
10,000 steps) at Release (a run span only) and Debug (a span per step); (b) the order agent
(diagrams/order_agent.yaml: request blocks through the simulator, a tool call) at Debug,
with its `chat` and `execute_tool` spans. The export is the real one up to the wire: the
SDK's BatchSpanProcessor and an exporter that encodes each batch as OTLP protobuf and drops
it, so the figure counts span building, the processor and the encoding, not a collector.
Prints one JSON line per figure (medians of several repeats).

    python -m benchmarks.otel_cost [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.engine_steps import COUNTER_STEPS, counter_yaml
from blocks.registry import registry
from engine import MessageLevel, Services, execute
from engine.compile.diagram import Diagram
from engine.compile.loader import load_diagram, load_diagram_text

ROOT = Path(__file__).resolve().parent.parent


def _export(encoded: bool = True) -> Any:
    """The export as `--otel` makes it, its exporter encoding and dropping; `encoded=False`: span building alone."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

    from engine.runs.otel import OtelExport

    class Encoded(SpanExporter):
        """OTLP's protobuf encoding of each batch, then nothing: the wire left out."""

        def __init__(self) -> None:
            self.bytes = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            if encoded:
                self.bytes += len(encode_spans(spans).SerializePartialToString())
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    processor = BatchSpanProcessor(Encoded(), max_queue_size=65536) if encoded else SimpleSpanProcessor(Encoded())
    provider.add_span_processor(processor)
    return OtelExport(provider)


def measure(diagram: Diagram, level: MessageLevel, otel: str, repeat: int, runs_dir: Path, offline: bool) -> float:
    """Median µs per step of `repeat` runs (after one to warm up), the export's queue flushed outside the timing."""
    export = _export(otel == "otlp") if otel else None
    per_step: list[float] = []

    async def runs() -> None:
        for _ in range(repeat + 1):
            services = Services(offline=offline)
            if export is not None:
                services.run_observers.append(export)
            began = time.perf_counter()
            result = await execute(diagram, runs_dir=runs_dir, message_level=level, services=services)
            elapsed = time.perf_counter() - began
            assert result.succeeded, result.errors
            per_step.append(elapsed / result.steps * 1e6)
            if export is not None:
                export.flush()  # the exporter's thread catches up between runs, as it does while a run waits

    asyncio.run(runs())
    if export is not None:
        export.shutdown()
    return statistics.median(per_step[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    try:
        import opentelemetry.sdk  # noqa: F401  (only whether it is there)
    except ImportError:
        print(json.dumps({"benchmark": "otel_cost", "skipped": "pip install -e '.[otel]'"}))
        return
    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder)
        counter = load_diagram_text(counter_yaml(COUNTER_STEPS), runs / "counter.yaml", registry())
        agent = load_diagram(ROOT / "diagrams" / "order_agent.yaml", registry())
        cases = [("counter_cycle", counter, MessageLevel.RELEASE, max(3, options.repeat // 2), False),
                 ("counter_cycle", counter, MessageLevel.DEBUG, max(3, options.repeat // 2), False),
                 ("order_agent_offline", agent, MessageLevel.DEBUG, options.repeat * 10, True)]
        for name, diagram, level, repeat, offline in cases:
            without = measure(diagram, level, "", repeat, runs, offline)
            spans = measure(diagram, level, "spans", repeat, runs, offline)
            with_otel = measure(diagram, level, "otlp", repeat, runs, offline)
            print(json.dumps({"benchmark": name, "level": level.name.title(), "us_per_step": round(without, 3),
                              "us_per_step_spans_only": round(spans, 3), "us_per_step_otel": round(with_otel, 3),
                              "otel_cost_us_per_step": round(with_otel - without, 3), **machine}))


if __name__ == "__main__":
    main()
