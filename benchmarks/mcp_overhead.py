"""`/mcp`: what calling a robot through MCP adds over `POST /v1/robots/{name}/runs` for the same run.

The API runs under uvicorn in another process on 127.0.0.1 (its own interpreter), with a key, `--offline`, the
local backend, logs to /dev/null. The robot has three blocks: Start, a ClaudeRequest answered by the simulator, a
Set. Each round takes, in turn (so that all meet the same load on the machine), on kept-alive connections:

- `rest`: `POST /v1/robots/three/runs`, waiting for the result (httpx);
- `mcp_raw`: the same run as one `tools/call` POST to /mcp, the bytes and headers the SDK's client sends on the
  per-request era (captured from it once, then replayed with httpx): the server's MCP path alone;
- `mcp_sdk`: `Client.call_tool` of the official SDK (per-request era, the default), its own client-side work included;
- `mcp_sdk_legacy`: the same on a handshake-era session (`mode="legacy"`: Mcp-Session-Id, SSE answers).

Printed: each one's p50 and p99, and the median of the paired differences with `rest` (the target: `mcp_raw`'s under
2 ms), as JSON lines with the Python version and the machine.

    python -m benchmarks.mcp_overhead [--calls 200]
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks.api_overhead import KEY, THREE, free_port, percentile
from benchmarks.serving import wait_for_server

SERVER = """
import os, sys
from pathlib import Path
import uvicorn
from engine.runtime.context import Services
from engine.web.api import create_app
from engine.runs.service_logs import configure

folder, runs, port = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
configure("json", "info", stream=open(os.devnull, "w"))
app = create_app(folder, runs_dir=runs, offline=True, rpm=None,
                 services=Services(offline=True, environ={"DIAGRAMA_API_KEYS": "bench=" + sys.argv[4]}))
uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
"""
AUTH = {"Authorization": f"Bearer {KEY}"}


async def _captured_call(url: str) -> tuple[dict[str, str], bytes]:
    """The headers and body of the SDK client's `tools/call` of the robot (per-request era)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    seen: list[tuple[dict[str, str], bytes]] = []

    async def keep(request: Any) -> None:
        body = request.content
        if b'"tools/call"' in body:
            seen.append(({k: v for k, v in request.headers.items() if k.lower() not in ("content-length", "host")},
                         body))

    client = httpx2.AsyncClient(headers=AUTH, event_hooks={"request": [keep]})
    async with Client(streamable_http_client(url, http_client=client)) as mcp:
        result = await mcp.call_tool("three", {})
        assert not result.is_error, result.content
    return seen[0]


async def _timed(work: Callable[[], Awaitable[None]], into: list[float]) -> None:
    began = time.perf_counter()
    await work()
    into.append((time.perf_counter() - began) * 1000)


# Long: four clients opened together, then one call of each per round, in turn.
async def rounds(base: str, count: int) -> dict[str, list[float]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = f"{base}/mcp"
    headers, body = await _captured_call(url)
    took: dict[str, list[float]] = {"rest": [], "mcp_raw": [], "mcp_sdk": [], "mcp_sdk_legacy": []}
    async with (httpx.AsyncClient(base_url=base, headers=AUTH, timeout=30) as rest,
                httpx.AsyncClient(base_url=base, headers=AUTH, timeout=30) as raw,
                Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=AUTH))) as sdk,
                Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=AUTH)),
                       mode="legacy") as legacy):

        async def by_rest() -> None:
            answered = await rest.post("/v1/robots/three/runs", json={})
            assert answered.status_code == 200 and answered.json()["status"] == "succeeded", answered.text

        async def by_raw() -> None:
            answered = await raw.post("/mcp", content=body, headers=headers)
            assert answered.status_code == 200 and b'"isError":false' in answered.content, answered.text

        async def by_sdk() -> None:
            assert not (await sdk.call_tool("three", {})).is_error

        async def by_legacy() -> None:
            assert not (await legacy.call_tool("three", {})).is_error

        for _ in range(count):
            await _timed(by_rest, took["rest"])
            await _timed(by_raw, took["mcp_raw"])
            await _timed(by_sdk, took["mcp_sdk"])
            await _timed(by_legacy, took["mcp_sdk_legacy"])
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "robots"
        folder.mkdir()
        (folder / "three.yaml").write_text(THREE.lstrip())
        port = free_port()
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(folder), str(Path(temporary) / "runs"),
                                   str(port), KEY], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for_server(f"{base}/openapi.json", server)
            asyncio.run(rounds(base, 30))  # warm-up: the robot's load, the connections, the simulator's client
            took = asyncio.run(rounds(base, args.calls))
        finally:
            server.terminate()
            server.wait(timeout=30)
    rest = took["rest"]
    figures: dict[str, Any] = {"benchmark": "mcp_overhead", "robot": "three blocks, offline", "calls": args.calls}
    for name, values in took.items():
        figures[f"{name}_p50_ms"] = round(statistics.median(values), 3)
        figures[f"{name}_p99_ms"] = round(percentile(values, 0.99), 3)
        if name != "rest":
            differences = [mcp - plain for plain, mcp in zip(rest, values, strict=True)]
            figures[f"{name}_overhead_p50_ms"] = round(statistics.median(differences), 3)
    print(json.dumps({**figures, "load_average_1m": os.getloadavg()[0], **machine}))


if __name__ == "__main__":
    main()
