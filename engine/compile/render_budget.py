"""How much work one render of a template may do: MAX_STEPS steps, a loop's iteration one, a call CALL_STEPS.

The sizes a template builds are bounded (engine.compile.sizes), but not the time it takes: loops over a caller's
input nested in each other, or a macro that calls itself twice, run for minutes while building nothing large, and a
render never gives the event loop back, so no deadline can stop it. Each render that jinja2 runs (the only kind
with loops and macros) gets a budget (`rendering`); every `{% for %}` iterates through `counted` and every call the
sandbox makes is `charge`d, and the step that overdraws it raises `template_over_budget`. A call (a macro's above
all: about ten microseconds) weighs as much as ten iterations. A million steps is about a second of the slowest
template work, and ten times what the largest legitimate templates take (a table of 10,000 rows and 10 columns is
100,000).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from engine.errors import TemplateError

__all__ = ["CALL_STEPS", "MATCH_STEPS", "MAX_STEPS", "charge", "counted", "done", "rendering"]

MAX_STEPS = 1_000_000
"""Steps one render may take: each loop iteration is one, each call CALL_STEPS."""
CALL_STEPS = 10
"""What a call weighs: a macro's call costs what ten loop iterations do, and more."""
MATCH_STEPS = 5
"""What a regex filter's match weighs (RE2's Python wrapper: about five microseconds a match)."""
_BATCH = 1024
"""Iterations a loop counts before it charges them: a loop's own counter is cheaper than the shared one."""


class _Left(threading.local):
    """The steps the render running on this thread has left; None when no render runs (an expression compiled to
    Python calls the sandbox too, outside any render: nothing is counted there)."""

    steps: int | None = None


_LEFT = _Left()


def rendering() -> int | None:
    """Start a render's budget; returns what to give back to `done` (the budget of a render this one runs inside)."""
    outer = _LEFT.steps
    _LEFT.steps = MAX_STEPS
    return outer


def done(outer: int | None) -> None:
    _LEFT.steps = outer


def charge(steps: int) -> None:
    """Take `steps` from the running render's budget; TemplateError once it is spent."""
    left = _LEFT.steps
    if left is None:
        return
    left -= steps
    _LEFT.steps = left
    if left < 0:
        raise TemplateError(f"the template took more than {MAX_STEPS:,} steps (loop iterations and calls) in one "
                            "render; loop over less (slice the list, filter it first), or do the work in a Function "
                            "block", type="template_over_budget")


def counted(items: Iterable[object]) -> Iterator[object]:
    """A `{% for %}`'s items, each iteration charged (in batches, and what is left when the loop ends)."""
    taken = 0
    for item in items:
        taken += 1
        if taken == _BATCH:
            charge(taken)
            taken = 0
        yield item
    charge(taken)  # a loop the render leaves by an error is not charged further: the render fails anyway
