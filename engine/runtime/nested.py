"""Runs inside a step: a Subdiagram's child diagram, and the passes of a concurrent Loop.

Each is a run of its own (engine.runtime.execute's `_Run`: its context, scope, path and errors) nested
in the step that started it. All of them share the top run's step budget (`max_steps` counts their
steps), its deadline (its cancellation reaches them) and its trace file (a TraceLane marks their
events with their lane, and a child's blocks with their address, `sub/ask`). A child runs another
diagram, with its caller's levels unless its own Start sets them; a pass runs the body of the same
diagram from its head until it links back to the Loop, in a copy of the scope. What they did joins the
caller's run as they end: a child's errors (addressed from the top), each pass's path and errors in
input order. Whether a failure is the caller's block's error is the caller's block's to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.compile.secrets import run_environ
from engine.compile.templating import Scope
from engine.errors import (
    BlockError,
    CheckpointFailed,
    DiagramInvalid,
    InputError,
    InternalError,
    LoopPassFailed,
    RunFailed,
    RunSuspended,
    RunTimeout,
    StepLimitReached,
    SubdiagramFailed,
    TraceWriteFailed,
)
from engine.format.names import suggest
from engine.format.paths import PathRefused
from engine.format.values import short_value
from engine.runtime.context import RunContext
from engine.runtime.durable import Answer, Resumed, resumed_from, run_record
from engine.runtime.failures import bug
from engine.runtime.result import SubdiagramRun
from engine.runtime.step_events import since
from engine.runtime.trace import SLOW_STEP_S, Event
from engine.runtime.trace_lane import lane_of

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.runtime.execute import _Run

__all__ = ["MAX_DEPTH", "run_child", "run_passes"]

MAX_DEPTH = 8
"""How many Subdiagram calls deep a run may go: a templated path can name its own diagram."""


# -- a Subdiagram's child ------------------------------------------------------------------------


async def run_child(run: _Run, context: RunContext, written: str, inputs: Mapping[str, Any]) -> SubdiagramRun:
    """Run the diagram `written` names as one step of `run` (the current block's); its whole run, failed or not."""
    block = context.current
    address = context.address
    depth = run.depth + 1
    if depth > MAX_DEPTH:
        raise SubdiagramFailed(f"subdiagrams nest deeper than {MAX_DEPTH} levels at '{address}'; a diagram that "
                               "runs itself needs a condition that stops it", type="subdiagram_too_deep")
    child = block.child if block.child is not None else await _load(run, written)
    values = _child_inputs(child, inputs)
    root = run.root
    calls = root.calls[address] = root.calls.get(address, 0) + 1
    run_id = f"{root.ctx.run_id}-{address.replace('/', '-')}-{calls}"
    lane = f"{run.lane}/{block.id}" if run.lane else block.id
    inherited = context.error_levels
    levels = child.inherited_levels(block.error_level if inherited is None else inherited[block], context.message_level)
    # A child's block may trace at a level its caller's run never reaches (its own Detailed): the chain must serve it.
    run.trace.reach(levels.highest)
    prefix = f"{address}/"
    trace = lane_of(run.trace, lane, prefix=prefix, depth=depth)
    services = context.services
    scope = child.env.new_scope({}, run_environ(services.environ, offline=services.offline))  # read by `secret()`
    ctx = RunContext(run_id, child, scope, trace, services, levels.messages, error_levels=levels.errors, prefix=prefix)
    ctx.started = root.ctx.started  # offsets from the top run's start, as its own steps have
    nested = type(run)(child, ctx, trace, root=root, depth=depth, lane=lane)
    if context.message_level:
        fields: dict[str, Any] = {"diagram": child.name, "file": str(child.path), "sub_run_id": run_id}
        fields["inputs"] = {name: short_value(value) for name, value in values.items()}
        context.emit(Event.SUBDIAGRAM_STARTED, **fields)
    began = time.perf_counter()
    if child.tools is not None and child.tools.unlisted:
        await asyncio.to_thread(child.tools.start_servers)  # as a top run starts its own: off the loop
    resumed = _durable_child(run, nested, context) if run.checkpoints is not None and child.settings.durable else None
    if child.tools is not None and child.tools.mcp_servers:
        from engine.tools.mcp import run_sessions

        async with run_sessions(context.services.mcp_sessions):
            status = await _whole(nested, values, resumed)
    else:
        status = await _whole(nested, values, resumed)
    errors = []
    for record in nested.errors:  # the caller's run lists them too, each block addressed from the top
        addressed = dict(record)
        addressed["block"] = _addressed(prefix, record.get("block")) or address
        if record.get("handled_by"):
            addressed["handled_by"] = _addressed(prefix, record["handled_by"])
        errors.append(addressed)
    run.errors += errors
    run.tokens += nested.tokens
    variables = {name: value for name, value in ctx.scope.values.items() if name not in child.env.functions}
    if context.message_level:
        context.emit(Event.SUBDIAGRAM_FINISHED, sub_run_id=run_id, status=status, steps=nested.steps,
                     path=nested.path, errors=errors, duration_ms=since(began))
    ended = next((e for e in reversed(errors) if not e.get("ignored") and not e.get("handled_by")), None)
    return SubdiagramRun(run_id, status, variables, nested.path, errors, child.path,
                         ended if status != "succeeded" else None)


def _addressed(prefix: str, block: Any) -> str | None:
    """A block the child names, addressed from the top run. A block id has no '/' (engine.format.spec): one that
    has it is an address already (a request's error names its block so, as scenarios script it)."""
    if not block:
        return None
    return str(block) if "/" in str(block) else prefix + str(block)


async def _load(run: _Run, written: str) -> Diagram:
    """The diagram a rendered path names: inside the caller's folder or a data root, loaded once a run."""
    diagram = run.diagram
    try:
        resolved = diagram.directory.resolve(written)
    except PathRefused as exc:
        raise InputError(f"with.diagram: {exc}") from None
    found = run.root.loaded.get(resolved)
    if found is not None:
        return found
    if diagram.load_child is None:  # a Diagram put together by hand, not by the loader
        raise SubdiagramFailed(f"'{written}' cannot be loaded here: the calling diagram was not loaded from a file",
                               type="subdiagram_invalid")
    try:
        found = await asyncio.to_thread(diagram.load_child, resolved)
    except DiagramInvalid as exc:
        shown = "; ".join(str(problem) for problem in exc.problems[:5])
        more = f" (and {len(exc.problems) - 5} more)" if len(exc.problems) > 5 else ""
        raise SubdiagramFailed(f"the subdiagram '{written}' does not load: {shown}{more}",
                               type="subdiagram_invalid") from None
    # The run's trace redacts the secrets its top diagram and the children loaded with it list, chosen when it
    # began: a child found only now may read no other (its values would reach the trace unredacted).
    unlisted = [name for name in found.listed_secrets if name not in run.root.diagram.listed_secrets]
    if unlisted:
        raise SubdiagramFailed(f"the subdiagram '{written}' lists secrets the calling run does not redact: "
                               f"{', '.join(unlisted)}; list them in the top diagram's secrets too",
                               type="subdiagram_invalid")
    run.root.loaded[resolved] = found
    return found


def _child_inputs(child: Diagram, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The child's run inputs; an input its Start does not take is the calling block's InputError."""
    known = child.settings.inputs
    for name in inputs:
        if name not in known:
            hint = suggest(name, known)
            raise InputError(f"with.inputs: the subdiagram '{child.name}' takes no input '{name}'"
                             + (f"; {hint}" if hint else f" (inputs: {', '.join(known) or 'none'})"))
    return dict(inputs)


def _durable_child(run: _Run, nested: _Run, context: RunContext) -> Resumed | None:
    """Make a durable run's child durable too: its record in the store (its parent, the calling run) and its own
    checkpoints, so that a resume with the child in flight continues the child from its last checkpoint instead of
    running it whole again. Its id counts the calls (`RUN-sub-2`), and the count is checkpointed with the runs: the
    same call has the same id after a resume. What the child had done when its caller was interrupted (None: it had
    not started)."""
    store = run.checkpoints
    assert store is not None
    child, run_id = nested.diagram, nested.ctx.run_id
    nested.checkpoints = store
    resumed: Resumed | None = None
    if run.root.resume is not None:  # a resumed run: the child may have started before the interruption
        states = store.states(run_id)
        if states:
            resumed = resumed_from([state for _, state in states], seq=states[-1][0])
            answer = context.answer  # a Wait in the child answered (`review/approve`): the child's to take
            if answer is not None and answer.block.startswith(f"{context.current.id}/"):
                resumed.answer = Answer(answer.block.partition("/")[2], answer.value, answer.asked_at)
                context.answer = None
                resumed.steps_counted = True  # the run stopped waiting inside it: its caller counted its steps
    try:
        store.begin(run_id, run_record(child, run.root.trace.path, parent=run.ctx.run_id))
    except OSError as exc:
        raise CheckpointFailed(f"the subdiagram's run {run_id} could not be recorded: {exc}") from None
    return resumed


async def _whole(nested: _Run, values: Mapping[str, Any], resumed: Resumed | None = None) -> str:
    """A child's run from its Start (or from `resumed`, its last checkpoint), within its own Start `timeout` when it
    has one; its status. A durable child (`nested.checkpoints`) checkpoints as a top run does and is recorded as it
    ends; a Wait in it stops it waiting, and its caller with it (RunSuspended goes on up)."""
    store = nested.checkpoints
    status = "failed"
    try:
        status = await _from_start(nested, values, resumed)
        return status
    except RunSuspended:
        if store is None:
            _wait_refused(nested)
            return "failed"
        status = "waiting"
        raise
    finally:
        if store is not None:
            if status == "succeeded":
                nested._last_checkpoint()  # next: none. A resume of its caller takes the child's result from it
            with contextlib.suppress(OSError):
                store.end(nested.ctx.run_id, status, nested.waiting)


async def _from_start(nested: _Run, values: Mapping[str, Any], resumed: Resumed | None) -> str:
    block: CompiledBlock | None = nested.diagram.start
    try:
        if resumed is None:
            # No checkpoint 0 (a top run's, for replays): a child interrupted before its first checkpoint starts
            # again from its Start, as it would from there.
            nested._prepare_scope(values)
        else:
            nested._restore(resumed)
            if not resumed.steps_counted:  # its caller's checkpoint came before them: they count again
                nested.root.steps += resumed.steps
            block = nested.diagram.blocks[resumed.next] if resumed.next is not None else None
            if block is None:  # it had ended, succeeded: its result stands, nothing runs again
                return "succeeded"
        timeout = nested.diagram.settings.timeout
        if not timeout:
            await _steps(nested, block, None, nested.diagram.settings.max_steps)
            return "succeeded"
        try:
            async with asyncio.timeout(timeout) as deadline:
                await _steps(nested, block, None, nested.diagram.settings.max_steps)
        except TimeoutError:
            if not deadline.expired():
                raise
            current = nested.ctx.current
            error = RunTimeout(f"the subdiagram took longer than its timeout of {timeout:g} s (its Start 'timeout'); "
                               f"block '{current.id}' was cancelled", block=current.id)
            nested.errors.append(error.as_dict())
            nested.trace.emit(Event.BLOCK_FAILED, block=current.id, block_type=current.type_name,
                              error_type=error.type, message=error.message, duration_ms=since(nested.step_began))
            return "failed"
        return "succeeded"
    except RunFailed:
        return "failed"  # recorded where it happened
    except RunSuspended:
        raise  # a Wait: `_whole`'s to handle
    except Exception as exc:  # a bug outside any block's step
        nested._record_bug(nested.ctx.current, bug(nested.ctx.current, exc), exc)
        return "failed"


async def _steps(run: _Run, block: CompiledBlock | None, stop: CompiledBlock | None,
                 own_limit: int | None) -> CompiledBlock | None:
    """Step `run` from `block` until its chain ends or reaches `stop`; where it stopped. The top run's step loop
    (engine.runtime.execute), with the budget read from the top run and a nested child's own limit beside it."""
    root = run.root
    limit = root.diagram.settings.max_steps
    trace = run.trace
    came_from: CompiledBlock | None = None
    clock = time.perf_counter
    while block is not None and block is not stop:
        now = clock()
        if trace.pending and (now >= trace.flush_due_at or now - run.step_began >= SLOW_STEP_S):
            trace.flush()
        run.step_began = now
        if trace.failure is not None:
            run._end(TraceWriteFailed(trace.failure_message(), block=block.id), announce=False)
        if root.steps >= limit:
            run._end(StepLimitReached(
                f"the run reached max_steps ({limit}) at block '{run.ctx.prefix}{block.id}'; a cycle may never end "
                "(raise max_steps on the top diagram's Start block if the run is meant to be this long)",
                block=block.id), announce=True)
        if own_limit is not None and run.steps >= own_limit:
            run._end(StepLimitReached(f"the subdiagram reached its own max_steps ({own_limit}) at block '{block.id}'",
                                      block=block.id), announce=True)
        root.steps += 1
        try:
            if block.awaits:
                came_from, block = block, await run.step(block, came_from)
            else:
                came_from, block = block, run.step_now(block, came_from)
        except RunSuspended as request:  # a Wait (or a Subdiagram whose child waits): a durable child stops here
            if run.checkpoints is not None:
                run._suspend(run.ctx.current, came_from, request)
            raise
        if run.checkpoints is not None and came_from.effects:  # a durable child's checkpoint, as a top run's
            run._checkpoint(block, came_from)
    return block


# -- the passes of a concurrent Loop -------------------------------------------------------------


class _PassFailed(Exception):
    """A pass ended with an error its body did not handle: the others stop."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


async def run_passes(run: _Run, context: RunContext, bindings: Sequence[Mapping[str, Any]],
                     concurrency: int) -> list[Scope]:
    """Run the current block's body once per binding, `concurrency` at a time; the final scopes in input order.

    A pass that fails stops the others (cancelled where they are) and becomes the block's LoopPassFailed
    (a bug stays a bug); what each pass did joins `run` in input order either way.
    """
    loop = context.current
    port = type(loop.impl).body_port
    assert port is not None, f"{loop.type_name} has no body to run passes of"
    head = loop.ports[port]
    passes: list[_Run | None] = [None] * len(bindings)
    returned = [False] * len(bindings)
    todo = iter(range(len(bindings)))

    async def worker() -> None:
        for index in todo:  # one shared iterator: each worker takes the next pass when it is free
            nested = passes[index] = _pass(run, context, loop, index, bindings[index])
            returned[index] = await _segment(nested, head, loop)
            if not returned[index]:
                raise _PassFailed(index)

    failed: int | None = None
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(bindings))):
                group.create_task(worker())
    except* _PassFailed as raised:
        failed = min(error.index for error in raised.exceptions if isinstance(error, _PassFailed))
    finally:
        _join(run, loop, passes, returned)
    if failed is not None:
        _raise_pass_failure(failed, passes[failed], bindings[failed])
    return [nested.ctx.scope for nested in passes if nested is not None]


def _pass(run: _Run, context: RunContext, loop: CompiledBlock, index: int, binding: Mapping[str, Any]) -> _Run:
    values = dict(context.scope.values)  # the pass's own copy: its `set` stays in it
    values.update(binding)
    lane = f"{run.lane}/{loop.id}[{index}]" if run.lane else f"{loop.id}[{index}]"
    trace = lane_of(run.trace, lane, prefix=context.prefix, depth=run.depth)
    ctx = RunContext(context.run_id, run.diagram, Scope(run.diagram.env, values), trace, context.services,
                     context.message_levels, error_levels=context.error_levels, prefix=context.prefix)
    ctx.started = context.started
    nested = type(run)(run.diagram, ctx, trace, root=run.root, depth=run.depth, lane=lane)
    if context.message_level:
        trace.record(Event.LOOP_PASS_STARTED, {"block": loop.id, "block_type": loop.type_name, "index": index})
    return nested


async def _segment(nested: _Run, head: CompiledBlock, loop: CompiledBlock) -> bool:
    """One pass from the body's head; whether it linked back to the loop (else its error ends it, recorded)."""
    try:
        if await _steps(nested, head, loop, None) is loop:
            return True
        # Its chain ended (an ignored error with no link that holds): the pass cannot come back.
        error = LoopPassFailed(f"the pass ended at '{nested.ctx.current.id}' without linking back to '{loop.id}'",
                               type="loop_pass_ended", block=nested.ctx.current.id)
        nested.errors.append(error.as_dict())
    except RunFailed:
        pass  # recorded where it happened
    except RunSuspended:
        _wait_refused(nested, in_pass=True)
    except Exception as exc:  # a bug outside any block's step
        nested._record_bug(nested.ctx.current, bug(nested.ctx.current, exc), exc)
    return False


def _wait_refused(nested: _Run, *, in_pass: bool = False) -> None:
    """A Wait reached where the run cannot stop: a concurrent loop's pass, or a child of a run that is not durable."""
    if in_pass:
        message = ("a Wait cannot stop a run inside a concurrent loop's pass (the passes run at once, and a resume "
                   "would run the whole loop step again); move the Wait out of the loop's body, or drop `concurrency`")
    else:
        message = ("a Wait needs a durable run: run it with `diagrama run` (a run store), or give execute a "
                   "checkpoint store (Services.checkpoints); the subdiagram and its caller must not say "
                   "`durable: false`")
    nested.errors.append(BlockError(message, type="wait_not_durable", block=nested.ctx.current.id).as_dict())


def _join(run: _Run, loop: CompiledBlock, passes: list[_Run | None], returned: list[bool]) -> None:
    """Each pass's path and errors into `run`'s, in input order: the path as passes one at a time make it (the
    loop after each pass that linked back to it, a step as it is then)."""
    for nested, back in zip(passes, returned, strict=True):
        if nested is None:
            continue
        run.path += nested.path
        run.errors += nested.errors
        run.tokens += nested.tokens
        if back:
            run.path.append(loop.id)
            run.root.steps += 1


def _raise_pass_failure(index: int, nested: _Run | None, binding: Mapping[str, Any]) -> None:
    assert nested is not None
    ended = next((e for e in reversed(nested.errors) if not e.get("ignored") and not e.get("handled_by")),
                 nested.errors[-1] if nested.errors else {"block": None, "type": "?", "message": "?"})
    if ended.get("type") == InternalError.type:
        raise InternalError(str(ended.get("message")), block=str(ended.get("block")))
    shown = ", ".join(f"{name} {short_value(value)!s}" for name, value in binding.items())
    raise LoopPassFailed(f"pass {index} ({shown}) failed at '{_addressed(nested.ctx.prefix, ended.get('block'))}': "
                         f"{ended.get('type')}: {ended.get('message')}")

