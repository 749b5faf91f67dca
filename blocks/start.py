"""Start: where a run begins; its settings (levels, inputs, variables, limits) apply to all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from engine import Block, RunSettings

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio


class Start(Block):
    """The run's entry point. `inputs`, `variables`, `max_steps` and `timeout` live here."""

    Settings: ClassVar[type[RunSettings]] = RunSettings
    is_start: ClassVar[bool] = True

    def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {}
