"""The effect the durability property test counts: a Function that logs each call, in order with the store's writes.

`EVENTS` is one list for the test process: ("effect", tag) from each call, ("save", run, seq) and ("begin", run) from
the recording store (test_durable_runs_properties.py), so that where a kill falls is known against what had run.
"""

from __future__ import annotations

from typing import Any

EVENTS: list[tuple[Any, ...]] = []


def mark(tag: str) -> str:
    """An effect outside the run: logged once per call."""
    EVENTS.append(("effect", tag))
    return tag
