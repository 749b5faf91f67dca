"""`diagrama api`: what serving a robot over HTTP adds to running it, throughput at concurrency, and how soon a
`text_delta` reaches an event-stream client.

The API runs under uvicorn in another process on 127.0.0.1 (its own interpreter: client and server share no GIL),
with a key, `--offline`, the local backend, logs as JSON to /dev/null. The robot has three blocks: Start, a
ClaudeRequest answered by the simulator, a Set.

1. overhead: the same robot run in this process (`execute`, writing its trace as the API's runs do) and through
   `POST /v1/robots/three/runs` (waiting for the result), one at a time on a kept-alive connection, in turn with
   a bare request (`GET /openapi.json`: the HTTP round trip alone); the median of the paired differences.
   The same pairing with the app in this process (httpx's ASGI transport): the API's own code, without the HTTP
   server and the socket, whose cost a loaded machine's scheduling makes most of the first figure.
2. concurrency: 200 runs through the API, 20 at a time; p50, p99 and runs a second.
3. first text_delta: a fake event source (a block that waits 20 ms, then emits `text_delta` pieces, as a streaming
   request block will) while a client follows the run's events; the time from the event's trace timestamp to the
   client's reading it, first piece of each run.

    python -m benchmarks.api_overhead [--runs 300] [--deltas 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from benchmarks.serving import free_port, percentile, wait_for_server

KEY = "dgk_benchmark-key-0123456789abcdef"
THREE = """
diagram: three
blocks:
  - {id: start, type: Start, inputs: {question: "Quanto fa 2+2?"}, next: ask}
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
    next: keep
  - {id: keep, type: Set, set: {done: true}}
"""
SPEAKER = """
diagram: speaker
blocks:
  - {id: start, type: Start, message_level: Debug, next: speak}
  - {id: speak, type: FakeStream, with: {pieces: 5}}
"""
SERVER = """
import asyncio, sys
from pathlib import Path
import uvicorn
from pydantic import BaseModel, ConfigDict
from blocks.registry import BUILTIN_BLOCKS
from engine import Block, BlockRegistry
from engine.runtime.context import Services
from engine.web.api import create_app
from engine.runs.service_logs import configure

class Inputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pieces: int = 5

class FakeStream(Block):
    '''A stand-in for a streaming request block: after a wait, a text_delta event a piece.'''
    Inputs = Inputs
    async def run(self, inputs, context):
        await asyncio.sleep(0.02)
        for n in range(inputs.pieces):
            context.emit("text_delta", text=f"piece {n} ")
            await asyncio.sleep(0.001)
        return {}

folder, runs, port = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
configure("json", "info")
app = create_app(folder, runs_dir=runs, registry=BlockRegistry((*BUILTIN_BLOCKS, FakeStream)), offline=True,
                 rpm=None, services=Services(offline=True, environ={"DIAGRAMA_API_KEYS": "bench=" + sys.argv[4]}))
uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
"""
AUTH = {"Authorization": f"Bearer {KEY}"}


def paired(folder: Path, runs: Path, base: str, count: int) -> tuple[list[float], list[float], list[float]]:
    """Milliseconds of each run here, through the API, and of a bare request (GET /openapi.json), taken in turn so
    that all three meet the same load on the machine."""
    from blocks.registry import registry
    from engine import Services, execute
    from engine.compile.loader import load_diagram

    diagram = load_diagram(folder / "three.yaml", registry())
    services = Services(offline=True, environ={})
    local: list[float] = []
    served: list[float] = []
    http: list[float] = []

    async def here() -> None:
        began = time.perf_counter()
        result = await execute(diagram, {}, runs_dir=runs, services=services)
        local.append((time.perf_counter() - began) * 1000)
        assert result.succeeded

    loop = asyncio.new_event_loop()
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
        for _ in range(count):
            loop.run_until_complete(here())
            began = time.perf_counter()
            answered = client.post("/v1/robots/three/runs", json={})
            served.append((time.perf_counter() - began) * 1000)
            assert answered.status_code == 200 and answered.json()["status"] == "succeeded", answered.text
            began = time.perf_counter()
            client.get("/openapi.json")
            http.append((time.perf_counter() - began) * 1000)
    loop.close()
    return local, served, http


def asgi_paired(folder: Path, runs: Path, count: int) -> tuple[list[float], list[float], float]:
    """Milliseconds of each run here and through the API's app in this same process and event loop (httpx's ASGI
    transport: no socket, no second process): what the API's own code adds (key, routing, inputs, the run's task,
    its relay, the answer), apart from the HTTP server and the network, which a loaded machine's scheduling swamps.
    Also the CPU time (this process's, its threads' included) the API adds per run: the least noisy of the figures on
    a shared machine (it includes httpx's client side, which a real caller spends in its own process)."""
    from blocks.registry import registry
    from engine import Services, execute
    from engine.compile.loader import load_diagram
    from engine.runs.service_logs import configure
    from engine.web.api import create_app

    diagram = load_diagram(folder / "three.yaml", registry())
    services = Services(offline=True, environ={})
    configure("json", "info", stream=open(os.devnull, "w"))  # noqa: SIM115  (as the served one's: lines written, unread)
    app = create_app(folder, runs_dir=runs / "asgi", offline=True, rpm=None,
                     services=Services(offline=True, environ={"DIAGRAMA_API_KEYS": f"bench={KEY}"}))
    local: list[float] = []
    served: list[float] = []
    cpu = [0.0, 0.0]

    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api", headers=AUTH) as client:
            for _ in range(count):
                began, spent = time.perf_counter(), time.process_time()
                result = await execute(diagram, {}, runs_dir=runs, services=services)
                local.append((time.perf_counter() - began) * 1000)
                cpu[0] += time.process_time() - spent
                assert result.succeeded
                began, spent = time.perf_counter(), time.process_time()
                answered = await client.post("/v1/robots/three/runs", json={})
                served.append((time.perf_counter() - began) * 1000)
                cpu[1] += time.process_time() - spent
                assert answered.status_code == 200 and answered.json()["status"] == "succeeded", answered.text
            spent = time.process_time()
            await app.app.app.state.backend.recorded()  # the store's batched writes are the API's work too
            cpu[1] += time.process_time() - spent

    asyncio.run(go())
    return local, served, (cpu[1] - cpu[0]) * 1000 / count


async def concurrent(base: str, count: int, at_once: int) -> tuple[list[float], float]:
    gate = asyncio.Semaphore(at_once)
    limits = httpx.Limits(max_connections=at_once, max_keepalive_connections=at_once)
    async with httpx.AsyncClient(base_url=base, headers=AUTH, timeout=60, limits=limits) as client:
        async def one() -> float:
            async with gate:
                began = time.perf_counter()
                answered = await client.post("/v1/robots/three/runs", json={})
                assert answered.status_code == 200 and answered.json()["status"] == "succeeded"
                return (time.perf_counter() - began) * 1000

        began = time.perf_counter()
        took = await asyncio.gather(*(one() for _ in range(count)))
        return list(took), time.perf_counter() - began


def first_delta(base: str) -> float:
    """Milliseconds from the first text_delta's trace timestamp to this client's reading of it."""
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
        run_id = client.post("/v1/robots/speaker/runs", json={"wait": False}).json()["run_id"]
        with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
            event = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "text_delta":
                    received = time.time()
                    return (received - orjson.loads(line[6:])["timestamp"]) * 1000
    raise RuntimeError("no text_delta came")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--deltas", type=int, default=50)
    args = parser.parse_args()
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as temporary:
        folder, runs = Path(temporary) / "robots", Path(temporary) / "runs"
        folder.mkdir()
        (folder / "three.yaml").write_text(THREE.lstrip())
        (folder / "speaker.yaml").write_text(SPEAKER.lstrip())
        port = free_port()
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(folder), str(Path(temporary) / "api-runs"),
                                   str(port), KEY], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for_server(f"{base}/openapi.json", server)
            warm = paired(folder, runs, base, 30)  # the robot's load, the connections, the simulator's client
            local, served, http = paired(folder, runs, base, args.runs)
            differences = [api - here for here, api in zip(local, served, strict=True)]
            print(json.dumps({"benchmark": "api_overhead", "robot": "three blocks, offline", "runs": args.runs,
                              "in_process_p50_ms": round(statistics.median(local), 3),
                              "api_p50_ms": round(statistics.median(served), 3),
                              "overhead_p50_ms": round(statistics.median(differences), 3),
                              "http_round_trip_p50_ms": round(statistics.median(http), 3),
                              "in_process_p99_ms": round(percentile(local, 0.99), 3),
                              "api_p99_ms": round(percentile(served, 0.99), 3), "warm_up_runs": len(warm[0]),
                              "load_average_1m": os.getloadavg()[0], **machine}))
            asgi_paired(folder, runs, 30)  # warm-up
            local, served, cpu = asgi_paired(folder, runs, args.runs)
            differences = [api - here for here, api in zip(local, served, strict=True)]
            print(json.dumps({"benchmark": "api_overhead_in_process_app", "runs": args.runs,
                              "in_process_p50_ms": round(statistics.median(local), 3),
                              "api_app_p50_ms": round(statistics.median(served), 3),
                              "overhead_p50_ms": round(statistics.median(differences), 3),
                              "overhead_cpu_ms_per_run": round(cpu, 3),
                              "load_average_1m": os.getloadavg()[0], **machine}))
            took, wall = asyncio.run(concurrent(base, 200, 20))
            print(json.dumps({"benchmark": "api_concurrency", "runs": 200, "concurrency": 20,
                              "p50_ms": round(statistics.median(took), 3), "p99_ms": round(percentile(took, 0.99), 3),
                              "runs_per_s": round(200 / wall, 1), **machine}))
            first_delta(base)  # warm-up
            deltas = [first_delta(base) for _ in range(args.deltas)]
            print(json.dumps({"benchmark": "api_first_text_delta", "runs": args.deltas,
                              "p50_ms": round(statistics.median(deltas), 3), "p99_ms": round(percentile(deltas, 0.99), 3),
                              "max_ms": round(max(deltas), 3), **machine}))
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
