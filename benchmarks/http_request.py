"""HttpRequest's own cost per call, in µs: the block against the same request made with raw httpx.

In process, over one `httpx.MockTransport` that answers a small JSON body at once (no socket, no
server), so what is measured is what diagrama adds around httpx: rendering the inputs, the host
check, the retry loop's machinery, reading the answer into outputs, the step. (a) a counter cycle
of one HttpRequest block (a `query` value from a template, an `Authorization` header from
`secret()`) for N calls at Release; (b) the same N requests sent by one `httpx.AsyncClient` over the
same transport; (c) the same cycle with a Set block in its place, for the step itself. Each figure
is the median and the fastest of the repeats. Prints one JSON line per figure.

    python -m benchmarks.http_request [--calls 2000] [--repeat 5]
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
from pathlib import Path

import httpx

from blocks.registry import registry
from engine import Services, execute
from engine.compile.loader import load_diagram_text


def cycle_yaml(calls: int, http: bool) -> str:
    block = ("type: HttpRequest\n    with: {url: 'https://api.shop.test/orders', query: {n: '{{ i }}'}, "
             "headers: {Authorization: \"Bearer {{ secret('SHOP_TOKEN') }}\"}}") if http else "type: Set"
    return f"""diagram: http-cycle
allowed_hosts: [api.shop.test]
secrets: [SHOP_TOKEN]
blocks:
  - id: start
    type: Start
    message_level: Release
    max_steps: {2 * calls + 10}
    inputs: {{N: {calls}}}
    variables: {{i: 0}}
    next: call
  - id: call
    {block}
    next: count
  - id: count
    type: Set
    set: {{i: "{{{{ i + 1 }}}}"}}
    next: [{{to: call, when: "{{{{ i < N }}}}"}}]
"""


def _answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"id": 42, "status": "shipped"})


TRANSPORT = httpx.MockTransport(_answer)


async def _diagram_seconds(calls: int, http: bool, folder: Path) -> float:
    diagram = load_diagram_text(cycle_yaml(calls, http), folder / "cycle.yaml", registry())
    services = Services(environ={"SHOP_TOKEN": "token-value-1234"}, transports={"http": TRANSPORT})
    began = time.perf_counter()
    result = await execute(diagram, runs_dir=folder, services=services)
    seconds = time.perf_counter() - began
    assert result.status == "succeeded", result.errors
    return seconds


async def _raw_seconds(calls: int) -> float:
    async with httpx.AsyncClient(transport=TRANSPORT) as client:
        began = time.perf_counter()
        for i in range(calls):
            response = await client.get("https://api.shop.test/orders", params={"n": str(i)},
                                        headers={"Authorization": "Bearer token-value-1234"})
            response.json()
        return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    figures: dict[str, list[float]] = {"http_request_cycle": [], "raw_httpx": [], "set_cycle": []}
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_diagram_seconds(50, True, Path(folder)))  # warm up: imports, the client pool, compiled templates
        asyncio.run(_raw_seconds(50))
        for _ in range(options.repeat):
            figures["http_request_cycle"].append(asyncio.run(_diagram_seconds(options.calls, True, Path(folder))))
            figures["raw_httpx"].append(asyncio.run(_raw_seconds(options.calls)))
            figures["set_cycle"].append(asyncio.run(_diagram_seconds(options.calls, False, Path(folder))))
    per_call = {name: [s / options.calls * 1e6 for s in samples] for name, samples in figures.items()}
    for name, samples in per_call.items():
        print(json.dumps({"figure": name, "us_per_call_median": round(statistics.median(samples), 1),
                          "us_per_call_fastest": round(min(samples), 1), "calls": options.calls,
                          "python": platform.python_version(), "machine": platform.machine()}))
    added = [h - r - s for h, r, s in zip(per_call["http_request_cycle"], per_call["raw_httpx"], per_call["set_cycle"],
                                           strict=True)]
    print(json.dumps({"figure": "http_request_overhead_over_httpx", "us_per_call_median": round(statistics.median(added), 1),
                      "us_per_call_fastest": round(min(added), 1),
                      "note": "HttpRequest cycle minus raw httpx minus the same cycle with a Set block"}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
