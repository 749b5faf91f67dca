"""Where `diagrama api` learns that a run (or a part of one: up to a Wait, a resume's) ended: each backend tells
its `RunEndings` once per end, and the listeners (the metrics) hear it.

The local backend learns it when its task ends; the Celery backend when it reads the run's end from its stream (a
`wait: true` answer, an event stream followed to its end, a callback's watch), which several readers of one run may
see: `tell` keeps the last ends it told, so each is heard once per process. Nothing here hears a run's events.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["RunEnded", "RunEndings"]

_REMEMBERED = 4096
"""Ends kept to recognise one told again (two readers of a Celery run's stream); older ones are forgotten."""


@dataclass(frozen=True, slots=True)
class RunEnded:
    """A run's end as this process learnt it: its status, and what it cost where that is known (None: not)."""

    run_id: str
    robot: str
    status: str
    duration_s: float | None = None
    steps: int | None = None
    tokens: int | None = None


class RunEndings:
    """The listeners of a backend's run ends."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[RunEnded], None]] = []
        self._told: OrderedDict[Hashable, None] = OrderedDict()

    def listen(self, listener: Callable[[RunEnded], None]) -> None:
        self._listeners.append(listener)

    def tell(self, ended: RunEnded, once: Hashable | None = None) -> None:
        """Tell every listener; with `once` (a key of this end), only the first time it is told."""
        if once is not None:
            if once in self._told:
                return
            self._told[once] = None
            if len(self._told) > _REMEMBERED:
                self._told.popitem(last=False)
        for listener in self._listeners:
            listener(ended)
