"""What a block sees of its run: scope, trace, services, and loop control.

The scope holds inputs, variables, the current outputs (inside `set`/`when`), `error`
and loop bindings. Services are typed fields the caller fills (environment, clock,
transports, the simulator, limits, reply observers, tool stubs, scripted blocks) so that blocks read no
globals and tests can swap the far side of the wire. The providers' own types stay
out: this layer names what it needs of them as small Protocols.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engine.compile.templating import Scope
from engine.errors import TemplateError
from engine.format.levels import MessageLevel
from engine.format.values import full_value, short_value
from engine.runtime.budgets import SharedBudget, check_budget
from engine.runtime.trace import EVENT_LEVELS, RunTrace

if TYPE_CHECKING:
    import httpx  # annotations only: `import engine` must not load httpx

    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.format.levels import ErrorLevel
    from engine.format.redact import Redactor
    from engine.format.spec import Budget
    from engine.providers.response_cache import ResponseCache
    from engine.runtime.durable import Answer, Checkpoints
    from engine.runtime.result import SubdiagramRun
    from engine.runtime.scripted import ScriptedBlocks
    from engine.tools.mcp import McpSessions

__all__ = ["PROCESS_RUN_OBSERVERS", "Nesting", "OfflineVendors", "PinnedAnswers", "ReplyObserver", "RunContext", "RunObserver",
           "RunObserverFactory", "Services", "Spend", "TextObserver", "VendorSlots"]


class Spend:
    """What a run's requests cost so far: the known USD, and how many requests had no price (unknown).

    A Subdiagram's child and a Loop's passes add to their caller's: one Spend per top run.
    """

    __slots__ = ("blocks", "requests", "unknown", "usage", "usd")

    def __init__(self, usd: float = 0.0, requests: int = 0, unknown: int = 0,
                 usage: dict[str, int] | None = None, blocks: dict[str, dict[str, Any]] | None = None) -> None:
        self.usd = usd
        self.requests = requests
        self.unknown = unknown
        self.usage: dict[str, int] = usage or {}
        """The requests' tokens, per kind."""
        self.blocks: dict[str, dict[str, Any]] = blocks or {}
        """The same per block address (`ask`, `sub/ask`): {requests, usd, unknown, usage}; as many as the blocks."""

    def add(self, usage: Mapping[str, int], usd: float | None, block: str = "") -> None:
        self.requests += 1
        if usd is None:
            self.unknown += 1
        else:
            self.usd += usd
        totals = self.usage
        for kind, count in usage.items():
            totals[kind] = totals.get(kind, 0) + count
        own = self.blocks.get(block)
        if own is None:
            own = self.blocks[block] = {"requests": 0, "usd": 0.0, "unknown": 0, "usage": {}}
        own["requests"] += 1
        if usd is None:
            own["unknown"] += 1
        else:
            own["usd"] += usd
        kinds = own["usage"]
        for kind, count in usage.items():
            kinds[kind] = kinds.get(kind, 0) + count

    def by_block(self) -> dict[str, dict[str, Any]]:
        """Each block's requests, tokens per kind and cost, shown as the run's `cost` is (usd null when unknown)."""
        shown = {}
        for block, own in self.blocks.items():
            usd = round(own["usd"], 9)
            cost = {"usd": None, "known_usd": usd} if own["unknown"] else {"usd": usd}
            shown[block] = {"requests": own["requests"], "usage": dict(own["usage"]), **cost}
        return shown

    def state(self) -> dict[str, Any]:
        """As a checkpoint keeps it (Spend(**state) again)."""
        return {"usd": self.usd, "requests": self.requests, "unknown": self.unknown, "usage": self.usage,
                "blocks": self.blocks}

    def as_json(self) -> dict[str, Any]:
        """`{"usd": total, "requests": n, "unknown_steps": 0}`; with any unknown price, `usd` is null and the known
        part is `known_usd`: a partial sum is never shown as the whole."""
        usd = round(self.usd, 9)
        if self.unknown:
            return {"usd": None, "known_usd": usd, "requests": self.requests, "unknown_steps": self.unknown}
        return {"usd": usd, "requests": self.requests, "unknown_steps": 0}


class OfflineVendors(Protocol):
    """The simulator as the request path uses it: an in-process transport per vendor."""

    def transport(self, vendor: str) -> httpx.AsyncBaseTransport: ...


class PinnedAnswers(OfflineVendors, Protocol):
    """Scripted vendors for the blocks whose answer is pinned (the studio's pins, engine.testing.pins)."""

    def pinned(self, block: str) -> bool: ...


