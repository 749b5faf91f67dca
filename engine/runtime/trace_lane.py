"""The trace of a run nested in a step (engine.runtime.nested): the top run's, each event marked with its lane.

A Subdiagram's child and a concurrent Loop's passes write into the file of the run they are nested in;
`diagrama trace`, `graph --run`, the studio and the OpenTelemetry export tell their steps apart by the
marks added here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.format.levels import MessageLevel
from engine.runtime.trace import Trace

__all__ = ["TraceLane", "lane_of"]


def lane_of(trace: Trace, lane: str, *, prefix: str = "", depth: int = 0) -> TraceLane:
    """`trace` (a top run's, or a lane of it) as a run nested in it writes it."""
    return TraceLane(trace.root if isinstance(trace, TraceLane) else trace, lane, prefix, depth)


class TraceLane(Trace):
    """The trace of a run nested in another (a Subdiagram's child, a pass of a concurrent Loop): the same file,
    chain, redactor and batch as the run it is nested in, each event it records marked with its `lane` (the
    sequence of steps it belongs to: `sub`, `each[3]`, `each[3]/sub`), the subdiagram `depth` and, in a child,
    the block ids as addressed from the top run (`sub/ask`). `diagrama trace` groups and indents by them."""

    def __init__(self, root: Trace, lane: str, prefix: str, depth: int) -> None:  # no Trace.__init__
        # Not Trace.__init__: nothing is opened; the state that matters is the root's, read through it.
        self.root = root
        self.lane_name = lane
        self.prefix = prefix
        self.depth = depth
        self.run_id = root.run_id
        self.path = root.path
        self.redactor = root.redactor
        self.wall_at_zero = root.wall_at_zero

    # The step loop reads these of its trace: the root's, always current.
    @property
    def pending(self) -> bytearray:  # type: ignore[override]  # read through to the root, whose attribute it is
        return self.root.pending

    @property
    def flush_due_at(self) -> float:  # type: ignore[override]  # likewise
        return self.root.flush_due_at

    @property
    def failure(self) -> OSError | None:  # type: ignore[override]  # likewise
        return self.root.failure

    def _mark(self, fields: dict[str, Any]) -> dict[str, Any]:
        fields["run_id"] = self.run_id  # the file's run: a child's own id is in its subdiagram_started
        fields["lane"] = self.lane_name
        if self.depth:
            fields["depth"] = self.depth
        prefix = self.prefix
        if prefix:
            block = fields.get("block")
            if block is not None:
                fields["block"] = prefix + str(block)
            following = fields.get("next")
            if following is not None:
                fields["next"] = prefix + str(following)
        return fields

    def reach(self, level: MessageLevel) -> None:
        self.root.reach(level)

    def observe(self, observer: Callable[[dict[str, Any]], object]) -> None:
        self.root.observe(observer)

    def redact(self, text: str) -> str:
        return self.root.redact(text)

    def record(self, event: str, fields: dict[str, Any]) -> None:
        self.root.record(event, self._mark(fields))

    def record_stamped(self, event: str, fields: dict[str, Any]) -> None:
        self.root.record_stamped(event, self._mark(fields))

    def flush(self) -> None:
        self.root.flush()

    def failure_message(self) -> str:
        return self.root.failure_message()

    def close(self) -> None:
        """The root's to close, when the top run ends."""
