"""The step loop: the one routine that moves every run forward.

A top run from Start, a resumed run from its checkpoint, a Subdiagram's child (fresh or resumed), a
concurrent Loop's pass: each is a Run (engine.runtime.run) stepped here from the resume point it is
given: the block to run, the block it came from (a Loop reads it to tell the end of a pass from its
entry) and, already in the run's context, the Loops' positions. So a child or a Loop resumes exactly
where it was by construction, as a top run does.

Each turn of the loop checks first, as LangGraph's loop does (`out_of_steps`), so a step that may not
run never starts: the top run's step budget (every nested step counts there), a child's own limit, the
trace file still writable. Then it steps the block (engine.runtime.step) and, for a durable run after
a block with effects, checkpoints: checkpointing is a property of this loop (`Run.durable`), not a
loop of its own, and costs a run that is not durable one test of a local per step.

Steps that never wait (Set, a child of Sets, a Function that returns at once) never give the event loop
back by themselves: the deadline's timer could not fire, and a server's other runs would wait. So the
loop gives it back (`asyncio.sleep(0)`) once it has held it for HOLD_S, and at the run's deadline, where
the timer then cancels the run as it would have at an await (`within_deadline`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from engine.errors import RunFailed, RunSuspended, RunTimeout, StepLimitReached, TraceWriteFailed
from engine.runtime.step import step, step_now
from engine.runtime.step_events import since
from engine.runtime.trace import SLOW_STEP_S, Event

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock
    from engine.runtime.run import Run

__all__ = ["HOLD_S", "RunStopped", "advance", "within_deadline"]

HOLD_S = 0.05
"""The longest the step loop keeps the event loop through steps that never wait, before it gives it back."""


class RunStopped(BaseException):
    """The run was asked to stop before its next step (Services.stops): `status` is `cancelled` or `interrupted`. A
    BaseException: no block's error level and no Subdiagram's child takes it; the top run's `whole` ends with it."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


# Long: the one step loop, its per-step checks inline (a call each would cost every step of every run).
async def advance(run: Run, block: CompiledBlock | None, came_from: CompiledBlock | None = None, *,
                  stop: CompiledBlock | None = None) -> CompiledBlock | None:
    """Step `run` from `block` until its chain ends (None) or reaches `stop` (a pass's Loop); where it stopped.

    A durable run is checkpointed after each step of a block with effects, and where a Wait stops it
    (RunSuspended goes on up once it is). RunFailed ends the loop with the run's error recorded.
    """
    root = run.root
    budget = root.diagram.settings.max_steps
    nested = root is not run
    own_limit = run.own_limit
    durable = run.durable
    checkpointing = durable is not None
    off_loop = checkpointing and durable.remote  # type: ignore[union-attr]  # just checked
    file = run.trace.file
    stops, top_id = run.ctx.services.stops, root.ctx.run_id  # the dict is shared: a stop asked later is seen
    clock, stepped_now, stepped = time.perf_counter, step_now, step  # read once: this loop turns once per step
    began = clock()
    deadline = run.ctx.deadline  # loop time; on this loop's clock below
    due = began + (deadline - asyncio.get_running_loop().time()) if deadline is not None else began + 1e12
    give_back = min(due, began + HOLD_S)
    try:  # around the loop, not in it: a Wait's request is rare, the steps are not
        while block is not None:
            now = clock()
            if now >= give_back:  # held long enough, or past the deadline: its timer cancels the run here
                await asyncio.sleep(0)
                now = clock()
                give_back = min(due, now + HOLD_S)
            # The last step's lines: written now if it was slow, or a while after the last write (trace.py).
            if file.pending and (now >= file.flush_due_at or now - run.step_began >= SLOW_STEP_S):
                file.flush()
            run.step_began = now
            if stops and top_id in stops:  # between steps: the last block with effects is checkpointed
                raise RunStopped(stops[top_id])
            if nested:  # a pass ends back at its Loop; nested steps count in the top run's budget, a child's in its own
                if block is stop:
                    break
                if root.steps >= budget:
                    run.end(_out_of_steps(run, block, budget), announce=True)
                if own_limit is not None and run.steps >= own_limit:
                    run.end(StepLimitReached(f"the subdiagram reached its own max_steps ({own_limit}) at block "
                                             f"'{block.id}'", block=block.id), announce=True)
                root.steps += 1
            elif run.steps >= budget:
                run.end(_out_of_steps(run, block, budget), announce=True)
            if file.failure is not None:
                run.end(TraceWriteFailed(file.failure_message(), block=block.id), announce=False)
            if block.awaits:
                came_from, block = block, await stepped(run, block, came_from)
            else:
                came_from, block = block, stepped_now(run, block, came_from)
            if checkpointing and came_from.effects:
                if off_loop:  # a database across a network: its round trip does not hold the event loop
                    await durable.save_off_loop(block, came_from)  # type: ignore[union-attr]  # as below
                else:
                    durable.save(block, came_from)  # type: ignore[union-attr]  # `checkpointing` says it is there
    except RunSuspended as request:
        if checkpointing:
            # The Wait is the step that raised (`ctx.current`); `came_from` is still the block before it.
            durable.suspend(run.ctx.current, came_from, request)  # type: ignore[union-attr]  # as above
        raise
    return block


def _out_of_steps(run: Run, block: CompiledBlock, budget: int) -> StepLimitReached:
    where = "the top diagram's Start block" if run.nested else "the Start block"
    return StepLimitReached(f"the run reached max_steps ({budget}) at block '{run.ctx.prefix}{block.id}'; a cycle may "
                            f"never end (raise max_steps on {where} if the run is meant to be this long)",
                            block=block.id)


async def within_deadline(run: Run, steps: Awaitable[object]) -> None:
    """Await `steps` within the run's Start `timeout`, when it has one: past it the block in flight is cancelled and
    the run fails with RunTimeout (RunFailed)."""
    timeout = run.diagram.settings.timeout
    if not timeout:
        await steps
        return
    ends = asyncio.get_running_loop().time() + timeout
    ctx = run.ctx
    ctx.deadline = ends if ctx.deadline is None else min(ctx.deadline, ends)  # a child ends by its caller's too
    try:
        async with asyncio.timeout(timeout) as deadline:
            await steps
    except TimeoutError:
        if not deadline.expired():
            raise
        current = run.ctx.current
        what = ("the subdiagram took longer than its timeout of {:g} s (its Start 'timeout')" if run.nested else
                "the run took longer than its timeout of {:g} s (Start 'timeout')").format(timeout)
        error = RunTimeout(f"{what}; block '{current.id}' was cancelled", block=current.id)
        run.errors.append(error.as_dict())
        run.trace.emit(Event.BLOCK_FAILED, block=current.id, block_type=current.type_name, error_type=error.type,
                       message=error.message, duration_ms=since(run.step_began))
        raise RunFailed(error) from None  # the cancellation is how the deadline works, not a cause
