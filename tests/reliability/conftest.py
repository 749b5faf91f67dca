"""Fixtures for the reliability suite: the fake vendor server, and running one faulty call.

Only public entry points are used: `engine.run_async`, `engine.Services(environ=...)`,
`engine.read_events` and `blocks.registry.registry()`. The fake server is reached through
the request block's `base_url` input (test_base_url_variables.py goes through the
`*_BASE_URL` environment variables instead).

Runs of one module share one event loop and one Services, as the runs of one process
do (docs/ARCHITECTURE.md: the services a run gets come through its context); that keeps building a TLS
context per run (~80 ms here) out of every test. Faults that only wait (on a timeout,
a backoff, a hint) can be run side by side with `FaultRunner.run_all`, each run timed
on its own, so that the suite's wall time is not the sum of their waits.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import engine
from blocks.registry import registry as block_registry
from tests.reliability.fakevendor import BLOCK_TYPES, ENV, KEYS, MODELS, FakeVendorServer, Hit, Step

LEVELS = ("ignore", "handle", "fail")
"""Ignore; Handle with on_error (the handler runs); Handle without on_error (the run fails)."""

MARGIN_S = 2.0
"""How far past the block's timeout a run may end (a loaded 2-core machine)."""

BATCH_LIMIT_S = 60.0
"""A batch of side-by-side runs that takes longer than this is a hang, not a slow machine."""


def diagram_yaml(vendor: str, level: str, timeout: float, extra: str = "", base_url: str | None = None,
                 message_level: str = "Detailed") -> str:
    """start → ask (the request block under test) → after; with level "handle", ask's on_error is `handler`."""
    if base_url is not None:
        extra = f"      base_url: {base_url}\n{extra}"
    error_level = "Ignore" if level == "ignore" else "Handle"
    on_error = "    on_error: handler\n" if level == "handle" else ""
    handler = textwrap.indent(textwrap.dedent("""\
        - id: handler
          type: Set
          set:
            caught: "{{ error }}"
    """), "  ") if level == "handle" else ""
    return f"""\
diagram: reliability-{vendor}
blocks:
  - id: start
    type: Start
    message_level: {message_level}
    next: ask
  - id: ask
    type: {BLOCK_TYPES[vendor]}
    error_level: {error_level}
    with:
      model: {MODELS[vendor]}
      role: You are a support agent for an online shop.
      request: Where is my order 42?
      max_tokens: 64
      timeout: {timeout}
{extra}    set:
      answer: "{{{{ result }}}}"
    next: after
{on_error}{handler}  - id: after
    type: Set
    set:
      reached_after: true
"""


@dataclass
class Outcome:
    """What one run did, seen from the outside."""

    vendor: str
    level: str
    timeout: float
    result: engine.RunResult
    wall: float
    trace_text: str
    hits: list[Hit]
    test_id: str
    _events: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The trace's events, once the trace is checked for validity (check_trace)."""
        if self._events is None:
            self._events = check_trace(self)
        return self._events

    @property
    def attempts(self) -> int:
        """Requests the fake vendor received on the vendor's route."""
        return sum(1 for hit in self.hits if hit.vendor == self.vendor)

    def of(self, name: str, block: str = "ask") -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == name and e.get("block") == block]

    def explain(self) -> str:
        return (f"status={self.result.status} errors={self.result.errors} wall={self.wall:.2f}s "
                f"attempts={self.attempts} path={self.result.path}")


@dataclass
class Prepared:
    """A run ready to go: the fake vendor scripted, the diagram loaded."""

    vendor: str
    level: str
    timeout: float
    test_id: str
    folder: Path
    diagram: engine.Diagram
    services: engine.Services


