"""The trace of a run nested in a step (engine.runtime.nested): the top run's trace, bound to a lane.

A Subdiagram's child and a concurrent Loop's passes write into the file of the run they are nested in;
`diagrama trace`, `graph --run`, the studio and the OpenTelemetry export tell their steps apart by the
marks added here. A lane holds its file's Trace and adds fields to each event it records, as structlog's
`bind()` returns a logger with more context over the same processors: it is not a second Trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from engine.format.redact import Redactor
    from engine.runtime.trace import RunTrace, Trace

__all__ = ["TraceLane", "lane_of"]


def lane_of(trace: RunTrace, lane: str, *, prefix: str = "", depth: int = 0) -> TraceLane:
    """`trace` (a top run's, or a lane of it) as a run nested in it writes it."""
    return TraceLane(trace.file, lane, prefix, depth)


class TraceLane:
    """Where a run nested in another (a Subdiagram's child, a pass of a concurrent Loop) writes its events: the
    same file, chain, redactor and batch as its top run's trace (`file`), each event marked with its `lane` (the
    sequence of steps it belongs to: `sub`, `each[3]`, `each[3]/sub`), the subdiagram `depth` and, in a child,
    the block ids as addressed from the top run (`sub/ask`). `diagrama trace` groups and indents by them."""

    __slots__ = ("depth", "file", "lane_name", "path", "prefix", "redactor", "run_id", "wall_at_zero")

    def __init__(self, file: Trace, lane: str, prefix: str, depth: int) -> None:
        self.file = file
        self.lane_name = lane
        self.prefix = prefix
        self.depth = depth
        self.run_id: str = file.run_id
        self.path: Path | None = file.path
        self.redactor: Redactor = file.redactor
        self.wall_at_zero: float = file.wall_at_zero

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

    def emit(self, event: str, **fields: Any) -> None:
        self.file.record(event, self._mark(fields))

    def record(self, event: str, fields: dict[str, Any]) -> None:
        self.file.record(event, self._mark(fields))

    def record_stamped(self, event: str, fields: dict[str, Any]) -> None:
        self.file.record_stamped(event, self._mark(fields))

    def redact(self, text: str) -> str:
        return self.file.redact(text)
