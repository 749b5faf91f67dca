"""Set: applies its `set` and follows its `next` (assigning, counting, shaping data)."""

from __future__ import annotations

from typing import Any

from engine import Block, RunContext


class Set(Block):
    """Does nothing itself: the executor applies `set` and picks the link."""

    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        return {}