class FaultRunner:
    """Runs the three-block diagram against a script of faults; one per test module."""

    def __init__(self, server: FakeVendorServer, blocks: engine.BlockRegistry, folder: Path,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.blocks = blocks
        self.folder = folder
        self.loop = loop
        self.services = engine.Services(environ=dict(KEYS))

    def prepare(self, vendor: str, level: str, steps: list[Step] | tuple[Step, ...], *,
                timeout: float = 2.0, extra: str = "", test_id: str | None = None, base: str | None = None,
                via_environment: bool = False, message_level: str = "Detailed") -> Prepared:
        """Script the fake vendor and load the diagram (loading is not part of a run's wall time).

        `base` replaces the fake server's URL; `via_environment` routes through `*_BASE_URL`
        in a Services of the run's own instead of the block's `base_url` input."""
        test_id = test_id or uuid.uuid4().hex[:12]
        self.server.script(test_id, *steps)
        folder = self.folder / test_id
        folder.mkdir()
        base = base or self.server.base(test_id)
        if via_environment:
            services = engine.Services(environ={**KEYS, ENV[vendor]: base})
            text = diagram_yaml(vendor, level, timeout, extra, message_level=message_level)
        else:
            services = self.services
            text = diagram_yaml(vendor, level, timeout, extra, base_url=base, message_level=message_level)
        path = folder / "diagram.yaml"
        path.write_text(text, encoding="utf-8")
        diagram = engine.load(path, self.blocks)
        return Prepared(vendor, level, timeout, test_id, folder, diagram, services)

    async def execute(self, prepared: Prepared) -> Outcome:
        """Run a prepared diagram; the outcome's trace is checked by whoever reads its events."""
        began = time.perf_counter()
        result = await engine.run_async(prepared.diagram, {}, registry=self.blocks, runs_dir=prepared.folder / "runs",
                                        services=prepared.services)
        wall = time.perf_counter() - began
        assert result.trace is not None and result.trace.exists(), "every run writes a trace"
        trace_text = result.trace.read_text(encoding="utf-8")
        return Outcome(prepared.vendor, prepared.level, prepared.timeout, result, wall, trace_text,
                       self.server.hits(prepared.test_id), prepared.test_id)

    def run(self, vendor: str, level: str, steps: list[Step] | tuple[Step, ...], **options: Any) -> Outcome:
        """One run, its trace checked."""
        outcome = self.loop.run_until_complete(self.execute(self.prepare(vendor, level, steps, **options)))
        _ = outcome.events
        return outcome

    def run_all(self, cases: Mapping[str, tuple[str, str, list[Step], dict[str, Any]]],
                concurrency: int = 24) -> dict[str, Outcome | BaseException]:
        """Runs side by side: {key: (vendor, level, steps, options)} → {key: Outcome or the exception}.

        At most `concurrency` at once. Traces are checked by whoever reads an outcome, so
        each test reports its own."""
        prepared = {key: self.prepare(vendor, level, steps, **options)
                    for key, (vendor, level, steps, options) in cases.items()}
        gate = asyncio.Semaphore(concurrency)

        async def one(case: Prepared) -> Outcome:
            async with gate:
                return await self.execute(case)

        async def everything() -> list[Outcome | BaseException]:
            runs = [one(case) for case in prepared.values()]
            return await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), BATCH_LIMIT_S)

        return dict(zip(prepared, self.loop.run_until_complete(everything()), strict=True))


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeVendorServer]:
    server = FakeVendorServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def blocks() -> engine.BlockRegistry:
    return block_registry(plugins=False)


@pytest.fixture(scope="module")
def fault_runner(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultRunner]:
    loop = asyncio.new_event_loop()
    try:
        yield FaultRunner(fake_server, blocks, tmp_path_factory.mktemp("reliability"), loop)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


Run = Callable[..., Outcome]


@pytest.fixture
def run_fault(fault_runner: FaultRunner) -> Run:
    """run_fault(vendor, level, steps, timeout=2, ...) → Outcome with its trace checked."""
    return fault_runner.run


