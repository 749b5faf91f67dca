"""A durable run's steps: checkpoints after blocks with effects, a Wait's stop, a checkpoint's state taken back.

The executor's run (engine.runtime.execute) takes these methods as a mixin, as it takes the error
levels. `_durable_steps` is `_steps_from_start`'s twin with two differences: after a step of a block
with effects (`CompiledBlock.effects`) the state is checkpointed, committed before the next block
starts; and a Wait's request (RunSuspended) is checkpointed as where the run stopped, to run that
Wait again when the answer comes. A run resumed from a checkpoint starts at its block.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, NoReturn

from engine.errors import CheckpointFailed, RunError, RunSuspended, StepLimitReached, TraceWriteFailed
from engine.runtime.durable import Checkpoints, Resumed, SnapshotError, encode_state
from engine.runtime.trace import SLOW_STEP_S, Event

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.runtime.context import RunContext
    from engine.runtime.trace import Trace

__all__ = ["DurableSteps"]


class DurableSteps:
    """A durable run's loop and checkpoints; the run itself provides these attributes."""

    diagram: Diagram
    ctx: RunContext
    trace: Trace
    path: list[str]
    errors: list[dict[str, Any]]
    steps: int
    tokens: int
    step_began: float
    checkpoints: Checkpoints | None
    resume: Resumed | None
    seq: int
    marked: int
    waiting: dict[str, Any] | None
    root: Any  # the top run (engine.runtime.execute._Run)
    calls: dict[str, int]

    if TYPE_CHECKING:
        def step_now(self, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None: ...

        async def step(self, block: CompiledBlock, came_from: CompiledBlock | None) -> CompiledBlock | None: ...

        def _end(self, error: RunError, *, announce: bool) -> NoReturn: ...

    async def _durable_steps(self) -> None:
        """`_steps_from_start`'s twin for a durable run: a checkpoint after each step of a block with effects, and a
        Wait's request checkpointed as the run's stop. A run that resumes starts at its checkpoint's block."""
        max_steps = self.diagram.settings.max_steps
        trace = self.trace
        resume = self.resume
        blocks = self.diagram.blocks
        block: CompiledBlock | None = self.diagram.start
        came_from: CompiledBlock | None = None
        if resume is not None:
            block = blocks[resume.next] if resume.next is not None else None
            came_from = blocks.get(resume.came_from) if resume.came_from is not None else None
        clock, step_now = time.perf_counter, self.step_now
        try:  # around the loop, not in it: a Wait's request is rare, the steps are not
            while block is not None:
                now = clock()
                if trace.pending and (now >= trace.flush_due_at or now - self.step_began >= SLOW_STEP_S):
                    trace.flush()
                self.step_began = now
                if trace.failure is not None:
                    self._end(TraceWriteFailed(trace.failure_message(), block=block.id), announce=False)
                if self.steps >= max_steps:
                    self._end(StepLimitReached(
                        f"the run reached max_steps ({max_steps}) at block '{block.id}'; a cycle may never end "
                        "(raise max_steps on the Start block if the run is meant to be this long)",
                        block=block.id,
                    ), announce=True)
                if block.awaits:
                    came_from, block = block, await self.step(block, came_from)
                else:
                    came_from, block = block, step_now(block, came_from)
                if came_from.effects:
                    self._checkpoint(block, came_from)
        except RunSuspended as request:
            # The Wait is the step that raised (`ctx.current`); `came_from` is still the block before it.
            self._suspend(self.ctx.current, came_from, request)
            raise

    def _state(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> bytes:
        """The run's state as a checkpoint holds it, scrubbed of its secrets; SnapshotError for a value it cannot hold."""
        path = self.path
        header = {"next": following.id if following is not None else None,
                  "from": came_from.id if came_from is not None else None, "steps": self.steps,
                  "tokens": self.tokens, "errors": self.errors, "segment": path[self.marked:],
                  "calls": self.root.calls}
        functions = self.diagram.env.functions
        values = {name: value for name, value in self.ctx.scope.values.items() if name not in functions}
        blocks = self.diagram.blocks
        loops = {block: blocks[block].impl.save_state(state) for block, state in self.ctx.loop_states.items()}
        return bytes(self.trace.redactor.encoded(encode_state(header, values, loops)))

    def _checkpoint(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> None:
        """Write the run's state, to continue at `following` (None: the run's end); committed before it returns."""
        assert self.checkpoints is not None
        at = came_from.id if came_from is not None else self.diagram.start.id
        try:
            state = self._state(following, came_from)
        except SnapshotError as exc:
            self._end(CheckpointFailed(f"the run's state after '{at}' cannot be checkpointed: {exc} (a durable run "
                                       "keeps only such values; or set `durable: false` on Start)", block=at),
                      announce=True)
        if self.trace.pending:
            # The trace on disk covers every checkpoint: a run killed just after one (SIGKILL) still shows the steps
            # it holds, and a resume's trace reads on from them. One write beside a commit costs nothing more.
            self.trace.flush()
        try:
            self.checkpoints.save(self.ctx.run_id, self.seq + 1, state)
        except OSError as exc:
            self._end(CheckpointFailed(f"the checkpoint after '{at}' could not be written: {exc}", block=at),
                      announce=True)
        self.seq += 1
        self.marked = len(self.path)

    def _last_checkpoint(self) -> None:
        """At the run's end: the blocks run since the last checkpoint, and the scope as it ended, so that a replay can
        reach any block the run ran. The run has ended: a scope that cannot be written only limits replays."""
        if self.checkpoints is None:
            return
        if self.trace.pending:
            self.trace.flush()  # as in _checkpoint
        with contextlib.suppress(SnapshotError, OSError):
            self.checkpoints.save(self.ctx.run_id, self.seq + 1, self._state(None, self.ctx.current))
            self.seq += 1
            self.marked = len(self.path)

    def _suspend(self, block: CompiledBlock, came_from: CompiledBlock | None, request: RunSuspended) -> None:
        """A Wait asked for an answer: checkpoint the run to run the Wait again when one comes; the step is undone.
        In a Subdiagram's child, `block` is the Wait, then its caller's Subdiagram block: the run waits at the
        Wait's address from the top run (`review/approve`), and each run on the way is checkpointed at it."""
        self.steps -= 1
        if self.root is not self:  # a child's step counts in the top run's budget too
            self.root.steps -= 1
        self.path.pop()
        if request.address:  # the step is a Subdiagram's, undone: its call is made again, with the same child id
            self.root.calls[self.ctx.address] -= 1
        self._checkpoint(block, came_from)
        address = request.address = f"{block.id}/{request.address}" if request.address else block.id
        redact = self.trace.redactor.value
        self.waiting = {"block": address, "prompt": redact(request.prompt), "form": request.form,
                        "timeout": request.timeout, "asked_at": request.asked_at}
        if self.root is self:  # once, for the run as a whole
            self.trace.emit(Event.RUN_WAITING, block=address, prompt=self.waiting["prompt"], form=request.form,
                            timeout=request.timeout)

    def _restore(self, resume: Resumed) -> None:
        """Take a checkpoint's state as this run's: the scope, the loops' positions, the counts so far."""
        self.ctx.scope.values.update(resume.values)
        blocks = self.diagram.blocks
        self.ctx.loop_states.update({block: blocks[block].impl.load_state(data) for block, data in resume.loops.items()})
        self.steps, self.tokens = resume.steps, resume.tokens
        self.errors.extend(resume.errors)
        self.path.extend(resume.path)
        self.marked = len(self.path)
        self.seq = resume.seq
        self.ctx.answer = resume.answer
        calls = self.root.calls  # as many Subdiagram calls as the run had made: the next child's id is new
        for address, count in resume.calls.items():
            calls[address] = max(calls.get(address, 0), count)