class VendorSlots(Protocol):
    """Limits shared by runs (a batch's rate and concurrency): held around each HTTP attempt."""

    def slot(self, vendor: str) -> AbstractAsyncContextManager[None]: ...


class Nesting(Protocol):
    """The executor's runs inside a step: a Subdiagram's child, the passes of a concurrent Loop."""

    async def subdiagram(self, context: RunContext, diagram: str, inputs: Mapping[str, Any]) -> SubdiagramRun: ...

    async def passes(self, context: RunContext, bindings: Sequence[Mapping[str, Any]], concurrency: int) -> list[Scope]:
        ...


ReplyObserver = Callable[[str, dict[str, Any]], None]
"""observer(block id, {"text": ..., "calls": [{id, name, arguments}]}): hears each vendor reply a run reads; an
HttpRequest's answer is {"status", "json" or "text"}, or {"error": "timeout"}, as a scenario scripts it."""

TextObserver = Callable[[str, str], None]
"""text_observer(block id, piece): one piece of a streamed answer's text."""

RunObserver = Callable[[dict[str, Any]], None]
"""observer(event): hears each event the run's trace keeps, before it is written; it may add fields to it."""

RunObserverFactory = Callable[["Diagram", "Redactor"], RunObserver]
"""factory(diagram, the run's redactor): one run's observer (`--otel`'s OpenTelemetry export)."""

_SECRET_NAME = re.compile("API_KEY|TOKEN|SECRET|PASSWORD")
"""In an environment variable's name (upper-cased): its value is scrubbed from everything a run writes."""

PROCESS_RUN_OBSERVERS: list[RunObserverFactory] = []
"""Observers every Services in this process starts with: only `diagrama worker --otel` sets them, as its tasks
make their own Services."""


@dataclass
class Services:
    """What runs share in a process: environment, offline switch, clock, and the far side of the wire."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    offline: bool = False
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    transports: dict[str, httpx.AsyncBaseTransport] = field(default_factory=dict)
    """A stand-in for a vendor's far side of the wire, by vendor name (tests, benchmarks)."""
    http_clients: dict[tuple[str, int, int, int], httpx.AsyncClient] = field(default_factory=dict)
    """The client pool, keyed by (vendor, event loop, transport, response cache); the providers fill it."""
    response_cache: ResponseCache | None = None
    """Where request blocks' vendor answers are kept and replayed from (`--cache DIR`; engine.providers.response_cache
    `open_cache`); None: every request goes to the vendor. Never used offline, nor for an HttpRequest's calls."""
    simulator: OfflineVendors | None = None
    """Where `offline` requests go; the providers make a default simulator on first use."""
    pins: PinnedAnswers | None = None
    """The run's pinned blocks: their requests go to these scripted vendors, online or offline, never to the vendor
    nor the made-up simulator. Not shared (`share`): one run's, its top-level block ids."""
    limits: VendorSlots | None = None
    """Per-vendor slots each HTTP attempt waits for (`diagrama batch`'s --rpm and --max-concurrent)."""
    reply_observers: list[ReplyObserver] = field(default_factory=list)
    """Called with every vendor reply a request block reads (`diagrama run --record` installs one)."""
    tool_stubs: dict[str, Any] = field(default_factory=dict)
    """Tool name → the result ToolDispatch returns instead of calling the handler (scenarios)."""
    run_observers: list[RunObserverFactory] = field(default_factory=lambda: list(PROCESS_RUN_OBSERVERS))
    """Each makes one observer per run that hears the run's trace events (`--otel`)."""
    mcp_sessions: McpSessions | None = None
    """MCP client sessions the runs share (a batch's, per process); None: each run opens its own, closed at its end."""
    checkpoints: Checkpoints | None = None
    """Where durable runs checkpoint (engine.runs.checkpoints); None: runs keep no checkpoints and cannot wait."""
    stream: bool = False
    """Request blocks ask for a stream unless their `stream` input says otherwise (`diagrama run --stream`)."""
    text_observers: list[TextObserver] = field(default_factory=list)
    """Called with (block id, piece) for each piece of a streamed answer as it arrives, whatever the message level."""
    scripted: ScriptedBlocks | None = None
    """A scenario's replies for blocks it scripts itself (a Function's), and the calls they make; None outside one."""
    shared_budget: SharedBudget | None = None
    """A budget the runs of these services draw on together (a batch's `--budget-total`); None: none."""
    stops: dict[str, str] = field(default_factory=dict)
    """Top runs asked to stop at their next step, by id: `cancelled` (a caller cancelled it) or `interrupted` (the
    server drains: it goes on from its last checkpoint when resumed). The step loop looks here before each step."""
    run_clock: datetime.datetime | None = None
    """The instant every top run of these services starts at, as templates' `now()` and `today()` read it (a
    scenario's or eval's `clock:`, `diagrama run --clock`); None: the real time when each run starts."""
    inline_calls: bool = False
    """A plain `def` Function runs on the run's own thread, stopped at its timeout by a timer signal, rather than on a
    handler thread: for a process that runs one run in its main thread (`diagrama run`, `resume`), where holding the
    event loop holds nothing else. Not inside a concurrent Loop's passes, whose calls must overlap."""

    def share(self, source: Services) -> None:
        """Use `source`'s shared state (wire stand-ins, client pool, simulator, limits, observers, stubs, sessions)."""
        self.transports = source.transports
        self.http_clients = source.http_clients
        self.response_cache = source.response_cache
        self.simulator = source.simulator
        self.limits = source.limits
        self.reply_observers = source.reply_observers
        self.tool_stubs = source.tool_stubs
        self.run_observers = source.run_observers
        self.mcp_sessions = source.mcp_sessions
        self.checkpoints = source.checkpoints
        self.scripted = source.scripted
        self.inline_calls = source.inline_calls
        self.stream = source.stream
        self.text_observers = source.text_observers
        self.stops = source.stops
        self.run_clock = source.run_clock

    def secrets(self, names: Iterable[str] = ()) -> list[str]:
        """Values of environment variables that hold keys, and of those `names` (a diagram's `secrets:`), so that the
        trace can scrub them."""
        found = [value for name, value in self.environ.items() if value and _SECRET_NAME.search(name.upper())]
        return found + [self.environ[name] for name in names if self.environ.get(name)]