def check_trace(outcome: Outcome) -> list[dict[str, Any]]:
    """The trace is complete and valid: JSON lines from run_started to run_finished, same status."""
    result = outcome.result
    lines = outcome.trace_text.splitlines()
    assert lines, "the trace is empty"
    parsed = []
    for number, line in enumerate(lines, start=1):
        try:
            parsed.append(json.loads(line))
        except ValueError as exc:
            raise AssertionError(f"trace line {number} is not JSON: {line[:200]!r}") from exc
    assert result.trace is not None
    events = engine.read_events(result.trace)
    assert [e.get("event") for e in events] == [e.get("event") for e in parsed]
    assert events[0]["event"] == "run_started", events[0]
    assert events[-1]["event"] == "run_finished", events[-1]
    assert sum(e["event"] == "run_finished" for e in events) == 1
    assert events[-1]["status"] == result.status
    for event in events:
        assert {"event", "run_id", "timestamp"} <= event.keys(), event
        assert event["run_id"] == result.run_id
    assert [e.get("type") for e in events[-1].get("errors", [])] == [e["type"] for e in result.errors]
    for key in KEYS.values():
        assert key not in outcome.trace_text, "an API key was written to the trace"
    return events


def assert_error(outcome: Outcome, error_type: str) -> dict[str, Any]:
    """The run ended as the block's error level says, with one error of `error_type` from `ask`."""
    result = outcome.result
    why = outcome.explain()
    assert [e["type"] for e in result.errors] == [error_type], why
    error = result.errors[0]
    assert error["block"] == "ask", why
    assert error["message"], why
    failed = outcome.of("block_failed")
    assert [e["error_type"] for e in failed] == [error_type], why
    if outcome.level == "ignore":
        assert result.status == "succeeded", why
        assert result.path == ["start", "ask", "after"], why
        assert error.get("ignored") is True, why
    elif outcome.level == "handle":
        assert result.status == "succeeded", why
        assert result.path == ["start", "ask", "handler"], why
        assert error.get("handled_by") == "handler", why
        caught = result.variables["caught"]
        assert caught["type"] == error_type and caught["block"] == "ask" and caught["message"], caught
    else:
        assert result.status == "failed", why
        assert result.path == ["start", "ask"], why
    assert_bounded(outcome)
    return error


def assert_success(outcome: Outcome, answer: str | None = None) -> dict[str, Any]:
    """The call recovered: the run succeeded along `next`, and provider_called says how many attempts."""
    result = outcome.result
    why = outcome.explain()
    assert result.status == "succeeded", why
    assert result.errors == [], why
    assert result.path == ["start", "ask", "after"], why
    if answer is not None:
        assert result.variables["answer"] == answer, why
    called = outcome.of("provider_called")
    assert len(called) == 1, why
    assert called[0]["attempts"] == outcome.attempts, why
    assert_attempts_traced(outcome)
    assert_bounded(outcome)
    return called[0]


def assert_attempts_traced(outcome: Outcome) -> int:
    """At Detailed every attempt is an http_request event, every retry a provider_retried event.

    Returns the attempts the block made. The fake vendor saw each of them, except that
    an attempt the block's deadline cut off may not have reached it yet (a loaded machine).
    """
    requests = outcome.of("http_request")
    made = len(requests)
    assert [r.get("attempt") for r in requests] == list(range(1, made + 1)), outcome.explain()
    assert len(outcome.of("provider_retried")) == made - 1, outcome.explain()
    cut_off = [e for e in outcome.result.errors if e["type"] == "block_timeout"]
    assert made - (1 if cut_off else 0) <= outcome.attempts <= made, f"{made} attempts traced; {outcome.explain()}"
    return made


def assert_bounded(outcome: Outcome) -> None:
    assert outcome.wall <= outcome.timeout + MARGIN_S, (
        f"the run took {outcome.wall:.2f} s with a block timeout of {outcome.timeout:g} s")
