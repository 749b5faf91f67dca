"""Fixtures for `diagrama api`'s tests: a folder of robots, the app over it (in process through httpx's ASGI
transport, or served by uvicorn on a loopback port for event streams), its keys, and a reader of Server-Sent Events.

Two test blocks stand in for what the runs will do: `Speak` emits `text_delta` events through the run's own trace
(the fake event source the streaming request blocks will replace), and `Hold` waits until the test opens its gate,
so a test can act while a run is certainly going (no sleeps to guess with).
"""

from __future__ import annotations

import asyncio
import socket
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ConfigDict

from blocks.registry import BUILTIN_BLOCKS
from engine import Block, BlockRegistry, RunContext
from engine.runtime.context import Services
from tests.conftest import TEST_BLOCKS

KEY = "dgk_test-key-0123456789abcdef"
OTHER_KEY = "dgk_other-key-0123456789abcdef"
KEYS = f"ci={KEY},other={OTHER_KEY}"
AUTH = {"Authorization": f"Bearer {KEY}"}
GATES: dict[str, threading.Event] = {}


class SpeakInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pieces: list[str] = []


class SpeakOutputs(BaseModel):
    result: str = ""


class Speak(Block):
    """Test block: emits each piece as a `text_delta` event (as a streaming request block will), then the whole."""

    Inputs = SpeakInputs
    Outputs = SpeakOutputs

    async def run(self, inputs: SpeakInputs, context: RunContext) -> dict[str, Any]:
        for piece in inputs.pieces:
            context.emit("text_delta", text=piece)
            await asyncio.sleep(0)  # the run waits between pieces, as it does for a vendor's next chunk
        return {"result": "".join(inputs.pieces)}


class HoldInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gate: str = ""


class Hold(Block):
    """Test block: waits until the test sets GATES[gate] (a threading.Event: the server runs in another thread)."""

    Inputs = HoldInputs

    async def run(self, inputs: HoldInputs, context: RunContext) -> dict[str, Any]:
        gate = GATES.setdefault(inputs.gate, threading.Event())
        while not gate.is_set():  # noqa: ASYNC110  (a threading.Event: the test sets it from another thread)
            await asyncio.sleep(0.005)
        return {}


COUNTER = """
diagram: counter
description: Counts to N, then greets (three blocks, offline).
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {name: Ana, times: 3, loud: false, ratio: 0.5, tags: [], options: {}}
    variables: {i: 0}
    next: count
  - id: count
    type: Set
    set: {i: "{{ i + 1 }}"}
    next:
      - to: count
        when: "{{ i < times }}"
      - to: greet
  - id: greet
    type: Set
    set: {greeting: "Olá, {{ name }}! Counted to {{ i }}."}
"""
SPEAKER = """
diagram: speaker
description: Speaks its pieces as text_delta events.
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {pieces: [Ciao, " ", mondo]}
    next: speak
  - id: speak
    type: Speak
    with: {pieces: "{{ pieces }}"}
    set: {said: "{{ result }}"}
"""
HOLDER = """
diagram: holder
description: Waits for the test's gate.
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {gate: g}
    next: speak
  - id: speak
    type: Speak
    with: {pieces: [one, two, three]}
    next: hold
  - id: hold
    type: Hold
    with: {gate: "{{ gate }}"}
    next: done
  - id: done
    type: Set
    set: {done: true}
"""
ECHOER = """
diagram: echoer
description: Keeps its input.
blocks:
  - id: start
    type: Start
    inputs: {text: ""}
    next: keep
  - id: keep
    type: Set
    set: {kept: "{{ text }}"}
"""
BROKEN = """
diagram: broken
blocks:
  - id: start
    type: Start
    next: nowhere
"""


@pytest.fixture
def api_registry() -> BlockRegistry:
    return BlockRegistry((*BUILTIN_BLOCKS, *TEST_BLOCKS, Speak, Hold))


@pytest.fixture
def robots_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "robots"
    (folder / "data").mkdir(parents=True)
    for name, text in {"counter": COUNTER, "speaker": SPEAKER, "holder": HOLDER, "echoer": ECHOER,
                       "broken": BROKEN}.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (folder / "data" / "not_a_robot.yaml").write_text("a: 1\n")
    return folder


@pytest.fixture
def make_app(robots_dir: Path, api_registry: BlockRegistry, tmp_path: Path) -> Callable[..., Any]:
    """`make_app(**create_app options)`: the API over the robots, keys ci and other, runs under tmp_path/runs."""
    from engine.web.api import create_app

    def make(**options: Any) -> Any:
        environ = options.pop("environ", {"DIAGRAMA_API_KEYS": KEYS})
        options.setdefault("runs_dir", tmp_path / "runs")
        options.setdefault("offline", True)
        return create_app(robots_dir, registry=api_registry, services=Services(environ=environ), **options)

    return make


def inner(app: Any) -> Any:
    """The Starlette app inside the middleware (RequestLog → Gate → app), for its state: the backend."""
    return app.app.app


@pytest.fixture
def client(make_app: Callable[..., Any]) -> Callable[..., httpx.AsyncClient]:
    def make(app: Any = None, **headers: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app if app is not None else make_app()),
                                 base_url="http://api.test", headers=headers or AUTH, timeout=30)

    return make


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass
class Served:
    url: str
    app: Any
    _server: Any = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@pytest.fixture
def serve(make_app: Callable[..., Any]) -> Iterator[Callable[..., Served]]:
    """`serve(app=None)`: the app under uvicorn on a free loopback port (event streams need a real server: httpx's
    ASGI transport hands the body over only once it is complete)."""
    import uvicorn

    started: list[Served] = []

    def start(app: Any = None) -> Served:
        app = app if app is not None else make_app()
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
        thread = threading.Thread(target=server.run, name=f"api-{port}", daemon=True)
        thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the API did not start on port {port}")
            time.sleep(0.02)
        served = Served(f"http://127.0.0.1:{port}", app, server, thread)
        started.append(served)
        return served

    yield start
    for gate in GATES.values():
        gate.set()  # a run still holding lets the server stop
    for served in started:
        served.stop()
    GATES.clear()


@dataclass
class SentEvent:
    id: int
    event: str
    data: str


def read_events(response: httpx.Response | Iterator[str], stop_after: int | None = None) -> list[SentEvent]:
    """Server-Sent Events from a streamed response (or its lines), until it ends (or `stop_after` events were read)."""
    found: list[SentEvent] = []
    fields: dict[str, str] = {}
    for line in response.iter_lines() if isinstance(response, httpx.Response) else response:
        if line == "":
            if "data" in fields:
                found.append(SentEvent(int(fields.get("id", "0")), fields.get("event", "message"), fields["data"]))
                if stop_after is not None and len(found) >= stop_after:
                    return found
            fields = {}
            continue
        if line.startswith(":"):
            continue  # a ping
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value
    return found