class RunContext:
    """One run's state as blocks see it. The executor sets `current` before each step."""

    __slots__ = (
        "answer",
        "ceiling",
        "ceiling_of",
        "clock",
        "concurrent",
        "current",
        "deadline",
        "diagram",
        "entered_from_body",
        "error_levels",
        "loop_states",
        "message_levels",
        "nesting",
        "port",
        "prefix",
        "run_id",
        "scope",
        "services",
        "spend",
        "started",
        "trace",
    )

    def __init__(
        self,
        run_id: str,
        diagram: Diagram,
        scope: Scope,
        trace: RunTrace,
        services: Services,
        message_levels: Mapping[CompiledBlock, MessageLevel] | None = None,
        *,
        error_levels: Mapping[CompiledBlock, ErrorLevel] | None = None,
        prefix: str = "",
        nesting: Nesting | None = None,
    ) -> None:
        self.run_id = run_id
        self.diagram = diagram
        self.scope = scope
        self.trace = trace
        self.services = services
        self.message_levels = message_levels
        """Each block's message level in this run when its `--message-level` changes some (Diagram.message_levels);
        None: each block's own `message_level` stands."""
        self.error_levels = error_levels
        """Each block's error level when this run is a Subdiagram's child that inherits its caller's
        (Diagram.inherited_levels); None: each block's own `error_level` stands."""
        self.prefix = prefix
        """What comes before a block id in its address from the top run: `sub/` in a Subdiagram's child."""
        self.nesting = nesting
        """The executor's runs inside a step (`run_subdiagram`, `run_passes`)."""
        self.current: CompiledBlock = diagram.start
        self.port: str | None = None
        self.entered_from_body = False
        self.loop_states: dict[str, Any] = {}
        self.started = time.perf_counter()
        self.answer: Answer | None = None
        """A person's answer to the Wait this run resumes at (`diagrama resume --input`); the Wait takes it."""
        self.deadline: float | None = None
        """When the run (or a Subdiagram's child, by its own Start `timeout`) must end, in its event loop's time; None:
        no deadline. What a block cannot cancel (a call on the run's own thread) it bounds by this."""
        self.concurrent = False
        """Whether this run is a concurrent Loop's pass, or nested in one: its steps run beside others'."""
        self.spend = Spend()
        """What the run's requests cost so far; a nested run's context shares its caller's."""
        self.ceiling: Budget | None = None
        """The budget of this run's requests (engine.runtime.budgets): the top run's, tightened by the child's
        own Start budget and the Subdiagram's or Loop's own around it; a block's own tightens it again."""
        self.ceiling_of = "the run's budget"
        """Whose budget `ceiling` is, as a budget_exceeded error names it."""
        self.clock: datetime.datetime | None = None
        """The run's clock: the instant it started (a resumed run's, from its checkpoint), as `now()` reads it."""

    @property
    def message_level(self) -> MessageLevel:
        """The current block's message level in this run."""
        levels = self.message_levels
        return self.current.message_level if levels is None else levels[self.current]

    @property
    def address(self) -> str:
        """The current block as the top run addresses it: its id, or `sub/ask` inside the Subdiagram `sub`. Scenario
        replies and stubs, recorded replies and error records name blocks so."""
        return self.prefix + self.current.id

    async def run_subdiagram(self, diagram: str, inputs: Mapping[str, Any]) -> SubdiagramRun:
        """Run the diagram file `diagram` (as the current block wrote it) with `inputs`, as one step of this run."""
        assert self.nesting is not None, "a RunContext made outside the executor runs no subdiagram"
        return await self.nesting.subdiagram(self, diagram, inputs)

    async def run_passes(self, bindings: Sequence[Mapping[str, Any]], concurrency: int) -> list[Scope]:
        """Run the current block's body once per mapping of `bindings` (the names each pass binds), at most
        `concurrency` at a time, each in its own copy of the scope; the passes' final scopes, in order."""
        assert self.nesting is not None, "a RunContext made outside the executor runs no passes"
        return await self.nesting.passes(self, bindings, concurrency)

    def count_request(self, usage: Mapping[str, int], usd: float | None) -> None:
        """Count one request in the run's totals: its tokens per kind, and its cost in USD (None: price unknown)."""
        self.spend.add(usage, usd, self.address)
        shared = self.services.shared_budget
        if shared is not None:
            shared.add(usage, usd)

    @property
    def budgeted(self) -> bool:
        """Whether a budget bounds the current block's requests (else a request block estimates nothing)."""
        return self.ceiling is not None or self.current.impl.spec.budget is not None \
            or self.services.shared_budget is not None

    def check_budget(self, tokens: int, usd: float | None, what: str) -> None:
        """Before a request is sent: BudgetExceeded when one estimated at `tokens` and `usd` (None: no price) would
        pass the current block's budget, the run's (as inherited here), or the shared one of a batch."""
        own = self.current.impl.spec.budget
        if own is not None:
            check_budget(own, self.spend, tokens, usd, what, f"the budget of block '{self.address}'")
        check_budget(self.ceiling, self.spend, tokens, usd, what, self.ceiling_of)
        shared = self.services.shared_budget
        if shared is not None:
            shared.check(tokens, usd, what)

    def emit(self, event: str, **fields: Any) -> None:
        """Write an event about the current block, if its message level keeps it."""
        if self.message_level >= EVENT_LEVELS.get(event, _DEBUG):
            current = self.current
            self.trace.record(event, {"block": current.id, "block_type": current.type_name, **fields})

    def shown(self, value: Any) -> Any:
        """`value` as the current block's trace shows it: short at Debug, whole at Detailed."""
        return full_value(value) if self.message_level >= MessageLevel.DETAILED else short_value(value)

    def has_input(self, name: str) -> bool:
        return name in self.current.deferred

    def evaluate_input(self, name: str, scope: Scope | None = None) -> Any:
        """Evaluate one of the current block's deferred inputs now (in `scope`, a pass's, when given)."""
        evaluator = self.current.deferred[name]
        try:
            return evaluator.evaluate(self.scope if scope is None else scope)
        except TemplateError as exc:
            raise TemplateError(f"with.{name}: {exc.message}", type=exc.type) from None

    def follow(self, port: str) -> None:
        """Leave this step through a port (Loop's `body`) instead of `next`."""
        self.port = port

    def bind(self, name: str, value: Any) -> Any:
        """Set a scope name for the blocks that follow; returns what it shadowed."""
        values = self.scope.values
        previous = values.get(name, _UNBOUND)
        values[name] = value
        return previous

    def restore(self, name: str, previous: Any) -> None:
        # A bare object() is "was unbound": `bind`'s own, or the one a block's `load_state` made after a resume.
        if previous is _UNBOUND or type(previous) is object:
            self.scope.values.pop(name, None)
        else:
            self.scope.values[name] = previous


_UNBOUND = object()
_DEBUG = MessageLevel.DEBUG  # read once: a member looked up through the enum's metaclass is slow on a hot path
