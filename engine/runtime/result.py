"""What a run did, as every consumer (console, JSON, store, results files, scenarios) receives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.format.redact import Redactor

__all__ = ["RunResult", "SubdiagramRun"]


@dataclass
class RunResult:
    """What a run did: `status` is "succeeded", "failed", or "waiting" (a Wait asks a person; `waiting` says what).

    Its variables, outputs and errors are scrubbed of keys (engine.format.redact) as the
    trace is; `redact` scrubs anything else of this run's (its inputs, recorded replies).
    """

    run_id: str
    status: str
    variables: dict[str, Any]
    path: list[str]
    errors: list[dict[str, Any]]
    trace: Path | None
    duration: float
    steps: int
    diagram: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    redactor: Redactor = field(default_factory=Redactor, repr=False, compare=False)
    waiting: dict[str, Any] | None = None
    """With status "waiting": what the Wait asks (block, prompt, form, timeout, asked_at)."""
    cost: dict[str, Any] = field(default_factory=lambda: {"usd": 0.0, "requests": 0, "unknown_steps": 0})
    """What its requests cost: `{"usd", "requests", "unknown_steps"}`; `usd` null (and the known part `known_usd`)
    when any request's price is unknown (engine.runtime.context.Spend)."""
    usage: dict[str, int] = field(default_factory=dict)
    """Its requests' tokens, per kind (input_tokens, output_tokens, thinking_tokens, cache_write_tokens, ...)."""
    usage_by_block: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The same per request block (its address: `ask`, `sub/ask`): requests, usage per kind, usd (Spend.by_block)."""

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def redact(self, value: Any) -> Any:
        """`value` scrubbed as this run's trace and result are: its secrets, vendor keys and their masked forms."""
        return self.redactor.value(value)

    def as_json(self) -> dict[str, Any]:
        """The object `diagrama run --output json` prints (README, "Commands")."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "variables": self.variables,
            "path": self.path,
            "errors": self.errors,
            "trace": str(self.trace) if self.trace else None,
            "cost": self.cost,
            "usage": self.usage,
            "usage_by_block": self.usage_by_block,
            **({"waiting": self.waiting} if self.waiting is not None else {}),
        }


@dataclass
class SubdiagramRun:
    """What a Subdiagram's child did, as one step of the run that called it.

    `errors` are the child's own (its block ids as the child names them); the caller's run lists them too,
    addressed from the top (`sub/ask`). `error` is the one that failed it, when it failed.
    """

    run_id: str
    status: str
    variables: dict[str, Any]
    path: list[str]
    errors: list[dict[str, Any]]
    file: Path
    error: dict[str, Any] | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"
