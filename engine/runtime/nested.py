"""Runs inside a step: a Subdiagram's child diagram, and the passes of a concurrent Loop.

Each is a run of its own (engine.runtime.run's `Run`: its context, scope, path and errors) nested in
the step that started it, and stepped by the one step loop (engine.runtime.advance) as a top run is.
All of them share the top run's step budget (`max_steps` counts their steps), its deadline (its
cancellation reaches them) and its trace file (a TraceLane marks their events with their lane, and a
child's blocks with their address, `sub/ask`). A child runs another diagram, with its caller's levels
unless its own Start sets them; a pass runs the body of the same diagram from its head until it links
back to the Loop, in a copy of the scope. What they did joins the caller's run as they end: a child's
errors (addressed from the top), each pass's path and errors in input order. Whether a failure is the
caller's block's error is the caller's block's to say.
"""

from __future__ import annotations

import asyncio
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
    SubdiagramFailed,
)
from engine.format.names import suggest
from engine.format.paths import PathRefused
from engine.format.spec import tighter
from engine.format.values import short_value
from engine.runtime.advance import advance
from engine.runtime.checkpointing import Checkpointer
from engine.runtime.context import RunContext
from engine.runtime.durable import Answer, Resumed, SnapshotDamaged, resumed_from, run_record
from engine.runtime.error_levels import record_bug
from engine.runtime.failures import bug
from engine.runtime.result import SubdiagramRun
from engine.runtime.run import Run
from engine.runtime.step_events import since
from engine.runtime.trace import Event
from engine.runtime.trace_lane import lane_of

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.format.spec import Budget

__all__ = ["MAX_DEPTH", "run_child", "run_passes"]

MAX_DEPTH = 8
"""How many Subdiagram calls deep a run may go: a templated path can name its own diagram."""


# -- a Subdiagram's child ------------------------------------------------------------------------


async def run_child(run: Run, context: RunContext, written: str, inputs: Mapping[str, Any]) -> SubdiagramRun:
    """Run the diagram `written` names as one step of `run` (the current block's); its whole run, failed or not."""
    block = context.current
    address = context.address
    depth = run.depth + 1
    _check_may_call(run, address, depth)
    root = run.root
    child = block.child if block.child is not None else await _load(run, written)
    values = _child_inputs(child, inputs)
    calls = root.calls[address] = root.calls.get(address, 0) + 1
    run_id = f"{root.ctx.run_id}-{address.replace('/', '-')}-{calls}"
    lane = f"{run.lane}/{block.id}" if run.lane else block.id
    inherited = context.error_levels
    levels = child.inherited_levels(block.error_level if inherited is None else inherited[block], context.message_level)
    # A child's block may trace at a level its caller's run never reaches (its own Detailed): the chain must serve it.
    run.trace.file.reach(levels.highest)
    prefix = f"{address}/"
    trace = lane_of(run.trace, lane, prefix=prefix, depth=depth)
    services = context.services
    scope = child.env.new_scope({}, run_environ(services.environ, offline=services.offline),  # read by `secret()`
                                clock=root.ctx.clock)  # the top run's clock: `now()` is one instant in the whole run
    ctx = RunContext(run_id, child, scope, trace, services, levels.messages, error_levels=levels.errors, prefix=prefix)
    ctx.clock = root.ctx.clock
    ctx.started = root.ctx.started  # offsets from the top run's start, as its own steps have
    ctx.deadline, ctx.concurrent = context.deadline, context.concurrent
    ctx.spend = context.spend  # the child's requests count in the caller's cost
    _inherit_budget(ctx, context, block.impl.spec.budget, f"the budget of block '{address}'")
    _inherit_budget(ctx, ctx, child.start.impl.spec.budget, f"the budget of {child.name}'s Start (in '{address}')")
    nested = Run(child, ctx, trace, root=root, depth=depth, lane=lane, own_limit=child.settings.max_steps)
    if context.message_level:
        fields: dict[str, Any] = {"diagram": child.name, "file": str(child.path), "sub_run_id": run_id}
        fields["inputs"] = {name: short_value(value) for name, value in values.items()}
        context.emit(Event.SUBDIAGRAM_STARTED, **fields)
    began = time.perf_counter()
    if child.tools is not None and child.tools.unlisted:
        await asyncio.to_thread(child.tools.start_servers)  # as a top run starts its own: off the loop
    resumed = _durable_child(run, nested, context) if run.durable is not None and child.settings.durable else None
    if child.tools is not None and child.tools.mcp_servers:
        from engine.tools.mcp import run_sessions

        async with run_sessions(context.services.mcp_sessions):
            status = await nested.whole(values, resumed)
    else:
        status = await nested.whole(values, resumed)
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


