"""Request-block overhead: 200 concurrent runs of a 10-request diagram vs raw httpx.

A simulated Anthropic server (the offline simulator's ASGI app under uvicorn) runs in
another process on 127.0.0.1. The same 2,000 requests are made (a) by diagrama runs,
each a chain of 10 ClaudeRequest blocks, and (b) by raw httpx.AsyncClient tasks with
the same bodies, both at the same concurrency. Prints the wall times and their ratio.

    python -m benchmarks.request_overhead [--runs 200] [--blocks 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from benchmarks.serving import free_port
from blocks.registry import registry
from engine import Services, execute
from engine.compile.loader import load_diagram_text
from engine.format.tables import HistoryRow
from engine.providers import Anthropic, Request

SERVER = """
import sys, uvicorn
from engine.providers.simulator import Simulator
uvicorn.run(Simulator().app("anthropic"), host="127.0.0.1", port=int(sys.argv[1]), log_level="error",
            access_log=False, lifespan="off")
"""


def diagram_yaml(blocks: int) -> str:
    lines = ["diagram: ten-requests", "blocks:", "  - {id: start, type: Start, message_level: Release, next: b0}"]
    for index in range(blocks):
        following = f", next: b{index + 1}" if index < blocks - 1 else ""
        lines.append(f"  - {{id: b{index}, type: ClaudeRequest, with: {{model: claude-sonnet-5-5, "
                     f"request: 'Question {index}?', max_tokens: 64}}{following}}}")
    return "\n".join(lines) + "\n"


async def ours(text: str, base: str, runs: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        diagram = load_diagram_text(text, Path(folder) / "bench.yaml", registry())
        services = Services(environ={"ANTHROPIC_API_KEY": "sk-ant-bench-000000", "ANTHROPIC_BASE_URL": base})
        began = time.perf_counter()
        results = await asyncio.gather(*(execute(diagram, runs_dir=None, services=services) for _ in range(runs)))
        elapsed = time.perf_counter() - began
        assert all(r.succeeded for r in results), results[0].errors
        for client in services.http_clients.values():
            await client.aclose()
        return elapsed


async def raw(base: str, runs: int, blocks: int) -> float:
    adapter = Anthropic()
    calls = [adapter.build(Request("claude-sonnet-5-5", "", [HistoryRow("user", f"Question {i}?")], max_tokens=64),
                           "sk-ant-bench-000000") for i in range(blocks)]
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200)) as client:
        async def one_run() -> None:
            for call in calls:
                response = await client.post(base + call.path, content=orjson.dumps(call.body), headers=call.headers)
                response.raise_for_status()
                response.json()

        began = time.perf_counter()
        await asyncio.gather(*(one_run() for _ in range(runs)))
        return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(base + "/", timeout=0.2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        text = diagram_yaml(args.blocks)
        asyncio.run(ours(text, base, 20))  # warm-up: template compilation, connections
        asyncio.run(raw(base, 20, args.blocks))
        ours_times, raw_times = [], []
        for _ in range(args.repeat):  # interleaved, so drift on the machine hits both alike
            raw_times.append(asyncio.run(raw(base, args.runs, args.blocks)))
            ours_times.append(asyncio.run(ours(text, base, args.runs)))
        ours_s, raw_s = statistics.median(ours_times), statistics.median(raw_times)
        requests = args.runs * args.blocks
        print(json.dumps({"benchmark": "request_blocks_vs_raw_httpx", "runs": args.runs, "blocks": args.blocks,
                          "requests": requests, "diagrama_s": round(ours_s, 3), "raw_httpx_s": round(raw_s, 3),
                          "ratio": round(ours_s / raw_s, 3),
                          "engine_us_per_request": round((ours_s - raw_s) / requests * 1e6, 1),
                          "python": sys.version.split()[0]}))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
