"""What a block sees of its run: scope, trace, services, and loop control.

The scope holds inputs, variables, the current outputs (inside `set`/`when`), `error`
and loop bindings. Services are injected (HTTP clients, environment, clock) so that
blocks read no globals and tests can swap the far side of the wire.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.compile.templating import Scope
from engine.errors import TemplateError
from engine.format.spec import MessageLevel
from engine.runtime.trace import EVENT_LEVELS, Trace

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock, Diagram

__all__ = ["RunContext", "Services"]


@dataclass
class Services:
    """What runs share in a process: environment, offline switch, clients, clock."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    offline: bool = False
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    extras: dict[str, Any] = field(default_factory=dict)
    """Per-process state that block families keep here (pooled HTTP clients, simulators)."""

    def secrets(self) -> list[str]:
        """Values of environment variables that hold keys, so the trace can scrub them."""
        return [
            value
            for name, value in self.environ.items()
            if value and any(part in name.upper() for part in ("API_KEY", "TOKEN", "SECRET", "PASSWORD"))
        ]


class RunContext:
    """One run's state as blocks see it. The executor sets `current` before each step."""

    __slots__ = (
        "current",
        "default_message_level",
        "diagram",
        "entered_from_body",
        "loop_states",
        "port",
        "run_id",
        "scope",
        "services",
        "started",
        "trace",
    )

    def __init__(
        self,
        run_id: str,
        diagram: Diagram,
        scope: Scope,
        trace: Trace,
        services: Services,
        default_message_level: MessageLevel,
    ) -> None:
        self.run_id = run_id
        self.diagram = diagram
        self.scope = scope
        self.trace = trace
        self.services = services
        self.default_message_level = default_message_level
        self.current: CompiledBlock = diagram.start
        self.port: str | None = None
        self.entered_from_body = False
        self.loop_states: dict[str, Any] = {}
        self.started = time.perf_counter()

    @property
    def message_level(self) -> MessageLevel:
        level = self.current.message_level
        return self.default_message_level if level is None else level

    def emit(self, event: str, **fields: Any) -> None:
        """Write an event about the current block, if its message level keeps it."""
        if self.message_level >= EVENT_LEVELS.get(event, MessageLevel.DEBUG):
            self.trace.emit(event, block=self.current.id, block_type=self.current.type_name, **fields)

    def has_input(self, name: str) -> bool:
        return name in self.current.deferred

    def evaluate_input(self, name: str) -> Any:
        """Evaluate one of the current block's deferred inputs now."""
        evaluator = self.current.deferred[name]
        try:
            return evaluator.evaluate(self.scope)
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
        if previous is _UNBOUND:
            self.scope.values.pop(name, None)
        else:
            self.scope.values[name] = previous


_UNBOUND = object()