def _check_may_call(run: Run, address: str, depth: int) -> None:
    """SubdiagramFailed where one more call would nest deeper than MAX_DEPTH, or pass the top run's budget of calls
    (Start's `max_subdiagram_calls`, every level's calls together: a tree that fans out stops, however it nests)."""
    if depth > MAX_DEPTH:
        raise SubdiagramFailed(f"subdiagrams nest deeper than {MAX_DEPTH} levels at '{address}'; a diagram that "
                               "runs itself needs a condition that stops it", type="subdiagram_too_deep")
    budget = run.root.diagram.settings.max_subdiagram_calls
    if sum(run.root.calls.values()) >= budget:
        raise SubdiagramFailed(f"the run made its {budget} Subdiagram calls (the top diagram's Start "
                               f"max_subdiagram_calls) before '{address}'; a diagram that runs itself needs a "
                               "condition that stops it", type="subdiagram_too_many_calls")


def _addressed(prefix: str, block: Any) -> str | None:
    """A block the child names, addressed from the top run. A block id has no '/' (engine.format.spec): one that
    has it is an address already (a request's error names its block so, as scenarios script it)."""
    if not block:
        return None
    return str(block) if "/" in str(block) else prefix + str(block)


async def _load(run: Run, written: str) -> Diagram:
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


def _durable_child(run: Run, nested: Run, context: RunContext) -> Resumed | None:
    """Make a durable run's child durable too: its record in the store (its parent, the calling run) and its own
    checkpoints, so that a resume with the child in flight continues the child from its last checkpoint instead of
    running it whole again. Its id counts the calls (`RUN-sub-2`), and the count is checkpointed with the runs: the
    same call has the same id after a resume. What the child had done when its caller was interrupted (None: it had
    not started)."""
    assert run.durable is not None
    store = run.durable.store
    child, run_id = nested.diagram, nested.ctx.run_id
    nested.durable = Checkpointer(nested, store)
    resumed: Resumed | None = None
    if run.root.durable is not None and run.root.durable.resumed:  # the child may have started before the interruption
        states = store.states(run_id)
        if states:
            try:
                resumed = resumed_from([state for _, state in states], seq=states[-1][0])
            except SnapshotDamaged as exc:
                raise CheckpointFailed(f"the subdiagram's run {run_id} cannot go on from its checkpoints: {exc}") \
                    from None
            answer = context.answer  # a Wait in the child answered (`review/approve`): the child's to take
            if answer is not None and answer.block.startswith(f"{context.current.id}/"):
                resumed.answer = Answer(answer.block.partition("/")[2], answer.value, answer.asked_at)
                context.answer = None
                resumed.steps_counted = True  # the run stopped waiting inside it: its caller counted its steps
    try:
        nested.durable.begin(run_record(child, run.root.trace.path, parent=run.ctx.run_id))
    except OSError as exc:
        raise CheckpointFailed(f"the subdiagram's run {run_id} could not be recorded: {exc}") from None
    return resumed


# -- the passes of a concurrent Loop -------------------------------------------------------------


