"""Start: where a run begins; its settings (levels, inputs, variables, limits) apply to all."""

from __future__ import annotations

from typing import Any, ClassVar

from engine import Block, RunContext, RunSettings


class Start(Block):
    """The run's entry point. `inputs`, `variables`, `max_steps` and `timeout` live here."""

    Settings: ClassVar[type[RunSettings]] = RunSettings
    is_start: ClassVar[bool] = True

    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {}
