"""Set: applies its `set` and follows its `next` (assigning, counting, shaping data)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import Block

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio


class Set(Block):
    """Does nothing itself: the executor applies `set` and picks the link."""

    def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {}
