"""Blocks a scenario scripts itself, rather than through a vendor's wire: their replies, and the calls they made.

A Function block asks `call` before it runs its code: the scenario's next reply for the block
(`{result: ...}` or `{error: "..."}`), or None when the scenario scripts none for it and the real
code runs. Every call is recorded, scripted or not, for the scenario's `expect.function_calls`.
A Wait asks `answer` for a person's answer (`{answer: ..., waited: seconds}`), or None: the run
then stops `waiting`, as a real one does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import BlockError

__all__ = ["ScriptedBlocks"]


class ScriptedBlocks:
    """One scenario run's scripted replies by block id (taken in order), and every call made."""

    def __init__(self, replies: Mapping[str, list[dict[str, Any]]]) -> None:
        self.replies = {block: list(queue) for block, queue in replies.items()}
        self._counts = {block: len(queue) for block, queue in self.replies.items()}
        self.calls: list[dict[str, Any]] = []
        """`{block, function, arguments}` per call, in the order they were made."""
        self.exhausted: list[str] = []
        """Blocks that ran more times than the scenario scripted replies for them."""

    def call(self, block: str, function: str, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """Record the call; the block's next scripted reply, or None when the scenario scripts none for it."""
        self.calls.append({"block": block, "function": function, "arguments": dict(arguments)})
        queue = self.replies.get(block)
        if queue is None:
            return None
        if not queue:
            self.exhausted.append(block)
            raise BlockError(f"the scenario scripted fewer replies for block '{block}' than it ran",
                             type="scenario_exhausted")
        return queue.pop(0)

    def answer(self, block: str) -> dict[str, Any] | None:
        """The block's next scripted answer to a Wait, or None when the scenario scripts none for it."""
        queue = self.replies.get(block)
        if queue is None:
            return None
        if not queue:
            self.exhausted.append(block)
            raise BlockError(f"the scenario scripted fewer answers for block '{block}' than it asked",
                             type="scenario_exhausted")
        return queue.pop(0)

    def unused(self) -> list[tuple[str, int]]:
        """(block, number of the reply, from 1) for each scripted reply never taken."""
        return [(block, self._counts[block] - len(queue) + offset)
                for block, queue in self.replies.items() for offset in range(1, len(queue) + 1)]
