"""A durable run's checkpoints: its state after blocks with effects, a Wait's stop, a checkpoint's state taken back.

A run is durable when it has a Checkpointer (`Run.durable`): the step loop (engine.runtime.advance) saves the
run's state after each step of a block with effects, committed before the next block starts, and a Wait's
request (RunSuspended) is saved as where the run stopped, to run that Wait again when the answer comes. A run
that resumes takes a checkpoint's state back (`restore`) and the step loop starts at its block. What a
checkpoint holds and how it is encoded is engine.runtime.durable's; the store is the caller's.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, NoReturn

from engine.errors import CheckpointFailed, RunSuspended
from engine.format.spec import tighter
from engine.runtime.durable import Checkpoints, Resumed, SnapshotError, encode_state
from engine.runtime.trace import Event

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock
    from engine.runtime.run import Run

__all__ = ["Checkpointer"]


class Checkpointer:
    """Where one durable run writes its checkpoints (`store`), and how far it has written them."""

    __slots__ = ("_constants", "marked", "resumed", "run", "seq", "store")

    def __init__(self, run: Run, store: Checkpoints) -> None:
        self.run = run
        self.store = store
        self.seq = 0
        """The number of the last checkpoint written."""
        self.marked = 0
        """How much of the run's path the checkpoints so far cover (each holds the blocks run since the one before)."""
        self.resumed = False
        """Whether the run continues from a checkpoint: a top run's children may then have begun before it stopped."""
        self._constants: tuple[Any, Any, dict[str, Any]] | None = None
        """(clock, ceiling, their header entries) as `_constant_header` last wrote them out."""

    def begin(self, fields: dict[str, Any]) -> None:
        """The run's record in the store: `running`, with its diagram, process, parent and session (OSError when the
        store cannot be written: before any block runs)."""
        self.store.begin(self.run.ctx.run_id, fields)

    @property
    def remote(self) -> bool:
        """Whether the store is across a network (PostgreSQL): its writes are awaited (`off_loop`), never made on the
        event loop's thread while it waits for the database."""
        return getattr(self.store, "off_loop", None) is not None

    async def begin_off_loop(self, fields: dict[str, Any]) -> None:
        """`begin`, awaited (a store across a network)."""
        await self.store.off_loop.begin(self.run.ctx.run_id, fields)  # type: ignore[attr-defined]  # `remote`

    async def save_now(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> None:
        """`save`, off the event loop where the store is across a network."""
        if self.remote:
            await self.save_off_loop(following, came_from)
        else:
            self.save(following, came_from)

    def last_state(self) -> tuple[int, bytes] | None:
        """`last`'s checkpoint, taken but not written (None: a scope that cannot be written only limits replays)."""
        run = self.run
        try:
            state = self.state(None, run.ctx.current)
        except SnapshotError:
            return None
        if run.trace.file.pending:
            run.trace.file.flush()
        self.seq += 1
        self.marked = len(run.path)
        return self.seq, state

    async def end_off_loop(self, status: str, last: tuple[int, bytes] | None) -> None:
        """`last`'s write (already taken) and `end`'s, awaited."""
        await self.store.off_loop.finish(  # type: ignore[attr-defined]  # `remote` says it is there
            self.run.ctx.run_id, last, status, self.run.waiting)

    def state(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> bytes:
        """The run's state as a checkpoint holds it, scrubbed of its secrets; SnapshotError for a value it cannot hold."""
        run = self.run
        ctx = run.ctx
        header: dict[str, Any] = {"next": following.id if following is not None else None,
                                  "from": came_from.id if came_from is not None else None, "steps": run.steps,
                                  "tokens": run.tokens, "segment": run.path[self.marked:]}
        # A checkpoint's size is most of its price (a step's commit): what is empty or never changes is written
        # small. A run that has asked no vendor has no cost to keep (restored as none: a fresh Spend).
        if run.errors:
            header["errors"] = run.errors
        if run.root.calls:
            header["calls"] = run.root.calls
        if ctx.spend.requests:
            header["spend"] = ctx.spend.state()
        if ctx.clock is not None or (ctx.ceiling is not None and not run.nested):
            header.update(self._constant_header())
        functions = run.diagram.env.functions
        values = {name: value for name, value in run.ctx.scope.values.items() if name not in functions}
        blocks = run.diagram.blocks
        loops = {block: blocks[block].impl.save_state(state) for block, state in run.ctx.loop_states.items()}
        return bytes(run.trace.redactor.encoded(encode_state(header, values, loops)))

    def _constant_header(self) -> dict[str, Any]:
        """The header's parts a run sets as it starts and keeps: its clock (a resumed run's `now()` reads the
        instant it started at) and a top run's budget (lowered by --budget: so it resumes). Written out once."""
        ctx = self.run.ctx
        if self._constants is None or self._constants[0] is not ctx.clock or self._constants[1] is not ctx.ceiling:
            written: dict[str, Any] = {}
            if ctx.clock is not None:
                written["clock"] = ctx.clock.isoformat()
            if ctx.ceiling is not None and not self.run.nested:
                written["budget"] = ctx.ceiling.model_dump(exclude_none=True)
            self._constants = (ctx.clock, ctx.ceiling, written)
        return self._constants[2]

    def save(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> None:
        """Write the run's state, to continue at `following` (None: the run's end); committed before it returns."""
        seq, state = self._prepared(following, came_from)
        try:
            self.store.save(self.run.ctx.run_id, seq, state)
        except OSError as exc:
            self._failed(came_from, exc)

    async def save_off_loop(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> None:
        """`save`, its write on a thread: for a store across a network (PostgreSQL), whose round trip would hold the
        event loop, and every other run of a server with it. The state is taken here, on the loop, before the await:
        a concurrent Loop's other passes change the scope meanwhile."""
        seq, state = self._prepared(following, came_from)
        try:
            await self.store.off_loop.save(self.run.ctx.run_id, seq, state)  # type: ignore[attr-defined]  # as above
        except OSError as exc:
            self._failed(came_from, exc)

    def _failed(self, came_from: CompiledBlock | None, exc: OSError) -> NoReturn:
        run = self.run
        at = came_from.id if came_from is not None else run.diagram.start.id
        run.end(CheckpointFailed(f"the checkpoint after '{at}' could not be written: {exc}", block=at), announce=True)

    def _prepared(self, following: CompiledBlock | None, came_from: CompiledBlock | None) -> tuple[int, bytes]:
        """The next checkpoint's number (taken) and state; the trace flushed to cover it."""
        run = self.run
        at = came_from.id if came_from is not None else run.diagram.start.id
        try:
            state = self.state(following, came_from)
        except SnapshotError as exc:
            run.end(CheckpointFailed(f"the run's state after '{at}' cannot be checkpointed: {exc} (a durable run "
                                     "keeps only such values; or set `durable: false` on Start)", block=at),
                    announce=True)
        # The trace on disk covers every checkpoint: a run killed just after one (SIGKILL) still shows the steps
        # it holds, and a resume's trace reads on from them. One write beside a commit costs nothing more.
        file = run.trace.file
        if file.pending:
            file.flush()
        self.seq += 1
        self.marked = len(run.path)
        return self.seq, state

    def last(self) -> None:
        """At the run's end: the blocks run since the last checkpoint, and the scope as it ended, so that a replay can
        reach any block the run ran (and a resumed caller reads a child's result). The run has ended: a scope that
        cannot be written only limits replays."""
        run = self.run
        file = run.trace.file
        if file.pending:
            file.flush()  # as in `save`
        with contextlib.suppress(SnapshotError, OSError):
            self.store.save(run.ctx.run_id, self.seq + 1, self.state(None, run.ctx.current))
            self.seq += 1
            self.marked = len(run.path)

    def end(self, status: str) -> None:
        """The run's record as it stopped. A store that fails here leaves the run `running`: it shows as interrupted
        once its process is gone."""
        with contextlib.suppress(OSError):
            self.store.end(self.run.ctx.run_id, status, self.run.waiting)

    def suspend(self, block: CompiledBlock, came_from: CompiledBlock | None, request: RunSuspended) -> None:
        """A Wait asked for an answer: checkpoint the run to run the Wait again when one comes; the step is undone.
        In a Subdiagram's child, `block` is the Wait, then its caller's Subdiagram block: the run waits at the
        Wait's address from the top run (`review/approve`), and each run on the way is checkpointed at it."""
        run = self.run
        run.steps -= 1
        if run.nested:  # a child's step counts in the top run's budget too
            run.root.steps -= 1
        run.path.pop()
        if request.address:  # the step is a Subdiagram's, undone: its call is made again, with the same child id
            run.root.calls[run.ctx.address] -= 1
        self.save(block, came_from)
        address = request.address = f"{block.id}/{request.address}" if request.address else block.id
        redact = run.trace.redactor.value
        run.waiting = {"block": address, "prompt": redact(request.prompt), "form": request.form,
                       "timeout": request.timeout, "asked_at": request.asked_at}
        if not run.nested:  # once, for the run as a whole
            run.trace.emit(Event.RUN_WAITING, block=address, prompt=run.waiting["prompt"], form=request.form,
                           timeout=request.timeout)

    def restore(self, resumed: Resumed) -> None:
        """Take a checkpoint's state as the run's: the scope, the loops' positions, the counts so far."""
        run = self.run
        self.resumed = True
        run.ctx.scope.values.update(resumed.values)
        blocks = run.diagram.blocks
        run.ctx.loop_states.update({block: blocks[block].impl.load_state(data) for block, data in resumed.loops.items()})
        run.steps, run.tokens = resumed.steps, resumed.tokens
        if resumed.spend is not None and not run.nested:  # a child's context shares its caller's, restored there
            spend = run.ctx.spend
            spend.usd, spend.requests, spend.unknown = resumed.spend["usd"], resumed.spend["requests"], \
                resumed.spend["unknown"]
            spend.usage = dict(resumed.spend["usage"])
            spend.blocks = resumed.spend["blocks"]
        if resumed.budget is not None and not run.nested:
            run.ctx.ceiling = tighter(run.ctx.ceiling, resumed.budget)
        if run.nested and not resumed.steps_counted:  # its caller's checkpoint came before them: they count again
            run.root.steps += resumed.steps
        run.errors.extend(resumed.errors)
        run.path.extend(resumed.path)
        self.marked = len(run.path)
        self.seq = resumed.seq
        run.ctx.answer = resumed.answer
        calls = run.root.calls  # as many Subdiagram calls as the run had made: the next child's id is new
        for address, count in resumed.calls.items():
            calls[address] = max(calls.get(address, 0), count)

