"""The HTTP clients of the fault scenarios: httpx on asyncio, one connection pool per process.

`follow` reads a run's event stream (SSE) to its end; `load` is a closed loop of clients, each starting a run and
reading its events (or waiting for its result) as a chat client does, counted over a window. A load may run in
processes of its own so that the client's CPU does not bound the server's figure on a small machine:

    python -m benchmarks.faults.client '{"base": URL, "robot": "three", "clients": 150, "seconds": 20, ...}'

prints the process's counts as one JSON line (its CPU seconds included).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

from benchmarks.faults.procs import AUTH

TERMINAL = frozenset({"run_finished", "run_interrupted"})
"""Events a stream may end with: a client can tell a finished run from a cut one."""
ENDED = frozenset({"succeeded", "failed", "waiting", "cancelled"})
"""A run's statuses once it has ended (issue 38: every accepted run ends in one of these)."""


def new_client(base: str, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base, headers=AUTH, limits=limits,
                             timeout=httpx.Timeout(60, connect=10, pool=120))


@dataclasses.dataclass
class Stream:
    """One reading of a run's event stream."""

    status: int = 0
    events: int = 0
    last_id: int = 0
    terminal: str | None = None
    """The last event, where it is one of TERMINAL."""
    closed: bool = False
    """The server ended the response (as opposed to an error, or the reader's deadline)."""
    error: str | None = None
    body: str = ""


async def follow(client: httpx.AsyncClient, run_id: str, *, after: int = 0,
                 opened: Callable[[], None] | None = None, heard: Callable[[str], None] | None = None) -> Stream:
    """Read `GET /v1/runs/{id}/events` (after event `after`) until the server closes it or an error; `heard` hears
    each event's name as it comes (what a reader cancelled before the end had seen)."""
    found = Stream(last_id=after)
    headers = {"Last-Event-ID": str(after)} if after else {}
    try:
        async with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers,
                                 timeout=httpx.Timeout(60, connect=10, read=120, pool=300)) as response:
            found.status = response.status_code
            if response.status_code != 200:
                found.body = (await response.aread()).decode(errors="replace")[:300]
                found.error = f"HTTP {response.status_code}"
                return found
            if opened is not None:
                opened()
            name = ""
            async for line in response.aiter_lines():
                if line.startswith("id:"):
                    found.last_id = int(line[3:].strip() or 0)
                elif line.startswith("event:"):
                    name = line[6:].strip()
                elif not line and name:
                    found.events += 1
                    found.terminal = name if name in TERMINAL else None
                    if heard is not None:
                        heard(name)
                    name = ""
            found.closed = True
    except httpx.HTTPError as exc:
        found.error = f"{type(exc).__name__}: {exc}"[:300]
    return found


async def start_run(client: httpx.AsyncClient, robot: str, inputs: dict[str, Any] | None = None,
                    *, wait: bool = False, seconds: float = 60) -> httpx.Response:
    return await client.post(f"/v1/robots/{robot}/runs", json={"inputs": inputs or {}, "wait": wait}, timeout=seconds)


async def status_of(client: httpx.AsyncClient, run_id: str) -> str:
    """The run's status, or `HTTP n` / the error's name where none could be read."""
    try:
        answer = await client.get(f"/v1/runs/{run_id}", timeout=30)
    except httpx.HTTPError as exc:
        return type(exc).__name__
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}"
    return str(answer.json().get("status"))


@dataclasses.dataclass
class Counts:
    """A closed loop's outcome: runs that ended within the window, errors (any run not seen to succeed), latencies."""

    completed: int = 0
    late: int = 0
    errors: int = 0
    samples: list[str] = dataclasses.field(default_factory=list)
    latencies: list[float] = dataclasses.field(default_factory=list)
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.samples) < 5:
            self.samples.append(what)


async def _one_run(client: httpx.AsyncClient, robot: str, mode: str) -> str | None:
    """One run of the loop; None when it succeeded, else what went wrong."""
    try:
        if mode == "wait":
            answer = await start_run(client, robot, wait=True, seconds=300)
            if answer.status_code != 200:
                return f"POST {answer.status_code} {answer.text[:200]}"
            status = answer.json().get("status")
            return None if status == "succeeded" else f"status {status}"
        answer = await start_run(client, robot)
        if answer.status_code != 202:
            return f"POST {answer.status_code} {answer.text[:200]}"
        stream = await follow(client, answer.json()["run_id"])
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    if stream.error is not None:
        return f"stream {stream.error} {stream.body}"
    if stream.terminal != "run_finished":
        return f"stream closed after {stream.events} events without run_finished"
    return None


async def load(base: str, robot: str, clients: int, seconds: float, *, mode: str = "stream",
               start_at: float | None = None) -> Counts:
    """`clients` loops, each a run after the other, for `seconds` (from `start_at`, a time.time()); the runs that end
    inside the window count for throughput; those in flight at its end are finished and checked, not counted."""
    counts = Counts()
    # A pool a client, as each chat client has its own connection: httpx's pool walks all its connections for each
    # request, so one pool of 300 would spend more CPU than the server does.
    pools = [new_client(base, 2) for _ in range(clients)]
    if start_at is not None:
        await asyncio.sleep(max(0.0, start_at - time.time()))
    began = time.monotonic()
    cpu = time.process_time()
    until = began + seconds

    async def loop(client: httpx.AsyncClient) -> None:
        async with client:
            while time.monotonic() < until:
                started = time.monotonic()
                wrong = await _one_run(client, robot, mode)
                ended = time.monotonic()
                if wrong is not None:
                    counts.error(wrong)
                    await asyncio.sleep(0.05)
                elif ended <= until:
                    counts.completed += 1
                    counts.latencies.append(ended - started)
                else:
                    counts.late += 1

    await asyncio.gather(*(loop(client) for client in pools))
    counts.wall_s = time.monotonic() - began
    counts.cpu_s = time.process_time() - cpu
    return counts


def main() -> None:
    config = json.loads(sys.argv[1])
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    counts = asyncio.run(load(config["base"], config["robot"], config["clients"], config["seconds"],
                              mode=config.get("mode", "stream"), start_at=config.get("start_at")))
    print(json.dumps(dataclasses.asdict(counts)))


if __name__ == "__main__":
    main()