class _PassFailed(Exception):
    """A pass ended with an error its body did not handle: the others stop."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


async def run_passes(run: Run, context: RunContext, bindings: Sequence[Mapping[str, Any]],
                     concurrency: int) -> list[Scope]:
    """Run the current block's body once per binding, `concurrency` at a time; the final scopes in input order.

    A pass that fails stops the others (cancelled where they are) and becomes the block's LoopPassFailed
    (a bug stays a bug); what each pass did joins `run` in input order either way.
    """
    loop = context.current
    port = type(loop.impl).body_port
    assert port is not None, f"{loop.type_name} has no body to run passes of"
    head = loop.ports[port]
    passes: list[Run | None] = [None] * len(bindings)
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


def _pass(run: Run, context: RunContext, loop: CompiledBlock, index: int, binding: Mapping[str, Any]) -> Run:
    values = dict(context.scope.values)  # the pass's own copy: its `set` stays in it
    values.update(binding)
    lane = f"{run.lane}/{loop.id}[{index}]" if run.lane else f"{loop.id}[{index}]"
    trace = lane_of(run.trace, lane, prefix=context.prefix, depth=run.depth)
    ctx = RunContext(context.run_id, run.diagram, Scope(run.diagram.env, values), trace, context.services,
                     context.message_levels, error_levels=context.error_levels, prefix=context.prefix)
    ctx.started = context.started
    ctx.deadline, ctx.concurrent = context.deadline, True
    ctx.spend = context.spend  # the pass's requests count in the loop's run's cost
    _inherit_budget(ctx, context, loop.impl.spec.budget, f"the budget of block '{context.prefix}{loop.id}'")
    nested = Run(run.diagram, ctx, trace, root=run.root, depth=run.depth, lane=lane)
    if context.message_level:
        trace.record(Event.LOOP_PASS_STARTED, {"block": loop.id, "block_type": loop.type_name, "index": index})
    return nested


def _inherit_budget(ctx: RunContext, outer: RunContext, own: Budget | None, whose: str) -> None:
    """A nested run's budget: the one around it, tightened by `own` (a block's around it, a child's Start's)."""
    ctx.ceiling, ctx.ceiling_of = outer.ceiling, outer.ceiling_of
    if own is not None:
        ctx.ceiling, ctx.ceiling_of = tighter(outer.ceiling, own), whose


async def _segment(nested: Run, head: CompiledBlock, loop: CompiledBlock) -> bool:
    """One pass from the body's head; whether it linked back to the loop (else its error ends it, recorded)."""
    try:
        if await advance(nested, head, stop=loop) is loop:
            return True
        # Its chain ended (an ignored error with no link that holds): the pass cannot come back.
        error = LoopPassFailed(f"the pass ended at '{nested.ctx.current.id}' without linking back to '{loop.id}'",
                               type="loop_pass_ended", block=nested.ctx.current.id)
        nested.errors.append(error.as_dict())
    except RunFailed:
        pass  # recorded where it happened
    except RunSuspended:
        # The passes run at once, and a resume would run the whole loop step again: a pass cannot stop.
        nested.errors.append(BlockError(
            "a Wait cannot stop a run inside a concurrent loop's pass (the passes run at once, and a resume would run "
            "the whole loop step again); move the Wait out of the loop's body, or drop `concurrency`",
            type="wait_not_durable", block=nested.ctx.current.id).as_dict())
    except Exception as exc:  # a bug outside any block's step
        record_bug(nested, nested.ctx.current, bug(nested.ctx.current, exc), exc)
    return False


def _join(run: Run, loop: CompiledBlock, passes: list[Run | None], returned: list[bool]) -> None:
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


def _raise_pass_failure(index: int, nested: Run | None, binding: Mapping[str, Any]) -> None:
    assert nested is not None
    ended = next((e for e in reversed(nested.errors) if not e.get("ignored") and not e.get("handled_by")),
                 nested.errors[-1] if nested.errors else {"block": None, "type": "?", "message": "?"})
    if ended.get("type") == InternalError.type:
        raise InternalError(str(ended.get("message")), block=str(ended.get("block")))
    shown = ", ".join(f"{name} {short_value(value)!s}" for name, value in binding.items())
    raise LoopPassFailed(f"pass {index} ({shown}) failed at '{_addressed(nested.ctx.prefix, ended.get('block'))}': "
                         f"{ended.get('type')}: {ended.get('message')}")

